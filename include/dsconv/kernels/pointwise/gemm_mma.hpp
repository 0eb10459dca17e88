#pragma once
// Pointwise (1x1) convolution as a tiled GEMM on a matrix unit (matrix_units.hpp): NVIDIA
// tensor cores (half and bfloat16 with m16n8k16; float with tf32 m16n8k8, each operand split
// into two tf32 parts and three products for about fp32's accuracy, or rounded to tf32 and
// one product where the caller allows TF32; sm_75 half only) or AMD matrix cores (half and
// bfloat16 with 16x16x16, float in fp32 with 16x16x4); fp32 accumulation either way. A block computes a
// BM x BN tile of C with WARPS_M x WARPS_N warps (waves on AMD), each owning a
// (BM / WARPS_M) x (BN / WARPS_N) piece made of the unit's tiles. K advances a stage of 32
// or 64 bytes of operand per row at a time (one or two instruction K steps of 32 bytes; for
// float on AMD, one step is two instructions) through shared memory, in one of two ways:
//   asynchronous  where a thread's runs are 16 bytes (aligned operands) and the unit keeps
//                 them whole (NVIDIA): the runs go global -> shared by cp.async (sm_80+),
//                 up to Unit::async_stages stages deep, so that the loads of the next stages
//                 are in flight while the tensor cores multiply this one; each thread's runs
//                 placed once (gemm_staging.hpp's k_cursor);
//   registers     otherwise: two buffers, the next step loaded into registers and stored
//                 into one before the current one is multiplied out of the other.
// Either needs a single barrier per step.
// Shared memory holds A and B as they arrive (A k-contiguous, or m-contiguous in the backward
// data GEMM of NCHW and the backward weight GEMM of NHWC; B k-contiguous in the NHWC form,
// n-contiguous in the NCHW form), in the layouts of mma_shared_tiles.hpp, where neither the
// staging stores nor the fragment loads meet bank conflicts.

#include <type_traits>

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "gemm_epilogue.hpp"
#include "gemm_operands.hpp"
#include "gemm_staging.hpp"
#include "matrix_units.hpp"
#include "mma_shared_tiles.hpp"
#include "staged_epilogue.hpp"

namespace dsconv {
namespace kernels {

// Vectors: as for gemm_tile, for the operand loads (the unit fixes which columns a lane
// stores; the epilogue makes those vector stores where the output allows, at run time).
// ElementForm: the tile that moves single elements in its place (void: this one with
// Vectors false); the dispatcher launches it over its own grid where its size differs.
template <int BM, int BN, int WARPS_M, int WARPS_N, int MinBlocks, class Unit, bool Vectors = true,
          class ElementForm = void>
struct mma_tile {
  using unit = Unit;
  template <class T>
  static constexpr platform::matrix_unit needs = Unit::template needs<T>;
  using element_form = std::conditional_t<std::is_void<ElementForm>::value,
                                          mma_tile<BM, BN, WARPS_M, WARPS_N, MinBlocks, Unit, false>, ElementForm>;
  static constexpr int run = 1;  // no output alignment needed for the vector form
  static constexpr int bm = BM, bn = BN, warps_m = WARPS_M, warps_n = WARPS_N, min_blocks = MinBlocks;
  static constexpr int threads = WARPS_M * WARPS_N * Unit::lanes;
  static constexpr int warp_m = BM / WARPS_M, warp_n = BN / WARPS_N;  // a warp's piece of C
  static_assert(warp_m % Unit::tile_m == 0 && warp_n % Unit::tile_n == 0, "a warp's piece must be whole unit tiles");
  // Whether stages are copied asynchronously (see the top): where the unit can and a thread's
  // runs of a 32-byte stage are 16 bytes (a 64-byte one's are too).
  template <class T>
  static constexpr bool async = Unit::async_stages > 2 && Vectors &&
                                staging_run<T, BM, 32 / static_cast<int>(sizeof(T)), threads>() * sizeof(T) == 16 &&
                                staging_run<T, 32 / static_cast<int>(sizeof(T)), BN, threads>() * sizeof(T) == 16;
  // K bytes per row of a shared-memory stage: one instruction K step of 32 bytes (two for
  // float on AMD), or two steps where stages are copied asynchronously and three of them fit
  // the 48 KiB of a block's static shared memory whatever the layouts (the 64x64 tile): the
  // step's fixed costs (the wait, the barrier, the bounds, the loop) then spread over twice the
  // bytes: 126 instructions a 64-byte stage for half on sm_90 (3.9 a DRAM byte of the
  // activations' tile) where 32-byte stages took 79 (4.9), both before the fragment loads' one
  // lane address (matrix_units.hpp; 114 since, and 39 in the main loop's groups of whole
  // steps).
  // (The 128x128 tile's NHWC layouts fit three too, but its second step took 79 instructions
  // more, its registers went from 157 to 214 and the heuristic never takes it.) Through
  // registers, 64 bytes made the 16-bit kernels spill on sm_80 at 255 registers.
  template <class T>
  static constexpr int stage_bytes = async<T> && 3 * 64 * (BM + BN + 16) <= 48 * 1024 ? 64 : 32;
  template <class T>
  static constexpr int bk = stage_bytes<T> / static_cast<int>(sizeof(T));
  // A thread's runs: as wide in either stage (16 bytes where async).
  template <class T>
  static constexpr int a_run = Vectors ? staging_run<T, BM, 32 / static_cast<int>(sizeof(T)), threads>() : 1;
  template <class T>
  static constexpr int b_run = Vectors ? staging_run<T, 32 / static_cast<int>(sizeof(T)), BN, threads>() : 1;
};

// MMajorA, KMajorB: as for pointwise_gemm_tiled.
// Out: fused_output<T> or partial_output (gemm_epilogue.hpp).
template <class T, class Tile, bool MMajorA, bool KMajorB, class Out>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(Tile::threads, Tile::min_blocks) void pointwise_gemm_mma(detail::gemm_operands g,
                                                                                     const T* __restrict__ a,
                                                                                     const T* __restrict__ b, Out out) {
  namespace pf = platform;
  using unit = typename Tile::unit;
  using op = typename unit::template op<T>;
  constexpr int BM = Tile::bm, BN = Tile::bn, BK = Tile::template bk<T>, threads = Tile::threads;
  constexpr int MI = Tile::warp_m / unit::tile_m, NI = Tile::warp_n / unit::tile_n;
  constexpr int row_bytes = Tile::template stage_bytes<T>;
  // rows m, columns k / rows k, columns n
  using a_tile = operand_tile<BM, BK, threads, !MMajorA, Tile::template a_run<T>>;
  using b_tile = operand_tile<BK, BN, threads, !KMajorB, Tile::template b_run<T>>;
  using a_layout = std::conditional_t<MMajorA, n_rows<T, BK, BM>, k_rows<T, BM, unit, row_bytes>>;
  using b_layout = std::conditional_t<KMajorB, k_rows<T, BN, unit, row_bytes>, n_rows<T, BK, BN>>;
  // Asynchronous: Unit::async_stages, as many as fit 48 KiB; through registers: two buffers.
  constexpr int stage_footprint = (a_layout::elements + b_layout::elements) * static_cast<int>(sizeof(T));
  constexpr int stages = !Tile::template async<T> ? 2
                         : unit::async_stages * stage_footprint <= 48 * 1024 ? unit::async_stages
                                                                              : 48 * 1024 / stage_footprint;
  static_assert(stages >= 2, "two stages fit the shared memory");
  // One array: the stages of A, then those of B; after the main loop, the tile of C on its
  // way out (staged_epilogue.hpp), then A's row sums.
  constexpr int operand_words = stages * (a_layout::elements + b_layout::elements) * static_cast<int>(sizeof(T)) / 4;
  static_assert(a_layout::elements * sizeof(T) % 16 == 0, "each stage starts 16-byte aligned");
  using staged = staged_tile<BM, BN, threads, operand_words>;
  DSCONV_SHARED_ARRAY(float, shared_words, [staged::words]);
  static_assert(row_sums<a_tile>::scratch_floats <= staged::words, "A's row sums fit the shared memory");
  T* const a_stages = reinterpret_cast<T*>(shared_words);
  T* const b_stages = a_stages + stages * a_layout::elements;
  const auto a_s = [&](int buf) { return a_stages + buf * a_layout::elements; };
  const auto b_s = [&](int buf) { return b_stages + buf * b_layout::elements; };

  const int tid = static_cast<int>(pf::thread_idx().x);
  const int warp = tid / unit::lanes, lane = tid % unit::lanes;
  const int wm0 = (warp / Tile::warps_n) * Tile::warp_m, wn0 = (warp % Tile::warps_n) * Tile::warp_n;
  const index_t m0 = static_cast<index_t>(pf::block_idx().y) * BM, n0 = static_cast<index_t>(pf::block_idx().x) * BN;
  const gemm_block blk = select_block(g, a, b);
  k_steps<T, BK> at(g, blk, a, b, block_gate<T>(g, blk));  // the step the next copy or fetch loads
  const bool sum_rows = out.sums_rows() && pf::block_idx().x == 0;
  row_sums<a_tile> sums;
  const index_t a_stride = MMajorA ? g.a_k : g.a_m, b_stride = KMajorB ? g.b_n : g.b_k;
  // Element (row, column) of A's or B's tile in buffer `buf`: runs go along the operand's
  // contiguous dimension, as the rows of its layout (k_rows: k; n_rows: m or n).
  const auto a_at = [&](int buf, int m, int k) {
    if constexpr (MMajorA)
      return a_layout{a_s(buf)}.at(k, m);
    else
      return a_layout{a_s(buf)}.at(m, k);
  };
  const auto b_at = [&](int buf, int k, int n) {
    if constexpr (KMajorB)
      return b_layout{b_s(buf)}.at(n, k);
    else
      return b_layout{b_s(buf)}.at(k, n);
  };

  float acc[MI][NI][unit::accumulators];
  DSCONV_UNROLL
  for (int i = 0; i < MI; ++i)
    DSCONV_UNROLL
    for (int j = 0; j < NI; ++j)
      DSCONV_UNROLL
      for (int r = 0; r < unit::accumulators; ++r) acc[i][j][r] = 0.f;
  // A stage's instruction K steps of 32 bytes, one after the other.
  const auto multiply = [&](int buf) {
    DSCONV_UNROLL
    for (int k0 = 0; k0 < BK; k0 += 32 / static_cast<int>(sizeof(T))) {
      unsigned af[MI][op::a_regs], bf[NI][op::b_regs];
      op::load_a(af, a_layout{a_s(buf), k0}, wm0, lane);
      op::load_b(bf, b_layout{b_s(buf), k0}, wn0, lane);
      op::products(acc, af, bf, g.single_tf32);
    }
  };

  const index_t steps = at.count;
  // This thread's runs of A's and B's tiles (gemm_staging.hpp), and the move to the next step.
  tile_cursors<a_tile, b_tile> runs(at, g, m0, n0, a_stride, b_stride, tid);
  const auto next_step = [&] { runs.advance(at, g, m0, n0, a_stride, b_stride, tid); };
  // Through registers (a thread's vector loads, then its stores into the layout): keeping the
  // next step's tiles in registers across the multiplications (as the SIMT kernel does) pushed
  // these kernels past 255 registers; the other resident blocks hide the load latency instead.
  // The way of every unit without asynchronous copies, of misaligned operands, and of gated
  // ones (dL/dy times act', which must pass through registers).
  const auto through_registers = [&] {
    const auto stage = [&](int buf) {
      T a_regs[a_tile::per_thread], b_regs[b_tile::per_thread];
      const auto as_is = [](T v) { return v; };
      const int inside = at.inside();
      // (dz is A, but B in the backward data GEMM of NCHW, whose A is W^T)
      runs.a.template fetch<true>(a_regs, at.a, g.gate_on_a ? at.gate : nullptr, g.gate_act, inside, a_stride, tid,
                                  as_is);
      runs.b.template fetch<MMajorA>(b_regs, at.b, g.gate_on_a ? nullptr : at.gate, g.gate_act, inside, b_stride, tid,
                                     as_is);
      next_step();
      if (sum_rows) sums.add(a_regs);
      a_tile::stash_runs(a_regs, tid, [&](int m, int k, const auto& run) {
        if constexpr (MMajorA)
          a_layout{a_s(buf)}.store_run(k, m, run);
        else
          a_layout{a_s(buf)}.store_run(m, k, run);
      });
      b_tile::stash_runs(b_regs, tid, [&](int k, int n, const auto& run) {
        if constexpr (KMajorB)
          b_layout{b_s(buf)}.store_run(n, k, run);
        else
          b_layout{b_s(buf)}.store_run(k, n, run);
      });
    };
    if (steps > 0) stage(0);
    pf::sync_threads();
    for (index_t step = 0; step < steps; ++step) {
      const int buf = static_cast<int>(step & 1);
      // The other buffer was last read before the previous barrier: safe to refill now.
      if (step + 1 < steps) stage(buf ^ 1);
      multiply(buf);
      pf::sync_threads();
    }
  };
  if constexpr (Tile::template async<T>) {
    if (!at.gate) {
      const auto copy_stage = [&](index_t step) {
        const int buf = static_cast<int>(step % stages);
        const int inside = at.inside();
        runs.a.copy(at.a, inside, a_stride, tid, [&](int m, int k) { return a_at(buf, m, k); });
        runs.b.copy(at.b, inside, b_stride, tid, [&](int k, int n) { return b_at(buf, k, n); });
        next_step();
      };
      // A step's multiplications, once its copies are in and after a barrier: everyone's are,
      // and every warp is done with the buffer it multiplied in the previous step, which then
      // takes the stage stages - 1 ahead.
      const auto multiply_stage = [&](int buf) {
        if (sum_rows) {  // this thread's runs of A, as copied
          T staged[a_tile::per_thread];
          a_tile::stash_places(tid, [&](int j, int m, int k) {
            const auto run = pf::shared_load(reinterpret_cast<const pf::vec<T, a_tile::run_elements>*>(a_at(buf, m, k)));
            DSCONV_UNROLL
            for (int e = 0; e < a_tile::run_elements; ++e) staged[j * a_tile::run_elements + e] = run[e];
          });
          sums.add(staged);
        }
        multiply(buf);
      };
      // Stages 0 .. stages - 2 go in flight first, one commit group each; then each step waits
      // for its own, copies the stage stages - 1 ahead and multiplies.
      // Whole steps first: where the first stages - 1 copies and every copy of a group of
      // `stages` steps are whole steps (all of their K inside one GEMM), the copies need no
      // bounds along K and move their sources by one addition each (whole_step_runs), and, the
      // groups starting at step 0, each step's buffers are known at compile time: fixed
      // shared-memory addresses for the copies and the fragment loads. sm_90, half, NHWC: a
      // 64-byte stage of the 64x64 tile 114 -> 39 instructions (16 HMMA, 8 LDSM, 4 LDGSTS), a
      // 32-byte stage of the 128x128 tile 85 -> 35 (16 HMMA, 6 LDSM, 2 LDGSTS); float's 64x64
      // tile 259 -> 173.
      // The rest (a range's last partial step, a range that crosses the GEMMs summed along K,
      // one shorter than a group) goes step by step, as the cursors place it. Where copies are
      // loads and stores (sm_75), all of it does: the groups' registers spilled the split-K
      // partial sums' tile there.
      const index_t whole = pf::async_copies_overlap ? at.whole_steps() : 0;
      const index_t groups = whole >= stages - 1 ? (whole - (stages - 1)) / stages : 0;
      index_t step = 0;
      if (groups > 0) {
        typename a_tile::template whole_step_runs<T> a_runs(runs.a, at.a, at.k0, BK, a_stride, tid);
        typename b_tile::template whole_step_runs<T> b_runs(runs.b, at.b, at.k0, BK, b_stride, tid);
        const auto copy_whole = [&](int buf) {
          a_runs.copy(tid, [&](int m, int k) { return a_at(buf, m, k); });
          b_runs.copy(tid, [&](int k, int n) { return b_at(buf, k, n); });
          pf::async_copy_commit();
        };
        DSCONV_UNROLL
        for (int s = 0; s < stages - 1; ++s) copy_whole(s);
        for (index_t group = 0; group < groups; ++group) {
          DSCONV_UNROLL
          for (int s = 0; s < stages; ++s) {
            pf::async_copy_wait_pending<stages - 2>();
            pf::sync_threads();
            copy_whole((s + stages - 1) % stages);
            multiply_stage(s);
          }
        }
        step = groups * stages;
        runs.skip(at, g, m0, n0, a_stride, b_stride, tid, stages - 1 + step);
      } else {
        // (empty groups past the end, so that the count of groups stays that of steps)
        DSCONV_UNROLL
        for (int s = 0; s < stages - 1; ++s) {
          if (s < steps) copy_stage(s);
          pf::async_copy_commit();
        }
      }
      for (; step < steps; ++step) {
        pf::async_copy_wait_pending<stages - 2>();
        pf::sync_threads();
        if (step + stages - 1 < steps) copy_stage(step + stages - 1);
        pf::async_copy_commit();
        multiply_stage(static_cast<int>(step % stages));
      }
      pf::async_copy_wait_pending<0>();
      pf::sync_threads();
    } else {
      through_registers();
    }
  } else {
    through_registers();
  }

  // (both ways end at a barrier: the operand tiles are free) A lane's runs of accumulators
  // (consecutive columns of a row) into the staged tile, those of rows [r0, r0 + rows).
  staged::store(shared_words, tid, out, g, blk, m0, n0, [&](float* s, int r0, int rows) {
    DSCONV_UNROLL
    for (int i = 0; i < MI; ++i)
      DSCONV_UNROLL
      for (int j = 0; j < NI; ++j)
        DSCONV_UNROLL
        for (int r = 0; r < unit::accumulators; r += unit::run) {
          const int row = wm0 + i * unit::tile_m + unit::row(lane, r) - r0;
          if (staged::passes > 1 && (row < 0 || row >= rows)) continue;
          pf::vec<float, unit::run> run;
          DSCONV_UNROLL
          for (int e = 0; e < unit::run; ++e) run[e] = acc[i][j][r + e];
          pf::shared_store(reinterpret_cast<pf::vec<float, unit::run>*>(
                               staged::at(s, row, wn0 + j * unit::tile_n + unit::col(lane, r))),
                           run);
        }
  });
  if (sum_rows) {
    pf::sync_threads();  // (the staged tile's reads are done)
    sums.finish(shared_words, tid, threads, out, g, blk, m0);
  }
}

}  // namespace kernels
}  // namespace dsconv
