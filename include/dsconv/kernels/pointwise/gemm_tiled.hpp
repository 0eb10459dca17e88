#pragma once
// Pointwise (1x1) convolution as a shared-memory tiled, register-blocked SIMT GEMM (see
// gemm_operands.hpp for how both layouts map onto it). A block computes a BM x BN tile of C
// over K in steps of BK: the next step's A and B tiles are loaded into registers while the
// current step's are multiplied out of shared memory (double buffering), so global latency
// hides behind arithmetic. Each thread owns TM x TN outputs: TM rows strided by the thread
// grid, and TN columns in runs of RUN consecutive ones, strided so that a warp's runs are
// contiguous: with RUN = 4 each run is one 16-byte shared-memory read per k and one vector
// store in the epilogue, which fuses bias, residual and activation. The element form of the
// tile (RUN = 1) serves buffers not aligned for vectors; a warp's element stores are
// contiguous there. (The matrix-unit GEMM's epilogue goes through shared memory,
// staged_epilogue.hpp; this one stores from registers: the 128x128 tile's element form holds
// 255 registers on gfx906, and the staged epilogue's passes spilled it in bfloat16.)

#include <type_traits>

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "gemm_epilogue.hpp"
#include "gemm_operands.hpp"
#include "gemm_staging.hpp"

namespace dsconv {
namespace kernels {

// MinBlocks: blocks per multiprocessor the register allocation must allow (see
// DSCONV_LAUNCH_BOUNDS). Vectors: whether the tile moves runs of consecutive elements as
// vectors (operand loads of a_run / b_run elements, stores of `run` columns), for buffers
// aligned to them, or single elements (its element_form, for any buffers).
template <int BM, int BN, int BK, int TM, int TN, int MinBlocks, bool Vectors = true>
struct gemm_tile {
  template <class T>
  static constexpr platform::matrix_unit needs = platform::matrix_unit::none;  // SIMT: runs anywhere
  static constexpr int bm = BM, bn = BN, bk = BK, tm = TM, tn = TN, min_blocks = MinBlocks;
  static constexpr int threads = (BM / TM) * (BN / TN), run = Vectors ? 4 : 1;
  template <class T>
  static constexpr int a_run = Vectors ? staging_run<T, BM, BK, threads>() : 1;
  template <class T>
  static constexpr int b_run = Vectors ? staging_run<T, BK, BN, threads>() : 1;
  using element_form = gemm_tile<BM, BN, BK, TM, TN, MinBlocks, false>;
};

// Where the elements of staged row k (of BK) sit in the tiles' shared memory. Rows are padded
// by 4 floats, 4 banks apart, which keeps the staging's column writes conflict-free for 8 rows;
// with 16 (BK = 16), a thread's column run of rows k..k+3 and another's at k + 8 met in the same
// banks (conflict factor 1.5 to 2), so rows 8-15 hold element x at x ^ 10: 16-byte chunks swapped
// in pairs two apart, and their halves swapped. A warp's 32 column writes then cover 32 banks
// (runs of 4 rows at 8 columns, and the element form's 16 rows at 2), and a run of W elements
// (a power of two, starting at a multiple of W) still fills one place of W elements: at
// run_at<W>, in the order `arranged` gives (halves swapped for W >= 4), so every vector read
// and store keeps its width.
template <int BK>
struct staged_rows {
  static DSCONV_DEVICE DSCONV_FORCEINLINE int swizzle(int k) { return BK > 8 && (k & 8) ? 10 : 0; }
  template <int W>
  static DSCONV_DEVICE DSCONV_FORCEINLINE int run_at(int k, int x) {
    return (x ^ swizzle(k)) & ~(W - 1);
  }
  // The run as stored from its elements in order, or in order from the stored run (one swap).
  template <int W, class Run>
  static DSCONV_DEVICE DSCONV_FORCEINLINE Run arranged(int k, const Run& r) {
    if constexpr (W < 4) {
      return r;
    } else {
      if (!swizzle(k)) return r;
      Run o;
      DSCONV_UNROLL
      for (int e = 0; e < W; ++e) o[e] = r[e ^ 2];
      return o;
    }
  }
};

// MMajorA: A is contiguous along m (the backward data GEMM of NCHW and the backward weight GEMM
// of NHWC) rather than along k; KMajorB: B is contiguous along k (the forward NHWC form:
// weight^T) rather than along n (gemm_operands.hpp).
// Out: fused_output<T> or partial_output (gemm_epilogue.hpp).
template <class T, class Tile, bool MMajorA, bool KMajorB, class Out>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(Tile::threads, Tile::min_blocks) void pointwise_gemm_tiled(detail::gemm_operands g,
                                                                                     const T* __restrict__ a,
                                                                                     const T* __restrict__ b, Out out) {
  namespace pf = platform;
  constexpr int BM = Tile::bm, BN = Tile::bn, BK = Tile::bk, TM = Tile::tm, TN = Tile::tn;
  constexpr int RUN = Tile::run, RUNS = TN / RUN;  // a thread's columns: RUNS runs of RUN
  constexpr int TX = BN / TN;              // threads along n; one run of each covers TX * RUN columns
  static_assert(TN % RUN == 0, "a thread's columns must be whole runs");
  // A thread's TM rows: runs of MR consecutive ones, MY apart (row_of), so that each run is one
  // 16-byte shared-memory read per k as the columns' runs are (the rows one TM-th of the tile
  // apart took TM scalar reads: 64 of the 80 shared loads of each 256 multiply-adds).
  constexpr int MR = 4, MY = BM / (TM / MR);
  static_assert(TM % MR == 0, "a thread's rows must be whole runs");
  const auto row_of = [](int ty, int i) { return i / MR * MY + ty * MR + i % MR; };
  using row_run_t = pf::vec<float, MR>;
  // rows m, columns k / rows k, columns n
  using a_tile = operand_tile<BM, BK, Tile::threads, !MMajorA, Tile::template a_run<T>>;
  using b_tile = operand_tile<BK, BN, Tile::threads, !KMajorB, Tile::template b_run<T>>;
  using run_t = pf::vec<float, RUN>;
  // The A tile k-major (a thread's m values are a row), the B tile n-contiguous, each row
  // padded by 4 floats: the staging writes columns of them (A where it arrives k-contiguous; B
  // in the NHWC form, where it arrives k-contiguous), at the places staged_rows gives.
  constexpr int PAD = 4;
  static_assert(BM % 16 == 0 && BN % 16 == 0, "the swizzled places stay inside the row");
  using rows = staged_rows<BK>;
  DSCONV_SHARED_ARRAY(float, a_s, [2][BK][BM + PAD]);
  DSCONV_SHARED_ARRAY(run_t, b_s, [2][BK][BN / RUN + PAD / RUN]);
  static_assert(row_sums<a_tile>::scratch_floats <= 2 * BK * (BM + PAD), "A's row sums fit the A tiles");

  const int tid = static_cast<int>(pf::thread_idx().x);
  const int tx = tid % TX, ty = tid / TX;
  const index_t m0 = static_cast<index_t>(pf::block_idx().y) * BM, n0 = static_cast<index_t>(pf::block_idx().x) * BN;
  const gemm_block blk = select_block(g, a, b);
  k_steps<T, BK> at(g, blk, a, b, block_gate<T>(g, blk));  // the step the next fetch loads
  const bool sum_rows = out.sums_rows() && pf::block_idx().x == 0;
  row_sums<a_tile> sums;

  float a_next[a_tile::per_thread], b_next[b_tile::per_thread];
  const auto to_stage = [](T v) { return to_float(v); };
  const index_t a_stride = MMajorA ? g.a_k : g.a_m, b_stride = KMajorB ? g.b_n : g.b_k;
  tile_cursors<a_tile, b_tile> runs(at, g, m0, n0, a_stride, b_stride, tid);  // (gemm_staging.hpp)
  auto fetch = [&]() {
    const int inside = at.inside();
    // (dz is A, but B in the backward data GEMM of NCHW, whose A is W^T)
    runs.a.template fetch<true>(a_next, at.a, g.gate_on_a ? at.gate : nullptr, g.gate_act, inside, a_stride, tid,
                                to_stage);
    runs.b.template fetch<MMajorA>(b_next, at.b, g.gate_on_a ? nullptr : at.gate, g.gate_act, inside, b_stride, tid,
                                   to_stage);
    if (sum_rows) sums.add(a_next);
    runs.advance(at, g, m0, n0, a_stride, b_stride, tid);
  };
  auto stash = [&](int buf) {
    if constexpr (MMajorA)  // runs along m, as the rows: one vector store each
      a_tile::stash_runs(a_next, tid, [&](int m, int k, const auto& run) {
        constexpr int W = a_tile::run_elements;
        pf::shared_store(reinterpret_cast<std::decay_t<decltype(run)>*>(&a_s[buf][k][rows::template run_at<W>(k, m)]),
                         rows::template arranged<W>(k, run));
      });
    else
      a_tile::stash(a_next, tid, [&](int m, int k, float v) { pf::shared_store(&a_s[buf][k][rows::template run_at<1>(k, m)], v); });
    float* b_row = &b_s[buf][0][0][0];  // row k at b_row + k * b_pitch
    constexpr int b_pitch = BN + PAD;
    if constexpr (KMajorB)
      b_tile::stash(b_next, tid, [&](int k, int n, float v) { pf::shared_store(b_row + k * b_pitch + rows::template run_at<1>(k, n), v); });
    else  // runs along n, as the rows: one vector store each
      b_tile::stash_runs(b_next, tid, [&](int k, int n, const auto& run) {
        constexpr int W = b_tile::run_elements;
        pf::shared_store(reinterpret_cast<std::decay_t<decltype(run)>*>(b_row + k * b_pitch + rows::template run_at<W>(k, n)),
                         rows::template arranged<W>(k, run));
      });
  };

  float acc[TM][TN];
  DSCONV_UNROLL
  for (int i = 0; i < TM; ++i)
    DSCONV_UNROLL
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  const index_t steps = at.count;
  if (steps > 0) {
    fetch();
    stash(0);
  }
  pf::sync_threads();
  for (index_t step = 0; step < steps; ++step) {
    const int buf = static_cast<int>(step & 1);
    if (step + 1 < steps) fetch();
    DSCONV_UNROLL
    for (int kk = 0; kk < BK; ++kk) {
      float av[TM], bv[TN];
      DSCONV_UNROLL
      for (int r = 0; r < TM / MR; ++r) {
        const row_run_t run = rows::template arranged<MR>(
            kk, pf::shared_load(reinterpret_cast<const row_run_t*>(&a_s[buf][kk][rows::template run_at<MR>(kk, row_of(ty, r * MR))])));
        DSCONV_UNROLL
        for (int e = 0; e < MR; ++e) av[r * MR + e] = run[e];
      }
      DSCONV_UNROLL
      for (int jr = 0; jr < RUNS; ++jr) {
        const run_t run =
            rows::template arranged<RUN>(kk, pf::shared_load(&b_s[buf][kk][rows::template run_at<RUN>(kk, (jr * TX + tx) * RUN) / RUN]));
        DSCONV_UNROLL
        for (int e = 0; e < RUN; ++e) bv[jr * RUN + e] = run[e];
      }
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
    const index_t m = m0 + row_of(ty, i);
    if (m >= g.m) continue;
    DSCONV_UNROLL
    for (int jr = 0; jr < RUNS; ++jr) {
      run_t run;
      DSCONV_UNROLL
      for (int e = 0; e < RUN; ++e) run[e] = acc[i][jr * RUN + e];
      out.template store_run<RUN>(g, blk, m, n0 + (jr * TX + tx) * RUN, run, g.act);
    }
  }
  // (the loop ended at a barrier: the A tiles are free)
  if (sum_rows) sums.finish(&a_s[0][0][0], tid, Tile::threads, out, g, blk, m0);
}

}  // namespace kernels
}  // namespace dsconv
