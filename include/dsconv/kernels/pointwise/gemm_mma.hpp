#pragma once
// Pointwise (1x1) convolution as a tiled GEMM on a matrix unit (matrix_units.hpp): NVIDIA
// tensor cores (half and bfloat16 with m16n8k16, float rounded to tf32 with m16n8k8, only
// when the caller allows TF32; sm_75 half only) or AMD matrix cores (half and bfloat16 with
// 16x16x16, float in fp32 with 16x16x4); fp32 accumulation either way. A block computes a
// BM x BN tile of C with WARPS_M x WARPS_N warps (waves on AMD), each owning a
// (BM / WARPS_M) x (BN / WARPS_N) piece made of the unit's tiles. K advances 32 bytes of
// operand per row at a time (one instruction K step; two for float on AMD) through shared
// memory, in one of two ways:
//   asynchronous  where a thread's runs are 16 bytes (aligned operands) and the unit keeps
//                 them whole (NVIDIA): the runs go global -> shared by cp.async (sm_80+),
//                 Unit::async_stages stages deep, so that the loads of the next stages are
//                 in flight while the tensor cores multiply this one;
//   registers     otherwise: two buffers, the next step loaded into registers and stored
//                 into one before the current one is multiplied out of the other.
// Either needs a single barrier per step.
// Shared memory holds A k-contiguous and B as it arrives (k-contiguous in the NHWC form,
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

namespace dsconv {
namespace kernels {

// Vectors: as for gemm_tile, for the operand loads (the unit fixes which columns a lane
// stores; the epilogue makes those vector stores where the output allows, at run time).
template <int BM, int BN, int WARPS_M, int WARPS_N, int MinBlocks, class Unit, bool Vectors = true>
struct mma_tile {
  using unit = Unit;
  template <class T>
  static constexpr platform::matrix_unit needs = Unit::template needs<T>;
  using element_form = mma_tile<BM, BN, WARPS_M, WARPS_N, MinBlocks, Unit, false>;
  static constexpr int run = 1;  // no output alignment needed for the vector form
  static constexpr int bm = BM, bn = BN, warps_m = WARPS_M, warps_n = WARPS_N, min_blocks = MinBlocks;
  static constexpr int threads = WARPS_M * WARPS_N * Unit::lanes;
  static constexpr int warp_m = BM / WARPS_M, warp_n = BN / WARPS_N;  // a warp's piece of C
  static_assert(warp_m % Unit::tile_m == 0 && warp_n % Unit::tile_n == 0, "a warp's piece must be whole unit tiles");
  // K per shared-memory stage: 32 bytes of operand per row (16 half or bfloat16, 8 float). 64
  // bytes made the 16-bit kernels spill on sm_80 at 255 registers (before the staging loaded
  // 16-byte vectors).
  template <class T>
  static constexpr int bk = 32 / static_cast<int>(sizeof(T));
  template <class T>
  static constexpr int a_run = Vectors ? staging_run<T, BM, bk<T>, threads>() : 1;
  template <class T>
  static constexpr int b_run = Vectors ? staging_run<T, bk<T>, BN, threads>() : 1;
  // Whether stages are copied asynchronously (see the top), and how many are in shared memory.
  template <class T>
  static constexpr bool async = Unit::async_stages > 2 && a_run<T> * sizeof(T) == 16 && b_run<T> * sizeof(T) == 16;
  template <class T>
  static constexpr int stages = async<T> ? Unit::async_stages : 2;
};

// KMajorB: as for pointwise_gemm_tiled.
// Out: fused_output<T> or partial_output (gemm_epilogue.hpp).
template <class T, class Tile, bool KMajorB, class Out>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(Tile::threads, Tile::min_blocks) void pointwise_gemm_mma(detail::gemm_operands g,
                                                                                     const T* __restrict__ a,
                                                                                     const T* __restrict__ b, Out out) {
  namespace pf = platform;
  using unit = typename Tile::unit;
  using op = typename unit::template op<T>;
  constexpr int BM = Tile::bm, BN = Tile::bn, BK = Tile::template bk<T>, threads = Tile::threads;
  constexpr int MI = Tile::warp_m / unit::tile_m, NI = Tile::warp_n / unit::tile_n;
  constexpr int stages = Tile::template stages<T>;
  // rows m, columns k / rows k, columns n
  using a_tile = operand_tile<BM, BK, threads, true, Tile::template a_run<T>>;
  using b_tile = operand_tile<BK, BN, threads, !KMajorB, Tile::template b_run<T>>;
  using a_layout = k_rows<T, BM, unit>;
  using b_layout = std::conditional_t<KMajorB, k_rows<T, BN, unit>, n_rows<T, BK, BN>>;
  static_assert(a_layout::row_elements == BK, "a shared row is one K stage");
  DSCONV_SHARED_ARRAY(T, a_s, [stages][a_layout::elements]);
  DSCONV_SHARED_ARRAY(T, b_s, [stages][b_layout::elements]);

  const int tid = static_cast<int>(pf::thread_idx().x);
  const int warp = tid / unit::lanes, lane = tid % unit::lanes;
  const int wm0 = (warp / Tile::warps_n) * Tile::warp_m, wn0 = (warp % Tile::warps_n) * Tile::warp_n;
  const index_t m0 = static_cast<index_t>(pf::block_idx().y) * BM, n0 = static_cast<index_t>(pf::block_idx().x) * BN;
  const gemm_block blk = select_block(g, a, b);
  const index_t b_stride = KMajorB ? g.b_n : g.b_k;
  // Element (k, n) of B's tile in buffer `buf`: runs go along k for A and a k-contiguous B
  // (along a k_rows row), along n for an n-contiguous B (along an n_rows row).
  const auto b_at = [&](int buf, int k, int n) {
    if constexpr (KMajorB)
      return b_layout{b_s[buf]}.at(n, k);
    else
      return b_layout{b_s[buf]}.at(k, n);
  };

  float acc[MI][NI][unit::accumulators];
  DSCONV_UNROLL
  for (int i = 0; i < MI; ++i)
    DSCONV_UNROLL
    for (int j = 0; j < NI; ++j)
      DSCONV_UNROLL
      for (int r = 0; r < unit::accumulators; ++r) acc[i][j][r] = 0.f;
  const auto multiply = [&](int buf) {
    unsigned af[MI][op::a_regs], bf[NI][op::b_regs];
    op::load_a(af, a_layout{a_s[buf]}, wm0, lane);
    op::load_b(bf, b_layout{b_s[buf]}, wn0, lane);
    DSCONV_UNROLL
    for (int i = 0; i < MI; ++i)
      DSCONV_UNROLL
      for (int j = 0; j < NI; ++j) op::mma(acc[i][j], af[i], bf[j]);
  };

  const index_t steps = (blk.k_end - blk.k_begin + BK - 1) / BK;
  if constexpr (Tile::template async<T>) {
    const auto copy_stage = [&](index_t step) {
      const index_t k0 = blk.k_begin + step * BK;
      const int buf = static_cast<int>(step % stages);
      a_tile::copy_runs(a, m0, k0, g.m, blk.k_end, g.a_m, tid, [&](int m, int k) { return a_layout{a_s[buf]}.at(m, k); });
      b_tile::copy_runs(b, k0, n0, blk.k_end, g.n, b_stride, tid, [&](int k, int n) { return b_at(buf, k, n); });
    };
    // Stages 0 .. stages - 2 in flight, one commit group each (empty past the end, so that
    // the count of groups stays that of steps).
    DSCONV_UNROLL
    for (int s = 0; s < stages - 1; ++s) {
      if (s < steps) copy_stage(s);
      pf::async_copy_commit();
    }
    for (index_t step = 0; step < steps; ++step) {
      // This thread's copies of this step are in; after the barrier everyone's are, and
      // every warp is done with the buffer it multiplied in the previous step, which then
      // takes the stage stages - 1 ahead.
      pf::async_copy_wait_pending<stages - 2>();
      pf::sync_threads();
      if (step + stages - 1 < steps) copy_stage(step + stages - 1);
      pf::async_copy_commit();
      multiply(static_cast<int>(step % stages));
    }
  } else {
    // Through registers (a thread's vector loads, then its stores into the layout): keeping
    // the next step's tiles in registers across the multiplications (as the SIMT kernel does)
    // pushed these kernels past 255 registers; the other resident blocks hide the load
    // latency instead.
    const auto stage = [&](index_t k0, int buf) {
      T a_regs[a_tile::per_thread], b_regs[b_tile::per_thread];
      const auto as_is = [](T v) { return v; };
      a_tile::fetch(a_regs, a, m0, k0, g.m, blk.k_end, g.a_m, tid, as_is);
      b_tile::fetch(b_regs, b, k0, n0, blk.k_end, g.n, b_stride, tid, as_is);
      a_tile::stash_runs(a_regs, tid, [&](int m, int k, const auto& run) { a_layout{a_s[buf]}.store_run(m, k, run); });
      b_tile::stash_runs(b_regs, tid, [&](int k, int n, const auto& run) {
        if constexpr (KMajorB)
          b_layout{b_s[buf]}.store_run(n, k, run);
        else
          b_layout{b_s[buf]}.store_run(k, n, run);
      });
    };
    stage(blk.k_begin, 0);
    pf::sync_threads();
    for (index_t step = 0; step < steps; ++step) {
      const int buf = static_cast<int>(step & 1);
      // The other buffer was last read before the previous barrier: safe to refill now.
      if (step + 1 < steps) stage(blk.k_begin + (step + 1) * BK, buf ^ 1);
      multiply(buf);
      pf::sync_threads();
    }
  }

  DSCONV_UNROLL
  for (int i = 0; i < MI; ++i)
    DSCONV_UNROLL
    for (int j = 0; j < NI; ++j)
      DSCONV_UNROLL
      for (int r = 0; r < unit::accumulators; r += unit::run) {
        const index_t m = m0 + wm0 + i * unit::tile_m + unit::row(lane, r);
        const index_t n = n0 + wn0 + j * unit::tile_n + unit::col(lane, r);
        if (m < g.m) out.template store_run<unit::run>(g, blk, m, n, acc[i][j] + r);
      }
}

}  // namespace kernels
}  // namespace dsconv
