#pragma once
// The matrix units as the tensor-core GEMM (gemm_mma.hpp) uses them. A unit says how its
// shared tiles are swizzled (mma_shared_tiles.hpp), how a warp loads its fragments of one
// tile_m x tile_n product over a K stage from them and multiplies them, and which elements of
// C a lane's accumulators are: accumulators r .. r + run - 1 (r a multiple of run) are
// consecutive columns of one row, which the epilogue stores as one vector.

#include <type_traits>

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "mma_shared_tiles.hpp"

namespace dsconv {
namespace kernels {

namespace detail_units {
// Two 16-bit elements of shared memory as one fragment register, the first in the low half:
// one 32-bit load where they are adjacent (lo + 1 == hi), two loads otherwise.
template <class S>
DSCONV_DEVICE DSCONV_FORCEINLINE unsigned pair(const S* lo) {
  return platform::shared_load_as<unsigned>(lo);
}
template <class S>
DSCONV_DEVICE DSCONV_FORCEINLINE unsigned pair(const S* lo, const S* hi) {
  return static_cast<unsigned>(platform::shared_load(lo).bits) |
         static_cast<unsigned>(platform::shared_load(hi).bits) << 16;
}
// A float of shared memory as a fragment register.
DSCONV_DEVICE DSCONV_FORCEINLINE unsigned word(const float* p) { return detail::float_bits(platform::shared_load(p)); }
// Eight bytes of shared memory (two consecutive 16-bit pairs, or two floats) as two fragment
// registers, in one 64-bit load.
template <class S>
DSCONV_DEVICE DSCONV_FORCEINLINE void two_words(unsigned (&f)[2], const S* p) {
  const auto w = platform::shared_load_as<platform::vec<unsigned, 2>>(p);
  f[0] = w[0], f[1] = w[1];
}
}  // namespace detail_units

// A unit's op<T> loads the fragments of one K stage (32 bytes of operand per row, BK elements)
// from the shared tiles of mma_shared_tiles.hpp: load_a from A's k_rows, load_b from B's
// k_rows or n_rows, starting at tile row (A: m, B: n) row0; mma multiplies them.

// NVIDIA tensor cores, mma.sync (platform/warp_mma.hpp): 16x8 tiles; half and bfloat16 with
// k = 16, float rounded to tf32 with k = 8 (either is one stage).
struct mma_sync_unit {
  static constexpr platform::matrix_unit kind = platform::matrix_unit::mma_sync;
  static constexpr int lanes = platform::mma_warp_lanes;
  static constexpr int tile_m = 16, tile_n = 8, accumulators = 4, run = 2;
  // Accumulator r of a lane: D[g + 8 * (r / 2)][2t + r % 2] with g = lane / 4, t = lane % 4.
  static DSCONV_DEVICE DSCONV_FORCEINLINE int row(int lane, int r) { return lane / 4 + (r >= 2 ? 8 : 0); }
  static DSCONV_DEVICE DSCONV_FORCEINLINE int col(int lane, int r) { return 2 * (lane % 4) + (r & 1); }
  // k_rows: rows 4..7 of every 8 swap their 16-byte halves (a fragment load reads 16 bytes of
  // 8 consecutive rows).
  static DSCONV_DEVICE DSCONV_FORCEINLINE int swizzle(int r) { return ((r >> 2) & 1) << 1; }

  template <class T>
  struct op {  // half, bfloat16: m16n8k16
    using stage = T;
    static constexpr int a_regs = 4, b_regs = 2;
    static DSCONV_DEVICE DSCONV_FORCEINLINE T convert(T v) { return v; }
    // a[0] = A[g][2t, 2t+1], a[1] = A[g+8][..], a[2] = A[g][2t+8, 2t+9], a[3] = A[g+8][..]
    template <class Tile>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void load_a(unsigned (&f)[4], const Tile& a, int row0, int lane) {
      const int g = row0 + lane / 4, k = 2 * (lane % 4);
      f[0] = detail_units::pair(a.at(g, k)), f[1] = detail_units::pair(a.at(g + 8, k));
      f[2] = detail_units::pair(a.at(g, k + 8)), f[3] = detail_units::pair(a.at(g + 8, k + 8));
    }
    // b[0] = B[2t, 2t+1][g], b[1] = B[2t+8, 2t+9][g]: from row g of k_rows, or from column g of
    // n_rows.
    template <int ROWS>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void load_b(unsigned (&f)[2], const k_rows<T, ROWS, mma_sync_unit>& b,
                                                        int row0, int lane) {
      const int n = row0 + lane / 4, k = 2 * (lane % 4);
      f[0] = detail_units::pair(b.at(n, k)), f[1] = detail_units::pair(b.at(n, k + 8));
    }
    template <int K, int N>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void load_b(unsigned (&f)[2], const n_rows<T, K, N>& b, int row0, int lane) {
      const int n = row0 + lane / 4, k = 2 * (lane % 4);
      f[0] = detail_units::pair(b.at(k, n), b.at(k + 1, n)), f[1] = detail_units::pair(b.at(k + 8, n), b.at(k + 9, n));
    }
    static DSCONV_DEVICE DSCONV_FORCEINLINE void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
      platform::mma_16x8x16<T>(d, a, b);
    }
  };
};

template <>
struct mma_sync_unit::op<float> {  // tf32: m16n8k8, operands rounded once when staged
  using stage = float;
  static constexpr int a_regs = 4, b_regs = 2;
  static DSCONV_DEVICE DSCONV_FORCEINLINE float convert(float v) { return platform::round_to_tf32(v); }
  // a[0] = A[g][t], a[1] = A[g+8][t], a[2] = A[g][t+4], a[3] = A[g+8][t+4]
  template <class Tile>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void load_a(unsigned (&f)[4], const Tile& a, int row0, int lane) {
    const int g = row0 + lane / 4, k = lane % 4;
    f[0] = detail_units::word(a.at(g, k)), f[1] = detail_units::word(a.at(g + 8, k));
    f[2] = detail_units::word(a.at(g, k + 4)), f[3] = detail_units::word(a.at(g + 8, k + 4));
  }
  // b[0] = B[t][g], b[1] = B[t+4][g]
  template <int ROWS>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void load_b(unsigned (&f)[2], const k_rows<float, ROWS, mma_sync_unit>& b,
                                                      int row0, int lane) {
    const int n = row0 + lane / 4, k = lane % 4;
    f[0] = detail_units::word(b.at(n, k)), f[1] = detail_units::word(b.at(n, k + 4));
  }
  template <int K, int N>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void load_b(unsigned (&f)[2], const n_rows<float, K, N>& b, int row0, int lane) {
    const int n = row0 + lane / 4, k = lane % 4;
    f[0] = detail_units::word(b.at(k, n)), f[1] = detail_units::word(b.at(k + 4, n));
  }
  static DSCONV_DEVICE DSCONV_FORCEINLINE void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    platform::mma_16x8x8_tf32(d, a, b);
  }
};

// AMD matrix cores, MFMA (platform/wave_mfma.hpp): 16x16 tiles; half and bfloat16 with
// k = 16 (one stage), float with k = 4 (two per stage, fp32 products and sums, so float stays
// fp32). The product runs transposed, C^T = B^T A^T, so that a lane's four accumulators are
// four consecutive columns of one row of C (one vector store) rather than four rows; the
// instructions' layouts then make both fragments the same: row lane % 16 of the tile, 8 bytes
// from k = 4q (16-bit types) or k = 2q (float, whose two instructions take k = 2q and
// 2q + 1: each sums every k of the stage once) with q = lane / 16.
struct mfma_unit {
  static constexpr platform::matrix_unit kind = platform::matrix_unit::mfma;
  static constexpr int lanes = platform::mfma_wave_lanes;
  static constexpr int tile_m = 16, tile_n = 16, accumulators = 4, run = 4;
  // Accumulator r of a lane: C[lane % 16][4q + r].
  static DSCONV_DEVICE DSCONV_FORCEINLINE int row(int lane, int) { return lane % 16; }
  static DSCONV_DEVICE DSCONV_FORCEINLINE int col(int lane, int r) { return 4 * (lane / 16) + r; }
  // k_rows: the 8-byte units of rows 4j .. 4j+3 rotated by j (a fragment load reads 8 bytes of
  // 16 consecutive rows).
  static DSCONV_DEVICE DSCONV_FORCEINLINE int swizzle(int r) { return (r >> 2) & 3; }

  template <class T>
  struct op {
    using stage = T;
    static constexpr int a_regs = 2, b_regs = 2;
    static DSCONV_DEVICE DSCONV_FORCEINLINE T convert(T v) { return v; }
    template <class Tile>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void load_a(unsigned (&f)[2], const Tile& a, int row0, int lane) {
      detail_units::two_words(f, a.at(row0 + lane % 16, 4 * (lane / 16)));
    }
    template <int ROWS>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void load_b(unsigned (&f)[2], const k_rows<T, ROWS, mfma_unit>& b, int row0,
                                                        int lane) {
      load_a(f, b, row0, lane);
    }
    template <int K, int N>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void load_b(unsigned (&f)[2], const n_rows<T, K, N>& b, int row0, int lane) {
      const int n = row0 + lane % 16, k = 4 * (lane / 16);
      f[0] = detail_units::pair(b.at(k, n), b.at(k + 1, n)), f[1] = detail_units::pair(b.at(k + 2, n), b.at(k + 3, n));
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
  static constexpr int a_regs = 2, b_regs = 2;
  static DSCONV_DEVICE DSCONV_FORCEINLINE float convert(float v) { return v; }
  template <class Tile>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void load_a(unsigned (&f)[2], const Tile& a, int row0, int lane) {
    detail_units::two_words(f, a.at(row0 + lane % 16, 2 * (lane / 16)));
  }
  template <int ROWS>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void load_b(unsigned (&f)[2], const k_rows<float, ROWS, mfma_unit>& b,
                                                      int row0, int lane) {
    load_a(f, b, row0, lane);
  }
  template <int K, int N>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void load_b(unsigned (&f)[2], const n_rows<float, K, N>& b, int row0, int lane) {
    const int n = row0 + lane % 16, k = 2 * (lane / 16);
    f[0] = detail_units::word(b.at(k, n)), f[1] = detail_units::word(b.at(k + 1, n));
  }
  static DSCONV_DEVICE DSCONV_FORCEINLINE void mma(float (&d)[4], const unsigned (&a)[2], const unsigned (&b)[2]) {
    platform::mfma_16x16x4_f32(d, detail::bits_float(b[0]), detail::bits_float(a[0]));
    platform::mfma_16x16x4_f32(d, detail::bits_float(b[1]), detail::bits_float(a[1]));
  }
};

}  // namespace kernels
}  // namespace dsconv
