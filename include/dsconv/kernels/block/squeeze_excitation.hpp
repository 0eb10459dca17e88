#pragma once
// The steps of a block's squeeze-excitation that are not 1x1 layers (the reduce and expand 1x1s
// run as pointwise calls on the pooled [n][channels] vector, 1x1 maps): the global average pool
// of the depthwise output, and the scale of that output by the per-channel gate, or instead of
// it the project weight's columns scaled per image.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/grid_stride.hpp"

namespace dsconv {
namespace detail {
// The block size of channel_mean (its launch bounds; the reduction's lanes).
inline constexpr unsigned channel_mean_threads = 256;
inline constexpr int channel_mean_lanes = 32;  // NHWC: channels per block, side by side in a warp
}  // namespace detail

namespace kernels {

// mean[b][c] = scale * the sum of x[b][c][*] over a channels x pixels tensor of `layout` (scale
// 1 / pixels: the mean; over the fused kernel's tile sums [n][tiles][channels], 1 / the image's
// pixels), deterministic: each block sums its values per thread in a fixed order, then over its threads
// by a fixed tree in shared memory. NCHW: a block per (image, channel) plane, its threads
// striding over the plane (coalesced); NHWC: a block per image and 32 channels, a warp's lanes
// on consecutive channels (coalesced) and the block's 8 warps (lane groups) striding over the
// pixels.
template <class In, class Out>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::channel_mean_threads, 1)
void channel_mean(int channels, int pixels, layout data_layout, float scale, const In* __restrict__ x,
                  Out* __restrict__ mean) {
  namespace pf = platform;
  constexpr int threads = static_cast<int>(detail::channel_mean_threads), lanes = detail::channel_mean_lanes;
  const int tid = static_cast<int>(pf::thread_idx().x);
  float* partial = pf::dynamic_shared<float>();
  const bool nchw = data_layout == layout::nchw;
  // NCHW: block = b * channels + c, one value per block; NHWC: block = b * slices + slice.
  const int slices = (channels + lanes - 1) / lanes;
  const int block = static_cast<int>(pf::block_idx().x);
  const int b = nchw ? block / channels : block / slices;  // (once per block)
  const int c = nchw ? block - b * channels : (block - b * slices) * lanes + tid % lanes;
  const int first = nchw ? tid : tid / lanes, step = nchw ? threads : threads / lanes;
  float sum = 0.f;
  if (c < channels) {
    const In* plane = nchw ? x + (static_cast<index_t>(b) * channels + c) * pixels
                          : x + static_cast<index_t>(b) * pixels * channels + c;
    const index_t stride = nchw ? 1 : channels;
    for (int px = first; px < pixels; px += step) sum += to_float(pf::load(plane + px * stride));
  }
  pf::shared_store(partial + tid, sum);
  pf::sync_threads();
  // The tree: halves of the block added until one value per channel lane is left (NCHW: one,
  // NHWC: 32 lanes apart, each lane a channel).
  const int last = nchw ? 1 : lanes;
  for (int half = threads / 2; half >= last; half /= 2) {
    if (tid < half) pf::shared_store(partial + tid, pf::shared_load(partial + tid) + pf::shared_load(partial + tid + half));
    pf::sync_threads();
  }
  if (tid < last && c < channels)
    pf::store(mean + static_cast<index_t>(b) * channels + c,
              from_float<Out>(pf::shared_load(partial + tid) * scale));
}

// x[b][c][*] *= scale[b][c] over a channels x pixels tensor of `layout`, in place.
template <class T>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::grid_stride_block_threads, 1)
void channel_scale(int n, int channels, int pixels, layout data_layout, T* __restrict__ x, const T* __restrict__ scale) {
  namespace pf = platform;
  const index_t count = static_cast<index_t>(n) * channels * pixels;
  const bool nchw = data_layout == layout::nchw;
  const index_t inner[2] = {nchw ? channels : pixels, nchw ? pixels : channels};
  detail::for_each_grid_stride<3>(count, inner, [&](const auto& at) {
    const index_t c = nchw ? at[0] : at[1];
    const float s = to_float(pf::load(scale + at.outer() * channels + c));
    pf::store(x + at.index(), from_float<T>(to_float(pf::load(x + at.index())) * s));
  });
}

// scaled[b][r][c] = w[r][c] * gate[b][c]: a [rows][channels] weight with its columns scaled
// per image (the project's weight with the gate folded in, where that is less to move than the
// scaled depthwise output).
template <class T>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::grid_stride_block_threads, 1)
void scale_columns_per_image(int n, int rows, int channels, const T* __restrict__ w, const T* __restrict__ gate,
                             T* __restrict__ scaled) {
  namespace pf = platform;
  const index_t count = static_cast<index_t>(n) * rows * channels;
  detail::for_each_grid_stride<3>(count, {static_cast<index_t>(rows), static_cast<index_t>(channels)}, [&](const auto& at) {
    const float g = to_float(pf::load(gate + at.outer() * channels + at[1]));
    pf::store(scaled + at.index(), from_float<T>(to_float(pf::load(w + at[0] * channels + at[1])) * g));
  });
}

}  // namespace kernels
}  // namespace dsconv
