#pragma once
// Launch plan of the register-blocked NHWC depthwise variant (kernels/depthwise/nhwc_register.hpp):
// the channel group of a block, its threads' strips, and the kernel specialisation.

#include <cstdint>
#include <type_traits>

#include "../config.hpp"
#include "../kernels/depthwise/nhwc_register.hpp"
#include "../kernels/depthwise/nhwc_register_transposed.hpp"
#include "../kernels/depthwise/nhwc_register_weight.hpp"
#include "../params.hpp"
#include "../platform/platform.hpp"
#include "launch_shape.hpp"

namespace dsconv {
namespace detail {

struct register_plan {
  nhwc_register_tile tile{};
  platform::dims grid;
  std::size_t shared_bytes = 0;

  // (its walk also launches the small-map kernel: depthwise_small_map_plan.hpp)
  platform::launch_config launch(stream_t stream, const char* name = "depthwise_nhwc_register") const {
    return planned_launch(register_block_threads, grid, shared_bytes, name, stream);
  }
};

// Why neither register variant can take `p` (empty: its filter and multiplier they share allow it):
// the specialised filters (register_filter), square, without dilation, multiplier 1.
inline const char* register_filter_limits(const depthwise_params& p) {
  if (p.multiplier != 1) return "needs multiplier 1";
  if (p.kernel_h != p.kernel_w || p.stride_h != p.stride_w || p.dilation_h != 1 || p.dilation_w != 1 ||
      !register_filter(p.kernel_h, p.stride_h))
    return "needs a square 3x3 or 5x5 filter of stride 1 or 2 without dilation";
  return "";
}

// Why the register variant cannot take `p` with elements of `element_bytes` (empty: it can).
inline const char* register_limits(const depthwise_params& p, std::size_t element_bytes) {
  if (p.data_layout != layout::nhwc) return "needs the nhwc layout";
  if (*register_filter_limits(p)) return register_filter_limits(p);
  if (p.c % static_cast<int>(16 / element_bytes) != 0) return "needs channels in whole 16-byte vectors";
  return "";
}

// The kernel's compile-time value F<T, K, S, Gated>() for the problem's filter (register_strip,
// register_vector, register_weight_pitch).
template <class T, template <class, int, int, bool> class F, bool Gated = false>
int register_constant(const depthwise_params& p) {
  const int k = p.kernel_h, s = p.stride_h;
  return k == 3 ? (s == 1 ? F<T, 3, 1, Gated>::value : F<T, 3, 2, Gated>::value)
                : (s == 1 ? F<T, 5, 1, Gated>::value : F<T, 5, 2, Gated>::value);
}
template <class T, int K, int S, bool Gated>
struct register_strip_of {
  static constexpr int value = register_strip<T, K, S, Gated>();
};
template <class T, int K, int S, bool Gated>
struct register_weight_strip_of {
  static constexpr int value = register_weight_strip<T, K, S>();
};
template <class T, int K, int S, bool Gated>
struct register_vector_of {
  static constexpr int value = register_vector<T, K, S>();
};
template <class T, int K, int S, bool Gated>
struct register_weight_pitch_of {
  static constexpr int value = register_weight_pitch<K, register_vector<T, K, S>()>();
};

// A block's channel vectors: the most, up to 8, that divide the layer's `vectors` (whole groups:
// no idle channel lanes).
inline int register_channel_group(int vectors) {
  int group = vectors < 8 ? vectors : 8;
  while (vectors % group != 0) --group;
  return group;
}

// The strips that blocks of `group` channel vectors walk, `cols` to a row and `rows` rows to each
// of `images` images (the tile's lanes, strips and their divisors; false where they exceed an
// int).
inline bool walk_rows(int images, int rows, int cols, int group, nhwc_register_tile& t) {
  t.group_vectors = group;
  t.pixel_lanes = static_cast<int>(register_block_threads) / group;
  t.strip_cols = cols;
  const long long strips = static_cast<long long>(images) * rows * cols;
  if (strips >= (1LL << 31)) return false;
  t.strips = static_cast<int>(strips);
  t.strip_row = fast_divmod(static_cast<unsigned>(cols));
  t.image_row = fast_divmod(static_cast<unsigned>(rows));
  return true;
}

// The strips of tw outputs of the output rows (walk_rows), shared by the forward's and the
// weight gradient's plans.
inline bool walk_strips(const depthwise_params& p, int group, int tw, nhwc_register_tile& t) {
  return walk_rows(p.n, p.out_h(), (p.out_w() + tw - 1) / tw, group, t);
}

// The grid of plan.tile's strips over `groups` channel groups (register_block): one strip per
// thread where that fills the device 8 times over at the blocks' residency (`resident_blocks`,
// the kernel's launch bounds); more (up to 4, each block staging its weights once for them) where
// the grid is larger. False where the groups exceed the grid's x.
inline bool spread_register_strips(long long groups, const platform::device_properties& dev, register_plan& plan,
                                   int resident_blocks = register_resident_blocks) {
  nhwc_register_tile& t = plan.tile;
  const long long lane_strips = (static_cast<long long>(t.strips) + t.pixel_lanes - 1) / t.pixel_lanes;
  const long long wave = 8LL * dev.multiprocessor_count * resident_blocks;
  long long per_thread = lane_strips * groups / wave;
  per_thread = per_thread < 1 ? 1 : per_thread > 4 ? 4 : per_thread;
  // (more where the strip blocks would exceed the grid's y: inputs of thousands of images)
  if ((lane_strips + per_thread - 1) / per_thread > dev.max_grid_y)
    per_thread = (lane_strips + dev.max_grid_y - 1) / dev.max_grid_y;
  t.strips_per_thread = static_cast<int>(per_thread);
  const long long strip_blocks = (lane_strips + per_thread - 1) / per_thread;
  if (groups > dev.max_grid_x) return false;
  plan.grid = platform::dims{static_cast<unsigned>(groups), static_cast<unsigned>(strip_blocks), 1};
  return true;
}

// The plan for `p` (which register_limits accepts) with the call's tensors (null: a plan for
// feasibility only; gated: for the data gradient's kernel); false where the grid would exceed
// the device's.
template <class T>
bool plan_nhwc_register(const depthwise_params& p, const platform::device_properties& dev, const void* input,
                        const void* output, const void* pre, register_plan& plan, bool gated = false) {
  const int v = register_constant<T, register_vector_of>(p);
  const int vectors = p.c / v, group = register_channel_group(vectors);
  nhwc_register_tile& t = plan.tile;
  if (!walk_strips(p, group, gated ? register_constant<T, register_strip_of, true>(p) : register_constant<T, register_strip_of>(p), t))
    return false;
  t.aligned = (!input || aligned_16(input)) && (!output || aligned_16(output)) && (!pre || aligned_16(pre));
  plan.shared_bytes = static_cast<std::size_t>(group) * register_constant<T, register_weight_pitch_of>(p) * sizeof(float);
  return spread_register_strips(vectors / group, dev, plan);
}

// The stride-2 data gradient's plan (kernels/depthwise/nhwc_register_transposed.hpp) for `p`
// (which register_limits accepts, stride 2) with the call's tensors (null: for feasibility
// only): the forward's channel groups and grid over walks down columns of blocks of 2 x
// transposed_columns elements of grad_input; false where they exceed an int or the device's grid.
template <class T>
bool plan_nhwc_register_transposed(const depthwise_params& p, const platform::device_properties& dev,
                                   const void* grad_output, const void* saved, const void* grad_input, register_plan& plan) {
  const int v = p.kernel_h == 3 ? transposed_vector<T, 3>() : transposed_vector<T, 5>();
  const int vectors = p.c / v, group = register_channel_group(vectors);
  nhwc_register_tile& t = plan.tile;
  // A strip walks down walk_blocks blocks of a column (as nchw_register's bands), keeping the dz
  // rows they share where transposed_keeps_rows.
  const int block_rows = transposed_block_rows(p.h, p.pad_h), block_cols = transposed_block_cols(p.w, p.pad_w);
  t.walk_blocks = walk_length(static_cast<long long>(p.n) * block_rows * block_cols * vectors, dev, register_resident_blocks,
                              register_block_threads);
  if (!walk_rows(p.n, (block_rows + t.walk_blocks - 1) / t.walk_blocks, block_cols, group, t)) return false;
  t.aligned = (!grad_output || aligned_16(grad_output)) && (!saved || aligned_16(saved)) && (!grad_input || aligned_16(grad_input));
  const int pitch = p.kernel_h == 3 ? register_weight_pitch<3, transposed_vector<T, 3>()>()
                                    : register_weight_pitch<5, transposed_vector<T, 5>()>();
  plan.shared_bytes = static_cast<std::size_t>(group) * pitch * sizeof(float);
  return spread_register_strips(vectors / group, dev, plan);
}

// The weight gradient's launch on the forward's strips (kernels/depthwise/nhwc_register_weight.hpp).
struct register_weight_plan {
  nhwc_register_tile tile{};
  platform::dims grid;        // channel groups x strip blocks (register_block), partial sums where grid.y > 1
  std::size_t shared_bytes = 0;
  index_t workspace_bytes{};  // what the partial sums of the spread (grid.y > 1) take

  platform::launch_config launch(stream_t stream) const {
    return planned_launch(register_block_threads, grid, shared_bytes, "depthwise_nhwc_register_weight", stream);
  }
};

// The plan for `p` (which register_limits accepts) with the call's tensors (null: for
// feasibility only) and `workspace_bytes` (0: none). Channel groups of a power of two of the
// kernel's vectors (the reduction's lane groups), up to 8. With enough workspace each group's
// strips spread over as many blocks as fill every multiprocessor twice at the kernel's residency
// (2 blocks: two waves, each thread walking many strips), their partial sums added afterwards
// in block order; without, one block per channel group takes all of its strips.
template <class T>
bool plan_nhwc_register_weight(const depthwise_params& p, const platform::device_properties& dev, const void* input,
                               const void* grad_output, const void* saved, std::size_t workspace_bytes,
                               register_weight_plan& plan) {
  const int v = p.kernel_h == 3 ? register_weight_vector<T, 3, 1>() : register_weight_vector<T, 5, 1>();
  const int vectors = p.c / v;
  int group = 8;
  while (vectors % group != 0) group /= 2;
  nhwc_register_tile& t = plan.tile;
  if (!walk_strips(p, group, register_constant<T, register_weight_strip_of>(p), t)) return false;
  t.aligned = (!input || aligned_16(input)) && (!grad_output || aligned_16(grad_output)) && (!saved || aligned_16(saved));
  const long long channel_groups = vectors / group, lane_strips = (t.strips + t.pixel_lanes - 1) / t.pixel_lanes;
  long long blocks = (2LL * dev.multiprocessor_count * register_resident_blocks + channel_groups - 1) / channel_groups;
  blocks = blocks < lane_strips ? blocks : lane_strips;
  long long per_thread = (lane_strips + blocks - 1) / blocks;
  blocks = (lane_strips + per_thread - 1) / per_thread;
  const long long taps = static_cast<long long>(p.kernel_h) * p.kernel_w;
  const index_t spread_bytes = blocks * p.c * (taps + 1) * static_cast<index_t>(sizeof(float));
  plan.workspace_bytes = blocks > 1 ? spread_bytes : 0;
  if (blocks > 1 && (workspace_bytes == 0 || static_cast<index_t>(workspace_bytes) < spread_bytes))
    blocks = 1, per_thread = lane_strips;
  t.strips_per_thread = static_cast<int>(per_thread);
  if (channel_groups > dev.max_grid_x || blocks > dev.max_grid_y) return false;
  plan.grid = platform::dims{static_cast<unsigned>(channel_groups), static_cast<unsigned>(blocks), 1};  // (register_block)
  const long long warps = register_block_threads / static_cast<unsigned>(dev.warp_size);
  const int values = p.kernel_h == 3 ? register_weight_values<3, register_weight_vector<T, 3, 1>()>()
                                     : register_weight_values<5, register_weight_vector<T, 5, 1>()>();
  plan.shared_bytes = static_cast<std::size_t>(warps * group * values) * sizeof(float);
  return true;
}

// f(K, S) (std::integral_constant each) for the problem's filter, one of the register kernels'
// specialisations: 3x3 or 5x5, stride 1 or 2 (StrideOne: of stride 1 only, as the stride-1 data
// gradient runs them; no stride-2 form compiled: the stride-2 data gradient has kernels of its own,
// n*_register_transposed.hpp).
template <bool StrideOne = false, class F>
auto register_filter_case(const depthwise_params& p, F&& f) {
  using k3 = std::integral_constant<int, 3>;
  using k5 = std::integral_constant<int, 5>;
  using s1 = std::integral_constant<int, 1>;
  using s2 = std::integral_constant<int, 2>;
  if constexpr (StrideOne) {
    return p.kernel_h == 3 ? f(k3{}, s1{}) : f(k5{}, s1{});
  } else {
    switch (p.kernel_h * 10 + p.stride_h) {
      case 31: return f(k3{}, s1{});
      case 32: return f(k3{}, s2{});
      case 51: return f(k5{}, s1{});
      default: return f(k5{}, s2{});
    }
  }
}

// The types of the kernels that the selectors of the plans return (detail::*_kernel, for a
// forward-shaped problem and for the stride-2 data gradient), spelled out: instantiations.hpp
// declares the selectors extern (DSCONV_INSTANTIATE_DEPTHWISE_SELECTORS), so that the library's
// instantiation sources alone compile the kernels they name. (Deduced, auto, each caller had
// compiled them again; named after a kernel, decltype, nvcc asks for its definition there.)
template <class T, class Tile>
using forward_kernel_pointer = void (*)(depthwise_shape, Tile, const T*, register_gate, const T*, const T*, T*, T*);
template <class T, class Tile>
using transposed_kernel_pointer = void (*)(depthwise_shape, Tile, const T*, register_gate, const T*, T*);

// The kernel specialisation for the problem's filter (G != none: the data gradient's, stride 1).
template <class T, gate_kind G = gate_kind::none>
auto register_kernel(const depthwise_params& p) {
  return register_filter_case<G != gate_kind::none>(p, [](auto k, auto s) {
    return platform::registered<kernels::depthwise_nhwc_register<T, decltype(k)::value, decltype(s)::value, G>>();
  });
}

// The stride-2 data gradient's kernel for the problem's filter (3x3 or 5x5) and gate G.
template <class T, gate_kind G>
transposed_kernel_pointer<T, nhwc_register_tile> register_transposed_kernel(const depthwise_params& p) {
  return p.kernel_h == 3 ? platform::registered<kernels::depthwise_nhwc_register_transposed<T, 3, G>>()
                         : platform::registered<kernels::depthwise_nhwc_register_transposed<T, 5, G>>();
}

template <class T>
auto register_weight_kernel(const depthwise_params& p) {
  return register_filter_case(p, [](auto k, auto s) {
    return platform::registered<kernels::depthwise_nhwc_register_weight<T, decltype(k)::value, decltype(s)::value>>();
  });
}

}  // namespace detail
}  // namespace dsconv
