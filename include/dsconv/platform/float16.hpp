#pragma once
// 16-bit storage types shared by every platform. dsconv::half has the bit layout of IEEE
// binary16 (CUDA's __half, HIP's __half), dsconv::bfloat16 that of bfloat16: device buffers
// of the vendor types can be passed with a reinterpret_cast. Keeping our own types keeps the
// public API identical on all three platforms.

#include "../config.hpp"

#include <type_traits>

#if !defined(DSCONV_DEVICE_PASS)
#include <cstring>
#endif

namespace dsconv {
namespace detail {

DSCONV_HOST_DEVICE DSCONV_FORCEINLINE unsigned float_bits(float f) {
#if defined(DSCONV_DEVICE_PASS)
  return __float_as_uint(f);
#else
  unsigned u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

DSCONV_HOST_DEVICE DSCONV_FORCEINLINE float bits_float(unsigned u) {
#if defined(DSCONV_DEVICE_PASS)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// Round-to-nearest-even float -> binary16, written with integer operations so that it
// gives the same bits on the host as the GPUs' conversion instructions.
DSCONV_HOST_DEVICE inline unsigned short float_to_half_bits_soft(float f) {
  const unsigned x = float_bits(f);
  const unsigned sign = (x >> 16) & 0x8000u;
  const unsigned absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return static_cast<unsigned short>(sign | 0x7e00u | ((absx >> 13) & 0x3ffu));
  if (absx >= 0x47800000u) return static_cast<unsigned short>(sign | 0x7c00u);  // >= 2^16: inf
  const unsigned e = absx >> 23;
  if (e < 113) {  // below 2^-14: a binary16 subnormal (or zero)
    const unsigned shift = 126 - e;
    if (shift > 24) return static_cast<unsigned short>(sign);
    const unsigned m = (absx & 0x7fffffu) | (e ? 0x800000u : 0u);
    unsigned r = m >> shift;
    const unsigned rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
    return static_cast<unsigned short>(sign | r);
  }
  unsigned bits = ((e - 112) << 10) | ((absx >> 13) & 0x3ffu);
  const unsigned rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (bits & 1u))) ++bits;  // a carry into the exponent is right, up to inf
  return static_cast<unsigned short>(sign | bits);
}

DSCONV_HOST_DEVICE inline float half_bits_to_float_soft(unsigned short h) {
  const unsigned sign = (static_cast<unsigned>(h) & 0x8000u) << 16;
  const unsigned e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return bits_float(sign | 0x7f800000u | (m << 13));
  if (e == 0) {
    const float mag = static_cast<float>(m) * 5.9604644775390625e-8f;  // m * 2^-24, exact
    return sign ? -mag : mag;
  }
  return bits_float(sign | ((e + 112) << 23) | (m << 13));
}

DSCONV_HOST_DEVICE DSCONV_FORCEINLINE unsigned short float_to_half_bits(float f) {
#if defined(__CUDA_ARCH__)
  unsigned short r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return r;
#elif defined(__HIP_DEVICE_COMPILE__)
  return __builtin_bit_cast(unsigned short, static_cast<_Float16>(f));
#else
  return float_to_half_bits_soft(f);
#endif
}

DSCONV_HOST_DEVICE DSCONV_FORCEINLINE float half_bits_to_float(unsigned short h) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h));
  return r;
#elif defined(__HIP_DEVICE_COMPILE__)
  return static_cast<float>(__builtin_bit_cast(_Float16, h));
#else
  return half_bits_to_float_soft(h);
#endif
}

// Round-to-nearest-even float -> bfloat16; NaN stays NaN (quiet bit set).
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE unsigned short float_to_bfloat16_bits(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  // (one conversion instruction where the bit arithmetic below takes six; its NaN is the
  // canonical one)
  unsigned short r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return r;
#endif
  const unsigned x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((x >> 16) | 0x40u);
  return static_cast<unsigned short>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

DSCONV_HOST_DEVICE DSCONV_FORCEINLINE float bfloat16_bits_to_float(unsigned short b) {
  return bits_float(static_cast<unsigned>(b) << 16);
}

// Round-to-nearest (ties away from zero) float -> tf32 (10 mantissa bits, kept in a float),
// as cvt.rna.tf32.f32 does; NaN and infinity pass through.
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE float round_to_tf32_soft(float f) {
  const unsigned x = float_bits(f);
  if ((x & 0x7f800000u) == 0x7f800000u) return f;
  return bits_float((x + 0x1000u) & 0xffffe000u);
}

}  // namespace detail

struct alignas(2) half {
  unsigned short bits;
  half() = default;
  DSCONV_HOST_DEVICE half(float f) : bits(detail::float_to_half_bits(f)) {}
  DSCONV_HOST_DEVICE explicit operator float() const { return detail::half_bits_to_float(bits); }
  DSCONV_HOST_DEVICE static half from_bits(unsigned short b) {
    half h;
    h.bits = b;
    return h;
  }
};

struct alignas(2) bfloat16 {
  unsigned short bits;
  bfloat16() = default;
  DSCONV_HOST_DEVICE bfloat16(float f) : bits(detail::float_to_bfloat16_bits(f)) {}
  DSCONV_HOST_DEVICE explicit operator float() const { return detail::bfloat16_bits_to_float(bits); }
  DSCONV_HOST_DEVICE static bfloat16 from_bits(unsigned short b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(half) == 2 && sizeof(bfloat16) == 2, "16-bit storage types must be 2 bytes");

// Conversions of whole 32-bit words: the two 16-bit elements of `word` (the lower address in
// its low half, as a vector load leaves them) to floats, and two floats to such a word. A
// kernel that keeps 16-byte loads as words converts each half of a register in place (one
// instruction each on NVIDIA: no byte permutes to move a 16-bit element into a register of its
// own first), and packs two results with one conversion.
namespace detail {
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE void widen_word(unsigned word, float& lo, float& hi, const half*) {
#if defined(__CUDA_ARCH__)
  asm("{.reg .f16 l, h;\n mov.b32 {l, h}, %2;\n cvt.f32.f16 %0, l;\n cvt.f32.f16 %1, h;}"
      : "=f"(lo), "=f"(hi)
      : "r"(word));
#else
  lo = half_bits_to_float(static_cast<unsigned short>(word & 0xffffu));
  hi = half_bits_to_float(static_cast<unsigned short>(word >> 16));
#endif
}
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE void widen_word(unsigned word, float& lo, float& hi, const bfloat16*) {
  lo = bits_float(word << 16);
  hi = bits_float(word & 0xffff0000u);
}
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE unsigned narrow_word(float lo, float hi, const half*) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#elif defined(__CUDA_ARCH__)  // (the paired conversion needs sm_80)
  unsigned r;
  asm("{.reg .f16 l, h;\n cvt.rn.f16.f32 l, %1;\n cvt.rn.f16.f32 h, %2;\n mov.b32 %0, {l, h};}"
      : "=r"(r)
      : "f"(lo), "f"(hi));
  return r;
#else
  return static_cast<unsigned>(float_to_half_bits(lo)) | static_cast<unsigned>(float_to_half_bits(hi)) << 16;
#endif
}
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE unsigned narrow_word(float lo, float hi, const bfloat16*) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return static_cast<unsigned>(float_to_bfloat16_bits(lo)) | static_cast<unsigned>(float_to_bfloat16_bits(hi)) << 16;
#endif
}

// Two floats to a word with relu applied (Six: relu6, min(max(x, 0), 6)): the bits of narrowing
// the clamped floats (rounding keeps order, and 0 and 6 are exact), NaN kept. On sm_80 and newer
// the paired conversion's own relu, and for relu6 one packed NaN-keeping minimum with 6: one
// instruction per two outputs where clamping each float takes two.
template <bool Six>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE float relu_clamped(float x) {
  return x < 0.f ? 0.f : (Six && x > 6.f ? 6.f : x);
}
template <bool Six, class T>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE unsigned narrow_word_relu(float lo, float hi, const T* type) {
  static_assert(std::is_same<T, half>::value || std::is_same<T, bfloat16>::value, "a 16-bit element type");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  (void)type;
  unsigned r;
  if constexpr (std::is_same<T, half>::value) {
    asm("cvt.rn.relu.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    if (Six) asm("min.NaN.f16x2 %0, %0, %1;" : "+r"(r) : "r"(0x46004600u));  // 6.0 in both halves
  } else {
    asm("cvt.rn.relu.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    if (Six) asm("min.NaN.bf16x2 %0, %0, %1;" : "+r"(r) : "r"(0x40c040c0u));  // 6.0 in both halves
  }
  return r;
#else
  return narrow_word(relu_clamped<Six>(lo), relu_clamped<Six>(hi), type);
#endif
}

// Whether the target being compiled is an NVIDIA GPU of compute capability HalfArch / 10 or
// newer for half, Bf16Arch / 10 or newer for bfloat16 (false for other types and targets).
template <class T, int HalfArch, int Bf16Arch>
DSCONV_HOST_DEVICE constexpr bool nvidia_arch_for() {
#if defined(__CUDA_ARCH__)
  return std::is_same<T, half>::value ? __CUDA_ARCH__ >= HalfArch : std::is_same<T, bfloat16>::value && __CUDA_ARCH__ >= Bf16Arch;
#else
  return false;
#endif
}

// Whether clamp_gated_word runs packed for T on the target being compiled: half on sm_53 and
// newer, bfloat16 on sm_90 (its packed comparison and product need it).
template <class T>
DSCONV_HOST_DEVICE constexpr bool packed_gate() {
  return nvidia_arch_for<T, 530, 900>();
}

// A word of two 16-bit gradients times the clamp gate of the saved word at the same place (1
// where 0 < saved and not saved >= upper, else 0; upper: the bound in both halves, 6 for relu6,
// NaN for relu), packed where packed_gate<T>(): two comparisons that give 1 or 0 per half
// (the unordered less-than is true against NaN) and two products, two instructions per element
// where widening the saved word and gating each float take five. The same bits as gating the
// widened floats, since x * 1 and x * 0 are exact in either width.
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE unsigned clamp_gated_word(unsigned dy, unsigned saved, unsigned upper) {
  static_assert(packed_gate<T>(), "the packed gate: half on sm_53+, bfloat16 on sm_90+");
#if defined(__CUDA_ARCH__)
  unsigned open, below;
  if constexpr (std::is_same<T, half>::value) {
    asm("set.gt.f16x2.f16x2 %0, %1, %2;" : "=r"(open) : "r"(saved), "r"(0u));
    asm("set.ltu.f16x2.f16x2 %0, %1, %2;" : "=r"(below) : "r"(saved), "r"(upper));
    asm("mul.rn.f16x2 %0, %0, %1;" : "+r"(open) : "r"(below));
    asm("mul.rn.f16x2 %0, %0, %1;" : "+r"(dy) : "r"(open));
  } else {
    asm("set.gt.bf16x2.bf16x2 %0, %1, %2;" : "=r"(open) : "r"(saved), "r"(0u));
    asm("set.ltu.bf16x2.bf16x2 %0, %1, %2;" : "=r"(below) : "r"(saved), "r"(upper));
    asm("mul.rn.bf16x2 %0, %0, %1;" : "+r"(open) : "r"(below));
    asm("mul.rn.bf16x2 %0, %0, %1;" : "+r"(dy) : "r"(open));
  }
#endif
  return dy;
}

// Whether scaled_word runs packed for T on the target being compiled: half on sm_53 and newer,
// bfloat16 on sm_80 (its packed fused multiply-add).
template <class T>
DSCONV_HOST_DEVICE constexpr bool packed_scale() {
  return nvidia_arch_for<T, 530, 800>();
}

// A word of two 16-bit gradients times the saved word at the same place (the forward's act'(z)),
// one packed product where packed_scale<T>(): rounded once to T, the same bits as the widened
// floats' product rounded to T wherever that product is a normal float (two 16-bit
// significands' product is exact in a float). bfloat16's as a fused multiply-add of -0, which
// sm_80 has (its packed multiply needs sm_90): x y + (-0) is x y, signed zeros included. (On
// sm_80 the widened product had made the 16-bit 3x3 strips of nhwc_register spill.)
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE unsigned scaled_word(unsigned dy, unsigned saved) {
  static_assert(packed_scale<T>(), "the packed product: half on sm_53+, bfloat16 on sm_80+");
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same<T, half>::value)
    asm("mul.rn.f16x2 %0, %0, %1;" : "+r"(dy) : "r"(saved));
  else
    asm("fma.rn.bf16x2 %0, %0, %1, %2;" : "+r"(dy) : "r"(saved), "r"(0x80008000u));  // (-0 in both halves)
#else
  (void)saved;
#endif
  return dy;
}

}  // namespace detail

// Uniform conversions for kernels and the reference, which are written once for all types.
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE float to_float(float v) { return v; }
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE float to_float(half v) { return static_cast<float>(v); }
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE float to_float(bfloat16 v) { return static_cast<float>(v); }

template <class T>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE T from_float(float v) {
  return T(v);
}

}  // namespace dsconv
