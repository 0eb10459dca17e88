#pragma once
// Launch plans of the depthwise backward passes' tiled variants:
//   data gradient, stride 1: the forward's plan of the transposed problem (a convolution of
//     grad_output with the rotated filter), run by the forward's kernels;
//   data gradient, stride > 1: tiles of grad_input as the forward tiles its output, staging
//     the rows of grad_output they read;
//   weight gradient: the forward's tiles (one channel each for NCHW), spread as items over
//     blocks, and with a workspace over more blocks (partial sums, summed afterwards).

#include <cstdint>

#include "../config.hpp"
#include "../kernels/depthwise/nchw_backward_data.hpp"
#include "../kernels/depthwise/nchw_backward_weight.hpp"
#include "../kernels/depthwise/nhwc_backward_data.hpp"
#include "../kernels/depthwise/nhwc_backward_weight.hpp"
#include "../kernels/depthwise/weight_reduce.hpp"
#include "../params.hpp"
#include "../platform/platform.hpp"
#include "depthwise_plan.hpp"

namespace dsconv {
namespace detail {

// Whether the data gradient can run on the tiled kernels: multiplier 1, and padding that
// keeps every input element inside the reach of the outputs' windows (pad <= (kernel - 1) *
// dilation: the transposed convolution's padding is then never negative).
inline bool transposable(const depthwise_params& p) {
  return p.multiplier == 1 && p.pad_h <= (p.kernel_h - 1) * p.dilation_h && p.pad_w <= (p.kernel_w - 1) * p.dilation_w;
}

// The data gradient of stride 1 as a forward problem: grad_output convolved with the rotated
// filter, padded by (kernel - 1) * dilation - pad, which gives grad_input's extent.
inline depthwise_params transposed_problem(const depthwise_params& p) {
  depthwise_params q = p;
  q.h = p.out_h(), q.w = p.out_w();
  q.pad_h = (p.kernel_h - 1) * p.dilation_h - p.pad_h;
  q.pad_w = (p.kernel_w - 1) * p.dilation_w - p.pad_w;
  q.act = activation::none;
  return q;
}

// Staged grad_output rows (or columns) that `outputs` consecutive grad_input rows read, at most.
inline int transposed_rows(int outputs, int kernel, int dilation, int stride) {
  return (outputs - 1 + (kernel - 1) * dilation) / stride + 2;
}

// NCHW data gradient at stride > 1: whole grad_input planes of a group of channels and images
// when they fit (small maps), else bands of full rows of one plane; a row on whole groups of
// 32 threads. A block fills at most `floats` of shared memory.
template <class T>
bool plan_nchw_backward_data_within(const depthwise_params& p, const platform::device_properties& dev, const T* grad_output,
                                    long long floats, depthwise_plan& out) {
  if (!transposable(p) || p.data_layout != layout::nchw) return false;
  const long long taps = static_cast<long long>(p.kernel_h) * p.kernel_w;
  const long long pitch = transposed_extent(0, p.w - 1, p.pad_w, p.kernel_w, p.dilation_w, p.stride_w).count;
  const auto staged_rows = [&](int rows) { return transposed_rows(rows, p.kernel_h, p.dilation_h, p.stride_h); };
  depthwise_tile t{};
  const long long whole = staged_rows(p.h) * pitch;
  if (whole + taps + 1 <= floats) {
    const long long fit = floats / (whole + taps + 1);
    long long planes = ceil_div(depthwise_outputs_per_block, static_cast<long long>(p.h) * p.w);
    planes = planes < fit ? planes : fit;
    long long g = planes < p.c ? planes : p.c;
    long long nb = planes / g < p.n ? planes / g : p.n;
    auto blocks = [&](long long channels, long long images) { return ceil_div(p.c, channels) * ceil_div(p.n, images); };
    nb = shrink_for_parallelism(nb, 1, dev, [&](long long x) { return blocks(g, x); }, any_count);
    g = shrink_for_parallelism(g, 1, dev, [&](long long x) { return blocks(x, nb); }, any_count);
    t.channels = static_cast<int>(g), t.images = static_cast<int>(nb), t.rows = p.h;
  } else {
    t.channels = t.images = 1;
    int rows = 0;
    while (rows < p.h && staged_rows(rows + 1) * pitch + taps + 1 <= floats) ++rows;
    if (rows < 1) return false;
    t.rows = rows_for_parallelism(rows, p.h, static_cast<long long>(p.n) * p.c, dev);
  }
  t.cols = p.w;
  t.in_rows = staged_rows(t.rows);
  t.row_stride = static_cast<int>(pitch);
  t.plane_stride = static_cast<int>(t.in_rows * pitch);
  // Rows narrower than 32 threads: the threads take a plane's elements in order, so that a
  // group's stores are whole sectors of grad_input (a row per 32 threads would store a
  // straddling part-sector run per row); the group's reads of the staged rows (a stride's
  // worth of elements per staged word) then span a few rows at the plane's pitch.
  t.row_slots = static_cast<int>(t.rows == p.h && p.w < shared_banks ? p.w : round_up(p.w, shared_banks));
  t.channel_slots = 1;
  t.vector = vector_width<T>(grad_output, p.out_w());  // (its kernel stages no pairs: nchw_band.hpp)
  return finish_plan(t, ceil_div(p.c, t.channels) * ceil_div(p.n, t.images), ceil_div(p.h, t.rows),
                     t.channels * (t.images * static_cast<long long>(t.plane_stride) + taps + 1), dev, out);
}

// NHWC data gradient at stride > 1: 32 bytes of channels per block; whole maps of several
// images when they fit, else bands of full rows of one image, or of partial rows (whole
// 32-thread groups) where full rows would make bands shorter than 4 rows.
template <class T>
bool plan_nhwc_backward_data_within(const depthwise_params& p, const platform::device_properties& dev, const T* grad_output,
                                    long long floats, depthwise_plan& out) {
  if (!transposable(p) || p.data_layout != layout::nhwc) return false;
  const long long taps = static_cast<long long>(p.kernel_h) * p.kernel_w;
  depthwise_tile t{};
  t.channels = nhwc_block_channels<T>();
  constexpr long long pixel_floats = 32 / sizeof(float);
  const int slot_group = shared_banks / t.channels;
  const long long groups = ceil_div(p.c, t.channels);
  const long long fixed = taps * nhwc_weight_pitch(t.channels) + t.channels;
  const auto staged_rows = [&](int rows) { return transposed_rows(rows, p.kernel_h, p.dilation_h, p.stride_h); };
  const auto staged_cols = [&](int cols) { return transposed_rows(cols, p.kernel_w, p.dilation_w, p.stride_w); };
  const long long whole = static_cast<long long>(staged_rows(p.h)) * staged_cols(p.w) * pixel_floats;
  t.cols = p.w;
  if (whole + fixed <= floats) {
    long long nb = ceil_div(depthwise_outputs_per_block, static_cast<long long>(p.h) * p.w * t.channels);
    const long long fit = (floats - fixed) / whole;
    nb = nb < fit ? nb : fit;
    nb = nb < p.n ? nb : p.n;
    nb = shrink_for_parallelism(nb, 1, dev, [&](long long x) { return groups * ceil_div(p.n, x); }, any_count);
    t.images = static_cast<int>(nb);
    t.rows = p.h;
  } else {
    t.images = 1;
    t.rows = 0;
    for (int k = 1;; ++k) {  // full rows, then narrower tiles while bands stay short
      const int cols = k == 1 ? p.w : static_cast<int>(round_up(ceil_div(p.w, k), slot_group));
      int rows = 0;
      while (rows < p.h && staged_rows(rows + 1) * static_cast<long long>(staged_cols(cols)) * pixel_floats + fixed <= floats)
        ++rows;
      if (rows >= 1) t.rows = rows, t.cols = cols;
      if ((rows >= 4 || rows == p.h) || cols <= slot_group) break;
    }
    if (t.rows < 1) return false;
    t.rows = rows_for_parallelism(t.rows, p.h, p.n * groups * ceil_div(p.w, t.cols), dev);
  }
  t.in_rows = staged_rows(t.rows);
  t.row_stride = staged_cols(t.cols);
  t.row_slots = static_cast<int>(round_up(t.cols, slot_group));
  t.channel_slots = 1;
  t.plane_stride = t.in_rows * t.row_stride * t.channels;  // staged elements of T
  t.vector = vector_width<T>(grad_output, p.c);
  return finish_plan(t, ceil_div(p.n, t.images) * groups, ceil_div(p.h, t.rows) * ceil_div(p.w, t.cols),
                     static_cast<long long>(t.images) * t.in_rows * t.row_stride * pixel_floats + fixed, dev, out);
}

template <class T>
bool plan_nchw_backward_data(const depthwise_params& p, const platform::device_properties& dev, const T* grad_output,
                             depthwise_plan& out) {
  if (!plan_for_occupancy(
          dev, [&](long long floats, depthwise_plan& o) { return plan_nchw_backward_data_within(p, dev, grad_output, floats, o); },
          out))
    return false;
  // (the staged rows of grad_output start at its transposed extent's first column)
  const transposed_extent cols(0, p.w - 1, p.pad_w, p.kernel_w, p.dilation_w, p.stride_w);
  out.tile.stage_slots =
      nchw_stage_slots(out.tile, p.out_h(), p.out_w(), -cols.first, 1, sizeof(T));
  return true;
}
template <class T>
bool plan_nhwc_backward_data(const depthwise_params& p, const platform::device_properties& dev, const T* grad_output,
                             depthwise_plan& out) {
  return plan_for_occupancy(
      dev, [&](long long floats, depthwise_plan& o) { return plan_nhwc_backward_data_within(p, dev, grad_output, floats, o); },
      out);
}

// The data gradient's tiled plan for layout `nchw`: the forward's plan of the transposed
// problem at stride 1 (`forward` set), the transposed kernels' otherwise.
template <class T>
bool plan_backward_data(const depthwise_params& p, bool nchw, const platform::device_properties& dev, const T* grad_output,
                        depthwise_plan& out, bool& forward) {
  if (!transposable(p) || p.data_layout != (nchw ? layout::nchw : layout::nhwc)) return false;
  forward = p.stride_h == 1 && p.stride_w == 1;
  if (forward) {
    const depthwise_params q = transposed_problem(p);
    return nchw ? plan_nchw_tiled(q, dev, grad_output, out) : plan_nhwc_tiled(q, dev, grad_output, out);
  }
  return nchw ? plan_nchw_backward_data(p, dev, grad_output, out) : plan_nhwc_backward_data(p, dev, grad_output, out);
}

// NCHW weight gradient of whole small planes (one band per map) whose input or output plane is
// not whole 32-byte sectors: blocks of G consecutive channels (kernels/depthwise/
// nchw_backward_weight.hpp), so that no two blocks read a sector of the same tensor. G is the
// channel count that makes both planes whole sectors, at most 8 (a power of two that divides
// the block's threads and is at most a warp) and at most the channels. A block stages its
// images' input planes and dz planes within the shared memory of the one-channel plan (`d`,
// sized for the device's resident blocks), so it takes fewer images than `d` does (at least
// one). Both kinds of staged plane are spaced 32 / G floats apart modulo the 32 banks, and a
// row's outputs take row_slots threads of their channel, a multiple of 32 / G, so that a
// warp's threads of each channel read consecutive words of one row and the G channels' threads
// (t % G) distinct banks. Returns the staged dz plane stride (where `d` keeps one channel per
// block: its band's dz rows, dense after its input planes).
template <class T>
int group_small_planes(const depthwise_params& p, const platform::device_properties& dev, depthwise_plan& d) {
  depthwise_tile& t = d.tile;
  const int oh = p.out_h(), ow = p.out_w();
  if (t.rows != oh) return t.rows * ow;  // bands of a large map: its planes are many sectors
  const long long in_group = 32 / gcd(32, static_cast<long long>(p.h) * p.w * static_cast<long long>(sizeof(T)));
  const long long out_group = 32 / gcd(32, static_cast<long long>(oh) * ow * static_cast<long long>(sizeof(T)));
  long long g = in_group > out_group ? in_group : out_group;
  g = g < 8 ? g : 8;
  g = g < p.c ? g : power_of_two_below(p.c);
  if (g <= 1) return t.rows * ow;
  long long bank_step = 0, x_plane = 0, dz_plane = 0;
  // The next stride at or above `floats` that is bank_step modulo the banks.
  auto spaced = [&](long long floats) { return floats + (bank_step - floats % shared_banks + shared_banks) % shared_banks; };
  // Where one image of G channels' planes would leave fewer than depthwise_resident_blocks
  // blocks on a multiprocessor (a stride-2 14x14 map of 16-bit elements on an AMD CU's 64 KB),
  // fewer channels, down to two: a block's planes then end within a sector another block
  // reads too, a few percent more traffic, against blocks that would wait for memory alone.
  const long long room = static_cast<long long>(
      d.shared_bytes < budget(dev, depthwise_resident_blocks) ? d.shared_bytes : budget(dev, depthwise_resident_blocks));
  for (;; g /= 2) {
    bank_step = shared_banks / g;
    x_plane = spaced(t.plane_stride);
    dz_plane = spaced(static_cast<long long>(oh) * ow);
    if (g <= 2 || g * (x_plane + dz_plane) * static_cast<long long>(sizeof(float)) <= room) break;
  }
  const long long per_image = g * (x_plane + dz_plane) * static_cast<long long>(sizeof(float));
  const long long images = room / per_image;
  t.channels = static_cast<int>(g);
  t.images = images > 1 ? static_cast<int>(images < t.images ? images : t.images) : 1;
  t.plane_stride = static_cast<int>(x_plane);
  t.row_slots = static_cast<int>(round_up(ow, bank_step));
  d.shared_bytes = static_cast<std::size_t>(g * t.images * (x_plane + dz_plane)) * sizeof(float);
  return static_cast<int>(dz_plane);
}

// The weight gradient's launch: the forward's tiles as items of its blocks.
struct weight_plan {
  depthwise_plan tile;         // the forward's (NCHW: one channel, or G of small planes); the launch's grid and shared memory
  weight_items items;          // partial: set by the launcher
  long long channel_blocks;    // blocks across the channels: channel groups (NCHW: of 1 or G)
  long long item_count;        // items of one channel group: image groups x tiles of the map
  index_t workspace_bytes;     // the partial sums of items.groups > 1 blocks per channel (group)
};

// `workspace_bytes`: what the caller gives (0: none): with enough, the items of each channel
// spread over as many blocks as make two per multiprocessor; without, one block takes them all.
template <class T>
bool plan_backward_weight(const depthwise_params& p, bool nchw, const platform::device_properties& dev, const T* input,
                          std::size_t workspace_bytes, weight_plan& out) {
  if (p.multiplier != 1 || p.data_layout != (nchw ? layout::nchw : layout::nhwc)) return false;
  depthwise_plan& d = out.tile;
  if (!(nchw ? plan_nchw_tiled(p, dev, input, d, true) : plan_nhwc_tiled(p, dev, input, d))) return false;
  const long long taps = static_cast<long long>(p.kernel_h) * p.kernel_w;
  const int k = p.kernel_h == p.kernel_w && specialised_filter(p) ? p.kernel_h : 0;
  const long long chunk = weight_chunk_of(k, nchw);  // a thread's taps, of its tap group's (weight_reduce.hpp)
  const long long passes = ceil_div(taps, chunk * weight_tap_groups_of(k, nchw));  // grid.y
  out.items.dz_plane = nchw ? group_small_planes<T>(p, dev, d) : 0;
  out.channel_blocks = ceil_div(p.c, d.tile.channels);
  out.item_count = static_cast<long long>(d.grid.y) * ceil_div(p.n, d.tile.images);
  // Spread: as many blocks per channel and pass as give every multiprocessor two blocks.
  long long groups = ceil_div(2LL * dev.multiprocessor_count, out.channel_blocks * passes);
  groups = groups < out.item_count ? groups : out.item_count;
  const long long per_block = ceil_div(out.item_count, groups > 0 ? groups : 1);
  groups = ceil_div(out.item_count, per_block);
  const index_t spread_bytes = groups * p.c * (taps + 1) * static_cast<index_t>(sizeof(float));
  const bool spread = groups > 1 && workspace_bytes > 0 && static_cast<index_t>(workspace_bytes) >= spread_bytes;
  out.workspace_bytes = groups > 1 ? spread_bytes : 0;
  out.items.groups = spread ? static_cast<int>(groups) : 1;
  out.items.per_block = spread ? static_cast<int>(per_block) : static_cast<int>(out.item_count);
  out.items.partial = nullptr;
  const long long gx = out.channel_blocks * out.items.groups;
  if (gx > dev.max_grid_x || passes > dev.max_grid_y) return false;
  d.grid = platform::dims{static_cast<unsigned>(gx), static_cast<unsigned>(passes), 1};
  // The block's reduction reuses its staged memory: at least its scratch.
  const long long warps = depthwise_block_threads / static_cast<unsigned>(dev.warp_size);
  const std::size_t scratch = static_cast<std::size_t>(warps * d.tile.channels * (chunk + 1)) * sizeof(float);
  if (d.shared_bytes < scratch) d.shared_bytes = scratch;
  return true;
}

template <class T, int K, int S>
struct nchw_backward_data_family {
  static constexpr auto kernel = &kernels::depthwise_nchw_backward_data<T, K, S>;
};
template <class T, int K, int S>
struct nhwc_backward_data_family {
  static constexpr auto kernel = &kernels::depthwise_nhwc_backward_data<T, K, S>;
};
template <class T, int K, int S>
struct nchw_backward_weight_family {
  static constexpr auto kernel = &kernels::depthwise_nchw_backward_weight<T, K, S>;
};
template <class T, int K, int S>
struct nhwc_backward_weight_family {
  static constexpr auto kernel = &kernels::depthwise_nhwc_backward_weight<T, K, S>;
};

}  // namespace detail
}  // namespace dsconv
