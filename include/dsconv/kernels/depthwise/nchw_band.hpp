#pragma once
// What the NCHW shared-memory kernels (forward, backward data, backward weight) share: which
// planes and rows a block takes, and how it stages them. A block stages, per (image, channel)
// plane of its group, a band of rows of the tensor it reads (the input; grad_output for the
// data gradient), zero-padded, as floats at the tile's row pitch; every byte of it is read from
// global memory once per block, in one contiguous range per plane (full rows), with coalesced
// (vector where aligned) loads, and the padding is written around it, so the taps read shared
// memory without any bounds check.

#include <type_traits>

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/index_walk.hpp"
#include "tile.hpp"

namespace dsconv {
namespace kernels {

// The block's planes: channels c0 .. c0 + g_count - 1 of images b0 .. b0 + i_count - 1 (staged
// plane j: image b0 + j / g_count, channel c0 + j % g_count), from grid.x, or from an item
// number (the weight gradient's blocks take several).
struct nchw_planes {
  int c0, b0, g_count, i_count;
  DSCONV_DEVICE nchw_planes(const detail::depthwise_tile& t, int channels, int images, int item) {
    const int channel_groups = (channels + t.channels - 1) / t.channels;
    c0 = item % channel_groups * t.channels;  // (once per block or item)
    b0 = item / channel_groups * t.images;
    g_count = channels - c0 < t.channels ? channels - c0 : t.channels;
    i_count = images - b0 < t.images ? images - b0 : t.images;
  }
  // Channels from c0 and images from b0 (where the caller knows them without dividing).
  DSCONV_DEVICE nchw_planes(const detail::depthwise_tile& t, int channels, int images, int c0_, int b0_)
      : c0(c0_), b0(b0_), g_count(channels - c0_ < t.channels ? channels - c0_ : t.channels),
        i_count(images - b0_ < t.images ? images - b0_ : t.images) {}
  DSCONV_DEVICE int count() const { return g_count * i_count; }
};

// The rows a block stages of each plane: rows y0 .. y0 + rows - 1 of an h x w plane (zero
// outside it), each with `left` zero columns before column 0 and `right` after column w - 1.
struct nchw_band {
  int y0, rows, left, right, h, w;
};

// The staging paths a kernel compiles (stage_nchw_band's Paths): 16-byte vectors, pairs, and
// the staging order of stage_slots. Each costs registers, so a kernel compiles those it can
// afford and its plans choose no other (a vector width a kernel lacks would stage element by
// element: correct, only slower).
enum nchw_staging_path : int { staging_vectors = 1, staging_pairs = 2, staging_order = 4, staging_all = 7 };

// Stages the band of every plane of `planes` from `src` (channels per image: `channels`) into
// `staged` ([plane][row][pitch] floats, plane_stride apart), columns by phase (Phases > 1: the
// strided forward's column phases, tile.hpp). `gate`, where set, is the tensor the forward
// saved, laid out as `src` (grad_output of a layer with a fused activation): what is staged is
// then src * act'(gate). Paths: the staging paths compiled (nchw_staging_path).
template <int Phases, int Paths = staging_all, class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void stage_nchw_band(float* staged, const T* __restrict__ src, const T* __restrict__ gate,
                                                      activation act, int channels, const nchw_planes& pl,
                                                      const nchw_band& band, const detail::depthwise_tile& t, int tid,
                                                      int threads) {
  namespace pf = platform;
  const int pitch = t.row_stride, plane_stage = t.plane_stride, phase_pitch = pitch / Phases;
  const int planes = pl.count();
  // Zero padding: the pad columns of every staged row, and whole rows above or below the plane.
  const int top = band.y0 < 0 ? (-band.y0 < band.rows ? -band.y0 : band.rows) : 0;
  const int below = band.y0 + band.rows > band.h ? band.y0 + band.rows - (band.h > band.y0 ? band.h : band.y0) : 0;
  // (Loops over the staged elements walk their coordinates: detail::for_each_strided.)
  const int pad_cols = band.left + band.right;
  detail::for_each_strided<3>(planes * band.rows * pad_cols, {band.rows, pad_cols}, tid, threads, [&](const auto& at) {
    const int x = at[1];  // of the plane at.outer(), row at[0]
    pf::shared_store(staged + at.outer() * plane_stage + at[0] * pitch +
                         detail::staged_column(x < band.left ? x : band.w + x, Phases, phase_pitch),
                     0.f);
  });
  detail::for_each_strided<3>(planes * (top + below) * band.w, {top + below, band.w}, tid, threads, [&](const auto& at) {
    const int k = at[0], r = k < top ? k : band.rows - (top + below) + k;
    pf::shared_store(
        staged + at.outer() * plane_stage + r * pitch + detail::staged_column(band.left + at[1], Phases, phase_pitch), 0.f);
  });

  // The plane rows the band needs: per plane one contiguous range (for whole planes of
  // consecutive channels the ranges are adjacent, so an image's loads are one stream).
  // Coordinates (image, channel, row, column) of the block's ranges: their source element and
  // their staged slot.
  // A row's elements in the loop's order: its own, or (stage_slots) whole slots of threads,
  // those past the row's end idle.
  const int ry0 = band.y0 + top, staged_rows = band.rows - below - top;
  const index_t plane_elems = static_cast<index_t>(band.h) * band.w;
  constexpr bool vectors = Paths & staging_vectors, pairs = Paths & staging_pairs, order = Paths & staging_order;
  const int row_span = order && t.stage_slots ? t.stage_slots * t.vector : band.w;
  const int count = planes * staged_rows * row_span;
  const int ranges[3] = {pl.g_count, staged_rows, row_span};
  auto offset = [&](const auto& at) {
    return (static_cast<index_t>(pl.b0 + at.outer()) * channels + pl.c0 + at[0]) * plane_elems +
           static_cast<index_t>(ry0 + at[1]) * band.w + at[2];
  };
  auto place = [&](const auto& at, int k) {
    return staged + (at.outer() * pl.g_count + at[0]) * plane_stage + (ry0 - band.y0 + at[1]) * pitch +
           detail::staged_column(band.left + at[2] + k, Phases, phase_pitch);
  };
  // A vector of V elements: loaded at once, stored word by word in the order that keeps the
  // group's stores in distinct banks (tile.hpp: staging_rotation).
  auto stage_vector = [&](auto vector_size) {
    constexpr int V = decltype(vector_size)::value;
    const int first = detail::staging_rotation(tid, V, Phases);
    detail::for_each_strided<4>(count, ranges, tid * V, threads * V, [&](const auto& at) {
      if (order && at[2] >= band.w) return;
      const index_t off = offset(at);
      float f[V];
      if (gate) {
        const auto dz = detail::gate_run<V>(pf::load_vec<V>(src + off), pf::load_vec<V>(gate + off), act);
        DSCONV_UNROLL
        for (int k = 0; k < V; ++k) f[k] = dz[k];
      } else {
        const auto v = pf::load_vec<V>(src + off);
        DSCONV_UNROLL
        for (int k = 0; k < V; ++k) f[k] = to_float(v[k]);
      }
      detail::rotate_left<V>(f, first);
      DSCONV_UNROLL
      for (int k = 0; k < V; ++k) pf::shared_store(place(at, (k + first) % V), f[k]);
    });
  };
  // The planner checked that rows are a multiple of the vector and the source aligned to it,
  // so no vector crosses a row or a plane. (Its vectors are 16 bytes of T, pairs or single
  // elements: only those widths are compiled, which keeps the kernels' registers down.)
  constexpr int v16 = static_cast<int>(16 / sizeof(T));
  if (vectors && t.vector == v16) {
    stage_vector(std::integral_constant<int, v16>{});
  } else if (pairs && t.vector == 2) {
    stage_vector(std::integral_constant<int, 2>{});
  } else {
    detail::for_each_strided<4>(count, ranges, tid, threads, [&](const auto& at) {
      if (order && at[2] >= band.w) return;
      const index_t off = offset(at);
      const float v = gate ? detail::gate_run<1>(pf::load_vec<1>(src + off), pf::load_vec<1>(gate + off), act)[0]
                           : to_float(pf::load(src + off));
      pf::shared_store(place(at, 0), v);
    });
  }
}

// Stages the weights of the block's channels ([g][taps], floats; `flip`: each channel's taps
// in reverse order, the filter rotated by 180 degrees, as the data gradient of stride 1 reads
// it) and their bias (zero without one).
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void stage_nchw_weights(float* w_s, float* b_s, const T* __restrict__ weight,
                                                         const T* __restrict__ bias, const nchw_planes& pl, int taps,
                                                         bool flip, int tid, int threads) {
  namespace pf = platform;
  const T* block_weights = weight + static_cast<index_t>(pl.c0) * taps;
  detail::for_each_strided<2>(pl.g_count * taps, {taps}, tid, threads, [&](const auto& at) {
    const int g = at.outer(), tap = at[0];
    pf::shared_store(w_s + g * taps + (flip ? taps - 1 - tap : tap), to_float(pf::load(block_weights + at.index())));
  });
  for (int g = tid; g < pl.g_count; g += threads) pf::shared_store(b_s + g, bias ? to_float(pf::load(bias + pl.c0 + g)) : 0.f);
}

}  // namespace kernels
}  // namespace dsconv
