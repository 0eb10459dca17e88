#pragma once
// Depthwise NHWC forward, shared-memory tiled. A block computes a band of output rows of one
// image (full-width, or of partial rows where a multiprocessor's share of shared memory holds
// only short bands of full rows), or whole maps of several images when maps are small (so its
// weights are read once for all of them), for 32 bytes of channels; it stages the input window
// its outputs read once (nhwc_band.hpp), and the taps read shared memory without bounds
// checks. Requires multiplier 1. The data gradient of stride 1 runs here too: a forward
// convolution of grad_output (read through its gate where the layer fused an activation) with
// the filter rotated by 180 degrees.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/activation.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/index_walk.hpp"
#include "nhwc_band.hpp"
#include "tile.hpp"

namespace dsconv {
namespace kernels {

template <class T, int K, int S>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::depthwise_block_threads, detail::depthwise_resident_blocks)
void depthwise_nhwc_tiled(detail::depthwise_shape s, detail::depthwise_tile t, const T* __restrict__ input,
                          detail::gate_tensor<T> gate, const T* __restrict__ weight, const T* __restrict__ bias,
                          T* __restrict__ output, T* __restrict__ pre_activation) {
  namespace pf = platform;
  const detail::window_geometry<K, S> win(s);
  const int kh = win.kh, kw = win.kw, sh = win.sh, sw = win.sw, dh = win.dh, dw = win.dw, taps = win.taps;
  const int tid = static_cast<int>(pf::thread_idx().x), threads = static_cast<int>(pf::block_dim().x);

  const nhwc_group gr(t, s.c, s.n, static_cast<int>(pf::block_idx().x));
  constexpr int cs = detail::nhwc_block_channels<T>();  // staged channel stride (t.channels)
  const detail::tile_origin o(t, s.out_h, s.out_w, static_cast<int>(pf::block_idx().y));
  const nhwc_window window{o.oy0 * sh - s.pad_h, (o.rows - 1) * sh + (kh - 1) * dh + 1,
                           o.ox0 * sw - s.pad_w, (o.cols - 1) * sw + (kw - 1) * dw + 1, s.h, s.w};
  const int pitch = t.row_stride;
  constexpr int phases = S > 1 ? S : 1;  // column phases of a staged row (tile.hpp)
  const int phase_pitch = pitch / phases;

  T* staged = pf::dynamic_shared<T>();  // [images][in_rows][pitch][cs]
  // [taps][w_pitch], then [cs] (cs elements of T are 32 bytes: the floats start aligned)
  constexpr int w_pitch = detail::nhwc_weight_pitch(cs);
  float* w_s = reinterpret_cast<float*>(staged + t.images * t.plane_stride);
  float* b_s = w_s + taps * w_pitch;
  stage_nhwc_weights(w_s, b_s, weight, bias, gr, taps, w_pitch, s.rotate_filter, tid, threads);
  stage_nhwc_window<phases>(staged, input, gate.saved, gate.act, s.c, gr, window, t, tid, threads);
  pf::sync_threads();

  // Coordinates (image, row, column, channel) of the outputs; rows of row_slots pixels (tile.hpp).
  const int ow = s.out_w;
  detail::for_each_strided<4>(gr.i_count * o.rows * t.row_slots * cs, {o.rows, t.row_slots, cs}, tid, threads,
                              [&](const auto& at) {
    const int bi = at.outer(), oy = at[0], ox = at[1], c = at[2];
    if (c >= gr.cc_count || ox >= o.cols) return;
    const T* in = staged + bi * t.plane_stride + (oy * sh * pitch + (phases > 1 ? ox : ox * sw)) * cs + c;
    const float acc = detail::window_sum<K, phases>(in, pitch * cs, cs, phase_pitch * cs, w_s + c, w_pitch, kh, kw, dh, dw);
    const index_t dst = ((static_cast<index_t>(gr.b0 + bi) * s.out_h + o.oy0 + oy) * ow + o.ox0 + ox) * s.c + gr.c0 + c;
    detail::store_activated(output, pre_activation, s.save_derivative, dst, acc + pf::shared_load(b_s + c), s.act);
  });
}

}  // namespace kernels
}  // namespace dsconv
