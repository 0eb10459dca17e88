#pragma once
// The tiling of the fused inverted-residual kernel (fused_nhwc.hpp), planned on the host
// (dispatch/inverted_residual_plan.hpp) and read by the kernel: a block computes a tile of
// rows x cols output pixels of one image, from the input tile with its halo, a slice of
// block_slice expanded channels at a time.

namespace dsconv {
namespace detail {

inline constexpr unsigned fused_block_threads = 256;
inline constexpr int fused_block_slice = 32;   // expanded channels per step: a warp's 32 lanes
inline constexpr int fused_block_outputs = 16;  // project outputs per thread (registers)
inline constexpr int fused_expand_pixels = 4;   // expanded values per thread and step (registers)

// Shared memory, in floats, regions one after another: the staged input [halo][in_pitch]
// (zero outside the image), the halo's mask (1 inside the image, 0 outside), the expanded
// slice [halo][slice_pitch], the slice's expand biases, its depthwise weights
// [taps][slice_pitch] and biases, the depthwise outputs [q_rows][slice_pitch], and one region
// for the slice's expand weights [c_in][slice_pitch] and then its project weights
// [slice][out_pitch] (wp == we: never needed at once). The pitches are odd, so that rows a
// lane apart fall in different banks.
struct fused_block_tile {
  int rows, cols;        // output pixels of a tile
  int in_rows, in_cols;  // its input pixels: (rows - 1) * stride + kernel, likewise cols
  int tiles_x, tiles_y;  // tiles per image (grid.x = n * tiles_y * tiles_x)
  int q_count;           // pixels per thread (<= fused_block_outputs)
  int q_rows;            // depthwise output rows staged: q_step * q_count >= rows * cols
  int in_pitch, slice_pitch, out_pitch;
  int q_step;  // threads per project output channel (a thread's outputs are q_step pixels apart)
  int in, mask, x, we, be, wd, bd, d, wp, floats;  // region offsets, and the total
};

}  // namespace detail
}  // namespace dsconv
