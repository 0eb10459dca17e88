#pragma once
// Depthwise NHWC, shared-memory tiled. A block computes a band of output rows of one image
// (full-width, or of partial rows where a multiprocessor's share of shared memory holds only
// short bands of full rows), or whole maps of several images when maps are small (so its
// weights are read once for all of them), for a group of channels worth 32 bytes (one sector per pixel), so
// neighbouring blocks never share a sector. Its input rows (each pixel's channel group) are
// staged once in shared memory as they are in memory (16-bit types stay 16-bit: half the
// shared memory of widening them, so more blocks fit a multiprocessor, and whole 16-byte
// stores), by asynchronous copy where alignment allows (cp.async on sm_80+); pad pixels are
// staged as zeros and the taps read shared memory without bounds checks, widening to fp32.
// Requires multiplier 1.

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
void depthwise_nhwc_tiled(detail::depthwise_shape s, detail::depthwise_tile t, const T* __restrict__ input,
                          const T* __restrict__ weight, const T* __restrict__ bias, T* __restrict__ output) {
  namespace pf = platform;
  const detail::window_geometry<K, S> win(s);
  const int kh = win.kh, kw = win.kw, sh = win.sh, sw = win.sw, dh = win.dh, dw = win.dw, taps = win.taps;
  const int tid = static_cast<int>(pf::thread_idx().x), threads = static_cast<int>(pf::block_dim().x);

  const int groups = (s.c + t.channels - 1) / t.channels;
  const int b0 = static_cast<int>(pf::block_idx().x / groups) * t.images;
  const int i_count = s.n - b0 < t.images ? s.n - b0 : t.images;
  const int c0 = static_cast<int>(pf::block_idx().x % groups) * t.channels;
  const int cc_count = s.c - c0 < t.channels ? s.c - c0 : t.channels;
  const int cs = t.channels;  // staged channel stride
  const detail::tile_origin o(t, s.out_h, s.out_w, static_cast<int>(pf::block_idx().y));
  const int oy0 = o.oy0, ox0 = o.ox0, rows = o.rows, cols = o.cols;
  const int iy0 = oy0 * sh - s.pad_h, ix0 = ox0 * sw - s.pad_w;  // input row and column of staged (0, 0)
  const int in_rows = (rows - 1) * sh + (kh - 1) * dh + 1;
  const int in_cols = (cols - 1) * sw + (kw - 1) * dw + 1;
  const int pitch = t.row_stride;
  constexpr int phases = S > 1 ? S : 1;  // column phases of a staged row (tile.hpp)
  const int phase_pitch = pitch / phases;

  const int image_stage = t.plane_stride;
  T* staged = pf::dynamic_shared<T>();  // [images][in_rows][pitch][cs]
  // [taps][w_pitch], then [cs] (cs elements of T are 32 bytes: the floats start aligned)
  const int w_pitch = detail::nhwc_weight_pitch(cs);
  float* w_s = reinterpret_cast<float*>(staged + t.images * image_stage);
  float* b_s = w_s + taps * w_pitch;

  // Weights are [c][taps] in memory, loaded in that order (coalesced); staged tap-major so a
  // thread's channel is contiguous, taps w_pitch = cs + 1 words apart: consecutive threads
  // store consecutive taps of a channel in distinct banks (cs apart, a 16-bit type's 16
  // channels were a 16-way conflict), and the taps still read consecutive words.
  // (Loops over staged elements walk their coordinates: detail::for_each_strided.)
  const T* block_weights = weight + static_cast<index_t>(c0) * taps;
  detail::for_each_strided<2>(cc_count * taps, {taps}, tid, threads, [&](const auto& at) {
    pf::shared_store(w_s + at[0] * w_pitch + at.outer(), to_float(pf::load(block_weights + at.outer() * taps + at[0])));
  });
  for (int c = tid; c < cc_count; c += threads) pf::shared_store(b_s + c, bias ? to_float(pf::load(bias + c0 + c)) : 0.f);

  // Every staged pixel of the band: loaded when inside the image, zero in the padding.
  const index_t row_pitch = static_cast<index_t>(s.w) * s.c;
  const int v = t.vector;  // channels per load: 1, or 16 bytes' worth when C and the pointer allow
  const int per_pixel = cs / v;
  // Coordinates (image, staged row, staged column, vector of channels).
  detail::for_each_strided<4>(i_count * in_rows * in_cols * per_pixel, {in_rows, in_cols, per_pixel}, tid, threads,
                              [&](const auto& at) {
    const int bi = at.outer(), r = at[0], xs = at[1], c = at[2] * v;
    const int iy = iy0 + r, ix = ix0 + xs;
    const T* image = input + static_cast<index_t>(b0 + bi) * s.h * row_pitch + c0;
    T* d = staged + bi * image_stage + (r * pitch + detail::staged_column<phases>(xs, phase_pitch)) * cs + c;
    const bool inside = iy >= 0 && iy < s.h && ix >= 0 && ix < s.w;
    const T* p = image + iy * row_pitch + static_cast<index_t>(ix) * s.c + c;
    if (v * static_cast<int>(sizeof(T)) == 16) {
      // 16 bytes straight into shared memory (asynchronously on sm_80+), zero-filling padding
      // pixels and channels past C (from a valid address, the input, which is not read then).
      const bool valid = inside && c < cc_count;
      pf::async_copy_16(d, valid ? p : input, valid ? 16 : 0);
    } else {
      for (int j = 0; j < v; ++j) pf::shared_store(d + j, inside && c + j < cc_count ? pf::load(p + j) : T(0.f));
    }
  });
  pf::async_copy_wait();
  pf::sync_threads();

  // Coordinates (image, row, column, channel) of the outputs; rows of row_slots pixels (tile.hpp).
  const int ow = s.out_w;
  detail::for_each_strided<4>(i_count * rows * t.row_slots * cs, {rows, t.row_slots, cs}, tid, threads, [&](const auto& at) {
    const int bi = at.outer(), oy = at[0], ox = at[1], c = at[2];
    if (c >= cc_count || ox >= cols) return;
    const T* window = staged + bi * image_stage + (oy * sh * pitch + (phases > 1 ? ox : ox * sw)) * cs + c;
    const float acc = detail::window_sum<K, phases>(window, pitch * cs, cs, phase_pitch * cs, w_s + c, w_pitch, kh, kw, dh, dw);
    T* dst = output + ((static_cast<index_t>(b0 + bi) * s.out_h + oy0 + oy) * ow + ox0 + ox) * s.c + c0 + c;
    pf::store(dst, from_float<T>(detail::activate(acc + pf::shared_load(b_s + c), s.act)));
  });
}

}  // namespace kernels
}  // namespace dsconv
