#pragma once
// The wave matrix multiply-accumulate of ../wave_mfma.hpp on a GPU: the MFMA builtins on
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

template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void mfma_16x16x16(float (&d)[4], const unsigned (&a)[2], const unsigned (&b)[2]) {
  static_assert(sizeof(T) == 2, "mfma_16x16x16 takes half or bfloat16 operands");
#if defined(DSCONV_HAS_WAVE_MFMA)
  using f32x4 = float __attribute__((ext_vector_type(4)));
  f32x4 acc = {d[0], d[1], d[2], d[3]};
  if constexpr (std::is_same<T, half>::value) {
    using f16x4 = _Float16 __attribute__((ext_vector_type(4)));
    f16x4 av, bv;
    __builtin_memcpy(&av, a, sizeof av);
    __builtin_memcpy(&bv, b, sizeof bv);
    acc = __builtin_amdgcn_mfma_f32_16x16x16f16(av, bv, acc, 0, 0, 0);
  } else {
    using bf16x4 = short __attribute__((ext_vector_type(4)));  // the builtin takes bf16 bits as shorts
    bf16x4 av, bv;
    __builtin_memcpy(&av, a, sizeof av);
    __builtin_memcpy(&bv, b, sizeof bv);
    acc = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(av, bv, acc, 0, 0, 0);
  }
  d[0] = acc[0], d[1] = acc[1], d[2] = acc[2], d[3] = acc[3];
#else
  (void)d, (void)a, (void)b;
  gpu_detail::no_matrix_unit();
#endif
}

}  // namespace platform
}  // namespace dsconv
