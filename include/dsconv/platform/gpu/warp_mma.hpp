#pragma once
// The warp matrix multiply-accumulate of ../warp_mma.hpp on a GPU: mma.sync on NVIDIA
// sm_80 and newer; a trap elsewhere (older NVIDIA targets, AMD), where the dispatcher never
// launches a kernel that calls it.

#include <type_traits>

#include "../../config.hpp"
#include "../float16.hpp"

namespace dsconv {
namespace platform {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define DSCONV_HAS_WARP_MMA 1
#endif

namespace gpu_detail {
// Where the instruction does not exist; the dispatcher never launches a kernel that gets here.
DSCONV_DEVICE DSCONV_FORCEINLINE void no_matrix_unit() {
#if defined(DSCONV_PLATFORM_CUDA)
  __trap();
#else
  __builtin_trap();
#endif
}
}  // namespace gpu_detail

// D += A * B with four fp32 accumulators d, four A registers a and two B registers b.
#define DSCONV_MMA_SYNC(shape, type)                                                                          \
  asm volatile("mma.sync.aligned." shape ".row.col.f32." type "." type                                      \
               ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"                               \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                              \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))

// Rounds to the nearest tf32 value (10 mantissa bits), ties away from zero as cvt.rna does.
DSCONV_DEVICE DSCONV_FORCEINLINE float round_to_tf32(float x) {
#if defined(DSCONV_HAS_WARP_MMA)
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
#else
  return detail::round_to_tf32_soft(x);
#endif
}

template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void mma_16x8x16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  static_assert(sizeof(T) == 2, "mma_16x8x16 takes half or bfloat16 operands");
#if defined(DSCONV_HAS_WARP_MMA)
  if constexpr (std::is_same<T, half>::value)
    DSCONV_MMA_SYNC("m16n8k16", "f16");
  else
    DSCONV_MMA_SYNC("m16n8k16", "bf16");
#else
  (void)d, (void)a, (void)b;
  gpu_detail::no_matrix_unit();
#endif
}

DSCONV_DEVICE DSCONV_FORCEINLINE void mma_16x8x8_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if defined(DSCONV_HAS_WARP_MMA)
  DSCONV_MMA_SYNC("m16n8k8", "tf32");
#else
  (void)d, (void)a, (void)b;
  gpu_detail::no_matrix_unit();
#endif
}

#undef DSCONV_MMA_SYNC

}  // namespace platform
}  // namespace dsconv
