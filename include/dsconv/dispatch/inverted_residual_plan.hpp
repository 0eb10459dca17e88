#pragma once
// What the block's planner knows: the unfused sequence's workspace, the fused kernel's tile
// (fused_tile.hpp), and the cost model that chooses between them: the global-memory bytes
// each moves, counted as the layers' and the tiles' reads and writes (weights included, read
// once per layer or once per tile).

#include <string>
#include <utility>

#include "../block_params.hpp"
#include "../kernels/block/fused_tile.hpp"
#include "../platform/platform.hpp"
#include "../problem.hpp"
#include "depthwise_plan.hpp"
#include "launch_shape.hpp"
#include "pointwise_plan.hpp"
#include "remembered.hpp"

namespace dsconv {
namespace detail {

// The intermediate tensors of the block's multi-kernel paths in the workspace (byte offsets,
// each aligned to 256 bytes): the unfused sequence's expand output (where the block expands),
// the depthwise output, and the squeeze-excitation's pooled vector, reduced vector and gate;
// the fused path of blocks with squeeze-excitation has no expand output but the tiles' pool
// sums (floats) instead, and where it pays the project weight scaled per image.
struct block_workspace {
  index_t expanded, pool_partial, depthwise, pooled, reduced, gate, scaled_weight, bytes;
  bool per_image_weight;  // the fused path scales the project weight per image (scaled_weight)
};

inline index_t align_bytes(index_t b) { return (b + 255) / 256 * 256; }

inline block_workspace block_layout(const inverted_residual_params& p, std::size_t element_bytes, index_t expanded_bytes,
                                    index_t partial_bytes, index_t scaled_weight_bytes) {
  const index_t e = static_cast<index_t>(element_bytes), x = p.expanded, n = p.n;
  block_workspace w{};
  index_t at = 0;
  auto take = [&](index_t bytes) {
    const index_t start = at;
    at += align_bytes(bytes);
    return start;
  };
  w.expanded = take(expanded_bytes), w.pool_partial = take(partial_bytes);
  w.depthwise = take(e * n * x * p.out_h() * p.out_w());
  if (p.se_channels > 0) {
    w.pooled = take(e * n * x);
    w.reduced = take(e * n * p.se_channels);
    w.gate = take(e * n * x);
  }
  w.scaled_weight = take(scaled_weight_bytes);
  w.per_image_weight = scaled_weight_bytes > 0;
  w.bytes = at;
  return w;
}

inline block_workspace unfused_layout(const inverted_residual_params& p, std::size_t element_bytes) {
  const index_t expanded = p.has_expand() ? static_cast<index_t>(element_bytes) * p.n * p.expanded * p.h * p.w : 0;
  return block_layout(p, element_bytes, expanded, 0, 0);
}

// Whether the fused path of a block with squeeze-excitation scales the project weight per image
// (n * c_out * expanded elements written, and read once per image and tile row of the project)
// rather than the depthwise output (read and written once) before the project (which reads the
// weight once per tile row of all images): where that moves fewer bytes, as for blocks with
// large maps and few output channels.
inline bool scales_weight_per_image(const inverted_residual_params& p, long long tile_rows) {
  const long long n = p.n, x = p.expanded, px = static_cast<long long>(p.out_h()) * p.out_w();
  const long long per_image = 2 * n * p.c_out * x + n * ceil_div(px, tile_rows) * p.c_out * x;
  const long long per_pixel = 2 * n * px * x + ceil_div(n * px, tile_rows) * p.c_out * x;
  return p.se_channels > 0 && per_image < per_pixel;
}

// tiles: the fused kernel's tiles per image.
inline block_workspace fused_squeeze_excitation_layout(const inverted_residual_params& p, std::size_t element_bytes,
                                                       index_t tiles) {
  const index_t scaled = scales_weight_per_image(p, gemm_small_tile::bm)
                             ? static_cast<index_t>(element_bytes) * p.n * p.c_out * p.expanded
                             : 0;
  return block_layout(p, element_bytes, 0, static_cast<index_t>(sizeof(float)) * p.n * tiles * p.expanded, scaled);
}

// Global-memory bytes of what follows the pool (both paths of blocks with squeeze-excitation),
// and of the project alone: the 1x1 layers as their heuristic tiles them (operands re-read per
// tile: pointwise_forward_elements), the scale reading the gate and reading and writing the
// depthwise output; `fused`: as the fused path runs them, where it may scale the project
// weight per image instead (scales_weight_per_image).
template <class T>
long long after_pool_traffic(const inverted_residual_params& p, const platform::device_properties& dev, bool fused) {
  const long long n = p.n, x = p.expanded, out_px = static_cast<long long>(p.out_h()) * p.out_w();
  long long t = pointwise_forward_elements<T>(p.project(), p.residual, dev);
  if (p.se_channels > 0) {
    t += pointwise_forward_elements<T>(p.se_reduce(), false, dev) + pointwise_forward_elements<T>(p.se_expand(), false, dev) +
         n * x;
    const long long tile_rows = gemm_small_tile::bm;
    if (fused && scales_weight_per_image(p, tile_rows))
      t += 2 * n * p.c_out * x + (n * ceil_div(out_px, tile_rows) - ceil_div(n * out_px, tile_rows)) * p.c_out * x;
    else
      t += 2 * n * out_px * x;
  }
  return t * static_cast<long long>(sizeof(T));
}

// Global-memory bytes of the unfused sequence: the expand 1x1 as its heuristic tiles it, the
// depthwise layer reading its input and weights once and writing its output once, the pool
// reading the depthwise output, then after_pool_traffic.
template <class T>
long long unfused_traffic(const inverted_residual_params& p, const platform::device_properties& dev) {
  const long long n = p.n, x = p.expanded, k = p.kernel;
  const long long in_px = static_cast<long long>(p.h) * p.w, out_px = static_cast<long long>(p.out_h()) * p.out_w();
  long long t = 0;
  if (p.has_expand()) t += pointwise_forward_elements<T>(p.expand(), false, dev);
  t += n * in_px * x + x * k * k + x + n * out_px * x;
  if (p.se_channels > 0) t += n * out_px * x + n * x;
  return t * static_cast<long long>(sizeof(T)) + after_pool_traffic<T>(p, dev, false);
}

struct fused_block_plan {
  fused_block_tile tile{};
  platform::dims grid;
  std::size_t shared_bytes = 0;
  long long traffic = 0;  // the cost model's bytes (of the fused kernel, and for blocks with
                          // squeeze-excitation of the pool's reading the tiles' sums)
  int resident = 0;       // blocks a multiprocessor's shared memory holds, as the search sized
                          // the tile for (fused_resident_blocks, or 1 where none fits that)

  platform::launch_config launch(const char* name, stream_t stream) const {
    return planned_launch(fused_block_threads, grid, shared_bytes, name, stream);
  }
};

// Why the fused kernel cannot run a block at all (empty: it can, where a tile fits).
inline std::string fused_block_limits(const inverted_residual_params& p) {
  if (p.data_layout != layout::nhwc) return "the fused kernel takes NHWC blocks";
  if (p.se_channels == 0 && p.c_out > static_cast<int>(fused_block_threads))
    return "the fused kernel projects c_out <= " + std::to_string(fused_block_threads) +
           " (without squeeze-excitation, where it projects)";
  // (with squeeze-excitation it writes the depthwise output at 32-bit offsets inside an image)
  if (p.se_channels > 0 && static_cast<long long>(p.out_h()) * p.out_w() * p.expanded > 2147483647LL)
    return "the fused kernel writes depthwise outputs of fewer than 2^31 elements an image (with squeeze-excitation)";
  return "";
}

// The least value >= v that is `remainder` mod `modulus`.
inline int round_up_to(int v, int modulus, int remainder) { return v + ((remainder - v) % modulus + modulus) % modulus; }

// Whether the fused kernel projects the block (fused_nhwc.hpp's Project): blocks without
// squeeze-excitation.
inline bool fused_projects(const block_shape& s) { return s.se_channels == 0; }

// The tile of rows x cols outputs: its shared-memory regions (false where they exceed
// `floats`) and the cost model's bytes for the whole grid. `unit`: the kernel of the device's
// matrix unit (fused_block_on_matrix_unit): step 4 on it where the kernel projects, its
// operands as T in 32-byte K-stage rows (two stages a slice for float), 16-byte aligned, and
// the outputs in whole 16x16 tiles, at most fused_mma_block_tiles; step 2 on it where the block expands (fused_tile.hpp: the input
// staged as T in K stages, the expanded slice at pitch 24).
inline bool fused_tile_of(const block_shape& s, int rows, int cols, long long floats, std::size_t element_bytes, bool unit,
                          const platform::device_properties& dev, fused_block_plan& out) {
  constexpr int EC = fused_block_slice, R = fused_block_outputs, MT = fused_mma_tile;
  const bool projects = fused_projects(s), mma = unit && projects;  // (mma: the project on the unit)
  fused_block_tile& t = out.tile;
  t.rows = rows, t.cols = cols;
  t.in_rows = (rows - 1) * s.stride + s.kernel, t.in_cols = (cols - 1) * s.stride + s.kernel;
  t.tiles_x = static_cast<int>(ceil_div(s.out_w, cols)), t.tiles_y = static_cast<int>(ceil_div(s.out_h, rows));
  const long long q = static_cast<long long>(rows) * cols, per_channel = fused_block_threads / s.c_out;
  if (mma) {
    t.q_tiles = static_cast<int>(ceil_div(q, MT)), t.o_tiles = static_cast<int>(ceil_div(s.c_out, MT));
    if (static_cast<long long>(t.q_tiles) * t.o_tiles > fused_mma_block_tiles) return false;
    t.q_step = 0, t.q_count = 0, t.q_rows = t.q_tiles * MT;
  } else {
    // A thread's outputs: q_step pixels apart, as many threads per channel as fit (no more than
    // the tile has pixels), each taking at most R pixels (only where the kernel projects).
    t.q_tiles = t.o_tiles = 0;
    t.q_step = projects ? static_cast<int>(per_channel < q ? per_channel : q) : 1;
    t.q_count = projects ? static_cast<int>(ceil_div(q, t.q_step)) : 0;
    if (t.q_count > R) return false;
    t.q_rows = t.q_step * t.q_count;
  }
  const long long halo = static_cast<long long>(t.in_rows) * t.in_cols;
  // The pitches of fused_tile.hpp's bank rules.
  const bool stride_2_mod_4 = s.stride % 4 == 2, odd_stride = s.stride % 2 == 1;
  t.out_pitch = s.c_out + (6 - s.c_out % 4) % 4;
  t.staging_pair = 1;  // (plan_fused_block chooses the order for the tile it picks; strip_pair too)
  t.strip_pair = 0, t.vector_staging = 0;  // (vector_staging: set per call, launch_fused_kernel)
  const int half = shared_banks / 2;
  const bool unit_expand = unit && s.has_expand;
  // The unit's K stages: 32 bytes (8 floats) a row, of `ks` channels; the slice is `ss` of them.
  const long long row_floats = 8, ks = 32 / static_cast<long long>(element_bytes), ss = EC / ks;
  const long long stage_rows = unit_expand ? ceil_div(halo, MT) * MT : 0, k_stages = ceil_div(s.c_in, ks);
  t.k_stage_rows = static_cast<int>(stage_rows);
  t.q_pair = 1;
  if (unit_expand) {  // (fused_tile.hpp; strides 0 mod 4 meet bank conflicts in step 3)
    t.slice_pitch = fused_expanded_slice_pitch(
        dev.matrix == platform::matrix_unit::mfma ? fused_expander::mfma : fused_expander::mma_sync, s.stride);
    t.pair = 1, t.q_pair = t.slice_pitch * s.stride % half == half / 2 ? 2 : 1;
    t.in_pitch = 0;  // (unused: the input's K stages are k_stage_rows rows)
  } else if (s.has_expand) {
    t.pair = stride_2_mod_4 ? 2 : 1;
    t.slice_pitch = fused_expanded_slice_pitch(fused_expander::simt, s.stride);
    t.in_pitch = t.pair == 2 && s.c_in % shared_banks == half ? s.c_in + half / 2
                 : s.c_in * t.pair % shared_banks == 0     ? s.c_in + 1
                                                           : s.c_in;
  } else {  // (step 3 reads the slice from the input: its pitch is the input's)
    t.pair = 1;
    t.in_pitch = odd_stride ? round_up_to(s.c_in, shared_banks, half) : stride_2_mod_4 ? round_up_to(s.c_in, half, half / 2) : s.c_in;
    t.slice_pitch = t.in_pitch;
  }
  // (the T input's K stages)
  long long at = fused_block_input + (unit_expand ? k_stages * stage_rows * row_floats : halo * t.in_pitch);
  auto take = [&](long long n) {
    const long long start = at;
    at += n;
    return static_cast<int>(start);
  };
  auto aligned = [&] { at = (at + 3) / 4 * 4; };  // (16 bytes: the unit's fragment loads)
  // (with the unit's expand, step 2 stores every row's sums, 8 bytes aligned)
  const long long expanded_pixels = unit_expand ? stage_rows : halo;
  t.mask = take(expanded_pixels);
  if (unit_expand) aligned();
  t.x = take(s.has_expand ? expanded_pixels * t.slice_pitch : 0);
  t.wd = take(static_cast<long long>(EC) * s.taps());
  // d: the depthwise outputs, or (without projecting) the groups' pool sums.
  if (mma) aligned();
  // (the slice's K stages, fused_stage_gap rows apart)
  const auto slice_stages = [&](int rows, int rows_apart) {
    return ((ss - 1) * fused_stage_pitch(rows, rows_apart) + rows) * row_floats;
  };
  t.d = take(mma ? slice_stages(t.q_rows, t.q_pair)
                 : projects ? static_cast<long long>(t.q_rows) * fused_depthwise_pitch
                            : static_cast<long long>(fused_block_threads / EC) * EC);
  const long long expand_weights = unit_expand    ? k_stages * EC * row_floats
                                  : s.has_expand ? static_cast<long long>(s.c_in) * fused_expand_pitch
                                                 : 0;
  const long long project_weights = mma        ? slice_stages(t.o_tiles * MT, fused_project_weight_rows_apart)
                                    : projects ? static_cast<long long>(EC) * t.out_pitch
                                               : 0;
  if (unit) aligned();
  t.we = t.wp = take(expand_weights > project_weights ? expand_weights : project_weights);
  // Step 4 reads rows up to its last output group (results it discards) past q_rows: in the
  // regions after d, or in floats allocated for them.
  const long long reach = t.d + static_cast<long long>(t.q_step) *
                                    (ceil_div(t.q_count, fused_block_output_group) * fused_block_output_group) * fused_depthwise_pitch;
  if (!mma && reach > at) at = reach;
  // The matrix unit's outputs leave through the warps' scratch tiles, from the mask on: as many
  // at once as the regions hold (at least one).
  t.scratch_warps = 0;
  if (mma) {
    const long long per_warp = fused_mma_scratch_largest, warps = fused_block_threads / dev.warp_size;
    const long long first = fused_mma_scratch_at(t);
    if (at < first + per_warp) at = first + per_warp;
    const long long fit = (at - first) / per_warp;
    t.scratch_warps = static_cast<int>(fit < warps ? fit : warps);
  }
  if (at > floats) return false;
  t.floats = static_cast<int>(at);
  const long long tiles = static_cast<long long>(s.n) * t.tiles_x * t.tiles_y;
  const long long weights = (s.has_expand ? static_cast<long long>(s.expanded) * (s.c_in + 1) : 0) +
                            static_cast<long long>(s.expanded) * (s.taps() + 1) +
                            (projects ? static_cast<long long>(s.c_out) * (s.expanded + 1) : 0);
  // A tile reads its halo's pixels inside the image and the weights; the grid writes the output
  // (without projecting: the depthwise output, and the tiles' pool sums, which the pool reads).
  auto inside = [&](int tiles_along, int outputs, int extent, int in_extent) {
    long long sum = 0;  // over the tiles along one axis: input rows (or columns) inside the image
    for (int i = 0; i < tiles_along; ++i) {
      const long long first = static_cast<long long>(i) * outputs * s.stride - s.pad, last = first + in_extent;
      sum += (last < extent ? last : extent) - (first > 0 ? first : 0);
    }
    return sum;
  };
  const long long inputs = static_cast<long long>(s.n) * inside(t.tiles_y, rows, s.h, t.in_rows) *
                           inside(t.tiles_x, cols, s.w, t.in_cols) * s.c_in;
  const long long outputs = static_cast<long long>(s.n) * s.out_h * s.out_w * (projects ? s.c_out : s.expanded);
  out.traffic = static_cast<long long>(element_bytes) * (inputs + tiles * weights + outputs) +
                (projects ? 0 : 2 * static_cast<long long>(sizeof(float)) * tiles * s.expanded);
  out.shared_bytes = static_cast<std::size_t>(at) * sizeof(float);
  out.grid = platform::dims{static_cast<unsigned>(tiles), 1, 1};
  return tiles <= static_cast<long long>(dev.max_grid_x);
}

// The most distinct words any one bank takes, summed over the warps that stage a tile's input
// (fused_nhwc.hpp): each warp stores 32 consecutive elements of [halo][c_in] in pixel order
// (staging_pair 1) or in step 2's slot order (2).
inline long long staging_wavefronts(const fused_block_tile& t, int c_in, int staging_pair) {
  const int halo = t.in_rows * t.in_cols, slots = slot_count(halo, staging_pair);
  const long long elements = static_cast<long long>(slots) * c_in;
  long long total = 0;
  constexpr int warp = 32;  // (NVIDIA's; an AMD wave's stores go in halves of 32 lanes)
  for (long long w = 0; w < elements; w += warp) {
    int per_bank[shared_banks] = {}, most = 0;
    for (long long i = w; i < w + warp && i < elements; ++i) {
      const int pixel = slot_pixel(static_cast<int>(i / c_in), staging_pair);
      if (pixel >= halo) continue;
      const int bank = static_cast<int>((static_cast<long long>(pixel) * t.in_pitch + i % c_in) % shared_banks);
      most = ++per_bank[bank] > most ? per_bank[bank] : most;
    }
    total += most;
  }
  return total;
}

// The bank conflicts of step 3's strips (fused_depthwise.hpp) in a tile: the wavefronts of one
// load of every pair of groups that share a warp (a group's 16 lanes read 16 consecutive words
// at its strip's window; two groups' words fall in distinct banks where they start 16 banks
// apart), with a warp's two groups strip_pair strips apart (slot_pixel's order).
inline long long strip_wavefronts(const fused_block_tile& t, int stride, int pitch, int strip_pair) {
  const int per_row = fused_strips_per_row(t.cols), strips = t.rows * per_row;
  const int groups = static_cast<int>(fused_block_threads) / fused_block_slice, half = shared_banks / 2;
  auto start = [&](int i) { return fused_window_pixel(i / per_row, fused_strip_column(i % per_row, t.cols), stride, t.in_cols) * pitch; };
  long long sum = 0;
  for (int g = 0; g < groups; g += 2)
    for (int j = 0; j < strips; j += groups) {
      const int a = slot_pixel(g, strip_pair) + j, b = slot_pixel(g + 1, strip_pair) + j;
      if (a < strips && b < strips) sum += ((start(b) - start(a)) % shared_banks + shared_banks) % shared_banks == half ? 1 : 2;
      else if (a < strips || b < strips) sum += 1;
    }
  return sum;
}

// The fused kernel's tile for `p` (false where it cannot run it): of every tile that fits a
// multiprocessor's share of shared memory, the one the cost model charges the fewest bytes
// (larger tiles read fewer halos and weights, but fit fewer outputs in a thread's registers
// where the kernel projects; without projecting only shared memory bounds them).
inline bool search_fused_block(const block_shape& s, const platform::device_properties& dev, std::size_t element_bytes,
                               bool unit, fused_block_plan& out) {
  // Outputs per tile: the projecting kernel's registers (on a matrix unit, whole 16x16 tiles);
  // else a bound past any tile's shared memory (its mask, input and expanded halo alone: at
  // least fused_block_slice + 1 floats a pixel with an expand layer, 2 without).
  const long long most = unit && fused_projects(s) ? fused_mma_block_tiles / ceil_div(s.c_out, fused_mma_tile) * fused_mma_tile
                         : fused_projects(s) ? static_cast<long long>(fused_block_threads) / s.c_out * fused_block_outputs
                                             : 4096;
  // Within a multiprocessor's share for fused_resident_blocks; where not even the smallest
  // tile fits that (many channels, little shared memory), within a block's whole limit.
  const long long per_halo_pixel = s.has_expand ? fused_block_slice + 1 : 2;
  for (const int resident : {fused_resident_blocks, 1}) {
    const long long floats = static_cast<long long>(budget(dev, resident) / sizeof(float));
    bool found = false;
    for (int rows = 1; rows <= s.out_h && rows <= most; ++rows)
      for (int cols = 1; cols <= s.out_w && static_cast<long long>(rows) * cols <= most; ++cols) {
        const long long halo = static_cast<long long>((rows - 1) * s.stride + s.kernel) * ((cols - 1) * s.stride + s.kernel);
        if (halo * per_halo_pixel > floats) break;  // (wider tiles neither)
        fused_block_plan candidate;
        if (fused_tile_of(s, rows, cols, floats, element_bytes, unit, dev, candidate) &&
            (!found || candidate.traffic < out.traffic))
          out = candidate, found = true;
      }
    if (found) {
      out.resident = resident;
      // (the order changes no region: chosen for the tile)
      fused_block_tile& t = out.tile;
      t.staging_pair = t.pair == 2 && staging_wavefronts(t, s.c_in, 2) < staging_wavefronts(t, s.c_in, 1) ? 2 : 1;
      if (fused_takes_strips(s.has_expand, s.kernel, s.stride, t.cols))
        t.strip_pair = strip_wavefronts(t, s.stride, t.slice_pitch, 2) < strip_wavefronts(t, s.stride, t.slice_pitch, 1) ? 2 : 1;
      return true;
    }
  }
  return false;
}

// Whether the fused kernel of `p` may expand (where the block expands) and project (without
// squeeze-excitation) on the device's matrix unit (plan_fused_block then takes the unit's tile
// or the SIMT cores', whichever lets more blocks reside, or as many and moves fewer bytes):
// where the pointwise GEMM's matrix-unit
// variants multiply T (mma_usable: the one rule for which unit multiplies which type): 16-bit
// types on every unit that multiplies them, float on AMD's (fp32 MFMA: fp32 products and sums,
// as on the SIMT cores), and float on NVIDIA's where the caller allows TF32 (allow_tf32: its
// operands rounded to TF32 as they are staged, one product each). Without it float stays on
// NVIDIA's SIMT cores in the fused kernel: the three products of TF32 parts (its layers' way to
// float's accuracy on the tensor cores) would need more registers than its 64.
template <class T>
bool fused_block_on_matrix_unit(const inverted_residual_params& p, const platform::device_properties& dev) {
  const bool float_on_mma_sync = std::is_same<T, float>::value && dev.matrix == platform::matrix_unit::mma_sync;
  return (p.has_expand() || p.se_channels == 0) && (!float_on_mma_sync || p.allow_tf32) && mma_usable<T>(dev);
}

// The same, remembered (remembered.hpp: the search takes up to tens of microseconds), keyed by
// the block and what the search reads of the device.
template <class T>
bool plan_fused_block(const inverted_residual_params& p, const platform::device_properties& dev, fused_block_plan& out) {
  if (!fused_block_limits(p).empty()) return false;
  const block_shape s = make_shape(p);
  const std::size_t element_bytes = sizeof(T);
  const bool unit = fused_block_on_matrix_unit<T>(p, dev);
  const plan_key<19> key{s.n, s.c_in, s.h, s.w, s.expanded, s.kernel, s.stride, s.se_channels, s.c_out,
                         static_cast<long long>(s.data_layout), static_cast<long long>(s.act), s.residual, s.has_expand,
                         unit, static_cast<long long>(element_bytes), static_cast<long long>(dev.shared_memory_per_block),
                         static_cast<long long>(dev.shared_memory_per_multiprocessor),
                         static_cast<long long>(dev.shared_memory_reserved_per_block), dev.max_grid_x};
  const auto planned = remembered(key, [&] {
    fused_block_plan plan, simt;
    bool found = search_fused_block(s, dev, element_bytes, unit, plan);
    // The unit's tile, unless the SIMT cores' lets more blocks reside, or as many and moves
    // fewer bytes: the unit's regions take more shared memory a pixel where its staging does
    // not halve the input (float: K-stage rows of whole 16-row tiles, the expanded slice at
    // pitch 24), so the SIMT tile may be larger.
    if (unit && search_fused_block(s, dev, element_bytes, false, simt) &&
        (!found || simt.resident > plan.resident || (simt.resident == plan.resident && simt.traffic < plan.traffic)))
      plan = simt, found = true;
    return std::make_pair(found, plan);
  });
  if (planned.first) out = planned.second;
  return planned.first;
}

}  // namespace detail
}  // namespace dsconv
