#pragma once
// Depthwise NCHW forward, shared-memory tiled. A block computes a band of full-width output
// rows of one (image, channel) plane, or, when planes are small (7x7 to ~32x32), whole planes
// of a group of channels for a group of images, so a block has enough work at batch 1 and
// reads its weights once for several images. It stages its input band once (nchw_band.hpp)
// and the taps read shared memory without any bounds check. Multiplier 1. The data gradient
// of stride 1 runs here too: a forward convolution of grad_output (read through its gate where
// the layer fused an activation) with the filter rotated by 180 degrees.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/activation.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/index_walk.hpp"
#include "nchw_band.hpp"
#include "tile.hpp"

namespace dsconv {
namespace kernels {

template <class T, int K, int S>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::depthwise_block_threads, detail::depthwise_resident_blocks)
void depthwise_nchw_tiled(detail::depthwise_shape s, detail::depthwise_tile t, const T* __restrict__ input,
                          detail::gate_tensor<T> gate, const T* __restrict__ weight, const T* __restrict__ bias,
                          T* __restrict__ output, T* __restrict__ pre_activation) {
  namespace pf = platform;
  const detail::window_geometry<K, S> win(s);
  const int kh = win.kh, kw = win.kw, sh = win.sh, dh = win.dh, dw = win.dw, taps = win.taps;
  const int sw = win.sw;
  const int tid = static_cast<int>(pf::thread_idx().x), threads = static_cast<int>(pf::block_dim().x);

  const nchw_planes pl(t, s.c, s.n, static_cast<int>(pf::block_idx().x));
  // A band of full rows (NCHW tiles are never narrower than the map: cols == out_w).
  const detail::tile_origin o(t, s.out_h, s.out_w, static_cast<int>(pf::block_idx().y));
  const int oy0 = o.oy0, rows = o.rows;
  const nchw_band band{oy0 * sh - s.pad_h, (rows - 1) * sh + (kh - 1) * dh + 1, s.pad_w, s.pad_w, s.h, s.w};
  const int pitch = t.row_stride, plane_stage = t.plane_stride;
  constexpr int phases = S > 1 ? S : 1;  // column phases of a staged row (tile.hpp)
  const int phase_pitch = pitch / phases;

  float* staged = pf::dynamic_shared<float>();
  float* w_s = staged + t.channels * t.images * plane_stage;
  float* b_s = w_s + t.channels * taps;
  stage_nchw_weights(w_s, b_s, weight, bias, pl, taps, s.rotate_filter, tid, threads);
  stage_nchw_band<phases>(staged, input, gate.saved, gate.act, s.c, pl, band, t, tid, threads);
  pf::sync_threads();

  // Outputs by (image, channel group, row, channel in the group, column), threads in row slots
  // (tile.hpp): channel g = group * channel_slots + slot, column ox below row_slots.
  const int ow = s.out_w, ks = t.channel_slots, g_count = pl.g_count;
  const index_t out_plane = static_cast<index_t>(s.out_h) * ow;
  detail::for_each_strided<5>(pl.i_count * ((g_count + ks - 1) / ks) * rows * ks * t.row_slots,
                              {(g_count + ks - 1) / ks, rows, ks, t.row_slots}, tid, threads, [&](const auto& at) {
    const int bi = at.outer(), g = at[0] * ks + at[2], oy = at[1], ox = at[3];
    if (g >= g_count || ox >= ow) return;
    const float* window = staged + (bi * g_count + g) * plane_stage + oy * sh * pitch + (phases > 1 ? ox : ox * sw);
    const float acc = detail::window_sum<K, phases>(window, pitch, 1, phase_pitch, w_s + g * taps, 1, kh, kw, dh, dw);
    const index_t dst = (static_cast<index_t>(pl.b0 + bi) * s.c + pl.c0 + g) * out_plane + static_cast<index_t>(oy0 + oy) * ow + ox;
    detail::store_activated(output, pre_activation, s.save_derivative, dst, acc + pf::shared_load(b_s + g), s.act);
  });
}

}  // namespace kernels
}  // namespace dsconv
