#pragma once
// The warp matrix multiply-accumulate of ../warp_mma.hpp on a GPU: mma.sync on NVIDIA
// sm_80 and newer; on sm_75 its f16 form (m16n8k8); a trap elsewhere (bf16 and tf32 on
// sm_75, older NVIDIA targets, AMD), where the dispatcher never launches a kernel that calls
// it.

#include <type_traits>

#include "../../config.hpp"
#include "../float16.hpp"

namespace dsconv {
namespace platform {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define DSCONV_HAS_WARP_MMA 1
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
#define DSCONV_HAS_WARP_MMA_F16 1
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

DSCONV_DEVICE DSCONV_FORCEINLINE void mma_16x8x8_f16(float (&d)[4], const unsigned (&a)[2], const unsigned (&b)[1]) {
#if defined(DSCONV_HAS_WARP_MMA_F16)
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(b[0]));
#else
  (void)d, (void)a, (void)b;
  gpu_detail::no_matrix_unit();
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
#elif defined(DSCONV_HAS_WARP_MMA_F16)
  if constexpr (std::is_same<T, half>::value) {  // Turing: k = 0..7, then k = 8..15
    const unsigned lo[2] = {a[0], a[1]}, hi[2] = {a[2], a[3]}, b_lo[1] = {b[0]}, b_hi[1] = {b[1]};
    mma_16x8x8_f16(d, lo, b_lo);
    mma_16x8x8_f16(d, hi, b_hi);
  } else {
    (void)d, (void)a, (void)b;
    gpu_detail::no_matrix_unit();
  }
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

// (../warp_mma.hpp: three products, one after another into d.)
DSCONV_DEVICE DSCONV_FORCEINLINE void mma_16x8x8_tf32_split(float (&d)[4], const unsigned (&a)[4],
                                                            const unsigned (&a_small)[4], const unsigned (&b)[2],
                                                            const unsigned (&b_small)[2]) {
  mma_16x8x8_tf32(d, a_small, b);
  mma_16x8x8_tf32(d, a, b_small);
  mma_16x8x8_tf32(d, a, b);
}

#undef DSCONV_MMA_SYNC

template <bool Trans>
DSCONV_DEVICE DSCONV_FORCEINLINE void ldmatrix_x4(unsigned (&r)[4], const void* row) {
#if defined(DSCONV_HAS_WARP_MMA_F16)
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  if constexpr (Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
#else
  (void)r, (void)row;
  gpu_detail::no_matrix_unit();
#endif
}

DSCONV_DEVICE DSCONV_FORCEINLINE unsigned movmatrix_trans(unsigned r) {
#if defined(DSCONV_HAS_WARP_MMA_F16)
  unsigned d;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(d) : "r"(r));
  return d;
#else
  (void)r;
  gpu_detail::no_matrix_unit();
  return 0;
#endif
}

}  // namespace platform
}  // namespace dsconv
