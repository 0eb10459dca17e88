#pragma once
// What the depthwise weight-gradient kernels share: per-thread sums of dz * x for a chunk of
// the filter's taps (and of dz, the bias gradient), added up over the block in a fixed order
// (the same bits on every run), and the second pass that adds the blocks' partial sums.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../common/grid_stride.hpp"
#include "tile.hpp"

namespace dsconv {
namespace detail {

// Taps whose sums a thread keeps in registers (K: the specialised square filter's size, 0 for
// run-time filters): the whole filter up to 5x5; larger specialised filters whole filter rows,
// 28 taps at most; run-time filters 16 taps. A block takes one pass of that many taps over its
// work (grid.y: the passes). (The planner sizes the launch and the block's reduction scratch
// from the same count.)
DSCONV_HOST_DEVICE constexpr int weight_chunk_of(int k) { return k == 0 ? 16 : k * k <= 25 ? k * k : 28 / k * k; }
template <int K>
DSCONV_HOST_DEVICE constexpr int weight_chunk() {
  return weight_chunk_of(K);
}

// Blocks of the weight-gradient kernels a multiprocessor is to hold at once: their launch
// bounds on CUDA, which cap registers at 64 for 4 blocks of 256 threads, 80 for 3, 128 for 2.
// A thread keeps a sum per tap of its pass (9 for 3x3, 25 for 5x5, 28 for 7x7's passes) live
// across the staging of each item: 3x3 and 5x5 fit 64 (with reduce_chunk's order, and the
// 5x5 NCHW kernels staging single elements), 7x7 80; run-time filters need 108 to 123. Fewer
// registers than these spilled 4 to 56 bytes (sm_75/80/90).
template <class T, int K, int S>
DSCONV_HOST_DEVICE constexpr int weight_resident_blocks() {
  return K == 3 || K == 5 ? depthwise_resident_blocks : K == 7 ? 3 : 2;
}

// Whether the NCHW weight gradient stages its input element by element (K: the specialised
// filter's size, 0 for run-time filters; amd: a HIP build, or its plan for waves of 64), where
// 16-byte vectors would cost registers its sums need (nchw_backward_weight.hpp:
// weight_staging_paths).
DSCONV_HOST_DEVICE constexpr bool weight_stages_elements(int k, bool amd) { return amd || k == 5; }

// The taps of a block's pass (first .. first + C - 1) as offsets from a window's first staged
// element: `row` per filter row (times the dilation), `col` per staged column, `phase` per
// column phase (K and Phases as in window_sum). A specialised filter's passes are whole filter
// rows: each tap's offset is its row's (a pass's rows past the filter read the last one) plus a
// compile-time multiple of the steps; a run-time filter's offsets are computed once per
// block. Taps past the filter read inside the window and their sums are never stored: the loop
// over a pass's taps then has no per-tap condition (on AMD each would hold a 64-bit lane mask
// in scalar registers, more than the kernel has).
template <int K, int Phases, int C>
struct pass_taps {
  static constexpr int rows = K != 0 ? C / K : 1;  // filter rows of a specialised filter's pass
  // (K != 0 ? K : 1): nvcc warns of a % 0 even where K == 0 has already decided the assertion.
  static_assert(K == 0 || C % (K != 0 ? K : 1) == 0, "a specialised filter's pass is whole filter rows");
  static_assert(K != 0 || Phases == 1, "run-time filters stage unphased rows");
  int first;  // the pass's first tap
  int col, phase;
  int offset[K != 0 ? rows : C];  // per row of the pass (specialised filters) or per tap

  DSCONV_DEVICE pass_taps(int pass, int taps, int kw, int dw, int row, int col_step, int phase_step)
      : first(pass * C), col(col_step), phase(phase_step) {
    if constexpr (K != 0) {
      const int first_row = K * K == C ? 0 : pass * rows;  // (one pass: the compiler sees the constants)
      DSCONV_UNROLL
      for (int r = 0; r < rows; ++r) offset[r] = (first_row + r < K ? first_row + r : K - 1) * row;
    } else {
      int ky = first / kw, kx = first - ky * kw;  // (once per block)
      DSCONV_UNROLL
      for (int i = 0; i < C; ++i) {
        offset[i] = first + i < taps ? ky * row + kx * dw * col : 0;  // (run-time filters: unphased rows)
        if (++kx == kw) kx = 0, ++ky;
      }
    }
  }
  // Whether this pass sums the bias too (the first pass; known at compile time for one pass).
  DSCONV_DEVICE DSCONV_FORCEINLINE bool sums_bias() const { return (K != 0 && K * K <= C) || first == 0; }
  DSCONV_DEVICE DSCONV_FORCEINLINE int at(int i) const {
    if constexpr (K != 0)
      return offset[i / K] + i % K / Phases * col + i % K % Phases * phase;  // (constants once unrolled)
    else
      return offset[i];
  }
};

// Where a thread sits in its block's warps (computed once per block: the warp width is a
// run-time value on some platforms, and the callers reduce inside their loops).
struct warp_position {
  int width, warps, warp, lane;
  DSCONV_DEVICE warp_position(int tid, int threads)
      : width(platform::warp_size()), warps(threads / width), warp(tid / width), lane(tid - warp * width) {}
};

// Adds the per-thread sums of a chunk of taps (`sums[i]`, tap first + i for i < valid; and the
// bias gradient where first is 0) over the threads of the block that share a channel: those
// whose ids are equal modulo `group` (1: all of them; a power of two up to the warp width).
// Each value is summed over a warp by a butterfly (fixed order), then over the warps in warp
// order through `scratch` (warps * group * (C + 1) floats). Ends with the sums in
// scratch[group index][i] (tap i, the bias at C) for the caller to store after a barrier.
template <int C>
DSCONV_DEVICE DSCONV_FORCEINLINE void reduce_chunk(float (&sums)[C], float bias, float* scratch, int group,
                                                   const warp_position& wp, int tid, int threads) {
  namespace pf = platform;
  constexpr int values = C + 1;
  // (each step over all values in place: a value at a time, sm_80 spilled a 5x5 filter's
  // sums at 64 registers)
  for (int offset = wp.width >> 1; offset >= group; offset >>= 1) {
    DSCONV_UNROLL
    for (int i = 0; i < C; ++i) sums[i] += pf::shfl_xor(sums[i], offset);
    bias += pf::shfl_xor(bias, offset);
  }
  if (wp.lane < group) {
    float* own = scratch + (wp.warp * group + wp.lane) * values;
    DSCONV_UNROLL
    for (int i = 0; i < C; ++i) pf::shared_store(own + i, sums[i]);
    pf::shared_store(own + C, bias);
  }
  pf::sync_threads();
  // Entry j (< group * values: value j % values of group member j / values) added over the
  // warps into warp 0's copy, which is entry j itself: no other thread reads or writes it.
  for (int j = tid; j < group * values; j += threads) {
    float total = 0.f;
    for (int w = 0; w < wp.warps; ++w) total += pf::shared_load(scratch + w * group * values + j);
    pf::shared_store(scratch + j, total);
  }
  pf::sync_threads();
}

}  // namespace detail

namespace kernels {

// The second pass where the weight gradient's blocks wrote partial sums: each tap's (and the
// bias's) sums [group][channel][taps + 1] added in group order, then rounded to T.
template <class T>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::grid_stride_block_threads, 1)
void depthwise_weight_reduce(const float* __restrict__ partial, int groups, int channels, int taps, T* __restrict__ grad_weight,
                             T* __restrict__ grad_bias) {
  const index_t per_group = static_cast<index_t>(channels) * (taps + 1);
  detail::for_each_grid_stride<2>(per_group, {static_cast<index_t>(taps + 1)}, [&](const auto& at) {
    float sum = 0.f;
    for (int g = 0; g < groups; ++g) sum += platform::load(partial + g * per_group + at.index());
    const index_t c = at.outer(), tap = at[0];
    if (tap < taps)
      platform::store(grad_weight + c * taps + tap, from_float<T>(sum));
    else if (grad_bias)
      platform::store(grad_bias + c, from_float<T>(sum));
  });
}

}  // namespace kernels
}  // namespace dsconv
