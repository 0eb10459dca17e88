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
// Two 16-bit elements of shared memory as one fragment register, the first in the low half.
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
// acc[i][j] += A_i B_j, each pair of the warp's tiles by one Op::mma.
template <class Op, int MI, int NI, int ACC, int AR, int BR>
DSCONV_DEVICE DSCONV_FORCEINLINE void each_product(float (&acc)[MI][NI][ACC], const unsigned (&a)[MI][AR],
                                                   const unsigned (&b)[NI][BR]) {
  DSCONV_UNROLL
  for (int i = 0; i < MI; ++i)
    DSCONV_UNROLL
    for (int j = 0; j < NI; ++j) Op::mma(acc[i][j], a[i], b[j]);
}
}  // namespace detail_units

// A unit's op<T> loads a warp's fragments of one K step (32 bytes of operand per row, from
// the tile's k0 on) from the shared tiles of mma_shared_tiles.hpp: load_a those of its MI tiles of A
// from A's k_rows, load_b those of its NI tiles of B from B's k_rows or n_rows, the first at
// tile row (A: m, B: n) row0; mma multiplies one pair. async_stages: how many K stages the
// GEMM keeps in flight where it copies them asynchronously (2: it stages through registers).

// NVIDIA tensor cores, mma.sync (platform/warp_mma.hpp): 16x8 tiles; half and bfloat16 with
// k = 16 (on sm_75, half only, as two k = 8 instructions), float rounded to tf32 with k = 8
// (either is one stage). Fragments come from shared memory by ldmatrix, four 8x8 matrices of
// 16-byte rows a load (for tf32, an 8x8 matrix of 16-bit halves is 8 rows x 4 floats), except
// tf32 B from n_rows, which would need a 32-bit transposition.
struct mma_sync_unit {
  // Turing's tensor cores (mma_sync_f16) run the half products; bf16 and tf32 need sm_80's.
  template <class T>
  static constexpr platform::matrix_unit needs =
      std::is_same<T, half>::value ? platform::matrix_unit::mma_sync_f16 : platform::matrix_unit::mma_sync;
  static constexpr int lanes = platform::mma_warp_lanes;
  static constexpr int tile_m = 16, tile_n = 8, accumulators = 4, run = 2;
  static constexpr int async_stages = 4;
  // Accumulator r of a lane: D[g + 8 * (r / 2)][2t + r % 2] with g = lane / 4, t = lane % 4.
  static DSCONV_DEVICE DSCONV_FORCEINLINE int row(int lane, int r) { return lane / 4 + (r >= 2 ? 8 : 0); }
  static DSCONV_DEVICE DSCONV_FORCEINLINE int col(int lane, int r) { return 2 * (lane % 4) + (r & 1); }
  // k_rows (an 8x8 matrix of ldmatrix is 16 bytes of 8 consecutive rows; 16-byte runs stay
  // whole, as asynchronous copies need): 32-byte rows, rows 4..7 of every 8 swap their 16-byte
  // halves; 64-byte rows, the 16-byte quarter q of row r goes to q ^ (r / 2 % 4), which puts
  // the 8 rows of a matrix, two to a 128-byte line, in 8 distinct quarters of those lines.
  // Either repeats every 8 rows (the fragment loads address tiles 16 rows apart from one lane
  // address).
  template <int RowBytes = 32>
  static DSCONV_DEVICE DSCONV_FORCEINLINE int swizzle(int r) {
    static_assert(RowBytes == 32 || RowBytes == 64, "k_rows of 32 or 64 bytes");
    return RowBytes == 32 ? ((r >> 2) & 1) << 1 : ((r >> 1) & 3) << 1;
  }

  // half and bfloat16: m16n8k16. float: tf32 m16n8k8 (products: rounded to tf32, or split
  // into two tf32 parts, after the fragments leave shared memory, where they are staged as
  // they arrive so that copies need not pass through registers); ldmatrix reads its 8x8 matrix
  // of 16-bit halves as 8 rows x 4 floats, so the A and k_rows B fragments load as for 16-bit
  // types: a[0] = A[g][t], a[1] = A[g+8][t], a[2] = A[g][t+4], a[3] = A[g+8][t+4],
  // b[0] = B[t][g], b[1] = B[t+4][g].
  template <class T>
  struct op {
    static constexpr int a_regs = 4, b_regs = 2;
    static constexpr int half_stage = 16 / static_cast<int>(sizeof(T));  // elements in 16 bytes: one k-half of a stage
    // A: matrices (rows 0-7, k-half 0), (rows 8-15, k-half 0), (rows 0-7, k-half 1), (rows
    // 8-15, k-half 1) of each 16-row tile are a[0..3]: lane l names row l % 8 + 8 * (l / 8 % 2)
    // of k-half l / 16.
    template <int MI, class Tile>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void load_a(unsigned (&f)[MI][4], const Tile& a, int row0, int lane) {
      // (tile i 16 rows further: the swizzles repeat every 8 or 16 rows, so one lane address)
      const auto* p = a.at(row0 + lane % 8 + 8 * (lane / 8 % 2), half_stage * (lane / 16));
      DSCONV_UNROLL
      for (int i = 0; i < MI; ++i) platform::ldmatrix_x4<false>(f[i], p + 16 * i * Tile::row_elements);
    }
    // A from n_rows (rows k, contiguous along m: the backward GEMMs whose A is W^T or dz^T).
    // 16-bit types: the same four matrices transposed, k rows 0-7 / 8-15 of 8 m-columns each:
    // lane l names k row l % 8 + 8 * (l / 16) at m column 8 * (l / 8 % 2). float: a float per
    // register, a[0..3] = A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4].
    template <int MI, int K, int M>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void load_a(unsigned (&f)[MI][4], const n_rows<T, K, M>& a, int row0, int lane) {
      [[maybe_unused]] const T* p = a.at(lane % 8 + 8 * (lane / 16), row0 + 8 * (lane / 8 % 2));
      DSCONV_UNROLL
      for (int i = 0; i < MI; ++i) {
        if constexpr (sizeof(T) == 2) {
          platform::ldmatrix_x4<true>(f[i], p + 16 * i);
        } else {
          const int m = row0 + 16 * i + lane / 4, k = lane % 4;
          f[i][0] = detail_units::word(a.at(k, m)), f[i][1] = detail_units::word(a.at(k, m + 8));
          f[i][2] = detail_units::word(a.at(k + 4, m)), f[i][3] = detail_units::word(a.at(k + 4, m + 8));
          }
      }
    }
    // B from k_rows (rows n): matrices (n 0-7, k-half 0), (n 0-7, k-half 1) are b[0..1] of one
    // 8-column tile, the next two those of the next tile: lane l names row l % 8 + 8 * (l / 16)
    // of k-half l / 8 % 2.
    template <int NI, int ROWS, int RowBytes>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void load_b(unsigned (&f)[NI][2], const k_rows<T, ROWS, mma_sync_unit, RowBytes>& b,
                                                        int row0, int lane) {
      static_assert(NI % 2 == 0, "B tiles load in pairs");
      const T* p = b.at(row0 + lane % 8 + 8 * (lane / 16), half_stage * (lane / 8 % 2));
      DSCONV_UNROLL
      for (int j = 0; j < NI; j += 2) {
        unsigned r[4];
        platform::ldmatrix_x4<false>(r, p + 8 * j * b.row_elements);
        f[j][0] = r[0], f[j][1] = r[1], f[j + 1][0] = r[2], f[j + 1][1] = r[3];
      }
    }
    // B from n_rows (rows k). 16-bit types: the same matrices transposed, k rows 0-7 / 8-15 of
    // 8 columns each: lane l names k row l % 8 + 8 * (l / 8 % 2) at column 8 * (l / 16). float
    // (which would need a 32-bit transposition): a float per register.
    template <int NI, int K, int N>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void load_b(unsigned (&f)[NI][2], const n_rows<T, K, N>& b, int row0, int lane) {
      static_assert(NI % 2 == 0, "B tiles load in pairs");
      [[maybe_unused]] const T* p = b.at(lane % 8 + 8 * (lane / 8 % 2), row0 + 8 * (lane / 16));
      DSCONV_UNROLL
      for (int j = 0; j < NI; j += 2) {
        if constexpr (sizeof(T) == 2) {
          unsigned r[4];
          platform::ldmatrix_x4<true>(r, p + 8 * j);
          f[j][0] = r[0], f[j][1] = r[1], f[j + 1][0] = r[2], f[j + 1][1] = r[3];
        } else {
          DSCONV_UNROLL
          for (int jj = j; jj < j + 2; ++jj) {
            const int n = row0 + 8 * jj + lane / 4, k = lane % 4;
            f[jj][0] = detail_units::word(b.at(k, n)), f[jj][1] = detail_units::word(b.at(k + 4, n));
          }
        }
      }
    }
    static DSCONV_DEVICE DSCONV_FORCEINLINE void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
      if constexpr (std::is_same<T, float>::value)
        platform::mma_16x8x8_tf32(d, a, b);
      else
        platform::mma_16x8x16<T>(d, a, b);
    }
    // acc[i][j] += A_i B_j for the warp's tiles, as loaded. 16-bit types: one product each.
    // float: with single_tf32 (the caller's allow_tf32) each operand rounded to tf32 (10
    // mantissa bits), one product; else each split into two tf32 parts, x = big + small (big
    // rounded to tf32, small = x - big cut to tf32: 21 of float's 24 bits, the rest below
    // 2^-21 of x), and three products, small x big, big x small, big x big (small x small,
    // below 2^-22 of the product, left out; mma_16x8x8_tf32_split, a pair of tiles at a time):
    // about float's accuracy on the tensor cores, at three times their work (NVIDIA's
    // "3xTF32"), which the SIMT cores' fp32 multiply-adds do not match on the wider 1x1 layers.
    template <int MI, int NI>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void products(float (&acc)[MI][NI][accumulators], unsigned (&a)[MI][a_regs],
                                                          unsigned (&b)[NI][b_regs], bool single_tf32) {
      if constexpr (std::is_same<T, float>::value) {
        if (!single_tf32) {
          unsigned a_small[MI][a_regs], b_small[NI][b_regs];
          split(a, a_small);
          split(b, b_small);
          DSCONV_UNROLL
          for (int i = 0; i < MI; ++i)
            DSCONV_UNROLL
            for (int j = 0; j < NI; ++j) platform::mma_16x8x8_tf32_split(acc[i][j], a[i], a_small[i], b[j], b_small[j]);
          return;
        }
        round(a);
        round(b);
      }
      detail_units::each_product<op>(acc, a, b);
    }

   private:
    // x rounded to tf32 in place (to nearest, ties away; NaN and infinity kept). The low 13
    // bits are cleared, which the instruction would ignore.
    template <int N, int R>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void round(unsigned (&x)[N][R]) {
      DSCONV_UNROLL
      for (int i = 0; i < N; ++i)
        DSCONV_UNROLL
        for (int r = 0; r < R; ++r)
          x[i][r] = detail::float_bits(platform::round_to_tf32(detail::bits_float(x[i][r]))) & 0xffffe000u;
    }
    // x -> big (in place) and small, two instructions each (sm_90 had taken eight a register,
    // rounding both parts with tests for infinity and NaN): big = x rounded to nearest tf32
    // by adding half its last place to the bits and clearing the 13 below it, so that
    // small = x - big is exact, at most half that place; small cut to tf32 by clearing its 13
    // low bits, within 2^-10 of itself, 2^-21 of x. A NaN or infinite x makes small NaN (x -
    // big), so the products carry NaN wherever big does not (a NaN whose payload the add
    // carries out of).
    template <int N, int R>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void split(unsigned (&x)[N][R], unsigned (&small)[N][R]) {
      DSCONV_UNROLL
      for (int i = 0; i < N; ++i)
        DSCONV_UNROLL
        for (int r = 0; r < R; ++r) {
          const unsigned big = (x[i][r] + 0x1000u) & 0xffffe000u;
          small[i][r] = detail::float_bits(detail::bits_float(x[i][r]) - detail::bits_float(big)) & 0xffffe000u;
          x[i][r] = big;
        }
    }
  };
};

// AMD matrix cores, MFMA (platform/wave_mfma.hpp): 16x16 tiles; half and bfloat16 with
// k = 16 (one stage), float with k = 4 (two per stage, fp32 products and sums, so float stays
// fp32). The product runs transposed, C^T = B^T A^T, so that a lane's four accumulators are
// four consecutive columns of one row of C (one vector store) rather than four rows; the
// instructions' layouts then make both fragments the same: row lane % 16 of the tile, 8 bytes
// from k = 4q (16-bit types) or k = 2q (float, whose two instructions take k = 2q and
// 2q + 1: each sums every k of the stage once) with q = lane / 16. AMD has no asynchronous
// copy to LDS here: stages go through registers.
struct mfma_unit {
  template <class T>
  static constexpr platform::matrix_unit needs = platform::matrix_unit::mfma;
  static constexpr int lanes = platform::mfma_wave_lanes;
  static constexpr int tile_m = 16, tile_n = 16, accumulators = 4, run = 4;
  static constexpr int async_stages = 2;
  // Accumulator r of a lane: C[lane % 16][4q + r].
  static DSCONV_DEVICE DSCONV_FORCEINLINE int row(int lane, int) { return lane % 16; }
  static DSCONV_DEVICE DSCONV_FORCEINLINE int col(int lane, int r) { return 4 * (lane / 16) + r; }
  // k_rows: the 8-byte units of rows 4j .. 4j+3 rotated by j (a fragment load reads 8 bytes of
  // 16 consecutive rows); it repeats every 16 rows (the fragment loads count on it).
  template <int RowBytes = 32>
  static DSCONV_DEVICE DSCONV_FORCEINLINE int swizzle(int r) {
    static_assert(RowBytes == 32, "AMD's stages pass through registers: 32-byte rows");
    return (r >> 2) & 3;
  }

  template <class T>
  struct op {
    static constexpr int a_regs = 2, b_regs = 2;
    // k of a lane's first element: 4q for 16-bit types (four per 8 bytes), 2q for float.
    static constexpr int k_per_lane_group = 8 / static_cast<int>(sizeof(T));
    template <int MI, class Tile>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void load_a(unsigned (&f)[MI][2], const Tile& a, int row0, int lane) {
      // (tile i 16 rows further: the swizzle repeats every 16 rows, so one lane address)
      const auto* p = a.at(row0 + lane % 16, k_per_lane_group * (lane / 16));
      DSCONV_UNROLL
      for (int i = 0; i < MI; ++i) detail_units::two_words(f[i], p + 16 * i * Tile::row_elements);
    }
    // From n_rows (rows k, contiguous along m or n): the same fragments, element by element.
    template <int MI, int K, int M>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void load_a(unsigned (&f)[MI][2], const n_rows<T, K, M>& a, int row0, int lane) {
      DSCONV_UNROLL
      for (int i = 0; i < MI; ++i) {
        const int m = row0 + 16 * i + lane % 16, k = k_per_lane_group * (lane / 16);
        if constexpr (sizeof(T) == 2)
          f[i][0] = detail_units::pair(a.at(k, m), a.at(k + 1, m)), f[i][1] = detail_units::pair(a.at(k + 2, m), a.at(k + 3, m));
        else
          f[i][0] = detail_units::word(a.at(k, m)), f[i][1] = detail_units::word(a.at(k + 1, m));
      }
    }
    // B^T's fragments are A's (the product runs transposed).
    template <int NI, class Tile>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void load_b(unsigned (&f)[NI][2], const Tile& b, int row0, int lane) {
      load_a(f, b, row0, lane);
    }
    // acc[i][j] += A_i B_j for the warp's tiles (every type in its own precision: fp32 products
    // for float).
    template <int MI, int NI>
    static DSCONV_DEVICE DSCONV_FORCEINLINE void products(float (&acc)[MI][NI][accumulators], unsigned (&a)[MI][a_regs],
                                                          unsigned (&b)[NI][b_regs], bool) {
      detail_units::each_product<op>(acc, a, b);
    }
    // B^T is the instruction's A operand, A^T its B.
    static DSCONV_DEVICE DSCONV_FORCEINLINE void mma(float (&d)[4], const unsigned (&a)[2], const unsigned (&b)[2]) {
      if constexpr (sizeof(T) == 2) {
        platform::mfma_16x16x16<T>(d, b, a);
      } else {
        platform::mfma_16x16x4_f32(d, detail::bits_float(b[0]), detail::bits_float(a[0]));
        platform::mfma_16x16x4_f32(d, detail::bits_float(b[1]), detail::bits_float(a[1]));
      }
    }
  };
};

}  // namespace kernels
}  // namespace dsconv
