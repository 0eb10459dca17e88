#pragma once
// Step 3 of the fused inverted-residual kernel (fused_nhwc.hpp) in strips: the depthwise filter
// over the expanded slice in shared memory ([halo][Pitch] floats, a lane's channel at `slice`),
// a thread taking strips of fused_strip_outputs consecutive output pixels of one tile row
// (fused_tile.hpp). For each of the filter's rows a thread reads the strip's window of that input
// row once, (S - 1) * Stride + K values, and the row's K taps, and multiplies them into the
// strip's S sums. A 3x3 filter at stride 1 thus reads 36 words for 7 outputs where the
// per-pixel loop read 126 (each tap's value and weight), and issues no address arithmetic per
// tap: K, Stride and Pitch are compile-time constants, so every read is an immediate offset
// from one row address. (The taps held in registers through the slice loop made the kernel
// spill at its 64 registers.)

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../platform/recomputed.hpp"
#include "../common/activation.hpp"
#include "../common/index_walk.hpp"
#include "fused_tile.hpp"

namespace dsconv {
namespace detail {

template <int K, int Stride, int Pitch>
struct fused_depthwise_strips {
  static constexpr int S = fused_strip_outputs, W = (S - 1) * Stride + K;
  // The filter's rows unrolled: all of them on NVIDIA (rolled, the kernel spilled 8 bytes at its
  // 64 registers), one on AMD (unrolled, its compiler read every row's window at once: 183
  // VGPRs, two blocks no longer resident).
#if defined(DSCONV_PLATFORM_HIP)
  static constexpr int rows_unrolled = 1;
#else
  static constexpr int rows_unrolled = K;
#endif

  // put(at, j, v, fresh) for every output pixel of the tile, at = locate(qy, qx0) found once a
  // strip (its first pixel's place), j the pixel's place in the strip (qy, qx0 + j), v the
  // slice's depthwise output there after bias and activation, fresh for one of the calls of each
  // pixel (the others store the same v again). `weights`: the lane's K * K taps; strips
  // first_strip, first_strip + strips_apart, ... of the tile's rows * fused_strips_per_row(cols).
  template <class Locate, class Put>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void run(const float* slice, const float* weights, float bias, activation act,
                                                   const fused_block_tile& t, int first_strip, int strips_apart,
                                                   Locate&& locate, Put&& put) {
    namespace pf = platform;
    // (the tile's extents recomputed: what the strips derive from them, a reciprocal for the
    // quotient among it, is not held through the slice loop; on AMD they are vector registers,
    // where the scalar ones ran out)
    const int cols = pf::recomputed(t.cols), in_cols = pf::recomputed(t.in_cols), rows = pf::recomputed(t.rows);
    const int per_row = fused_strips_per_row(cols), row_words = in_cols * Pitch;
    // (a quotient a strip, not an index walk: fewer registers than the walk's steps)
    for (int i = first_strip; i < rows * per_row; i += strips_apart) {
      int qy, k;
      small_divmod(i, per_row, qy, k);
      const int start = k * S, qx0 = fused_strip_column(k, cols);
      const float* row = slice + fused_window_pixel(qy, qx0, Stride, in_cols) * Pitch;
      float sum[S];
      DSCONV_UNROLL
      for (int j = 0; j < S; ++j) sum[j] = bias;
      DSCONV_UNROLL_BY(rows_unrolled)
      for (int ky = 0; ky < K; ++ky) {
        float x[W];
        DSCONV_UNROLL
        for (int c = 0; c < W; ++c) x[c] = pf::shared_load(row + c * Pitch);
        DSCONV_UNROLL
        for (int kx = 0; kx < K; ++kx) {
          const float w = pf::shared_load(weights + ky * K + kx);
          DSCONV_UNROLL
          for (int j = 0; j < S; ++j) sum[j] += x[j * Stride + kx] * w;
        }
        row += row_words;
      }
      with_activation(act, [&](auto a) {
        DSCONV_UNROLL
        for (int j = 0; j < S; ++j) sum[j] = activate(sum[j], a);
      });
      // (the last strip of a row stores again the outputs the one before stored, the same
      // values: tested, each store took a branch)
      const auto at = locate(qy, qx0);
      DSCONV_UNROLL
      for (int j = 0; j < S; ++j) put(at, j, sum[j], qx0 + j >= start);
    }
  }
};

}  // namespace detail
}  // namespace dsconv
