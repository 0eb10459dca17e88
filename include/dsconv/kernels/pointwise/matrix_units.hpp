#pragma once
// The matrix units as the tensor-core GEMM (gemm_mma.hpp) uses them. Both of its
// shared-memory tiles hold their operand k-contiguous, A as rows m and B as rows n, LD
// elements apart. A unit says how a warp loads its fragments of one tile_m x tile_n x k_step
// product from there and multiplies them, and which elements of C a lane's accumulators are:
// accumulators r .. r + run - 1 (r a multiple of run) are consecutive columns of one row,
// which the epilogue stores as one vector.

#include <type_traits>

#include "../../config.hpp"
#include "../../platform/platform.hpp"

namespace dsconv {
namespace kernels {

namespace detail_units {
// Two consecutive 16-bit elements of shared memory (the lower k first, 4-byte aligned) as
// one fragment register.
template <class S>
DSCONV_DEVICE DSCONV_FORCEINLINE unsigned pair(const S* p) {
  return platform::shared_load_as<unsigned>(p);
}
// A float of shared memory as a fragment register.
DSCONV_DEVICE DSCONV_FORCEINLINE unsigned word(const float* p) { return detail::float_bits(platform::shared_load(p)); }
}  // namespace detail_units

// NVIDIA tensor cores, mma.sync (platform/warp_mma.hpp): 16x8 tiles; half and bfloat16 with
// k = 16, float rounded to tf32 with k = 8.
struct mma_sync_unit {
  static constexpr platform::matrix_unit kind = platform::matrix_unit::mma_sync;
  static constexpr int lanes = platform::mma_warp_lanes;
  static constexpr int tile_m = 16, tile_n = 8, accumulators = 4, run = 2;
  // Accumulator r of a lane: D[g + 8 * (r / 2)][2t + r % 2] with g = lane / 4, t = lane % 4.
  static DSCONV_DEVICE DSCONV_FORCEINLINE int row(int lane, int r) { return lane / 4 + (r >= 2 ? 8 : 0); }
  static DSCONV_DEVICE DSCONV_FORCEINLINE int col(int lane, int r) { return 2 * (lane % 4) + (r & 1); }

  template <class T>
  struct op {  // half, bfloat16: m16n8k16
    using stage = T;
    static constexpr int k_step = 16, a_regs = 4, b_regs = 2;
    static DSCONV_DEVICE DSCONV_FORCEINLINE T convert(T v) { return v; }
    // a[0] = A[g][2t, 2t+1], a[1] = A[g+8][..], a[2] = A[g][2t+8, 2t+9], a[3] = A[g+8][..]
    template <int LD>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void load_a(unsigned (&f)[4], const T* rows, int lane, int k0) {
      const T* lo = rows + (lane / 4) * LD + k0 + 2 * (lane % 4);
      const T* hi = lo + 8 * LD;
      f[0] = detail_units::pair(lo), f[1] = detail_units::pair(hi);
      f[2] = detail_units::pair(lo + 8), f[3] = detail_units::pair(hi + 8);
    }
    // b[0] = B[2t, 2t+1][g], b[1] = B[2t+8, 2t+9][g]: row g of the n-major tile
    template <int LD>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void load_b(unsigned (&f)[2], const T* cols, int lane, int k0) {
      const T* c = cols + (lane / 4) * LD + k0 + 2 * (lane % 4);
      f[0] = detail_units::pair(c), f[1] = detail_units::pair(c + 8);
    }
    static DSCONV_DEVICE DSCONV_FORCEINLINE void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
      platform::mma_16x8x16<T>(d, a, b);
    }
  };
};

template <>
struct mma_sync_unit::op<float> {  // tf32: m16n8k8, operands rounded once when staged
  using stage = float;
  static constexpr int k_step = 8, a_regs = 4, b_regs = 2;
  static DSCONV_DEVICE DSCONV_FORCEINLINE float convert(float v) { return platform::round_to_tf32(v); }
  // a[0] = A[g][t], a[1] = A[g+8][t], a[2] = A[g][t+4], a[3] = A[g+8][t+4]
  template <int LD>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void load_a(unsigned (&f)[4], const float* rows, int lane, int k0) {
    const float* lo = rows + (lane / 4) * LD + k0 + lane % 4;
    f[0] = detail_units::word(lo), f[1] = detail_units::word(lo + 8 * LD);
    f[2] = detail_units::word(lo + 4), f[3] = detail_units::word(lo + 8 * LD + 4);
  }
  // b[0] = B[t][g], b[1] = B[t+4][g]
  template <int LD>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void load_b(unsigned (&f)[2], const float* cols, int lane, int k0) {
    const float* c = cols + (lane / 4) * LD + k0 + lane % 4;
    f[0] = detail_units::word(c), f[1] = detail_units::word(c + 4);
  }
  static DSCONV_DEVICE DSCONV_FORCEINLINE void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    platform::mma_16x8x8_tf32(d, a, b);
  }
};

// AMD matrix cores, MFMA (platform/wave_mfma.hpp): 16x16 tiles; half and bfloat16 with
// k = 16, float with k = 4 (fp32 products and sums, so float stays fp32). The product runs
// transposed, C^T = B^T A^T, so that a lane's four accumulators are four consecutive columns
// of one row of C (one vector store) rather than four rows; the instructions' layouts make
// both fragments the same load: row lane % 16 of the tile, k = 4q .. 4q + 3 (16-bit types) or
// k = q (float) with q = lane / 16.
struct mfma_unit {
  static constexpr platform::matrix_unit kind = platform::matrix_unit::mfma;
  static constexpr int lanes = platform::mfma_wave_lanes;
  static constexpr int tile_m = 16, tile_n = 16, accumulators = 4, run = 4;
  // Accumulator r of a lane: C[lane % 16][4q + r].
  static DSCONV_DEVICE DSCONV_FORCEINLINE int row(int lane, int) { return lane % 16; }
  static DSCONV_DEVICE DSCONV_FORCEINLINE int col(int lane, int r) { return 4 * (lane / 16) + r; }

  template <class T>
  struct op {
    using stage = T;
    static constexpr int k_step = 16, a_regs = 2, b_regs = 2;
    static DSCONV_DEVICE DSCONV_FORCEINLINE T convert(T v) { return v; }
    template <int LD>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void load_a(unsigned (&f)[2], const T* rows, int lane, int k0) {
      const T* p = rows + (lane % 16) * LD + k0 + 4 * (lane / 16);
      f[0] = detail_units::pair(p), f[1] = detail_units::pair(p + 2);
    }
    template <int LD>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void load_b(unsigned (&f)[2], const T* cols, int lane, int k0) {
      load_a<LD>(f, cols, lane, k0);
    }
    // B^T is the instruction's A operand, A^T its B.
    static DSCONV_DEVICE DSCONV_FORCEINLINE void mma(float (&d)[4], const unsigned (&a)[2], const unsigned (&b)[2]) {
      platform::mfma_16x16x16<T>(d, b, a);
    }
  };
};

template <>
struct mfma_unit::op<float> {
  using stage = float;
  static constexpr int k_step = 4, a_regs = 1, b_regs = 1;
  static DSCONV_DEVICE DSCONV_FORCEINLINE float convert(float v) { return v; }
  template <int LD>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void load_a(unsigned (&f)[1], const float* rows, int lane, int k0) {
    f[0] = detail_units::word(rows + (lane % 16) * LD + k0 + lane / 16);
  }
  template <int LD>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void load_b(unsigned (&f)[1], const float* cols, int lane, int k0) {
    load_a<LD>(f, cols, lane, k0);
  }
  static DSCONV_DEVICE DSCONV_FORCEINLINE void mma(float (&d)[4], const unsigned (&a)[1], const unsigned (&b)[1]) {
    platform::mfma_16x16x4_f32(d, detail::bits_float(b[0]), detail::bits_float(a[0]));
  }
};

}  // namespace kernels
}  // namespace dsconv
