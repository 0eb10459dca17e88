#pragma once
// Wave-wide matrix multiply-accumulate on AMD matrix cores: D += A * B for one wave of 64
// lanes, fp32 accumulation, with the per-lane layouts of the MFMA instructions (AMD's
// CDNA2/CDNA3 ISA guides and matrix instruction calculator). With i = lane % 16, q = lane / 16:
//
//   mfma_16x16x16<half | bfloat16>   (v_mfma_f32_16x16x16f16, v_mfma_f32_16x16x16bf16_1k)
//     a[0] = A[i][4q, 4q+1]    a[1] = A[i][4q+2, 4q+3]      A 16x16 (m x k)
//     b[0] = B[4q, 4q+1][i]    b[1] = B[4q+2, 4q+3][i]      B 16x16 (k x n)
//     (two elements per 32-bit register, the lower k in the low 16 bits)
//   mfma_16x16x4_f32                 (v_mfma_f32_16x16x4f32: fp32 operands, fp32 products)
//     a = A[i][q]    b = B[q][i]                            A 16x4, B 4x16
//   D (both)   d[r] = D[4q + r][i]  r = 0..3                D 16x16 (m x n)
//
// gfx90a (MI200) flushes denormal half and bfloat16 operands to zero in these instructions
// (gfx94x does not); the host platform does the same, so the tests bound that error too.
//
// Every lane of the wave must call it (it is wave-collective). Available where
// device_properties::matrix is matrix_unit::mfma: gfx90a (CDNA2) and gfx94x (CDNA3), and the
// host platform at warp width 64, which performs it as a wave-collective operation. Older AMD
// GPUs (gfx906, and the DCUs derived from it) and NVIDIA GPUs lack it; there the call traps,
// and the dispatcher never chooses a kernel that makes it.

#include "../config.hpp"
#include "float16.hpp"

#if defined(DSCONV_PLATFORM_HOST)
#include "host/wave_mfma.hpp"
#else
#include "gpu/wave_mfma.hpp"
#endif
