#pragma once
// dL/dz = dL/dy * act'(saved) for a run of elements, as the backward kernels read grad_output
// of a layer with a fused activation (activation.hpp: activation_gradient). One out-of-line
// function per run width and type: the derivative's six cases inlined at every element of
// every staging loop multiplied the kernels' code (and their compile time) several times
// over, and a call per run costs nothing next to the loads it follows.

#include <limits>

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "activation.hpp"
#include "words.hpp"

namespace dsconv {
namespace detail {

// The tensor a backward kernel multiplies grad_output by act'() of as it reads it: the one the
// forward saved (activation_saved), laid out as grad_output; saved == nullptr: none.
template <class T>
struct gate_tensor {
  const T* saved;
  activation act;
};

template <int V, class T>
DSCONV_DEVICE DSCONV_NOINLINE platform::vec<float, V> gate_run(const platform::vec<T, V> dy, const platform::vec<T, V> saved,
                                                               activation act) {
  platform::vec<float, V> dz;
  for (int e = 0; e < V; ++e) dz[e] = to_float(dy[e]) * activation_gradient(to_float(saved[e]), act);
  return dz;
}

// One element of dz: grad_output[off], times act'(saved[off]) where the layer fused an activation.
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE float gated_load(const T* __restrict__ grad_output, gate_tensor<T> gate, index_t off) {
  return gate.saved ? gate_run<1>(platform::load_vec<1>(grad_output + off), platform::load_vec<1>(gate.saved + off), gate.act)[0]
                    : to_float(platform::load(grad_output + off));
}

// The gate of relu and relu6 as the register kernels apply it inline, one element at a time:
// dy * (saved > 0 and not saved >= upper), upper 6 for relu6 and NaN for relu (nothing is >= NaN,
// so the second test always passes) or none. The same factor as activation_gradient's for every
// saved value (infinities and NaN included), and the same product: a NaN or infinite dy where
// the gate is closed still gives NaN, as in the other kernels.
struct clamp_gate {
  const void* saved;    // the forward's output, laid out as grad_output; nullptr: no gate
  float upper;          // 6 (relu6) or NaN (relu)
  unsigned upper_pair;  // 16-bit elements: upper in both halves of a word (platform clamp_gated_word)
};

template <class T>
clamp_gate make_clamp_gate(const gate_tensor<T>& gate) {
  const float upper = gate.act == activation::relu6 ? 6.f : std::numeric_limits<float>::quiet_NaN();
  unsigned pair = 0;
  if constexpr (sizeof(T) == 2) pair = narrow_word(upper, upper, static_cast<const T*>(nullptr));
  return {gate.saved, upper, pair};
}

// Whether the clamp gate can stand for activation `a`'s derivative.
constexpr bool clamp_gated(activation a) {
  return a == activation::none || a == activation::relu || a == activation::relu6;
}

DSCONV_DEVICE DSCONV_FORCEINLINE float clamp_gated_value(float dy, float saved, float upper) {
  return dy * (saved > 0.f && !(saved >= upper) ? 1.f : 0.f);
}

// Words dy of grad_output and the saved words at the same place, widened to the gated floats f
// (16-bit words gated packed where the target can: platform clamp_gated_word).
template <class T, int W>
DSCONV_DEVICE DSCONV_FORCEINLINE void widen_clamp_gated(const platform::vec<unsigned, W>& dy,
                                                        const platform::vec<unsigned, W>& saved, const clamp_gate& gate,
                                                        float* f) {
  constexpr int E = elements_per_word<T>();
DSCONV_UNROLL
  for (int k = 0; k < W; ++k) {
    if constexpr (sizeof(T) == 2 && packed_clamp_gate<T>()) {
      widen<T>(clamp_gated_word<T>(dy[k], saved[k], gate.upper_pair), f + k * E);
    } else {
      float y[E];
      widen<T>(dy[k], f + k * E);
      widen<T>(saved[k], y);
DSCONV_UNROLL
      for (int e = 0; e < E; ++e) f[k * E + e] = clamp_gated_value(f[k * E + e], y[e], gate.upper);
    }
  }
}

}  // namespace detail
}  // namespace dsconv
