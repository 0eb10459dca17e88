#pragma once
// Launch plans of the shared-memory depthwise variants: how many planes, channels and output
// rows a block takes, from the problem and the device, and which kernel specialisation runs.

#include <cstdint>

#include "../config.hpp"
#include "../kernels/depthwise/nchw_tiled.hpp"
#include "../kernels/depthwise/nhwc_tiled.hpp"
#include "../kernels/depthwise/tile.hpp"
#include "../kernels/depthwise/weight_reduce.hpp"
#include "../params.hpp"
#include "../platform/platform.hpp"
#include "launch_shape.hpp"
#include "remembered.hpp"

namespace dsconv {
namespace detail {

// Never more than the default per-block limit of CUDA: larger bands re-read fewer halo rows,
// but several blocks per multiprocessor keep memory busy (plan_for_occupancy).
inline constexpr std::size_t depthwise_shared_cap = 48 * 1024;
// Outputs per block worth grouping small planes for.
inline constexpr long long depthwise_outputs_per_block = 1024;

struct depthwise_plan {
  depthwise_tile tile{};
  platform::dims grid;
  std::size_t shared_bytes = 0;

  // The launch of one of the tiled kernels (all take depthwise_block_threads) over this plan.
  platform::launch_config launch(const char* name, stream_t stream) const {
    return planned_launch(depthwise_block_threads, grid, shared_bytes, name, stream);
  }
};

inline long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

// Whether the tiled kernels have a specialisation (compile-time filter size and stride) for
// the filter: 3x3, 5x5 and 7x7, stride 1 or 2, no dilation.
inline bool specialised_filter(const depthwise_params& p) {
  return p.kernel_h == p.kernel_w && p.stride_h == p.stride_w && p.dilation_h == 1 && p.dilation_w == 1 &&
         (p.kernel_h == 3 || p.kernel_h == 5 || p.kernel_h == 7) && (p.stride_h == 1 || p.stride_h == 2);
}

// Input rows a band of `rows` output rows needs.
inline int band_input_rows(const depthwise_params& p, int rows) {
  return (rows - 1) * p.stride_h + (p.kernel_h - 1) * p.dilation_h + 1;
}

// The most output rows whose staged band fits `floats` after `fixed` floats, or 0: its input
// rows of `floats_per_row` each, and `per_output_row` more floats per output row (the weight
// gradient's dz rows).
inline int rows_fitting(const depthwise_params& p, long long floats_per_row, long long fixed, long long floats,
                        long long per_output_row = 0) {
  // r output rows stage (r - 1) * stride + extent input rows.
  const long long extent = static_cast<long long>(p.kernel_h - 1) * p.dilation_h + 1;
  const long long room = floats - fixed - (extent - p.stride_h) * floats_per_row;
  const long long rows = room / (p.stride_h * floats_per_row + per_output_row);
  if (room < 0 || rows < 1) return 0;
  return static_cast<int>(rows < p.out_h() ? rows : p.out_h());
}

// Fewer rows per band when the grid would leave multiprocessors idle (two blocks each),
// but never bands shorter than 4 rows, whose halo re-reads would dominate; then bands of
// even height (as many as `rows` makes, so the last is not a sliver staging a whole halo).
inline int rows_for_parallelism(int rows, int out_h, long long blocks_per_band, const platform::device_properties& dev) {
  const long long wanted_bands = ceil_div(2LL * dev.multiprocessor_count, blocks_per_band);
  const int rows_wanted = static_cast<int>(ceil_div(out_h, wanted_bands));
  const int floor_rows = rows < 4 ? rows : 4;
  if (rows_wanted < rows) rows = rows_wanted > floor_rows ? rows_wanted : floor_rows;
  return static_cast<int>(ceil_div(out_h, ceil_div(out_h, rows)));
}

template <class T>
int vector_width(const void* ptr, long long contiguous_elements) {
  const int v = static_cast<int>(16 / sizeof(T));
  const bool aligned = reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0;
  return aligned && contiguous_elements % v == 0 ? v : 1;
}

// The NCHW weight gradient's loads, as its kernels stage them (weight_stages_elements): 16-byte
// vectors where rows are whole vectors, but single elements on AMD (waves of 64) and for 16-bit
// elements of 5x5 and 7x7 filters.
template <class T>
int nchw_weight_vector_width(const depthwise_params& p, const platform::device_properties& dev, const void* ptr) {
  const int k = specialised_filter(p) ? p.kernel_h : 0;
  return weight_stages_elements(k, static_cast<int>(sizeof(T)), dev.warp_size == 64) ? 1 : vector_width<T>(ptr, p.w);
}

// NCHW rows of `w` elements: 16 bytes of them per load where rows are whole vectors, else
// pairs where rows are whole pairs (7x7 / 14x14 / 28x28 16-bit and 14x14 float rows): half the
// load instructions, and a pair's two stores always go to one column phase each, in the same
// phase for a warp's lanes at each step (nchw_band.hpp), where single elements of a strided
// row split a request over both phases' runs.
template <class T>
int nchw_vector_width(const void* ptr, long long w) {
  const int v = vector_width<T>(ptr, w);
  const bool pairs = reinterpret_cast<std::uintptr_t>(ptr) % (2 * sizeof(T)) == 0 && w % 2 == 0;
  return v > 1 ? v : pairs ? 2 : 1;
}

// Shared memory a block may fill when `resident` of its blocks are to share a multiprocessor
// (less what the runtime reserves per block), never more than the per-block limit.
inline std::size_t budget(const platform::device_properties& dev, int resident) {
  std::size_t b = dev.shared_memory_per_block < depthwise_shared_cap ? dev.shared_memory_per_block : depthwise_shared_cap;
  const std::size_t share = dev.shared_memory_per_multiprocessor / static_cast<std::size_t>(resident);
  if (share > dev.shared_memory_reserved_per_block && share - dev.shared_memory_reserved_per_block < b)
    b = share - dev.shared_memory_reserved_per_block;
  return b;
}

// Blocks of `shared_bytes` each that one multiprocessor's shared memory holds at once.
inline long long resident_by_shared_memory(const platform::device_properties& dev, std::size_t shared_bytes) {
  return static_cast<long long>(dev.shared_memory_per_multiprocessor / (shared_bytes + dev.shared_memory_reserved_per_block));
}

// Blocks a multiprocessor should hold at once for a grid of `blocks`: depthwise_resident_blocks,
// or fewer where fewer already make half the threads a multiprocessor can hold (two on a
// Turing SM), and never more than the grid gives each multiprocessor.
inline long long resident_target(const platform::device_properties& dev, long long blocks) {
  const long long half_threads = ceil_div(dev.max_threads_per_multiprocessor / 2, depthwise_block_threads);
  long long target = half_threads < depthwise_resident_blocks ? half_threads : depthwise_resident_blocks;
  const long long per_multiprocessor = ceil_div(blocks, dev.multiprocessor_count > 0 ? dev.multiprocessor_count : 1);
  target = per_multiprocessor < target ? per_multiprocessor : target;
  return target > 1 ? target : 1;
}

// A plan (plan(floats, out): a block fills at most `floats` of shared memory) whose blocks a
// multiprocessor holds resident_target at a time: a block loads, waits at one barrier, then
// computes, so with one resident block memory would idle while it computes. Planned first
// with the largest budget (the fewest halo re-reads); then, while its blocks are too large
// for the target its grid sets, again within a multiprocessor's share for the target (a
// smaller plan has more blocks, so the target can grow: at most once per resident block).
// The planners keep the smaller plans' halos small with tall bands (NHWC: of partial width).
template <class Plan>
bool plan_for_occupancy(const platform::device_properties& dev, Plan plan, depthwise_plan& out) {
  if (!plan(static_cast<long long>(budget(dev, 1) / sizeof(float)), out)) return false;
  for (int pass = 1; pass < depthwise_resident_blocks; ++pass) {
    const long long target = resident_target(dev, static_cast<long long>(out.grid.x) * out.grid.y);
    if (resident_by_shared_memory(dev, out.shared_bytes) >= target) break;
    depthwise_plan smaller;
    if (!plan(static_cast<long long>(budget(dev, static_cast<int>(target)) / sizeof(float)), smaller)) break;
    out = smaller;
  }
  return true;
}

// Column phases of the staged rows: the specialised strided kernels stage each row's columns
// by stride phase (all x % S == 0 first, then x % S == 1, ...), so that neighbouring outputs
// read neighbouring words at every tap instead of words S apart (an S-way bank conflict).
inline int staged_phases(const depthwise_params& p) { return specialised_filter(p) ? p.stride_w : 1; }

inline long long round_up(long long a, long long b) { return ceil_div(a, b) * b; }

// Staged row pitch: the padded row, rounded up to whole phases.
inline long long staged_row_pitch(const depthwise_params& p) {
  return round_up(static_cast<long long>(p.w) + 2LL * p.pad_w, staged_phases(p));
}

// `floats` rounded up to the next value congruent to `residue` modulo the bank count.
inline long long padded(long long floats, long long residue) {
  const long long banks = shared_banks;
  return floats + ((residue - floats) % banks + banks) % banks;
}

// NCHW threads taking outputs in order (the stores of a group of 32 threads whole sectors)
// read, at a tap, the staged rows of `ow` consecutive outputs, then the next output row's,
// stride * pitch words further: 32 consecutive outputs read 32 consecutive banks when
// stride * pitch is ow modulo the bank count. The smallest such pitch (whole column phases)
// from `pitch` up to five times it, or 0 if there is none.
inline long long in_order_row_pitch(const depthwise_params& p, long long pitch, int ow) {
  for (long long r = pitch; r <= 5 * pitch; r += staged_phases(p))
    if ((r * p.stride_h - ow) % shared_banks == 0) return r;
  return 0;
}

// Stacked NCHW rows: the 32 threads of a group take 32 / slots consecutive output rows of one
// plane (`slots` >= ow threads per row), which at every tap read staged rows stride * pitch
// words apart, `ow` consecutive words (of one column phase) each: free of bank conflicts
// when those words never share a bank. The smallest such pitch (whole column phases) from
// `pitch` up to four times it, or 0 if there is none.
inline long long stacked_row_pitch(const depthwise_params& p, long long pitch, int ow, long long slots) {
  const long long stacked = shared_banks / slots;
  for (long long r = pitch; r <= 4 * pitch; r += staged_phases(p)) {
    const long long d = r * p.stride_h % shared_banks;  // bank distance of consecutive rows
    bool disjoint = true;
    for (long long k = 1; k < stacked && disjoint; ++k) {
      const long long gap = k * d % shared_banks;  // rows k apart: ow banks each, `gap` apart
      disjoint = gap >= ow && shared_banks - gap >= ow;
    }
    if (disjoint) return r;
  }
  return 0;
}

// The cost of stage_nchw_band's element stores (nchw_band.hpp) for the block of tile `t`,
// whose planes of h rows of `w` elements (of `elem_bytes` each) stage their rows inside the
// plane from padded column `left` in `phases` column phases, with the threads in the order
// `slots` gives (tile.hpp: stage_slots): the kernel's mapping of threads to vectors and of a
// vector's elements to its stores, counted warp by warp over the block's first warps (enough
// of them for the pattern to repeat over rows and planes) as the host platform counts a
// request: its shared-memory wavefronts (the most words any one bank takes) and the 32-byte
// sectors of its global load.
struct staging_cost {
  long long wavefronts = 0, sectors = 0, vectors = 0;
  // Per vector staged: fewer wavefronts than `o` without more sectors (a group of threads
  // that idles past a row's end loads a part of a sector the next group loads again).
  bool cheaper_than(const staging_cost& o) const {
    return sectors * o.vectors <= o.sectors * vectors && wavefronts * o.vectors < o.wavefronts * vectors;
  }
};
inline staging_cost nchw_staging_cost(const depthwise_tile& t, int h, int w, int left, int phases, int slots,
                                      int elem_bytes) {
  constexpr long long sampled_warps = 32, sector = 32;
  const int v = t.vector, vectors = w / v, per_row = slots ? slots : vectors;
  const int rows = t.in_rows < h ? t.in_rows : h;  // of a plane, inside the image
  const long long plane_elems = static_cast<long long>(h) * w;
  const long long items = static_cast<long long>(t.channels) * t.images * rows * per_row;
  const long long sampled = items < sampled_warps * shared_banks ? items : sampled_warps * shared_banks;
  staging_cost cost;
  for (long long w0 = 0; w0 < sampled; w0 += shared_banks) {
    long long last_sector = -1;
    for (int k = 0; k < v; ++k) {
      int per_bank[shared_banks] = {}, worst = 0;
      for (int lane = 0; lane < shared_banks && w0 + lane < sampled; ++lane) {
        const long long i = w0 + lane, row = i / per_row, plane = row / rows;
        const int col = static_cast<int>(i % per_row);
        if (col >= vectors) continue;
        const int j = v > 1 ? (k + staging_rotation(lane, v, phases)) % v : 0;
        const long long word = plane * t.plane_stride + row % rows * t.row_stride +
                               staged_column(left + col * v + j, phases, t.row_stride / phases);
        const int n = ++per_bank[word % shared_banks];
        worst = n > worst ? n : worst;
        if (k > 0) continue;
        // (the lanes' vectors lie in ascending order: a sector is new unless the last lane's)
        ++cost.vectors;
        const long long first = (plane * plane_elems + row % rows * w + col * v) * elem_bytes;
        cost.sectors += (first + v * elem_bytes - 1) / sector - first / sector + (first / sector != last_sector);
        last_sector = (first + v * elem_bytes - 1) / sector;
      }
      cost.wavefronts += worst;
    }
  }
  return cost;
}

// The staging order (stage_slots) of the fewest wavefronts per vector without more sectors:
// rows back to back, or each row from a slot boundary, slots of a power of two up to a group
// of 32 threads (several rows to a group), or of whole groups for longer rows.
inline int nchw_stage_slots_modelled(const depthwise_tile& t, int h, int w, int left, int phases, int elem_bytes) {
  const int vectors = w / t.vector;
  int best = 0;
  staging_cost best_cost = nchw_staging_cost(t, h, w, left, phases, 0, elem_bytes);
  const int first = vectors > shared_banks ? static_cast<int>(round_up(vectors, shared_banks)) : 2;
  for (int slots = first; slots <= (vectors > shared_banks ? first : shared_banks); slots *= 2) {
    if (slots <= vectors) continue;  // (slots == vectors: back to back)
    const staging_cost c = nchw_staging_cost(t, h, w, left, phases, slots, elem_bytes);
    if (c.cheaper_than(best_cost)) best = slots, best_cost = c;
  }
  return best;
}

// The same, remembered (remembered.hpp: the model takes tens to hundreds of microseconds).
inline int nchw_stage_slots(const depthwise_tile& t, int h, int w, int left, int phases, int elem_bytes) {
  return remembered(plan_key<11>{t.vector, t.channels, t.images, t.in_rows, t.row_stride, t.plane_stride, h, w, left, phases,
                                 elem_bytes},
                    [&] { return nchw_stage_slots_modelled(t, h, w, left, phases, elem_bytes); });
}

// Stores a plan whose grid the device can launch; false otherwise.
inline bool finish_plan(const depthwise_tile& t, long long gx, long long gy, long long shared_floats,
                        const platform::device_properties& dev, depthwise_plan& out) {
  if (gx > dev.max_grid_x || gy > dev.max_grid_y) return false;
  out.tile = t;
  out.grid = platform::dims{static_cast<unsigned>(gx), static_cast<unsigned>(gy), 1};
  out.shared_bytes = static_cast<std::size_t>(shared_floats) * sizeof(float);
  return true;
}

inline long long gcd(long long a, long long b) { return b ? gcd(b, a % b) : a; }

// The largest count from `count` down to `floor` that `keep` accepts and whose grid (`blocks`
// of it) gives every multiprocessor two blocks; `floor` where none does.
template <class Blocks, class Keep>
long long shrink_for_parallelism(long long count, long long floor, const platform::device_properties& dev, Blocks blocks,
                                 Keep keep) {
  for (long long x = count; x > floor; --x)
    if (keep(x) && blocks(x) >= 2LL * dev.multiprocessor_count) return x;
  return floor;
}
inline bool any_count(long long) { return true; }

inline long long power_of_two_below(long long x) {  // the largest power of two <= x (x >= 1)
  long long p = 1;
  while (p * 2 <= x) p *= 2;
  return p;
}

// NCHW: whole planes when they fit, grouped as channels x images (channels first in whole
// sectors, images next so weights are reused); else bands of full rows of one plane.
// A block fills at most `floats` of shared memory.
// one_channel: tiles of a single channel (the weight gradient's blocks keep each thread on one
// channel: its sums are that channel's), staged as its kernels compile (no pairs, no staging
// order: nchw_weight_vector_width), with room for their dz rows after the inputs (a plane's
// rows of the tile, dense).
template <class T>
bool plan_nchw_tiled_within(const depthwise_params& p, const platform::device_properties& dev, const T* input,
                            long long floats, depthwise_plan& out, bool one_channel = false) {
  if (p.multiplier != 1 || p.data_layout != layout::nchw) return false;
  const long long taps = static_cast<long long>(p.kernel_h) * p.kernel_w;
  long long pitch = staged_row_pitch(p);
  const int oh = p.out_h(), ow = p.out_w();
  const long long out_plane = static_cast<long long>(oh) * ow;
  depthwise_tile t{};
  // Threads to outputs (tile.hpp), so that every tap is free of bank conflicts. Where a row
  // is whole 32-byte sectors: a row per whole group of 32 threads, rows of 16 or fewer side by
  // side with the same row of the next channels (planes padded). Elsewhere a group's stores
  // are whole sectors only if threads take the outputs in order: so they do, at a row pitch
  // that keeps 32 consecutive outputs' taps in distinct banks (in_order_row_pitch), where
  // one exists within five times the row; else rows of 16 or fewer stacked in a group,
  // several rows of the plane, at a pitch that keeps each row's banks apart
  // (stacked_row_pitch), and longer rows in whole groups.
  const bool sector_rows = !one_channel && ow * static_cast<long long>(sizeof(T)) % 32 == 0;
  long long slots = round_up(ow, shared_banks), channel_slots = 1;
  const long long in_order_pitch = sector_rows ? 0 : in_order_row_pitch(p, pitch, ow);
  if (in_order_pitch) {
    slots = ow;
    pitch = in_order_pitch;
  } else if (ow <= shared_banks / 2) {
    for (slots = 1; slots < ow;) slots *= 2;
    if (sector_rows) {
      channel_slots = shared_banks / slots;
    } else {
      long long stacked_pitch = 0;
      for (; slots < shared_banks && !(stacked_pitch = stacked_row_pitch(p, pitch, ow, slots));) slots *= 2;
      if (stacked_pitch) pitch = stacked_pitch;
    }
  }
  t.row_stride = static_cast<int>(pitch);
  // A whole staged plane; planes side by side in a group start `slots` banks apart; planes
  // of stacked or in-order rows continue their rows' spacing (the next plane's first row where
  // the plane's row out_h would be), as a group of threads may take the last rows of one
  // plane and the first of the next.
  long long whole = band_input_rows(p, oh) * pitch;
  if (slots % shared_banks != 0) whole = padded(whole, channel_slots > 1 ? slots : oh * p.stride_h * pitch);
  const long long dz_row = one_channel ? ow : 0;  // staged dz floats per output row
  if (whole + oh * dz_row + taps + 1 <= floats) {
    const long long fit = floats / (whole + oh * dz_row + taps + 1);
    long long planes = ceil_div(depthwise_outputs_per_block, out_plane);
    planes = planes < fit ? planes : fit;
    // Channels whose input and output planes fill whole 32-byte sectors, so blocks never share
    // a sector (both counts are powers of two: the larger is a multiple of the other).
    const long long in_group = 32 / gcd(32, static_cast<long long>(p.h) * p.w * static_cast<long long>(sizeof(T)));
    const long long out_group = 32 / gcd(32, out_plane * static_cast<long long>(sizeof(T)));
    long long sector_group = in_group > out_group ? in_group : out_group;
    sector_group = sector_group < p.c ? sector_group : p.c;
    // Channel counts that keep blocks' ranges aligned: whole sector groups, or a power of two
    // below one (a block's planes then start on as large a power of two as they can).
    auto aligned = [&](long long x) { return x % sector_group == 0 || (x < sector_group && (x & (x - 1)) == 0); };
    auto align_down = [&](long long x) { return x >= sector_group ? x - x % sector_group : power_of_two_below(x); };
    long long g = one_channel ? 1 : align_down(sector_group < planes ? sector_group : planes);
    long long nb = planes / g < p.n ? planes / g : p.n;
    if (!one_channel && nb == p.n && planes / nb > g) g = align_down(planes / nb < p.c ? planes / nb : p.c);
    // More blocks where the grid is small: fewer channels down to a sector group, then fewer
    // images (each image group reads the weights again), then fewer channels (any count: the
    // blocks' ranges are then shorter than a sector).
    auto blocks = [&](long long channels, long long images) { return ceil_div(p.c, channels) * ceil_div(p.n, images); };
    g = shrink_for_parallelism(g, sector_group < g ? sector_group : g, dev, [&](long long x) { return blocks(x, nb); }, aligned);
    nb = shrink_for_parallelism(nb, 1, dev, [&](long long x) { return blocks(g, x); }, any_count);
    g = shrink_for_parallelism(g, 1, dev, [&](long long x) { return blocks(x, nb); }, any_count);
    // Whole groups of side-by-side channels, so no thread idles for a missing channel.
    if (g > channel_slots) g -= g % channel_slots;
    t.channels = static_cast<int>(g);
    t.images = static_cast<int>(nb);
    t.rows = oh;
    t.plane_stride = static_cast<int>(whole);
  } else {
    if (channel_slots > 1) slots = round_up(ow, shared_banks), channel_slots = 1;  // one plane per block
    t.channels = t.images = 1;
    t.rows = rows_fitting(p, pitch, taps + 1, floats, dz_row);
    if (t.rows < 1) return false;
    t.rows = rows_for_parallelism(t.rows, oh, static_cast<long long>(p.n) * p.c, dev);
    t.plane_stride = static_cast<int>(band_input_rows(p, t.rows) * pitch);
  }
  t.cols = ow;  // full rows: contiguous in memory
  t.in_rows = band_input_rows(p, t.rows);
  t.row_slots = static_cast<int>(slots);
  t.channel_slots = static_cast<int>(channel_slots);
  t.vector = one_channel ? nchw_weight_vector_width<T>(p, dev, input) : nchw_vector_width<T>(input, p.w);
  return finish_plan(t, ceil_div(p.c, t.channels) * ceil_div(p.n, t.images), ceil_div(oh, t.rows),
                     t.channels * (t.images * (static_cast<long long>(t.plane_stride) + t.rows * dz_row) + taps + 1), dev, out);
}

// Input columns `cols` output columns need.
inline int tile_input_cols(const depthwise_params& p, int cols) {
  return (cols - 1) * p.stride_w + (p.kernel_w - 1) * p.dilation_w + 1;
}

// Input rows (or columns) inside the image that tiles of `tile` of the `outputs` output rows
// (columns) read, summed over the tiles: a tiling's input traffic is the product of both.
inline long long tiles_read_extent(int outputs, int tile, int stride, int kernel, int dilation, int pad, int size) {
  long long total = 0;
  for (int o0 = 0; o0 < outputs; o0 += tile) {
    const int last = (o0 + tile < outputs ? o0 + tile : outputs) - 1;
    const int lo = o0 * stride - pad, hi = last * stride - pad + (kernel - 1) * dilation + 1;
    const int inside = (hi < size ? hi : size) - (lo > 0 ? lo : 0);
    total += inside > 0 ? inside : 0;
  }
  return total;
}

// NHWC staged row pitch in pixels (32 bytes: 8 banks) for `cols` staged columns: whole
// column phases; with two phases, a phase pitch of 2 modulo 4 pixels, so that the pixels a
// group's copies write at once (consecutive input columns, half of them in each phase) fill
// distinct banks.
inline long long nhwc_row_pitch(const depthwise_params& p, long long cols) {
  long long pitch = round_up(cols, staged_phases(p));
  if (staged_phases(p) == 2)
    while (pitch / 2 % 4 != 2) pitch += 2;
  return pitch;
}

// NHWC: 32 bytes of channels per block; whole maps of several images when they fit, else
// bands of one image: of full rows, or, where a band of full rows would be short (its halo
// rows a large part of it), of the partial rows that stage the fewest pixels per output.
template <class T>
bool plan_nhwc_tiled_within(const depthwise_params& p, const platform::device_properties& dev, const T* input,
                            long long floats, depthwise_plan& out) {
  if (p.multiplier != 1 || p.data_layout != layout::nhwc) return false;
  const long long taps = static_cast<long long>(p.kernel_h) * p.kernel_w;
  const int oh = p.out_h(), ow = p.out_w();
  depthwise_tile t{};
  t.channels = nhwc_block_channels<T>();
  // A staged pixel: 32 bytes of channels, as in memory (16-bit types are not widened).
  constexpr long long pixel_floats = 32 / sizeof(float);
  // Pixels per row: whole groups of 32 threads (a thread per staged channel).
  const int slot_group = shared_banks / t.channels;
  t.channel_slots = 1;
  const long long groups = ceil_div(p.c, t.channels);
  const long long fixed = taps * nhwc_weight_pitch(t.channels) + t.channels;  // weights and bias
  const long long full_pitch = nhwc_row_pitch(p, static_cast<long long>(p.w) + 2LL * p.pad_w);
  const long long whole = band_input_rows(p, oh) * full_pitch * pixel_floats;  // shared floats of one whole map
  long long pitch = full_pitch;
  t.cols = ow;
  if (whole + fixed <= floats) {
    long long nb = ceil_div(depthwise_outputs_per_block, static_cast<long long>(oh) * ow * t.channels);
    const long long fit = (floats - fixed) / whole;
    nb = nb < fit ? nb : fit;
    nb = nb < p.n ? nb : p.n;
    nb = shrink_for_parallelism(nb, 1, dev, [&](long long x) { return groups * ceil_div(p.n, x); }, any_count);
    t.images = static_cast<int>(nb);
    t.rows = oh;
  } else {
    // Tiles of ow / k columns (whole row-slot groups) for k = 1, 2, ...: the one whose blocks
    // read the fewest input pixels, full rows (k = 1) unless a narrower tile reads fewer.
    t.images = 1;
    t.rows = 0;
    long long best = 0;
    for (int k = 1; k == 1 || ceil_div(ow, k - 1) > slot_group; ++k) {
      const int cols = static_cast<int>(k == 1 ? ow : round_up(ceil_div(ow, k), slot_group));
      const long long cols_pitch = k == 1 ? full_pitch : nhwc_row_pitch(p, tile_input_cols(p, cols));
      int rows = rows_fitting(p, cols_pitch * pixel_floats, fixed, floats);
      if (rows < 1) continue;
      rows = rows_for_parallelism(rows, oh, p.n * groups * ceil_div(ow, cols), dev);
      const long long read = tiles_read_extent(oh, rows, p.stride_h, p.kernel_h, p.dilation_h, p.pad_h, p.h) *
                             tiles_read_extent(ow, cols, p.stride_w, p.kernel_w, p.dilation_w, p.pad_w, p.w);
      if (t.rows == 0 || read < best) best = read, t.rows = rows, t.cols = cols, pitch = cols_pitch;
    }
    if (t.rows < 1) return false;
  }
  t.row_stride = static_cast<int>(pitch);
  t.row_slots = static_cast<int>(round_up(t.cols, slot_group));
  t.in_rows = band_input_rows(p, t.rows);
  t.plane_stride = static_cast<int>(t.in_rows * pitch * t.channels);  // staged elements of T
  t.vector = vector_width<T>(input, p.c);
  return finish_plan(t, ceil_div(p.n, t.images) * groups, ceil_div(oh, t.rows) * ceil_div(ow, t.cols),
                     t.images * t.in_rows * pitch * pixel_floats + fixed, dev, out);
}

template <class T>
bool plan_nchw_tiled(const depthwise_params& p, const platform::device_properties& dev, const T* input, depthwise_plan& out,
                     bool one_channel = false) {
  if (!plan_for_occupancy(
          dev, [&](long long floats, depthwise_plan& o) { return plan_nchw_tiled_within(p, dev, input, floats, o, one_channel); },
          out))
    return false;
  out.tile.stage_slots =  // (of the plan chosen; the weight gradient stages rows back to back)
      one_channel ? 0 : nchw_stage_slots(out.tile, p.h, p.w, p.pad_w, staged_phases(p), sizeof(T));
  return true;
}
template <class T>
bool plan_nhwc_tiled(const depthwise_params& p, const platform::device_properties& dev, const T* input, depthwise_plan& out) {
  return plan_for_occupancy(
      dev, [&](long long floats, depthwise_plan& o) { return plan_nhwc_tiled_within(p, dev, input, floats, o); }, out);
}

// The kernel of a tiled family for the problem: compile-time filter size and stride for
// 3x3, 5x5 and 7x7 with stride 1 or 2 and no dilation, the run-time sizes otherwise.
template <template <class, int, int> class Family, class T>
auto tiled_kernel(const depthwise_params& p) {
  switch (specialised_filter(p) ? p.kernel_h * 10 + p.stride_h : 0) {
    case 31: return platform::registered<Family<T, 3, 1>::kernel>();
    case 32: return platform::registered<Family<T, 3, 2>::kernel>();
    case 51: return platform::registered<Family<T, 5, 1>::kernel>();
    case 52: return platform::registered<Family<T, 5, 2>::kernel>();
    case 71: return platform::registered<Family<T, 7, 1>::kernel>();
    case 72: return platform::registered<Family<T, 7, 2>::kernel>();
    default: return platform::registered<Family<T, 0, 0>::kernel>();
  }
}

// The kernel of a data-gradient family of stride > 1: compile-time 3x3, 5x5 and 7x7 at stride 2
// (no dilation), the run-time sizes otherwise.
template <template <class, int, int> class Family, class T>
auto transposed_kernel(const depthwise_params& p) {
  switch (specialised_filter(p) && p.stride_h == 2 ? p.kernel_h : 0) {
    case 3: return platform::registered<Family<T, 3, 2>::kernel>();
    case 5: return platform::registered<Family<T, 5, 2>::kernel>();
    case 7: return platform::registered<Family<T, 7, 2>::kernel>();
    default: return platform::registered<Family<T, 0, 0>::kernel>();
  }
}

template <class T, int K, int S>
struct nchw_tiled_family {
  static constexpr auto kernel = &kernels::depthwise_nchw_tiled<T, K, S>;
};
template <class T, int K, int S>
struct nhwc_tiled_family {
  static constexpr auto kernel = &kernels::depthwise_nhwc_tiled<T, K, S>;
};

}  // namespace detail
}  // namespace dsconv
