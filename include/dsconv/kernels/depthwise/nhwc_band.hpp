#pragma once
// What the NHWC shared-memory kernels (forward, backward data, backward weight) share: which
// images, channels and pixels a block takes, and how it stages them. A block works on 32 bytes
// of channels (one sector per pixel, so neighbouring blocks never share a sector) and stages a
// window of pixels of the tensor it reads (the input; grad_output for the data gradient) for
// each of its images, as they are in memory (16-bit types are not widened: half the shared
// memory of widening them, so more blocks fit a multiprocessor, and whole 16-byte stores), by
// asynchronous copy where alignment allows (cp.async on sm_80+); pixels outside the image are
// staged as zeros, so the taps read shared memory without bounds checks, widening to fp32.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/index_walk.hpp"
#include "tile.hpp"

namespace dsconv {
namespace kernels {

// The block's images b0 .. b0 + i_count - 1 and channels c0 .. c0 + cc_count - 1 (of the
// tile's `channels`, the staged channel stride).
struct nhwc_group {
  int b0, i_count, c0, cc_count;
  // From grid.x or an item number (once per block or item).
  DSCONV_DEVICE nhwc_group(const detail::depthwise_tile& t, int channels, int images, int item) {
    const int groups = (channels + t.channels - 1) / t.channels;
    b0 = item / groups * t.images;
    c0 = item % groups * t.channels;
    i_count = images - b0 < t.images ? images - b0 : t.images;
    cc_count = channels - c0 < t.channels ? channels - c0 : t.channels;
  }
  // From the first image and channel (where the caller knows them without dividing).
  DSCONV_DEVICE nhwc_group(const detail::depthwise_tile& t, int channels, int images, int c0_, int b0_)
      : b0(b0_), i_count(images - b0_ < t.images ? images - b0_ : t.images), c0(c0_),
        cc_count(channels - c0_ < t.channels ? channels - c0_ : t.channels) {}
};

// The pixels a block stages of each image: rows y0 .. y0 + rows - 1 and columns x0 .. x0 +
// cols - 1 of an h x w image (zero outside it).
struct nhwc_window {
  int y0, rows, x0, cols, h, w;
};

// Stages the window of each of the group's images from `src` (channels per pixel: `channels`)
// into `staged` ([image][row][pitch][t.channels] elements of T, t.plane_stride apart), columns
// by phase (Phases > 1: the strided forward's column phases, tile.hpp). `gate`, where set, is
// the tensor the forward saved, laid out as `src` (grad_output of a layer with a fused
// activation): what is staged is then src * act'(gate), through registers.
template <int Phases, class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void stage_nhwc_window(T* staged, const T* __restrict__ src, const T* __restrict__ gate,
                                                        activation act, int channels, const nhwc_group& gr,
                                                        const nhwc_window& win, const detail::depthwise_tile& t, int tid,
                                                        int threads) {
  namespace pf = platform;
  const int pitch = t.row_stride, phase_pitch = pitch / Phases;
  constexpr int cs = detail::nhwc_block_channels<T>();  // (t.channels)
  const index_t row_pitch = static_cast<index_t>(win.w) * channels;
  const int v = t.vector;  // channels per load: 1, or 16 bytes' worth when C and the pointers allow
  const int per_pixel = v == 1 ? cs : cs * static_cast<int>(sizeof(T)) / 16;  // (v: 1 or 16 bytes' worth)
  // Coordinates (image, staged row, staged column, vector of channels). With column phases, a
  // row's columns in the loop's order are whole groups of 4 pixels (128 bytes: the 8 lanes of
  // one wavefront of 16-byte stores; those past the window idle), so that a group starts at a
  // phase-0 column and puts two pixels in each phase's run, 16 banks apart (the planner's phase
  // pitch). From an odd column, or across a row's end, a group's pixels meet in 8 banks.
  constexpr int group_pixels = 4;
  const int loop_cols = Phases > 1 ? (win.cols + group_pixels - 1) / group_pixels * group_pixels : win.cols;
  detail::for_each_strided<4>(gr.i_count * win.rows * loop_cols * per_pixel, {win.rows, loop_cols, per_pixel}, tid,
                              threads, [&](const auto& at) {
    const int bi = at.outer(), r = at[0], xs = at[1], c = at[2] * v;
    if (Phases > 1 && xs >= win.cols) return;
    const int iy = win.y0 + r, ix = win.x0 + xs;
    T* d = staged + bi * t.plane_stride + (r * pitch + detail::staged_column(xs, Phases, phase_pitch)) * cs + c;
    const bool inside = iy >= 0 && iy < win.h && ix >= 0 && ix < win.w;
    const index_t off = (static_cast<index_t>(gr.b0 + bi) * win.h + iy) * row_pitch + static_cast<index_t>(ix) * channels + gr.c0 + c;
    if (v * static_cast<int>(sizeof(T)) == 16 && !gate) {
      // 16 bytes straight into shared memory (asynchronously on sm_80+), zero-filling padding
      // pixels and channels past C (from a valid address, the source, which is not read then).
      const bool valid = inside && c < gr.cc_count;
      pf::async_copy_16(d, valid ? src + off : src, valid ? 16 : 0);
    } else if (v * static_cast<int>(sizeof(T)) == 16) {
      constexpr int V = 16 / sizeof(T);
      platform::vec<T, V> run;
      if (inside && c < gr.cc_count) {
        const auto dz = detail::gate_run<V>(pf::load_vec<V>(src + off), pf::load_vec<V>(gate + off), act);
        DSCONV_UNROLL
        for (int j = 0; j < V; ++j) run[j] = from_float<T>(dz[j]);
      } else {
        DSCONV_UNROLL
        for (int j = 0; j < V; ++j) run[j] = T(0.f);
      }
      pf::shared_store(reinterpret_cast<platform::vec<T, V>*>(d), run);
    } else {
      for (int j = 0; j < v; ++j) {
        T x = T(0.f);
        if (inside && c + j < gr.cc_count)
          x = gate ? from_float<T>(detail::gate_run<1>(pf::load_vec<1>(src + off + j), pf::load_vec<1>(gate + off + j), act)[0])
                   : pf::load(src + off + j);
        pf::shared_store(d + j, x);
      }
    }
  });
  pf::async_copy_wait();
}

// Stages the weights of the group's channels tap-major ([taps][w_pitch] floats; weights are
// [c][taps] in memory, loaded in that order, coalesced), `flip`: each channel's taps in
// reverse order (the filter rotated by 180 degrees, as the data gradient of stride 1 reads
// it), and their bias (zero without one). A channel is contiguous, taps w_pitch = cs + 1 words
// apart: consecutive threads store consecutive taps of a channel in distinct banks (cs apart,
// a 16-bit type's 16 channels were a 16-way conflict), and the taps still read consecutive
// words.
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void stage_nhwc_weights(float* w_s, float* b_s, const T* __restrict__ weight,
                                                         const T* __restrict__ bias, const nhwc_group& gr, int taps,
                                                         int w_pitch, bool flip, int tid, int threads) {
  namespace pf = platform;
  const T* block_weights = weight + static_cast<index_t>(gr.c0) * taps;
  detail::for_each_strided<2>(gr.cc_count * taps, {taps}, tid, threads, [&](const auto& at) {
    const int tap = flip ? taps - 1 - at[0] : at[0];
    pf::shared_store(w_s + tap * w_pitch + at.outer(), to_float(pf::load(block_weights + at.index())));
  });
  for (int c = tid; c < gr.cc_count; c += threads) pf::shared_store(b_s + c, bias ? to_float(pf::load(bias + gr.c0 + c)) : 0.f);
}

}  // namespace kernels
}  // namespace dsconv
