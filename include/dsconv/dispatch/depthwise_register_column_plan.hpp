#pragma once
// Launch plan of the float NHWC data gradient through a gate (kernels/depthwise/
// nhwc_register_column.hpp), which the variant nhwc_register runs for it: its threads' strips and
// the rows each walks down, and the kernel specialisation.

#include <type_traits>

#include "../config.hpp"
#include "../kernels/depthwise/nhwc_register_column.hpp"
#include "../params.hpp"
#include "../platform/platform.hpp"
#include "launch_shape.hpp"

namespace dsconv {
namespace detail {

struct register_column_plan {
  nhwc_column_tile tile{};
  platform::dims grid;

  platform::launch_config launch(stream_t stream) const {
    return planned_launch(column_block_threads, grid, 0, "depthwise_nhwc_register_column", stream);
  }
};

// Whether nhwc_register runs the stride-1 data gradient of elements T through a gate on the column
// kernel (float), rather than on its forward kernel.
template <class T>
constexpr bool runs_column(bool gated) {
  return std::is_same_v<T, float> && gated;
}

// The plan for `p` (the data gradient's transposed problem, which register_limits accepts, of
// stride 1) with the call's tensors (grad_output, the saved tensor, grad_input; null: for
// feasibility only): vectors of column_vector channels where the channels and every tensor allow
// them (8-byte accesses), strips of column_strip(vector) outputs, each thread walking down as
// many rows as leave the grid filling every multiprocessor's residency twice (the longer the
// walk, the fewer of its input rows it reads twice: K - 1 a walk). False where the input has
// 2^31 elements or more (the kernel's 32-bit offsets) or the grid exceeds the device's.
inline bool plan_nhwc_register_column(const depthwise_params& p, const platform::device_properties& dev,
                                      const void* input, const void* saved, const void* output,
                                      register_column_plan& plan) {
  nhwc_column_tile& t = plan.tile;
  if (static_cast<long long>(p.n) * p.c * p.h * p.w >= (1LL << 31)) return false;
  const int v = column_vector(p.kernel_h);
  t.vector = p.c % v == 0 && all_aligned(4 * v, {input, saved, output}) ? v : 1;
  const int out_h = p.out_h();
  t.strip_cols = (p.out_w() + column_strip(t.vector) - 1) / column_strip(t.vector);
  const long long one_each = static_cast<long long>(p.n) * out_h * t.strip_cols * (p.c / t.vector);
  const long long resident = 2LL * dev.multiprocessor_count * column_resident_blocks * column_block_threads;
  long long rows = one_each / resident;
  rows = rows < 1 ? 1 : rows > out_h ? out_h : rows;
  t.row_groups = static_cast<int>((out_h + rows - 1) / rows);
  t.rows_per_thread = (out_h + t.row_groups - 1) / t.row_groups;  // (the groups' rows evened out)
  const long long items = static_cast<long long>(p.n) * t.row_groups * t.strip_cols * (p.c / t.vector);
  if (!item_grid(items, column_block_threads, dev, plan.grid)) return false;
  t.items = static_cast<int>(items);
  t.channel = fast_divmod(static_cast<unsigned>(p.c / t.vector));
  t.strip_col = fast_divmod(static_cast<unsigned>(t.strip_cols));
  t.row_group = fast_divmod(static_cast<unsigned>(t.row_groups));
  return true;
}

// The kernel specialisation for the problem's filter (3x3 or 5x5), gate G and the plan's vector.
template <gate_kind G>
auto register_column_kernel(const depthwise_params& p, const nhwc_column_tile& t) {
  return p.kernel_h == 5   ? platform::registered<kernels::depthwise_nhwc_register_column<5, G, 1>>()
         : t.vector == 2 ? platform::registered<kernels::depthwise_nhwc_register_column<3, G, 2>>()
                         : platform::registered<kernels::depthwise_nhwc_register_column<3, G, 1>>();
}

}  // namespace detail
}  // namespace dsconv
