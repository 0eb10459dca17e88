#pragma once
// Depthwise NCHW, shared-memory tiled. A block computes a band of full-width output rows of
// one (image, channel) plane, or, when planes are small (7x7 to ~32x32), whole planes of a
// group of channels for a group of images, so a block has enough work at batch 1 and reads
// its weights once for several images. Per image its input is one contiguous range of
// global memory (full rows of one plane, or whole consecutive planes), copied once into
// shared memory with coalesced (vector where aligned) loads; the zero padding is written
// around it, and the taps read shared memory without any bounds check. Multiplier 1.

#include <type_traits>

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/activation.hpp"
#include "../common/index_walk.hpp"
#include "tile.hpp"

namespace dsconv {
namespace kernels {

template <class T, int K, int S>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::depthwise_block_threads, detail::depthwise_resident_blocks)
void depthwise_nchw_tiled(detail::depthwise_shape s, detail::depthwise_tile t, const T* __restrict__ input,
                          const T* __restrict__ weight, const T* __restrict__ bias, T* __restrict__ output) {
  namespace pf = platform;
  const detail::window_geometry<K, S> win(s);
  const int kh = win.kh, kw = win.kw, sh = win.sh, sw = win.sw, dh = win.dh, dw = win.dw, taps = win.taps;
  const int tid = static_cast<int>(pf::thread_idx().x), threads = static_cast<int>(pf::block_dim().x);

  const int channel_groups = (s.c + t.channels - 1) / t.channels;
  const int c0 = static_cast<int>(pf::block_idx().x % channel_groups) * t.channels;
  const int b0 = static_cast<int>(pf::block_idx().x / channel_groups) * t.images;
  const int g_count = s.c - c0 < t.channels ? s.c - c0 : t.channels;
  const int i_count = s.n - b0 < t.images ? s.n - b0 : t.images;
  const int planes = g_count * i_count;  // staged plane j: image b0 + j / g_count, channel c0 + j % g_count
  // A band of full rows (NCHW tiles are never narrower than the map: cols == out_w).
  const detail::tile_origin o(t, s.out_h, s.out_w, static_cast<int>(pf::block_idx().y));
  const int oy0 = o.oy0, rows = o.rows;
  const int iy0 = oy0 * sh - s.pad_h;  // input row of staged row 0 (negative in the top padding)
  const int in_rows = (rows - 1) * sh + (kh - 1) * dh + 1;
  const int pitch = t.row_stride, plane_stage = t.plane_stride;
  constexpr int phases = S > 1 ? S : 1;  // column phases of a staged row (tile.hpp)
  const int phase_pitch = pitch / phases;

  float* staged = pf::dynamic_shared<float>();
  float* w_s = staged + t.channels * t.images * plane_stage;
  float* b_s = w_s + t.channels * taps;

  for (int i = tid; i < g_count * taps; i += threads)
    pf::shared_store(w_s + i, to_float(pf::load(weight + static_cast<index_t>(c0) * taps + i)));
  for (int g = tid; g < g_count; g += threads) pf::shared_store(b_s + g, bias ? to_float(pf::load(bias + c0 + g)) : 0.f);

  // Zero padding: the pad columns of every staged row, and whole rows above or below the image.
  const int top = iy0 < 0 ? (-iy0 < in_rows ? -iy0 : in_rows) : 0;
  const int below = iy0 + in_rows > s.h ? iy0 + in_rows - (s.h > iy0 ? s.h : iy0) : 0;
  // (Loops over the staged elements walk their coordinates: detail::for_each_strided.)
  const int pad_cols = 2 * s.pad_w;
  detail::for_each_strided<3>(planes * in_rows * pad_cols, {in_rows, pad_cols}, tid, threads, [&](const auto& at) {
    const int x = at[1];  // of the plane at.outer(), row at[0]
    pf::shared_store(staged + at.outer() * plane_stage + at[0] * pitch +
                         detail::staged_column<phases>(x < s.pad_w ? x : s.w + x, phase_pitch),
                     0.f);
  });
  detail::for_each_strided<3>(planes * (top + below) * s.w, {top + below, s.w}, tid, threads, [&](const auto& at) {
    const int k = at[0], r = k < top ? k : in_rows - (top + below) + k;
    pf::shared_store(staged + at.outer() * plane_stage + r * pitch + detail::staged_column<phases>(s.pad_w + at[1], phase_pitch),
                     0.f);
  });

  // The image rows the band needs: per plane one contiguous range (for whole planes of
  // consecutive channels the ranges are adjacent, so an image's loads are one stream).
  // Coordinates (image, channel, row, column) of the block's ranges: their source element and
  // their staged slot.
  const int ry0 = iy0 + top, staged_rows = in_rows - below - top;
  const index_t plane_elems = static_cast<index_t>(s.h) * s.w;
  const int count = planes * staged_rows * s.w;
  const int ranges[3] = {g_count, staged_rows, s.w};
  auto source = [&](const auto& at) {
    return input + (static_cast<index_t>(b0 + at.outer()) * s.c + c0 + at[0]) * plane_elems +
           static_cast<index_t>(ry0 + at[1]) * s.w + at[2];
  };
  auto place = [&](const auto& at, int k) {
    return staged + (at.outer() * g_count + at[0]) * plane_stage + (ry0 - iy0 + at[1]) * pitch +
           detail::staged_column<phases>(s.pad_w + at[2] + k, phase_pitch);
  };
  // A vector of V elements: loaded at once, stored word by word in the order that keeps the
  // group's stores in distinct banks (tile.hpp: staging_rotation).
  auto stage_vector = [&](auto vector_size) {
    constexpr int V = decltype(vector_size)::value;
    const int first = detail::staging_rotation<V, phases>(tid);
    detail::for_each_strided<4>(count, ranges, tid * V, threads * V, [&](const auto& at) {
      const auto v = pf::load_vec<V>(source(at));
      float f[V];
      DSCONV_UNROLL
      for (int k = 0; k < V; ++k) f[k] = to_float(v[k]);
      detail::rotate_left<V>(f, first);
      DSCONV_UNROLL
      for (int k = 0; k < V; ++k) pf::shared_store(place(at, (k + first) % V), f[k]);
    });
  };
  // The planner checked that rows are a multiple of the vector and the input is 16-byte
  // aligned, so no vector crosses a row or a plane.
  if (t.vector == 4) {
    stage_vector(std::integral_constant<int, 4>{});
  } else if (t.vector == 8) {
    stage_vector(std::integral_constant<int, 8>{});
  } else {
    detail::for_each_strided<4>(count, ranges, tid, threads,
                                [&](const auto& at) { pf::shared_store(place(at, 0), to_float(pf::load(source(at)))); });
  }
  pf::sync_threads();

  // Outputs by (image, channel group, row, channel in the group, column), threads in row slots
  // (tile.hpp): channel g = group * channel_slots + slot, column ox below row_slots.
  const int ow = s.out_w, ks = t.channel_slots;
  const index_t out_plane = static_cast<index_t>(s.out_h) * ow;
  detail::for_each_strided<5>(i_count * ((g_count + ks - 1) / ks) * rows * ks * t.row_slots,
                              {(g_count + ks - 1) / ks, rows, ks, t.row_slots}, tid, threads, [&](const auto& at) {
    const int bi = at.outer(), g = at[0] * ks + at[2], oy = at[1], ox = at[3];
    if (g >= g_count || ox >= ow) return;
    const float* window = staged + (bi * g_count + g) * plane_stage + oy * sh * pitch + (phases > 1 ? ox : ox * sw);
    const float acc = detail::window_sum<K, phases>(window, pitch, 1, phase_pitch, w_s + g * taps, 1, kh, kw, dh, dw);
    T* dst = output + (static_cast<index_t>(b0 + bi) * s.c + c0 + g) * out_plane + static_cast<index_t>(oy0 + oy) * ow;
    pf::store(dst + ox, from_float<T>(detail::activate(acc + pf::shared_load(b_s + g), s.act)));
  });
}

}  // namespace kernels
}  // namespace dsconv
