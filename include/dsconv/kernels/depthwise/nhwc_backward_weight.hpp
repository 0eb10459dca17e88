#pragma once
// Depthwise NHWC weight gradient, shared-memory tiled: grad_weight and grad_bias as in
// nchw_backward_weight.hpp, deterministic. A block takes 32 bytes of channels and a run of
// items, each a tile of the forward's tiling (a band of output rows, full or partial width,
// of one image, or whole maps of several images): it stages the item's input window as the
// forward does (nhwc_band.hpp), reads each dz of the item once (coalesced, threads in the
// forward's order: channel-fastest) and adds dz times every
// tap's staged input into per-thread sums; after its items it adds the sums of the threads of
// each channel in a fixed order (weight_reduce.hpp). Filters larger than 5x5 take passes of
// their taps, one per block row of the grid: dz comes from global memory here, so tap groups
// walking the same outputs (nchw_backward_weight.hpp) would read it once per group. Multiplier 1.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/index_walk.hpp"
#include "nchw_backward_weight.hpp"
#include "nhwc_band.hpp"
#include "tile.hpp"
#include "weight_reduce.hpp"

namespace dsconv {
namespace kernels {

template <class T, int K, int S>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::depthwise_block_threads, (detail::weight_resident_blocks<T, K, S, false>()))
void depthwise_nhwc_backward_weight(detail::depthwise_shape s, detail::depthwise_tile t, detail::weight_items items,
                                    const T* __restrict__ input, const T* __restrict__ grad_output,
                                    detail::gate_tensor<T> gate, T* __restrict__ grad_weight, T* __restrict__ grad_bias) {
  namespace pf = platform;
  constexpr int C = detail::weight_chunk_of(K, false);
  const detail::window_geometry<K, S> win(s);
  const int kh = win.kh, kw = win.kw, sh = win.sh, sw = win.sw, dh = win.dh, dw = win.dw, taps = win.taps;
  const int tid = static_cast<int>(pf::thread_idx().x), threads = static_cast<int>(pf::block_dim().x);
  const detail::warp_position wp(tid, threads);
  constexpr int phases = S > 1 ? S : 1;  // column phases of a staged row (tile.hpp)
  const int pitch = t.row_stride, phase_pitch = pitch / phases;
  constexpr int cs = detail::nhwc_block_channels<T>();  // (t.channels)
  T* staged = pf::dynamic_shared<T>();

  // This block's channel group and its items: item i is tile i % tiles (of the map: bands x
  // column tiles) of image group i / tiles, walked without dividing.
  const int channel_group = static_cast<int>(pf::block_idx().x) / items.groups;  // (once per block)
  const int group = static_cast<int>(pf::block_idx().x) - channel_group * items.groups;
  const int col_tiles = (s.out_w + t.cols - 1) / t.cols;
  const int tiles = (s.out_h + t.rows - 1) / t.rows * col_tiles, image_groups = (s.n + t.images - 1) / t.images;
  const int first = group * items.per_block;
  const int last = first + items.per_block < tiles * image_groups ? first + items.per_block : tiles * image_groups;
  const int c0 = channel_group * cs;
  const int first_row_tile = first % tiles / col_tiles, first_col_tile = first % tiles % col_tiles, first_image_group = first / tiles;

  // This block's taps (the bias with the first pass's).
  const detail::pass_taps<K, phases, C> pass(detail::weight_pass<K, false>(), taps, kw, dw, dh * pitch * cs, cs,
                                             phase_pitch * cs);
  const int first_tap = pass.first;
  float sums[C], bias = 0.f;
  DSCONV_UNROLL
  for (int i = 0; i < C; ++i) sums[i] = 0.f;
  int row_tile = first_row_tile, col_tile = first_col_tile, image_group = first_image_group;
  // This thread's channel (c0 + c) and its first pixel of an item, in the forward's order
  // (channel-fastest: thread t takes pixels t / cs, t / cs + threads / cs, ...).
  const int c = tid % cs, pixel0 = tid / cs, pixel_step = threads / cs;
  const T* staged_c = staged + c;
  for (int item = first; item < last; ++item) {
    const nhwc_group gr(t, s.c, s.n, c0, image_group * t.images);
    const int oy0 = row_tile * t.rows, ox0 = col_tile * t.cols;
    const int rows = s.out_h - oy0 < t.rows ? s.out_h - oy0 : t.rows, cols = s.out_w - ox0 < t.cols ? s.out_w - ox0 : t.cols;
    const nhwc_window window{oy0 * sh - s.pad_h, (rows - 1) * sh + (kh - 1) * dh + 1,
                             ox0 * sw - s.pad_w, (cols - 1) * sw + (kw - 1) * dw + 1, s.h, s.w};
    stage_nhwc_window<phases>(staged, input, static_cast<const T*>(nullptr), activation::none, s.c, gr, window, t, tid,
                              threads);
    pf::sync_threads();
    if (c < gr.cc_count)
      detail::for_each_strided<3>(gr.i_count * rows * t.row_slots, {rows, t.row_slots}, pixel0, pixel_step,
                                  [&](const auto& at) {
        const int bi = at.outer(), oy = at[0], ox = at[1];
        if (ox >= cols) return;
        const index_t off = ((static_cast<index_t>(gr.b0 + bi) * s.out_h + oy0 + oy) * s.out_w + ox0 + ox) * s.c + c0 + c;
        const float dz = detail::gated_load(grad_output, gate, off);
        if (pass.sums_bias()) bias += dz;
        const T* in = staged_c + bi * t.plane_stride + (oy * sh * pitch + (phases > 1 ? ox : ox * sw)) * cs;
        DSCONV_UNROLL
        for (int i = 0; i < C; ++i) sums[i] += dz * to_float(pf::shared_load(in + pass.at(i)));
      });
    pf::sync_threads();  // before the next item's staging
    if (++col_tile == col_tiles) {
      col_tile = 0;
      if (++row_tile * col_tiles == tiles) row_tile = 0, ++image_group;
    }
  }
  float* scratch = reinterpret_cast<float*>(staged);
  detail::reduce_chunk<C>(sums, bias, scratch, cs, wp, tid, threads);
  // scratch[channel * (C + 1) + i]: tap first_tap + i of channel c0 + channel (the bias at C).
  const int cc_count = s.c - c0 < cs ? s.c - c0 : cs;
  for (int j = tid; j < cc_count * (C + 1); j += threads) {
    const int channel = j / (C + 1), i = j - channel * (C + 1);  // (a pass's stores, after its reduction)
    const int tap = first_tap + i;
    if ((i < C && tap >= taps) || (i == C && !pass.sums_bias())) continue;
    detail::store_weight_sum(pf::shared_load(scratch + j), c0 + channel, i == C ? taps : tap, taps, s.c, items.partial, group,
                             grad_weight, grad_bias);
  }
}

}  // namespace kernels
}  // namespace dsconv
