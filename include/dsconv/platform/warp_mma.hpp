#pragma once
// Warp-wide matrix multiply-accumulate on tensor cores: D += A * B for one warp of 32 lanes,
// fp32 accumulation, with the per-lane fragment layout of PTX's mma.sync (PTX ISA, "Matrix
// fragments for mma.m16n8k16" and "mma.m16n8k8"). With g = lane / 4 and t = lane % 4:
//
//   mma_16x8x16<half | bfloat16>   A 16x16 (row-major), B 16x8 (k x n), 16-bit operands
//     a[0] = A[g][2t, 2t+1]    a[1] = A[g+8][2t, 2t+1]    a[2] = A[g][2t+8, 2t+9]    a[3] = A[g+8][2t+8, 2t+9]
//     b[0] = B[2t, 2t+1][g]    b[1] = B[2t+8, 2t+9][g]
//     (two elements per 32-bit register, the lower k in the low 16 bits)
//   mma_16x8x8_tf32                A 16x8, B 8x8, operands already rounded to tf32 (round_to_tf32)
//     a[0] = A[g][t]   a[1] = A[g+8][t]   a[2] = A[g][t+4]   a[3] = A[g+8][t+4]
//     b[0] = B[t][g]   b[1] = B[t+4][g]
//   mma_16x8x8_tf32_split          the same for operands split in two tf32 parts (A = a + a_small,
//     B = b + b_small: "3xTF32"): d += a_small b, then d += a b_small, then d += a b, three
//     instructions (the host platform's emulation exchanges both parts at one warp barrier)
//   mma_16x8x8_f16                 A 16x8, B 8x8, half operands (Turing's form)
//     a[0] = A[g][2t, 2t+1]    a[1] = A[g+8][2t, 2t+1]    b[0] = B[2t, 2t+1][g]
//   D (all)    d[0] = D[g][2t]   d[1] = D[g][2t+1]   d[2] = D[g+8][2t]   d[3] = D[g+8][2t+1]
//
// ldmatrix_x4<Trans>(r, row): loads the fragments of four 8x8 matrices of 16-bit elements
// (rows of 16 bytes, 16-byte aligned, in shared memory) in one warp-collective load: lanes
// 8i .. 8i + 7 pass the addresses of rows 0..7 of matrix i, and lane l receives in r[i]
// elements (g, 2t) and (g, 2t + 1) of matrix i, or with Trans (2t, g) and (2t + 1, g), the
// first in the low half: an A or B fragment of the products above (of tf32 too, whose
// elements are pairs of 16-bit halves, untransposed) without a load per register.
//
// movmatrix_trans(r): the transpose of an 8x8 matrix of 16-bit elements held a word a lane
// (lane l's r: row g, columns 2t and 2t + 1, the first in the low half, as a D fragment packed
// to 16 bits): lane l receives elements (2t, g) and (2t + 1, g).
//
// Every lane of the warp must call them (they are warp-collective). Available where
// device_properties::matrix provides() the form: matrix_unit::mma_sync (NVIDIA compute
// capability 8.0 and newer) all of them, matrix_unit::mma_sync_f16 (sm_75) the half ones, which
// it runs as m16n8k8 (mma_16x8x16<half> as two of them); the host platform emulates each
// device profile's unit at warp width 32 as a warp-collective operation with the same operand
// rounding, and faults where a GPU would trap. AMD GPUs do not have it (their matrix cores use
// other shapes and layouts: wave_mfma.hpp); there the call traps, and the dispatcher never
// chooses a kernel that makes it.

#include "../config.hpp"
#include "float16.hpp"
#include "launch_types.hpp"

#if defined(DSCONV_PLATFORM_HOST)
#include "host/warp_mma.hpp"
#else
#include "gpu/warp_mma.hpp"
#endif
