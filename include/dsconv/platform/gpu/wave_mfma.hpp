#pragma once
// The wave matrix multiply-accumulates of ../wave_mfma.hpp on a GPU: the MFMA builtins on
// gfx90a and gfx94x; a trap elsewhere, where the dispatcher never launches a kernel that
// calls it.

#include <type_traits>

#include "../../config.hpp"
#include "../float16.hpp"
#include "warp_mma.hpp"

namespace dsconv {
namespace platform {

#if defined(__HIP_DEVICE_COMPILE__) && \
    (defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__))
#define DSCONV_HAS_WAVE_MFMA 1
#endif

#if defined(DSCONV_HAS_WAVE_MFMA)
namespace gpu_detail {
using f32x4 = float __attribute__((ext_vector_type(4)));
using f16x4 = _Float16 __attribute__((ext_vector_type(4)));
using bf16x4 = short __attribute__((ext_vector_type(4)));  // the bf16 builtin takes the bits as shorts

// Runs mfma(accumulator vector) on d, the builtins' accumulator being a vector of four floats.
template <class Mfma>
DSCONV_DEVICE DSCONV_FORCEINLINE void on_accumulators(float (&d)[4], Mfma mfma) {
  f32x4 acc = {d[0], d[1], d[2], d[3]};
  acc = mfma(acc);
  d[0] = acc[0], d[1] = acc[1], d[2] = acc[2], d[3] = acc[3];
}

// Two fragment registers as the builtins' four-element operand vector V.
template <class V>
DSCONV_DEVICE DSCONV_FORCEINLINE V operand(const unsigned (&regs)[2]) {
  V v;
  __builtin_memcpy(&v, regs, sizeof v);
  return v;
}
}  // namespace gpu_detail
#endif

template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void mfma_16x16x16(float (&d)[4], const unsigned (&a)[2], const unsigned (&b)[2]) {
  static_assert(sizeof(T) == 2, "mfma_16x16x16 takes half or bfloat16 operands");
#if defined(DSCONV_HAS_WAVE_MFMA)
  namespace gd = gpu_detail;
  gd::on_accumulators(d, [&](gd::f32x4 acc) {
    if constexpr (std::is_same<T, half>::value)
      return __builtin_amdgcn_mfma_f32_16x16x16f16(gd::operand<gd::f16x4>(a), gd::operand<gd::f16x4>(b), acc, 0, 0, 0);
    else
      return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(gd::operand<gd::bf16x4>(a), gd::operand<gd::bf16x4>(b), acc, 0,
                                                       0, 0);
  });
#else
  (void)d, (void)a, (void)b;
  gpu_detail::no_matrix_unit();
#endif
}

DSCONV_DEVICE DSCONV_FORCEINLINE void mfma_16x16x4_f32(float (&d)[4], float a, float b) {
#if defined(DSCONV_HAS_WAVE_MFMA)
  gpu_detail::on_accumulators(
      d, [&](gpu_detail::f32x4 acc) { return __builtin_amdgcn_mfma_f32_16x16x4f32(a, b, acc, 0, 0, 0); });
#else
  (void)d, (void)a, (void)b;
  gpu_detail::no_matrix_unit();
#endif
}

}  // namespace platform
}  // namespace dsconv
