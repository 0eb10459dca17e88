#pragma once
// What the depthwise weight-gradient kernels share: per-thread sums of dz * x for a chunk of
// the filter's taps (and of dz, the bias gradient), added up over the block in a fixed order
// (the same bits on every run), and the second pass that adds the blocks' partial sums.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../common/grid_stride.hpp"

namespace dsconv {
namespace detail {

// Taps whose sums a thread keeps in registers at once (K: the specialised square filter's
// size, 0 for run-time filters): the whole filter up to 5x5; larger or run-time filters take
// several passes over the block's work, `chunk` taps each. (The planner sizes the block's
// reduction scratch from the same count.)
DSCONV_HOST_DEVICE constexpr int weight_chunk_of(int k) { return k != 0 && k * k <= 25 ? k * k : k != 0 ? 25 : 16; }
template <int K>
DSCONV_HOST_DEVICE constexpr int weight_chunk() {
  return weight_chunk_of(K);
}

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
  DSCONV_UNROLL
  for (int i = 0; i < values; ++i) {
    float v = i < C ? sums[i] : bias;
    for (int offset = wp.width >> 1; offset >= group; offset >>= 1) v += pf::shfl_xor(v, offset);
    if (wp.lane < group) pf::shared_store(scratch + (wp.warp * group + wp.lane) * values + i, v);
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
