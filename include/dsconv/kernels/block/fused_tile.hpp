#pragma once
// The tiling of the fused inverted-residual kernel (fused_nhwc.hpp), planned on the host
// (dispatch/inverted_residual_plan.hpp) and read by the kernel: a block computes a tile of
// rows x cols output pixels of one image, from the input tile with its halo, a slice of
// block_slice expanded channels at a time.

#include "../../config.hpp"

namespace dsconv {
namespace detail {

inline constexpr unsigned fused_block_threads = 512;
// Blocks of the fused kernel a multiprocessor should hold at once: a block waits at a barrier
// after each step, so two keep the multiprocessor busy (half the threads an sm_80/sm_90
// multiprocessor holds). The planner sizes shared memory for that many, and CUDA's launch
// bounds registers (64 a thread, without spilling; HIP takes no such bound: gfx906 holds 2
// blocks of 512 threads at up to 128 VGPRs).
inline constexpr int fused_resident_blocks = 2;
// Expanded channels per step: half a warp's lanes, so that a warp takes two pixels of the
// slice. A narrow slice keeps the expanded halo ([halo][slice]) and the slice's expand weights
// ([c_in][slice]) small next to the staged input, so tiles grow and read the weights fewer
// times (summed over MobileNetV2's blocks, slices of 32 cost 1.3x the bytes of slices of 16).
inline constexpr int fused_block_slice = 16;
inline constexpr int fused_block_outputs = 16;  // project outputs per thread (registers)
inline constexpr int fused_expand_pixels = 4;   // expanded values per thread and step (registers)
// A thread's project outputs are guarded (k < q_count) in groups of this many: a guard per
// output costs a 64-bit scalar mask each, live across the slice loop, and 16 of them spill
// scalar registers on AMD. Past q_count inside the last group a thread sums rows past q_rows
// (whatever the next regions hold) into outputs it never stores.
inline constexpr int fused_block_output_group = 4;
// The project step on a matrix unit (fused_nhwc.hpp with a Unit; 16-bit types, and float on
// AMD's fp32 MFMA or, allowed TF32, NVIDIA's mma.sync): the tile's outputs as fused_mma_tile x
// fused_mma_tile tiles (pixels x output channels), warp w taking tiles w, w + warps, ...: as
// many outputs a thread as fused_block_outputs, so at most fused_mma_block_tiles a block and
// fused_mma_warp_tiles(lanes) a warp (2 of 32 lanes, 4 of 64).
// The depthwise outputs and the project weights are staged as T, one K stage of the unit (the
// slice's 16 channels of 16-bit types, 32 bytes) a row: [q_tiles * 16][16] and
// [o_tiles * 16][16], in the matrix-unit GEMM's k_rows layout (pointwise/mma_shared_tiles.hpp;
// float: two K stages of 8 channels, fused_stage_gap).
inline constexpr int fused_mma_tile = 16;
inline constexpr int fused_mma_block_tiles =
    static_cast<int>(fused_block_threads) * fused_block_outputs / (fused_mma_tile * fused_mma_tile);
DSCONV_HOST_DEVICE constexpr int fused_mma_warp_tiles(int lanes) {
  return lanes * fused_block_outputs / (fused_mma_tile * fused_mma_tile);
}
// The expand step on a matrix unit (blocks that expand; the types as for the project): the
// tile's input is staged as T only (for 16-bit types half the floats' shared memory, so tiles
// grow), one K stage of c_in (32 bytes: 16 channels, or 8 floats; zero past c_in) after
// another, each [k_stage_rows][16 or 8] in the k_rows layout with the halo's pixels as rows
// (zero past the halo), and the slice's expand weights likewise, [K stages][16 slice
// channels][16 or 8]; the warps multiply the input's 16-row tiles by the weights over every
// K stage (fused_nhwc.hpp: fused_mma_expand), and store the
// sums (bias, activation, mask) of every row into the expanded slice, which has k_stage_rows
// rows, as does the mask (0 past the halo). The residual comes from the staged T input too
// (the block's input as it is).
// The expanded slice's pitch is then 24 (8-byte stores of mma.sync's 8 columns of rows
// g = 0..3 at 24g mod 32 = 0, 24, 16, 8 banks: conflict-free), and step 3's two half-warps take
// output pixels q_pair apart so that their input pixels lie 16 banks apart (24 * 2 = 16 mod
// 32): 2 at odd strides, 1 at strides 2 mod 4. Rows are halo pixels in order, except on MFMA,
// whose 32-bit stores of a tile's sums write rows r and r + 4 in one phase (lanes 0-15 and
// 16-31, a column each): there row bits 1 and 2 trade places, which puts those rows' pixels 2
// apart, 16 banks.
// On mma.sync at odd strides the pitch is 16 instead (q_pair 1), for step 3's strips
// (fused_strip_outputs): two strips next to each other start 7 pixels apart, 16 banks at a
// pitch of 16 and 8 at 24, where no order of the strips of a tile 14 outputs wide avoids the
// conflict. The stores then meet 2-way conflicts (rows g and g + 2 in the same banks), but step
// 2 stores each value once where step 3 reads it about four times.
inline constexpr int fused_unit_slice_pitch = 24;
// Float on a matrix unit (AMD's fp32 MFMA, mma.sync's TF32) takes a 32-byte K stage of 8
// channels, so the slice is two of them: the input and the expand weights are K stages as for 16-bit types,
// and the depthwise outputs ([q_rows][8] twice) and the project weights ([o_tiles * 16][8]
// twice) keep the slice's two K stages one after the other, `fused_stage_gap` rows apart: in
// step 3 the 16 lanes of a group store a row of both stages (8 banks each), and a half-wave's
// two groups rows `rows_apart` apart (the project weights 1, the depthwise outputs q_pair),
// so a gap of 2 rows (for 1 apart) or 1 row (for 2) puts the four rows in distinct banks.
DSCONV_HOST_DEVICE constexpr int fused_stage_gap(int rows_apart) { return rows_apart == 1 ? 2 : 1; }
// Rows from one such K stage to the next, for stages of `rows` rows: the kernel's offsets and
// the planner's region sizes.
DSCONV_HOST_DEVICE constexpr int fused_stage_pitch(int rows, int rows_apart) { return rows + fused_stage_gap(rows_apart); }
// Step 3's rows apart for the project weights (a warp's consecutive groups take consecutive
// output channels); the depthwise outputs' are the plan's q_pair.
inline constexpr int fused_project_weight_rows_apart = 1;
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE int mfma_row_pixel(int row) {
  return ((row >> 1) ^ (row >> 2)) & 1 ? row ^ 6 : row;
}

// The outputs leave through a scratch tile per warp, [16][pitch] floats, in the regions from
// the mask on (free after the last slice; the input stays for the residual): scratch_warps of
// them at once, so that the scratch costs no tile size. The pitch of a unit whose lanes keep
// runs of `run` columns (matrix_units.hpp), each stored as one vector: 24 for mma.sync's 8-byte
// runs (a half-warp's 16 stores: rows g = 0..3 at 24g mod 32 = 0, 24, 16, 8 banks, plus 2t:
// every bank once), 20 for MFMA's 16-byte ones (8 rows at 20r mod 32: distinct multiples of 4).
DSCONV_HOST_DEVICE constexpr int fused_mma_scratch_pitch(int run) { return fused_mma_tile + fused_mma_tile / run; }
inline constexpr int fused_mma_scratch_largest = fused_mma_tile * fused_mma_scratch_pitch(2);  // floats a warp

// Shared memory, in floats: the slice's expand biases at 0, its depthwise biases at
// fused_block_slice and the staged input [halo][in_pitch] (zero outside the image; on the
// unit's expand its K stages of T) at fused_block_input (fixed offsets: every offset the plan passes is a scalar register the
// kernel holds through its slice loop), then regions one after another: the halo's mask (1
// inside the image, 0 outside), the expanded slice [halo][slice_pitch] (none without an
// expand layer: step 3 reads the slice from the input, slice_pitch = in_pitch), the slice's depthwise
// weights [slice][taps], the depthwise outputs [q_rows][d_pitch], and one region for the
// slice's expand weights [c_in][expand_pitch] and then its project weights [slice][out_pitch]
// (wp == we: never needed at once; on a matrix unit each as T in 32-byte rows, the regions
// 16-byte aligned).
// The pitches keep a warp's accesses in distinct banks (32 banks of 4 bytes; a warp's two
// half-warps take two pixels, or two weight rows):
// - the expanded slice: its two pixels in step 2 are `pair` halo pixels apart and in step 3
//   `stride` apart (one output pixel apart), so slice_pitch * pair and slice_pitch * stride
//   are 16 mod 32: 16 with pair 1 for odd strides, 24 with pair 2 for strides 2 mod 4;
// - the depthwise outputs: one pixel apart, d_pitch 16;
// - the input: each half-warp reads one pixel's channel (a broadcast), `pair` pixels apart, so
//   in_pitch * pair is not 0 mod 32: c_in, or c_in + 1 where c_in * pair is, and with pair 2
//   where c_in is 16 mod 32 c_in + 8 (2 * in_pitch 16 mod 32); a warp stores consecutive
//   channels of consecutive pixels, or of consecutive slots (staging_pair 2: where c_in is 16,
//   a warp's two pixels are then 2 apart, 16 banks apart), whichever order the planner counts
//   fewer bank conflicts in; without an expand layer the half-warps read
//   16 channels of two pixels `stride` apart in step 3: in_pitch * stride is 16 mod 32 (for
//   odd strides and strides 2 mod 4);
// - the expand weights, stored by rows e and e + 1 at 16 consecutive c each: expand_pitch 18
//   (twice an odd number: 16 rows of it fall in distinct even banks);
// - the project weights, stored likewise by columns oc and oc + 1 at 16 rows each: out_pitch
//   >= c_out and 2 mod 4; step 4's lanes read consecutive output channels of one row.
inline constexpr int fused_block_input = 2 * fused_block_slice;
// Where step 2 expands the slice: the SIMT cores, or the unit's expand on mma.sync or MFMA.
enum class fused_expander { simt, mma_sync, mfma };
// The expanded slice's pitch by those rules (blocks that expand): on MFMA's expand 24; on
// mma.sync's 16 at odd strides, else 24; on the SIMT cores 16 at odd strides, 24 at strides 2
// mod 4 (pair 2), else 17. The planner sets it and step 3's strips take it as a compile-time
// constant.
DSCONV_HOST_DEVICE constexpr int fused_expanded_slice_pitch(fused_expander e, int stride) {
  return e == fused_expander::mfma                          ? fused_unit_slice_pitch
         : e == fused_expander::mma_sync && stride % 2 == 0 ? fused_unit_slice_pitch
         : stride % 4 == 2                                  ? fused_block_slice + fused_block_slice / 2
         : stride % 2 == 1                                  ? fused_block_slice
                                                            : fused_block_slice + 1;
}

// Step 3 in strips (fused_depthwise.hpp): a thread filters a strip of this many consecutive
// output pixels of a tile row, its input window sliding through registers, so that a window
// value read from shared memory serves up to `kernel` outputs (the per-pixel loop read two
// words, the value and the weight, for each multiply-add). Odd, so that two strips next to
// each other start an odd number of pixels apart: at the pitches of fused_expanded_slice_pitch
// (16 at stride 1, 24 at stride 2; MFMA's 24 at stride 1 aside) a warp's two groups then read
// words 16 banks apart
// (fused_block_tile::strip_pair orders the strips where another order meets fewer conflicts).
// A row takes ceil(cols / fused_strip_outputs) strips, the last one ending at the row's end (it
// may repeat outputs of the one before, and stores those again: the same values); tiles
// narrower than a strip take the per-pixel loop.
inline constexpr int fused_strip_outputs = 7;
DSCONV_HOST_DEVICE constexpr int fused_strips_per_row(int cols) { return (cols + fused_strip_outputs - 1) / fused_strip_outputs; }
// Whether step 3 of a tile `cols` outputs wide takes strips: blocks that expand (the slice at
// a pitch fused_expanded_slice_pitch), filters of 3x3 and 5x5 at strides 1 and 2 (the kernel's
// compiled forms), tiles at least a strip wide.
DSCONV_HOST_DEVICE constexpr bool fused_takes_strips(bool has_expand, int kernel, int stride, int cols) {
  return has_expand && cols >= fused_strip_outputs && (kernel == 3 || kernel == 5) && (stride == 1 || stride == 2);
}
// The first output column of strip k of a row (k * fused_strip_outputs but for the last).
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE int fused_strip_column(int k, int cols) {
  const int start = k * fused_strip_outputs;
  return start < cols - fused_strip_outputs ? start : cols - fused_strip_outputs;
}
// The halo pixel of the first input of output (qy, qx) of a tile: where its window starts, for
// the kernel's strips and the planner's count of their bank conflicts.
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE int fused_window_pixel(int qy, int qx, int stride, int in_cols) {
  return (qy * in_cols + qx) * stride;
}
inline constexpr int fused_expand_pitch = fused_block_slice + 2;
inline constexpr int fused_depthwise_pitch = fused_block_slice;

// Step 2's slots and the halo pixels they stand for: slot = pixel, or with pair 2 (a warp's
// two groups, consecutive slots, two pixels apart) slot bits 0 and 1 swapped: slots
// 4i..4i+3 are pixels 4i, 4i+2, 4i+1, 4i+3 (slots past the halo's last pixel stand for none).
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE int slot_pixel(int slot, int pair) {
  return pair == 2 ? (slot & ~3) | ((slot & 1) << 1) | ((slot >> 1) & 1) : slot;
}

// Step 2's slots for a halo of `halo` pixels: whole groups of 4 with pair 2.
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE int slot_count(int halo, int pair) { return pair == 2 ? (halo + 3) / 4 * 4 : halo; }

struct fused_block_tile {
  int rows, cols;        // output pixels of a tile
  int in_rows, in_cols;  // its input pixels: (rows - 1) * stride + kernel, likewise cols
  int tiles_x, tiles_y;  // tiles per image (grid.x = n * tiles_y * tiles_x)
  int q_count;           // pixels per thread (<= fused_block_outputs)
  int q_rows;            // depthwise output rows staged: q_step * q_count >= rows * cols
  int in_pitch, slice_pitch, out_pitch;
  int pair;          // step 2's two pixels of a warp: halo pixels `pair` apart (1 or 2)
  int staging_pair;  // the input staged in pixel order (1) or in step 2's slot order (2)
  int q_step;  // threads per project output channel (a thread's outputs are q_step pixels apart)
  int q_tiles, o_tiles;  // on a matrix unit: 16-pixel and 16-channel tiles of the outputs (0: SIMT)
  int scratch_warps;     // on a matrix unit: warps whose output scratch tiles fit at once
  int k_stage_rows;      // the expand on a matrix unit: rows of a K stage of the staged input
                         // (the halo's pixels, whole 16-row tiles); 0: input staged as float
  int q_pair;            // step 3's half-warps: output pixels q_pair apart (2 where slice_pitch * stride
                         // is 8 mod 16, on the unit's expand)
  int strip_pair;        // step 3's strips (fused_strip_outputs): a warp's two groups take strips
                         // strip_pair apart (slot_pixel's order), 0 where the tile takes no strips
  int vector_staging;    // the unit's operands (input, expand and project weights) staged in 16-byte
                         // runs: set per call where c_in and expanded are whole runs and the
                         // tensors 16-byte aligned (fused_vector_staging), else element by element
  int mask, x, wd, d, we, wp, floats;  // region offsets, and the total
};

// Where the warps' output scratch tiles start: the mask's offset, 16-byte aligned (the units'
// runs are stored as vectors).
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE int fused_mma_scratch_at(const fused_block_tile& t) { return (t.mask + 3) / 4 * 4; }

}  // namespace detail
}  // namespace dsconv
