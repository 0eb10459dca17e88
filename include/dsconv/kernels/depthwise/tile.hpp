#pragma once
// The tiling of the shared-memory depthwise kernels, chosen on the host (dispatch/
// depthwise_plan.hpp) and read by the kernels. A block stages the zero-padded input its
// outputs need in shared memory, as floats, so every input byte is read from global memory
// once per block and the taps need no bounds checks.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/activation.hpp"

namespace dsconv {
namespace detail {

// The tiled kernels' block size, and how many of their blocks a multiprocessor should hold at
// once (so that one block's loads overlap another's arithmetic): their launch bounds.
inline constexpr unsigned depthwise_block_threads = 256;
inline constexpr int depthwise_resident_blocks = 4;

// Shared-memory banks (4 bytes wide) on both vendors: a warp's (NVIDIA) or half-wave's (AMD)
// 4-byte accesses are free of conflicts when their 32 lanes read 32 different banks.
inline constexpr int shared_banks = 32;

struct depthwise_tile {
  int channels;       // channels per block (NHWC: 32 bytes of them, one sector per pixel)
  int images;         // images per block: > 1 only when a band is the whole map, so that
                      // small maps give a block enough work and weights are read fewer times
  int rows;           // output rows per block (a band of rows)
  int cols;           // output columns per block: the whole row, but for NHWC bands too large
                      // to stage a multiprocessor's share of them (tiles of partial rows)
  int in_rows;        // staged input rows of a full band: (rows - 1) * stride + (kernel - 1) * dilation + 1
  int row_stride;     // staged row pitch in pixels: the input columns of `cols` outputs with
                      // their padding (staged as zeros), rounded up to whole column phases
                      // (see staged_column)
  int plane_stride;   // staged elements (NCHW: floats; NHWC: the input type) from one staged plane (NCHW) or image (NHWC) to the next
  int row_slots;      // threads (NCHW) or pixels (NHWC) per output row: the row's width rounded
                      // up so that no 32 consecutive threads straddle two rows (see below)
  int channel_slots;  // NCHW: channels side by side in 32 threads (rows of 16 or fewer outputs,
                      // whole sectors), else 1
  int vector;         // elements per global load: 16 bytes' worth when alignment allows, else
                      // (NCHW) 2 where rows are whole pairs, else 1
  int stage_slots;    // NCHW: vectors (or elements) per staged row in the staging loop's order:
                      // 0 puts the rows' vectors back to back; more start each row at a slot
                      // boundary, so that a group of 32 threads never straddles rows at a
                      // pitch that puts them in one bank (nchw_band.hpp, chosen by
                      // dispatch/depthwise_plan.hpp: nchw_stage_slots)
};
// Threads map to outputs so that the 32 threads of a bank-conflict group read 32 distinct
// banks at every tap: consecutive output columns of one row, whose staged inputs are
// consecutive words (strided filters read by column phase); a row ends at a group boundary
// (row_slots). NCHW rows of 16 or fewer share a group either with the next rows of their
// plane, staged at a row pitch that keeps each row's words in banks of their own, or (rows
// of whole sectors) with the same row of the next channels, whose staged planes start
// row_slots banks apart (plane_stride).

// The outputs of block row `by` (grid.y): its band of rows and tile of columns.
struct tile_origin {
  int oy0, ox0;    // first output row and column
  int rows, cols;  // how many, fewer than the tile's at the map's last edges
  DSCONV_DEVICE tile_origin(const depthwise_tile& t, int out_h, int out_w, int by) {
    const int col_tiles = (out_w + t.cols - 1) / t.cols;  // (once per block)
    oy0 = by / col_tiles * t.rows;
    ox0 = by % col_tiles * t.cols;
    rows = out_h - oy0 < t.rows ? out_h - oy0 : t.rows;
    cols = out_w - ox0 < t.cols ? out_w - ox0 : t.cols;
  }
};

// Channels an NHWC block takes: 32 bytes of them (a sector per pixel). A compile-time constant
// in the kernels, so that staged offsets and weight rows fold into instruction immediates
// instead of holding scalar registers (on AMD a 7x7 filter's would outnumber them).
template <class T>
DSCONV_HOST_DEVICE constexpr int nhwc_block_channels() {
  return static_cast<int>(32 / sizeof(T));
}

// NHWC weights are staged tap-major, a tap's `channels` floats padded to an odd count of
// words, so that storing a channel's taps (consecutive threads) meets no bank conflict.
DSCONV_HOST_DEVICE constexpr int nhwc_weight_pitch(int channels) { return channels + 1; }

// Staged column of padded input column `x`: phase by phase for the specialised strided
// kernels (phases = S > 1), in order otherwise. `phase_pitch` = row_stride / phases. (The
// kernels pass compile-time phases; the planner's staging model, run-time ones.)
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE int staged_column(int x, int phases, int phase_pitch) {
  return phases > 1 ? (x % phases) * phase_pitch + x / phases : x;
}

// Staging V consecutive input elements per thread (one vector load) as V word stores: at the
// k-th store the threads of a group write words V apart (per column phase V / phases apart),
// so threads a bank period apart would meet in one bank (a V / phases-way conflict). Each
// thread starts instead at element staging_rotation(lane) (a whole number of phases, so all
// threads of a step write one phase) and goes on cyclically: the k-th stores of the group
// then fill every bank once, where the group's vectors are consecutive in shared memory
// (the planner's stage_slots keeps them so across rows).
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE int staging_rotation(int lane, int vector, int phases) {
  const int per_phase = vector / phases;        // words a thread writes to one phase
  const int period = shared_banks / per_phase;  // threads between two in the same banks
  return phases * (lane % shared_banks / period % per_phase);
}

// `v` rotated left by `by` (v[(k + by) % V] moves to k): a barrel of selects with fixed
// indices, since indexing registers by a run-time value puts them in local memory on a GPU.
template <int V>
DSCONV_DEVICE DSCONV_FORCEINLINE void rotate_left(float (&v)[V], int by) {
DSCONV_UNROLL
  for (int step = 1; step < V; step *= 2) {
    const bool on = (by & step) != 0;
    float r[V];
DSCONV_UNROLL
    for (int k = 0; k < V; ++k) r[k] = on ? v[(k + step) % V] : v[k];
DSCONV_UNROLL
    for (int k = 0; k < V; ++k) v[k] = r[k];
  }
}

// The epilogue of a forward output: act(z) into `output`, and z, the activation's input (or
// act'(z) where `derivative`), into `pre` where the caller saves it for the backward pass.
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void store_activated(T* output, T* pre, bool derivative, index_t offset, float z,
                                                      activation act) {
  if (pre) platform::store(pre + offset, from_float<T>(derivative ? derivative_at(z, act) : z));
  platform::store(output + offset, from_float<T>(activate(z, act)));
}

// Filter geometry of a tiled kernel: compile-time where the variant is specialised (K and
// S non-zero, no dilation), from the shape otherwise.
template <int K, int S>
struct window_geometry {
  int kh, kw, sh, sw, dh, dw, taps;
  DSCONV_DEVICE explicit window_geometry(const depthwise_shape& s)
      : kh(K ? K : s.kernel_h),
        kw(K ? K : s.kernel_w),
        sh(S ? S : s.stride_h),
        sw(S ? S : s.stride_w),
        dh(K ? 1 : s.dilation_h),
        dw(K ? 1 : s.dilation_w),
        taps(kh * kw) {}
};

// The window sum of one output: `in` points at the window's top-left staged element (its
// column phase 0 for a phased row; staged as float, or as the input's 16-bit type, widened
// here), `w` at the first tap's weight (both in shared memory). K (and Phases) are
// compile-time where the variant is specialised, tap kx then lies at column kx / Phases of
// phase kx % Phases; K == 0 takes the sizes from the arguments (unphased rows).
template <int K, int Phases, class S>
DSCONV_DEVICE DSCONV_FORCEINLINE float window_sum(const S* in, int row_step, int col_step, int phase_step,
                                                  const float* w, int w_step, int kh, int kw, int dh, int dw) {
  float acc = 0.f;
  if (K) {
DSCONV_UNROLL
    for (int ky = 0; ky < (K ? K : 1); ++ky)
DSCONV_UNROLL
      for (int kx = 0; kx < (K ? K : 1); ++kx)
        acc += to_float(platform::shared_load(in + ky * row_step + (kx / Phases) * col_step + (kx % Phases) * phase_step)) *
               platform::shared_load(w + (ky * K + kx) * w_step);
  } else {
    for (int ky = 0; ky < kh; ++ky)
      for (int kx = 0; kx < kw; ++kx)
        acc += to_float(platform::shared_load(in + ky * dh * row_step + kx * dw * col_step)) *
               platform::shared_load(w + (ky * kw + kx) * w_step);
  }
  return acc;
}

}  // namespace detail
}  // namespace dsconv
