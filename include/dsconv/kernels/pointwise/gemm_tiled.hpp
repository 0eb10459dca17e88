#pragma once
// Pointwise (1x1) convolution as a shared-memory tiled, register-blocked SIMT GEMM (see
// gemm_operands.hpp for how both layouts map onto it). A block computes a BM x BN tile of C
// over K in steps of BK: the next step's A and B tiles are loaded into registers while the
// current step's are multiplied out of shared memory (double buffering), so global latency
// hides behind arithmetic. Each thread owns TM x TN outputs, strided by the thread grid so
// that a warp's shared-memory reads and its global stores are contiguous. The epilogue
// fuses bias, residual and activation.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../common/activation.hpp"
#include "gemm_operands.hpp"

namespace dsconv {
namespace kernels {

// MinBlocks: blocks per multiprocessor the register allocation must allow (see
// DSCONV_LAUNCH_BOUNDS).
template <int BM, int BN, int BK, int TM, int TN, int MinBlocks>
struct gemm_tile {
  static constexpr int bm = BM, bn = BN, bk = BK, tm = TM, tn = TN, min_blocks = MinBlocks;
  static constexpr int threads = (BM / TM) * (BN / TN);
  static constexpr int a_per_thread = BM * BK / threads;
  static constexpr int b_per_thread = BK * BN / threads;
  static_assert(BM * BK % threads == 0 && BK * BN % threads == 0, "tile loads must split evenly over the threads");
};

namespace detail_gemm {
struct tile_position {
  int r, c;
};
// Element `i` of a ROWS x COLS tile, numbered along whichever dimension is contiguous in
// global memory, so consecutive threads load consecutive addresses. Returned by value: with
// output references hipcc selected between the two addresses and kept both in scratch memory.
template <int ROWS, int COLS>
DSCONV_DEVICE DSCONV_FORCEINLINE tile_position tile_coords(int i, bool cols_contiguous) {
  const int along_cols_r = i / COLS, along_cols_c = i % COLS;
  const int along_rows_r = i % ROWS, along_rows_c = i / ROWS;
  return cols_contiguous ? tile_position{along_cols_r, along_cols_c} : tile_position{along_rows_r, along_rows_c};
}
}  // namespace detail_gemm

template <class T, class Tile>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(Tile::threads, Tile::min_blocks) void pointwise_gemm_tiled(detail::gemm_operands g, const T* __restrict__ a, const T* __restrict__ b,
                                        const T* __restrict__ bias, const T* __restrict__ residual,
                                        T* __restrict__ c) {
  namespace pf = platform;
  constexpr int BM = Tile::bm, BN = Tile::bn, BK = Tile::bk, TM = Tile::tm, TN = Tile::tn;
  constexpr int threads = Tile::threads;
  DSCONV_SHARED float a_s[2][BK][BM];  // A tile, k-major: a thread's m values are a row
  DSCONV_SHARED float b_s[2][BK][BN];

  const int tid = static_cast<int>(pf::thread_idx().x);
  const int tx = tid % (BN / TN), ty = tid / (BN / TN);
  const index_t m0 = static_cast<index_t>(pf::block_idx().y) * BM, n0 = static_cast<index_t>(pf::block_idx().x) * BN;
  const index_t batch = pf::block_idx().z;
  a += batch * g.a_batch;
  b += batch * g.b_batch;
  c += batch * g.c_batch;
  if (residual) residual += batch * g.c_batch;
  const bool a_k_contiguous = g.a_k == 1, b_n_contiguous = g.b_n == 1;

  float a_next[Tile::a_per_thread], b_next[Tile::b_per_thread];
  auto fetch = [&](index_t k0) {
    DSCONV_UNROLL
    for (int j = 0; j < Tile::a_per_thread; ++j) {
      const detail_gemm::tile_position t = detail_gemm::tile_coords<BM, BK>(tid + j * threads, a_k_contiguous);
      const index_t m = m0 + t.r, k = k0 + t.c;
      a_next[j] = m < g.m && k < g.k ? to_float(pf::load(a + m * g.a_m + k * g.a_k)) : 0.f;
    }
    DSCONV_UNROLL
    for (int j = 0; j < Tile::b_per_thread; ++j) {
      const detail_gemm::tile_position t = detail_gemm::tile_coords<BK, BN>(tid + j * threads, b_n_contiguous);
      const index_t k = k0 + t.r, n = n0 + t.c;
      b_next[j] = k < g.k && n < g.n ? to_float(pf::load(b + k * g.b_k + n * g.b_n)) : 0.f;
    }
  };
  auto stash = [&](int buf) {
    DSCONV_UNROLL
    for (int j = 0; j < Tile::a_per_thread; ++j) {
      const detail_gemm::tile_position t = detail_gemm::tile_coords<BM, BK>(tid + j * threads, a_k_contiguous);
      a_s[buf][t.c][t.r] = a_next[j];
    }
    DSCONV_UNROLL
    for (int j = 0; j < Tile::b_per_thread; ++j) {
      const detail_gemm::tile_position t = detail_gemm::tile_coords<BK, BN>(tid + j * threads, b_n_contiguous);
      b_s[buf][t.r][t.c] = b_next[j];
    }
  };

  float acc[TM][TN];
  DSCONV_UNROLL
  for (int i = 0; i < TM; ++i)
    DSCONV_UNROLL
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  fetch(0);
  stash(0);
  pf::sync_threads();
  const index_t steps = (g.k + BK - 1) / BK;
  for (index_t step = 0; step < steps; ++step) {
    const int buf = static_cast<int>(step & 1);
    if (step + 1 < steps) fetch((step + 1) * BK);
    DSCONV_UNROLL
    for (int kk = 0; kk < BK; ++kk) {
      float av[TM], bv[TN];
      DSCONV_UNROLL
      for (int i = 0; i < TM; ++i) av[i] = a_s[buf][kk][ty + i * (BM / TM)];
      DSCONV_UNROLL
      for (int j = 0; j < TN; ++j) bv[j] = b_s[buf][kk][tx + j * (BN / TN)];
      DSCONV_UNROLL
      for (int i = 0; i < TM; ++i)
        DSCONV_UNROLL
        for (int j = 0; j < TN; ++j) acc[i][j] += av[i] * bv[j];
    }
    // The other buffer was last read before the previous barrier: safe to refill now.
    if (step + 1 < steps) stash(buf ^ 1);
    pf::sync_threads();
  }

  DSCONV_UNROLL
  for (int i = 0; i < TM; ++i) {
    const index_t m = m0 + ty + i * (BM / TM);
    if (m >= g.m) continue;
    DSCONV_UNROLL
    for (int j = 0; j < TN; ++j) {
      const index_t n = n0 + tx + j * (BN / TN);
      if (n >= g.n) continue;
      float v = acc[i][j];
      if (bias) v += to_float(pf::load(bias + (g.bias_along_m ? m : n)));
      const index_t off = m * g.c_m + n * g.c_n;
      if (residual) v += to_float(pf::load(residual + off));
      pf::store(c + off, from_float<T>(detail::activate(v, g.act)));
    }
  }
}

}  // namespace kernels
}  // namespace dsconv
