#pragma once
// Launch plans of the shared-memory depthwise variants: how many planes, channels and output
// rows a block takes, from the problem and the device, and which kernel specialisation runs.

#include <cstdint>

#include "../config.hpp"
#include "../kernels/depthwise/nchw_tiled.hpp"
#include "../kernels/depthwise/nhwc_tiled.hpp"
#include "../kernels/depthwise/tile.hpp"
#include "../params.hpp"
#include "../platform/platform.hpp"

namespace dsconv {
namespace detail {

// Up to the default per-block limit of CUDA: larger bands re-read fewer halo rows, and four
// such blocks still fit a multiprocessor's shared memory on current GPUs.
inline constexpr std::size_t depthwise_shared_budget = 48 * 1024;
// Outputs per block worth grouping small planes for.
inline constexpr long long depthwise_outputs_per_block = 1024;

struct depthwise_plan {
  depthwise_tile tile{};
  platform::dims grid;
  std::size_t shared_bytes = 0;
};

inline long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

// Input rows a band of `rows` output rows needs.
inline int band_input_rows(const depthwise_params& p, int rows) {
  return (rows - 1) * p.stride_h + (p.kernel_h - 1) * p.dilation_h + 1;
}

// The most output rows whose staged band fits `floats` after `fixed` floats, or 0.
inline int rows_fitting(const depthwise_params& p, long long floats_per_row, long long fixed, long long floats) {
  const long long in_rows = (floats - fixed) / floats_per_row;
  const long long extent = static_cast<long long>(p.kernel_h - 1) * p.dilation_h + 1;
  if (in_rows < extent) return 0;
  const long long rows = (in_rows - extent) / p.stride_h + 1;
  return static_cast<int>(rows < p.out_h() ? rows : p.out_h());
}

// Fewer rows per band when the grid would leave multiprocessors idle (two blocks each),
// but never bands shorter than 4 rows, whose halo re-reads would dominate.
inline int rows_for_parallelism(int rows, int out_h, long long blocks_per_band, const platform::device_properties& dev) {
  const long long wanted_bands = ceil_div(2LL * dev.multiprocessor_count, blocks_per_band);
  const int rows_wanted = static_cast<int>(ceil_div(out_h, wanted_bands));
  const int floor_rows = rows < 4 ? rows : 4;
  return rows_wanted < rows ? (rows_wanted > floor_rows ? rows_wanted : floor_rows) : rows;
}

template <class T>
int vector_width(const void* ptr, long long contiguous_elements) {
  const int v = static_cast<int>(16 / sizeof(T));
  const bool aligned = reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0;
  return aligned && contiguous_elements % v == 0 ? v : 1;
}

inline std::size_t budget(const platform::device_properties& dev) {
  return dev.shared_memory_per_block < depthwise_shared_budget ? dev.shared_memory_per_block : depthwise_shared_budget;
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

// Halves `count` while the grid (`blocks` of the current count) leaves multiprocessors idle.
template <class Blocks>
long long shrink_for_parallelism(long long count, const platform::device_properties& dev, Blocks blocks) {
  while (count > 1 && blocks(count) < 2LL * dev.multiprocessor_count) count = (count + 1) / 2;
  return count;
}

// NCHW: whole planes when they fit, grouped as channels x images (channels first in whole
// sectors, images next so weights are reused); else bands of full rows of one plane.
template <class T>
bool plan_nchw_tiled(const depthwise_params& p, const platform::device_properties& dev, const T* input, depthwise_plan& out) {
  if (p.multiplier != 1 || p.data_layout != layout::nchw) return false;
  const long long floats = static_cast<long long>(budget(dev) / sizeof(float));
  const long long taps = static_cast<long long>(p.kernel_h) * p.kernel_w;
  const long long rw = static_cast<long long>(p.w) + 2LL * p.pad_w;
  const int oh = p.out_h();
  const long long out_plane = static_cast<long long>(oh) * p.out_w();
  depthwise_tile t{};
  t.row_stride = static_cast<int>(rw);
  const long long whole = band_input_rows(p, oh) * rw;  // staged floats of one whole plane
  if (whole + taps + 1 <= floats) {
    const long long fit = floats / (whole + taps + 1);
    long long planes = ceil_div(depthwise_outputs_per_block, out_plane);
    planes = planes < fit ? planes : fit;
    // Channels whose planes fill whole 32-byte sectors, so blocks never share a sector.
    const long long plane_bytes = static_cast<long long>(p.h) * p.w * static_cast<long long>(sizeof(T));
    long long g = 32 / gcd(32, plane_bytes);
    g = g < p.c ? g : p.c;
    g = g < planes ? g : planes;
    long long nb = planes / g < p.n ? planes / g : p.n;
    if (nb == p.n && planes / nb > g) g = planes / nb < p.c ? planes / nb : p.c;
    nb = shrink_for_parallelism(nb, dev, [&](long long x) { return ceil_div(p.c, g) * ceil_div(p.n, x); });
    g = shrink_for_parallelism(g, dev, [&](long long x) { return ceil_div(p.c, x) * ceil_div(p.n, nb); });
    t.channels = static_cast<int>(g);
    t.images = static_cast<int>(nb);
    t.rows = oh;
  } else {
    t.channels = t.images = 1;
    t.rows = rows_fitting(p, rw, taps + 1, floats);
    if (t.rows < 1) return false;
    t.rows = rows_for_parallelism(t.rows, oh, static_cast<long long>(p.n) * p.c, dev);
  }
  t.in_rows = band_input_rows(p, t.rows);
  t.vector = vector_width<T>(input, p.w);
  return finish_plan(t, ceil_div(p.c, t.channels) * ceil_div(p.n, t.images), ceil_div(oh, t.rows),
                     t.channels * (t.images * static_cast<long long>(t.in_rows) * rw + taps + 1), dev, out);
}

// NHWC: 32 bytes of channels per block; whole maps of several images when they fit, else
// bands of full rows of one image.
template <class T>
bool plan_nhwc_tiled(const depthwise_params& p, const platform::device_properties& dev, const T* input, depthwise_plan& out) {
  if (p.multiplier != 1 || p.data_layout != layout::nhwc) return false;
  const long long floats = static_cast<long long>(budget(dev) / sizeof(float));
  const long long taps = static_cast<long long>(p.kernel_h) * p.kernel_w;
  const long long rw = static_cast<long long>(p.w) + 2LL * p.pad_w;
  const int oh = p.out_h();
  depthwise_tile t{};
  t.channels = static_cast<int>(32 / sizeof(T));
  t.row_stride = static_cast<int>(rw);
  const long long groups = ceil_div(p.c, t.channels);
  const long long fixed = (taps + 1) * t.channels;
  const long long whole = band_input_rows(p, oh) * rw * t.channels;  // staged floats of one whole map
  if (whole + fixed <= floats) {
    long long nb = ceil_div(depthwise_outputs_per_block, static_cast<long long>(oh) * p.out_w() * t.channels);
    const long long fit = (floats - fixed) / whole;
    nb = nb < fit ? nb : fit;
    nb = nb < p.n ? nb : p.n;
    nb = shrink_for_parallelism(nb, dev, [&](long long x) { return groups * ceil_div(p.n, x); });
    t.images = static_cast<int>(nb);
    t.rows = oh;
  } else {
    t.images = 1;
    t.rows = rows_fitting(p, rw * t.channels, fixed, floats);
    if (t.rows < 1) return false;
    t.rows = rows_for_parallelism(t.rows, oh, p.n * groups, dev);
  }
  t.in_rows = band_input_rows(p, t.rows);
  t.vector = vector_width<T>(input, p.c);
  return finish_plan(t, ceil_div(p.n, t.images) * groups, ceil_div(oh, t.rows), t.images * t.in_rows * rw * t.channels + fixed,
                     dev, out);
}

// The kernel of a tiled family for the problem: compile-time filter size and stride for
// 3x3, 5x5 and 7x7 with stride 1 or 2 and no dilation, the run-time sizes otherwise.
template <template <class, int, int> class Family, class T>
auto tiled_kernel(const depthwise_params& p) {
  const bool specialisable = p.kernel_h == p.kernel_w && p.stride_h == p.stride_w && p.dilation_h == 1 && p.dilation_w == 1;
  switch (specialisable ? p.kernel_h * 10 + p.stride_h : 0) {
    case 31: return platform::registered<Family<T, 3, 1>::kernel>();
    case 32: return platform::registered<Family<T, 3, 2>::kernel>();
    case 51: return platform::registered<Family<T, 5, 1>::kernel>();
    case 52: return platform::registered<Family<T, 5, 2>::kernel>();
    case 71: return platform::registered<Family<T, 7, 1>::kernel>();
    case 72: return platform::registered<Family<T, 7, 2>::kernel>();
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
