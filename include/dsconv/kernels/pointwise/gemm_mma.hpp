#pragma once
// Pointwise (1x1) convolution as a tiled GEMM on tensor cores (platform/warp_mma.hpp):
// half and bfloat16 operands with m16n8k16, float operands rounded to tf32 with m16n8k8 (only
// when the caller allows TF32); fp32 accumulation either way. A block computes a BM x BN tile
// of C with WARPS_M x WARPS_N warps, each owning a (BM / WARPS_M) x (BN / WARPS_N) piece made
// of 16x8 mma tiles. K advances one mma K step (32 bytes of operand per row) at a time through
// two shared-memory buffers: the next step is staged into one before the current one is
// multiplied out of the other, so each step needs a single barrier.
// Shared memory holds both operands k-contiguous (A as [m][k], B as [n][k]) with rows padded
// to 48 bytes (12 banks), so the eight rows that one fragment load touches, four words each,
// fall into distinct banks.

#include <type_traits>

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "gemm_epilogue.hpp"
#include "gemm_operands.hpp"
#include "gemm_staging.hpp"

namespace dsconv {
namespace kernels {

// How an element type reaches the tensor cores: the type staged in shared memory and the K
// of one mma instruction.
template <class T>
struct mma_operand {
  using stage = T;  // half / bfloat16 stay as they are
  static constexpr int k_step = 16;
  static DSCONV_DEVICE DSCONV_FORCEINLINE T convert(T v) { return v; }
};
template <>
struct mma_operand<float> {
  using stage = float;  // rounded to tf32 once, when staged
  static constexpr int k_step = 8;
  static DSCONV_DEVICE DSCONV_FORCEINLINE float convert(float v) { return platform::round_to_tf32(v); }
};

template <int BM, int BN, int WARPS_M, int WARPS_N, int MinBlocks>
struct mma_tile {
  static constexpr int bm = BM, bn = BN, warps_m = WARPS_M, warps_n = WARPS_N, min_blocks = MinBlocks;
  static constexpr int threads = WARPS_M * WARPS_N * platform::mma_warp_lanes;
  static constexpr int warp_m = BM / WARPS_M, warp_n = BN / WARPS_N;  // a warp's piece of C
  static_assert(warp_m % 16 == 0 && warp_n % 8 == 0, "a warp's piece must be whole 16x8 mma tiles");
  // K per shared-memory stage: 32 bytes of operand per row, one mma K step (16 for half and
  // bfloat16, 8 for tf32). 64 bytes made the 16-bit kernels spill on sm_80 at 255 registers.
  template <class T>
  static constexpr int bk = 32 / static_cast<int>(sizeof(typename mma_operand<T>::stage));
};

namespace detail_mma {
// Two consecutive 16-bit elements (the lower k first, 4-byte aligned) as one fragment
// register: on a GPU one 32-bit shared-memory load; on the host a memcpy, which C++ aliasing
// rules require there.
template <class S>
DSCONV_DEVICE DSCONV_FORCEINLINE unsigned pair(const S* p) {
#if defined(DSCONV_DEVICE_PASS)
  return *reinterpret_cast<const unsigned*>(p);
#else
  unsigned r;
  __builtin_memcpy(&r, p, sizeof r);
  return r;
#endif
}
}  // namespace detail_mma

// KMajorB: as for pointwise_gemm_tiled.
// Out: fused_output<T> or partial_output (gemm_epilogue.hpp).
template <class T, class Tile, bool KMajorB, class Out>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(Tile::threads, Tile::min_blocks) void pointwise_gemm_mma(detail::gemm_operands g,
                                                                                     const T* __restrict__ a,
                                                                                     const T* __restrict__ b, Out out) {
  namespace pf = platform;
  using op = mma_operand<T>;
  using S = typename op::stage;
  constexpr int BM = Tile::bm, BN = Tile::bn, BK = Tile::template bk<T>, threads = Tile::threads;
  constexpr int MI = Tile::warp_m / 16, NI = Tile::warp_n / 8, KSTEP = op::k_step;
  constexpr int LD = BK + 16 / static_cast<int>(sizeof(S));  // padded row: 48 bytes
  using a_tile = operand_tile<BM, BK, threads, true>;        // rows m, columns k
  using b_tile = operand_tile<BK, BN, threads, !KMajorB>;    // rows k, columns n
  alignas(16) DSCONV_SHARED S a_s[2][BM][LD];
  alignas(16) DSCONV_SHARED S b_s[2][BN][LD];

  const int tid = static_cast<int>(pf::thread_idx().x);
  const int warp = tid / pf::mma_warp_lanes, lane = tid % pf::mma_warp_lanes;
  const int gid = lane / 4, tig = lane % 4;  // the fragment layout's g and t
  const int wm0 = (warp / Tile::warps_n) * Tile::warp_m, wn0 = (warp % Tile::warps_n) * Tile::warp_n;
  const index_t m0 = static_cast<index_t>(pf::block_idx().y) * BM, n0 = static_cast<index_t>(pf::block_idx().x) * BN;
  const gemm_block blk = select_block(g, a, b);

  // Staged straight through registers into shared memory: keeping the next step's tiles in
  // registers across the multiplications (as the SIMT kernel does) pushed these kernels past
  // 255 registers; the other resident blocks hide the load latency instead.
  const auto to_stage = [](T v) { return op::convert(v); };
  auto stage = [&](index_t k0, int buf) {
    S a_regs[a_tile::per_thread], b_regs[b_tile::per_thread];
    a_tile::fetch(a_regs, a, m0, k0, g.m, blk.k_end, g.a_m, tid, to_stage);
    b_tile::fetch(b_regs, b, k0, n0, blk.k_end, g.n, KMajorB ? g.b_n : g.b_k, tid, to_stage);
    a_tile::stash(a_regs, tid, [&](int m, int k, S v) { a_s[buf][m][k] = v; });
    b_tile::stash(b_regs, tid, [&](int k, int n, S v) { b_s[buf][n][k] = v; });
  };

  float acc[MI][NI][4];
  DSCONV_UNROLL
  for (int i = 0; i < MI; ++i)
    DSCONV_UNROLL
    for (int j = 0; j < NI; ++j)
      DSCONV_UNROLL
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;

  stage(blk.k_begin, 0);
  pf::sync_threads();
  const index_t steps = (blk.k_end - blk.k_begin + BK - 1) / BK;
  for (index_t step = 0; step < steps; ++step) {
    const int buf = static_cast<int>(step & 1);
    // The other buffer was last read before the previous barrier: safe to refill now.
    if (step + 1 < steps) stage(blk.k_begin + (step + 1) * BK, buf ^ 1);
    DSCONV_UNROLL
    for (int k0 = 0; k0 < BK; k0 += KSTEP) {
      unsigned af[MI][4], bf[NI][2];
      DSCONV_UNROLL
      for (int i = 0; i < MI; ++i) {
        const S* row_lo = a_s[buf][wm0 + i * 16 + gid];
        const S* row_hi = a_s[buf][wm0 + i * 16 + gid + 8];
        if constexpr (std::is_same<S, float>::value) {
          af[i][0] = detail::float_bits(row_lo[k0 + tig]);
          af[i][1] = detail::float_bits(row_hi[k0 + tig]);
          af[i][2] = detail::float_bits(row_lo[k0 + tig + 4]);
          af[i][3] = detail::float_bits(row_hi[k0 + tig + 4]);
        } else {
          af[i][0] = detail_mma::pair(row_lo + k0 + 2 * tig);
          af[i][1] = detail_mma::pair(row_hi + k0 + 2 * tig);
          af[i][2] = detail_mma::pair(row_lo + k0 + 2 * tig + 8);
          af[i][3] = detail_mma::pair(row_hi + k0 + 2 * tig + 8);
        }
      }
      DSCONV_UNROLL
      for (int j = 0; j < NI; ++j) {
        const S* col = b_s[buf][wn0 + j * 8 + gid];
        if constexpr (std::is_same<S, float>::value) {
          bf[j][0] = detail::float_bits(col[k0 + tig]);
          bf[j][1] = detail::float_bits(col[k0 + tig + 4]);
        } else {
          bf[j][0] = detail_mma::pair(col + k0 + 2 * tig);
          bf[j][1] = detail_mma::pair(col + k0 + 2 * tig + 8);
        }
      }
      DSCONV_UNROLL
      for (int i = 0; i < MI; ++i)
        DSCONV_UNROLL
        for (int j = 0; j < NI; ++j) {
          if constexpr (std::is_same<S, float>::value)
            pf::mma_16x8x8_tf32(acc[i][j], af[i], bf[j]);
          else
            pf::mma_16x8x16<S>(acc[i][j], af[i], bf[j]);
        }
    }
    pf::sync_threads();
  }

  DSCONV_UNROLL
  for (int i = 0; i < MI; ++i)
    DSCONV_UNROLL
    for (int j = 0; j < NI; ++j)
      DSCONV_UNROLL
      for (int r = 0; r < 4; ++r) {
        const index_t m = m0 + wm0 + i * 16 + gid + (r >= 2 ? 8 : 0);
        const index_t n = n0 + wn0 + j * 8 + 2 * tig + (r & 1);
        if (m < g.m && n < g.n) out.store(g, blk, m, n, acc[i][j][r]);
      }
}

}  // namespace kernels
}  // namespace dsconv
