#pragma once
// Depthwise NHWC data gradient at stride > 1, shared-memory tiled: grad_input = the forward
// convolution transposed, each element summing only its own taps (transposed_taps.hpp). A
// block takes a tile of grad_input's pixels (a band of rows, full or partial width, of one
// image, or whole maps of several) for 32 bytes of channels, as the forward takes output
// pixels, stages the window of dz = grad_output (times act'() where the layer fused an
// activation) that the tile reads once (nhwc_band.hpp: every byte of grad_output is read once
// per block), and its threads take the tile's elements channel-fastest. (Stride 1 runs as the
// forward convolution with the rotated filter: nhwc_tiled.hpp.) Multiplier 1.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/fast_divmod.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/index_walk.hpp"
#include "nchw_backward_data.hpp"
#include "nhwc_band.hpp"
#include "tile.hpp"
#include "transposed_taps.hpp"

namespace dsconv {
namespace kernels {

template <class T, int K, int S>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::depthwise_block_threads, detail::depthwise_resident_blocks)
void depthwise_nhwc_backward_data(detail::depthwise_shape s, detail::depthwise_tile t, const T* __restrict__ grad_output,
                                  detail::gate_tensor<T> gate, const T* __restrict__ weight, T* __restrict__ grad_input) {
  namespace pf = platform;
  const detail::window_geometry<K, S> win(s);
  const int kh = win.kh, kw = win.kw, taps = win.taps;
  const int tid = static_cast<int>(pf::thread_idx().x), threads = static_cast<int>(pf::block_dim().x);

  const nhwc_group gr(t, s.c, s.n, static_cast<int>(pf::block_idx().x));
  constexpr int cs = detail::nhwc_block_channels<T>();  // (t.channels)
  const detail::tile_origin o(t, s.h, s.w, static_cast<int>(pf::block_idx().y));  // a tile of grad_input's pixels
  const detail::transposed_extent rows(o.oy0, o.oy0 + o.rows - 1, s.pad_h, kh, win.dh, win.sh);
  const detail::transposed_extent cols(o.ox0, o.ox0 + o.cols - 1, s.pad_w, kw, win.dw, win.sw);
  const nhwc_window window{rows.first, rows.count, cols.first, cols.count, s.out_h, s.out_w};
  const int pitch = t.row_stride;

  T* staged = pf::dynamic_shared<T>();  // [images][rows][pitch][cs]
  constexpr int w_pitch = detail::nhwc_weight_pitch(cs);
  float* w_s = reinterpret_cast<float*>(staged + t.images * t.plane_stride);
  stage_nhwc_weights(w_s, w_s + taps * w_pitch, weight, static_cast<const T*>(nullptr), gr, taps, w_pitch, false, tid, threads);
  stage_nhwc_window<1>(staged, grad_output, gate.saved, gate.act, s.c * s.multiplier, gr, window, t, tid, threads);
  pf::sync_threads();

  // The generic kernel divides by the strides with multiplies (no division in the loop).
  const detail::fast_divmod div_h(static_cast<unsigned>(win.sh)), div_w(static_cast<unsigned>(win.sw));
  const int lift_h = ((kh - 1) * win.dh + win.sh - 1) / win.sh * win.sh, lift_w = ((kw - 1) * win.dw + win.sw - 1) / win.sw * win.sw;
  // Coordinates (image, row, column, channel) of the tile's elements; rows of row_slots pixels.
  detail::for_each_strided<4>(gr.i_count * o.rows * t.row_slots * cs, {o.rows, t.row_slots, cs}, tid, threads,
                              [&](const auto& at) {
    const int bi = at.outer(), iy = at[0], ix = at[1], c = at[2];
    if (c >= gr.cc_count || ix >= o.cols) return;
    const T* image = staged + bi * t.plane_stride + c;
    const float* w_c = w_s + c;
    const int py = o.oy0 + iy + s.pad_h, px = o.ox0 + ix + s.pad_w;  // padded positions
    float acc = 0.f;
    if constexpr (K != 0) {
      const detail::transposed_taps_fixed<K, S> ty(py), tx(px);
      const T* top = image + ((ty.top - window.y0) * pitch + tx.top - window.x0) * cs;
      detail::for_each_fixed_tap(ty, tx, [&](int jy, int jx) {
        acc += to_float(pf::shared_load(top - (jy * pitch + jx) * cs)) *
               pf::shared_load(w_c + ((ty.first + jy * S) * K + tx.first + jx * S) * w_pitch);
      });
    } else {
      detail::for_each_transposed_tap(py, kh, win.dh, lift_h, div_h, [&](int ky, int oy) {
        const T* row = image + (oy - window.y0) * pitch * cs;
        detail::for_each_transposed_tap(px, kw, win.dw, lift_w, div_w, [&](int kx, int ox) {
          acc += to_float(pf::shared_load(row + (ox - window.x0) * cs)) * pf::shared_load(w_c + (ky * kw + kx) * w_pitch);
        });
      });
    }
    const index_t dst = ((static_cast<index_t>(gr.b0 + bi) * s.h + o.oy0 + iy) * s.w + o.ox0 + ix) * s.c + gr.c0 + c;
    pf::store(grad_input + dst, from_float<T>(acc));
  });
}

}  // namespace kernels
}  // namespace dsconv
