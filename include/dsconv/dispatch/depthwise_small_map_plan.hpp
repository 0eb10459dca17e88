#pragma once
// Launch plan of the small-map kernel (kernels/depthwise/small_map.hpp), which the register
// variants (nhwc_register, nchw_register) run on maps of 1, 2 or 4 outputs a side: which maps,
// its blocks (nhwc_register's channel groups, one strip an image) and its specialisation.

#include <type_traits>

#include "../kernels/depthwise/small_map.hpp"
#include "../params.hpp"
#include "../platform/platform.hpp"
#include "depthwise_register_plan.hpp"
#include "launch_shape.hpp"

namespace dsconv {
namespace detail {

// The output side of `p` that a small-map kernel computes, or 0 where none does: a square map
// of 1, 2 or 4 outputs a side, at stride 2 from inputs of 2, 4 or 8 a side (odd inputs stay
// with the register kernels: the kernel's box is the whole input, no access tested), through a
// square register filter (3x3, 5x5) with padding kernel / 2 and multiplier 1, and channels in
// whole vectors of the kernel's (small_map_vector).
template <class T>
int small_map_side(const depthwise_params& p) {
  if (p.multiplier != 1 || *register_filter_limits(p) || p.h != p.w || p.pad_h != p.kernel_h / 2 ||
      p.pad_w != p.kernel_w / 2)
    return 0;
  const int o = p.out_h();
  const bool side = (o == 1 || o == 2 || o == 4) && p.h == p.stride_h * o;
  if (!side || p.c % small_map_vector(static_cast<int>(sizeof(T)), p.stride_h, o) != 0) return 0;
  return o;
}

// The plan for `p` and its `side` (small_map_side, nonzero) with the call's tensors (null: for feasibility only;
// `saved`: the data gradient's gate); false where the grid would exceed the device's. Accesses
// are vectors (NHWC: a pixel's channels; NCHW: runs of 16 bytes) where every tensor is aligned
// to 16 bytes, else elements.
template <class T>
bool plan_small_map(const depthwise_params& p, int side, const platform::device_properties& dev, const void* input,
                    const void* saved, const void* output, const void* pre, register_plan& plan) {
  const int v = small_map_vector(static_cast<int>(sizeof(T)), p.stride_h, side);
  const int vectors = p.c / v, group = register_channel_group(vectors);
  nhwc_register_tile& t = plan.tile;
  if (!walk_rows(p.n, 1, 1, group, t)) return false;  // (one strip an image)
  t.aligned = input && all_aligned(16, {input, saved, output, pre});
  plan.shared_bytes = static_cast<std::size_t>(group) * register_weight_pitch(p.kernel_h, v) * sizeof(float);
  return spread_register_strips(vectors / group, dev, plan,
                                small_map_resident_blocks(static_cast<int>(sizeof(T)), p.kernel_h, p.stride_h, side));
}

// The kernel specialisation for the problem's filter, stride and `side` (small_map_side; G !=
// none: the data gradient's, stride 1).
template <class T, gate_kind G>
auto small_map_kernel(const depthwise_params& p, int side) {
  return register_filter_case<G != gate_kind::none>(p, [side](auto k, auto s) {
    constexpr int K = decltype(k)::value, S = decltype(s)::value;
    return side == 1   ? platform::registered<kernels::depthwise_small_map<T, K, S, 1, G>>()
           : side == 2 ? platform::registered<kernels::depthwise_small_map<T, K, S, 2, G>>()
                       : platform::registered<kernels::depthwise_small_map<T, K, S, 4, G>>();
  });
}

}  // namespace detail
}  // namespace dsconv
