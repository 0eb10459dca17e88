#pragma once
// Depthwise NCHW data gradient at stride > 1, shared-memory tiled: grad_input = the forward
// convolution transposed, each element summing only its own taps (transposed_taps.hpp). A
// block takes a band of full-width rows of grad_input for a group of planes (as the forward
// takes output rows), stages the rows of dz = grad_output (times act'() where the layer fused
// an activation) that the band reads once (nchw_band.hpp: every byte of grad_output is read
// once per block), and its threads take the band's elements in order along a row, rows on
// whole groups of 32 threads: neighbours read the same or the next staged word. (Stride 1 runs
// as the forward convolution with the rotated filter: nchw_tiled.hpp.) Multiplier 1.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/fast_divmod.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/index_walk.hpp"
#include "nchw_band.hpp"
#include "tile.hpp"
#include "transposed_taps.hpp"

namespace dsconv {
namespace detail {
// floor(a / b) for b > 0 and any a (once per block).
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The rows (and columns) of grad_output that the elements from..to (inclusive) of one
// dimension of grad_input read: from floor((from + pad - (kernel - 1) * dilation) / stride).
struct transposed_extent {
  int first, count;
  DSCONV_HOST_DEVICE transposed_extent(int from, int to, int pad, int kernel, int dilation, int stride)
      : first(floor_div(from + pad - (kernel - 1) * dilation, stride)),
        count(floor_div(to + pad, stride) - floor_div(from + pad - (kernel - 1) * dilation, stride) + 1) {}
};
}  // namespace detail

namespace kernels {

// (The run-time filter's kernel keeps its taps' divisors and lifts besides: 3 blocks, whose
// registers hold it without the spills 4 blocks' 64 made on sm_90.)
template <class T, int K, int S>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::depthwise_block_threads, (K != 0 ? detail::depthwise_resident_blocks : 3))
void depthwise_nchw_backward_data(detail::depthwise_shape s, detail::depthwise_tile t, const T* __restrict__ grad_output,
                                  detail::gate_tensor<T> gate, const T* __restrict__ weight, T* __restrict__ grad_input) {
  namespace pf = platform;
  const detail::window_geometry<K, S> win(s);
  const int kh = win.kh, kw = win.kw, taps = win.taps;
  const int tid = static_cast<int>(pf::thread_idx().x), threads = static_cast<int>(pf::block_dim().x);

  const nchw_planes pl(t, s.c, s.n, static_cast<int>(pf::block_idx().x));
  const detail::tile_origin o(t, s.h, s.w, static_cast<int>(pf::block_idx().y));  // a band of grad_input's rows
  const detail::transposed_extent rows(o.oy0, o.oy0 + o.rows - 1, s.pad_h, kh, win.dh, win.sh);
  const detail::transposed_extent cols(0, s.w - 1, s.pad_w, kw, win.dw, win.sw);
  const nchw_band band{rows.first, rows.count, -cols.first, cols.first + cols.count - s.out_w, s.out_h, s.out_w};
  const int pitch = t.row_stride, plane_stage = t.plane_stride;

  float* staged = pf::dynamic_shared<float>();
  float* w_s = staged + t.channels * t.images * plane_stage;
  stage_nchw_weights(w_s, w_s + t.channels * taps, weight, static_cast<const T*>(nullptr), pl, taps, false, tid, threads);
  // (No pairs: with them sm_90 spilled its 16-bit kernels.)
  stage_nchw_band<1, staging_vectors | staging_order>(staged, grad_output, gate.saved, gate.act, s.c * s.multiplier, pl,
                                                      band, t, tid, threads);
  pf::sync_threads();

  // The generic kernel divides by the strides with multiplies (no division in the loop).
  const detail::fast_divmod div_h(static_cast<unsigned>(win.sh)), div_w(static_cast<unsigned>(win.sw));
  const int lift_h = ((kh - 1) * win.dh + win.sh - 1) / win.sh * win.sh, lift_w = ((kw - 1) * win.dw + win.sw - 1) / win.sw * win.sw;
  // Elements by (image, channel, row, column), a row on whole groups of 32 threads, or for
  // whole planes of narrow rows in order (row_slots = w: the plan's choice).
  const int g_count = pl.g_count, w = s.w;
  const index_t in_plane = static_cast<index_t>(s.h) * w;
  detail::for_each_strided<4>(pl.i_count * g_count * o.rows * t.row_slots, {g_count, o.rows, t.row_slots}, tid, threads,
                              [&](const auto& at) {
    const int bi = at.outer(), g = at[0], iy = at[1], ix = at[2];
    if (ix >= w) return;
    const float* plane = staged + (bi * g_count + g) * plane_stage;
    const float* w_g = w_s + g * taps;
    const int py = o.oy0 + iy + s.pad_h, px = ix + s.pad_w;  // padded positions
    float acc = 0.f;
    if constexpr (K != 0) {
      const detail::transposed_taps_fixed<K, S> ty(py), tx(px);
      const float* top = plane + (ty.top - band.y0) * pitch + tx.top + band.left;
      detail::for_each_fixed_tap(ty, tx, [&](int jy, int jx) {
        acc += pf::shared_load(top - jy * pitch - jx) * pf::shared_load(w_g + (ty.first + jy * S) * K + tx.first + jx * S);
      });
    } else {
      detail::for_each_transposed_tap(py, kh, win.dh, lift_h, div_h, [&](int ky, int oy) {
        const float* row = plane + (oy - band.y0) * pitch + band.left;
        detail::for_each_transposed_tap(px, kw, win.dw, lift_w, div_w, [&](int kx, int ox) {
          acc += pf::shared_load(row + ox) * pf::shared_load(w_g + ky * kw + kx);
        });
      });
    }
    const index_t dst = (static_cast<index_t>(pl.b0 + bi) * s.c + pl.c0 + g) * in_plane + static_cast<index_t>(o.oy0 + iy) * w + ix;
    pf::store(grad_input + dst, from_float<T>(acc));
  });
}

}  // namespace kernels
}  // namespace dsconv
