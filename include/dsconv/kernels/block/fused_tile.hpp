#pragma once
// The tiling of the fused inverted-residual kernel (fused_nhwc.hpp), planned on the host
// (dispatch/inverted_residual_plan.hpp) and read by the kernel: a block computes a tile of
// rows x cols output pixels of one image, from the input tile with its halo, a slice of
// block_slice expanded channels at a time.

namespace dsconv {
namespace detail {

inline constexpr unsigned fused_block_threads = 256;
// Blocks of the fused kernel a multiprocessor should hold at once: a block waits at a barrier
// after each step, so several keep the multiprocessor busy. The planner sizes shared memory
// for that many, and CUDA's launch bounds registers (64 a thread, without spilling; HIP takes
// no such bound: gfx906 holds 3, at 84 VGPRs, and would spill at 64).
inline constexpr int fused_resident_blocks = 4;
inline constexpr int fused_block_slice = 32;   // expanded channels per step: a warp's 32 lanes
inline constexpr int fused_block_outputs = 16;  // project outputs per thread (registers)
inline constexpr int fused_expand_pixels = 4;   // expanded values per thread and step (registers)
// A thread's project outputs are guarded (k < q_count) in groups of this many: a guard per
// output costs a 64-bit scalar mask each, live across the slice loop, and 16 of them spill
// scalar registers on AMD. Past q_count inside the last group a thread sums rows past q_rows
// (whatever the next regions hold) into outputs it never stores.
inline constexpr int fused_block_output_group = 4;

// Shared memory, in floats: the slice's expand biases at 0, its depthwise biases at
// fused_block_slice and the staged input [halo][in_pitch] (zero outside the image) at
// fused_block_input (fixed offsets: every offset the plan passes is a scalar register the
// kernel holds through its slice loop), then regions one after another: the halo's mask (1
// inside the image, 0 outside), the expanded slice [halo][slice_pitch], the slice's depthwise
// weights [slice][taps], the depthwise outputs [q_rows][slice_pitch], and one region for
// the slice's expand weights [c_in][slice_pitch] and then its project weights
// [slice][out_pitch] (wp == we: never needed at once). The slice and output pitches are odd,
// so that rows a lane apart fall in different banks; the input's is c_in (contiguous: a warp
// stores consecutive channels of consecutive pixels, and reads one pixel's channel as a
// broadcast or its consecutive channels).
inline constexpr int fused_block_input = 2 * fused_block_slice;

struct fused_block_tile {
  int rows, cols;        // output pixels of a tile
  int in_rows, in_cols;  // its input pixels: (rows - 1) * stride + kernel, likewise cols
  int tiles_x, tiles_y;  // tiles per image (grid.x = n * tiles_y * tiles_x)
  int q_count;           // pixels per thread (<= fused_block_outputs)
  int q_rows;            // depthwise output rows staged: q_step * q_count >= rows * cols
  int in_pitch, slice_pitch, out_pitch;
  int q_step;  // threads per project output channel (a thread's outputs are q_step pixels apart)
  int mask, x, wd, d, we, wp, floats;  // region offsets, and the total
};

}  // namespace detail
}  // namespace dsconv
