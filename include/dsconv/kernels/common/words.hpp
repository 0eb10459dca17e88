#pragma once
// Vectors of elements as the 32-bit words a vector load leaves in registers (two 16-bit
// elements, or one float, a word), and their conversions word by word
// (platform/float16.hpp: a 16-bit element converts where it sits in its register, no byte
// permutes). Accesses take a flag for pointers that are not aligned to the vector: then they
// move element by element, into the same words.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../types.hpp"
#include "activation.hpp"

namespace dsconv {
namespace detail {

// Elements of T in a 32-bit word.
template <class T>
DSCONV_HOST_DEVICE constexpr int elements_per_word() {
  return static_cast<int>(4 / sizeof(T));
}

// An element's bits, in the low bits of a word.
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE unsigned element_bits(float v) { return float_bits(v); }
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE unsigned element_bits(half v) { return v.bits; }
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE unsigned element_bits(bfloat16 v) { return v.bits; }

// The W words at p: one vector load where aligned, else element by element.
template <int W, class T>
DSCONV_DEVICE DSCONV_FORCEINLINE platform::vec<unsigned, W> load_words(const T* p, bool aligned) {
  if (aligned) return platform::load_vec<W>(reinterpret_cast<const unsigned*>(p));
  constexpr int E = elements_per_word<T>();
  platform::vec<unsigned, W> w;
DSCONV_UNROLL
  for (int k = 0; k < W; ++k) {
    w[k] = 0;
DSCONV_UNROLL
    for (int e = 0; e < E; ++e) w[k] |= element_bits(platform::load(p + k * E + e)) << (16 * e);
  }
  return w;
}

template <int W, class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void store_words(T* p, const platform::vec<unsigned, W>& w, bool aligned) {
  if (aligned) {
    platform::store_vec<W>(reinterpret_cast<unsigned*>(p), w);
    return;
  }
  constexpr int E = elements_per_word<T>();
DSCONV_UNROLL
  for (int k = 0; k < W; ++k)
DSCONV_UNROLL
    for (int e = 0; e < E; ++e) {
      T v;
      const unsigned bits = E == 1 ? w[k] : (w[k] >> (16 * e)) & 0xffffu;
      if constexpr (E == 1)
        v = bits_float(bits);
      else
        v = T::from_bits(static_cast<unsigned short>(bits));
      platform::store(p + k * E + e, v);
    }
}

// Word `w` to E floats at f, and back.
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void widen(unsigned w, float* f) {
  if constexpr (sizeof(T) == 4)
    f[0] = bits_float(w);
  else
    widen_word(w, f[0], f[1], static_cast<const T*>(nullptr));
}
// The W words of a vector to W * E floats at f.
template <class T, int W>
DSCONV_DEVICE DSCONV_FORCEINLINE void widen_words(const platform::vec<unsigned, W>& w, float* f) {
  constexpr int E = elements_per_word<T>();
DSCONV_UNROLL
  for (int k = 0; k < W; ++k) widen<T>(w[k], f + k * E);
}
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE unsigned narrow(const float* f) {
  if constexpr (sizeof(T) == 4)
    return float_bits(f[0]);
  else
    return narrow_word(f[0], f[1], static_cast<const T*>(nullptr));
}

// The word of f[0 .. E) after activation A (a compile-time constant), as an epilogue stores it:
// relu and relu6 of 16-bit elements applied as the pair is packed (narrow_word_relu), the others
// to each float first.
template <activation A, class T>
DSCONV_DEVICE DSCONV_FORCEINLINE unsigned activated_word(const float* f) {
  if constexpr (sizeof(T) == 2 && (A == activation::relu || A == activation::relu6)) {
    return narrow_word_relu<A == activation::relu6>(f[0], f[1], static_cast<const T*>(nullptr));
  } else {
    float a[elements_per_word<T>()];
DSCONV_UNROLL
    for (int e = 0; e < elements_per_word<T>(); ++e) a[e] = activate(f[e], A);
    return narrow<T>(a);
  }
}

// The word of f[0 .. E) as a forward saves it for its backward (saved_value: z, or act'(z) for
// activation A where `derivative`).
template <activation A, class T>
DSCONV_DEVICE DSCONV_FORCEINLINE unsigned saved_word(const float* f, bool derivative) {
  float a[elements_per_word<T>()];
DSCONV_UNROLL
  for (int e = 0; e < elements_per_word<T>(); ++e) a[e] = saved_value<A>(f[e], derivative);
  return narrow<T>(a);
}

}  // namespace detail
}  // namespace dsconv
