#pragma once
// Launch plan of the tensor-core NHWC depthwise variant (kernels/depthwise/nhwc_matrix.hpp):
// its limits, its grid of channel vectors x runs of tiles, the rule that prefers it, and the
// kernel specialisation.

#include <string>

#include "../config.hpp"
#include "../kernels/depthwise/nhwc_matrix.hpp"
#include "../kernels/pointwise/matrix_units.hpp"
#include "../params.hpp"
#include "../platform/platform.hpp"
#include "../problem.hpp"
#include "depthwise_register_plan.hpp"
#include "launch_shape.hpp"
#include "validate.hpp"

namespace dsconv {
namespace detail {

struct matrix_plan {
  nhwc_matrix_tile tile{};
  int side = 16;  // the tiles' outputs along each side (matrix_side): the kernel's TS
  platform::dims grid;
  // With side 8, the channels past the last whole block of four vectors, on tiles of side 16 (a
  // second launch: its blocks' one vector each; grid.x 0 where there are none).
  nhwc_matrix_tile tail_tile{};
  platform::dims tail_grid{0, 0, 0};

  platform::launch_config launch(stream_t stream) const {
    return planned_launch(matrix_block_threads, grid, 0, "depthwise_nhwc_matrix", stream);
  }
  platform::launch_config launch_tail(stream_t stream) const {
    return planned_launch(matrix_block_threads, tail_grid, 0, "depthwise_nhwc_matrix", stream);
  }
};

// Why nhwc_matrix cannot run the forward of `p` with elements of type T on `dev` (empty: it
// can): the register kernels' filters (register_filter_limits), 16-bit types on NVIDIA tensor
// cores that multiply them, channels in whole 16-byte vectors, and an image's input (or a
// tile's staged rows, where more) and output each under 2^31 elements (the kernel's offsets
// inside an image are 32-bit).
template <class T>
std::string matrix_limits(const depthwise_params& p, const platform::device_properties& dev) {
  if (p.data_layout != layout::nhwc) return "needs the nhwc layout";
  if (*register_filter_limits(p)) return register_filter_limits(p);
  if (sizeof(T) != 2) return "multiplies half and bfloat16 only";
  if (!platform::compiles_mma_sync) return "this build has no tensor-core kernels";
  if (!platform::provides(dev.matrix, kernels::mma_sync_unit::needs<T>)) return "needs NVIDIA tensor cores that multiply the type (half: sm_75+, bfloat16: sm_80+)";
  if (p.c % 8 != 0) return "needs channels in whole 16-byte vectors";
  // (a tile's staged rows, up to matrix_input_side of them, count too where the map has fewer)
  const long long side = matrix_input_side(p.kernel_h, p.stride_h, 16);
  const long long image_in = static_cast<long long>(p.h > side ? p.h : side) * p.w * p.c;
  const long long image_out = static_cast<long long>(p.out_h()) * p.out_w() * p.c;
  if (image_in >= (1LL << 31) || image_out >= (1LL << 31)) return "needs fewer than 2^31 elements an image";
  return "";
}

// The share of a tile's outputs that lie inside the map, tiles of side x side outputs: with
// side 16, 1 on maps whose sides are multiples of 16, 0.77 at 14x14, 0.19 at 7x7; with 8,
// 0.77 at 7x7.
inline double matrix_tile_use(const depthwise_params& p, int side) {
  const long long ty = (p.out_h() + side - 1) / side, tx = (p.out_w() + side - 1) / side;
  return static_cast<double>(p.out_h()) * p.out_w() / static_cast<double>(ty * tx * side * side);
}

// The channels that tiles of side 8 take: those in whole blocks of four vectors
// (matrix_tile_vectors); the others go on tiles of side 16 (matrix_plan's tail).
inline int matrix_side8_channels(const depthwise_params& p) {
  const int block = 8 * matrix_tile_vectors(8);
  return p.c / block * block;
}

// The share of the outputs the layer's tiles make that lie inside the map, with side 8 the
// tail's tiles of side 16 counted too (144 channels on 8x8 maps: 128 on tiles used whole, 16 on
// tiles used a quarter: 0.92).
inline double matrix_use(const depthwise_params& p, int side) {
  if (side == 16) return matrix_tile_use(p, 16);
  const int main = matrix_side8_channels(p);
  return (main * matrix_tile_use(p, 8) + (p.c - main) * matrix_tile_use(p, 16)) / p.c;
}

// The tiles' side for `p`: 8 where those tiles (and the tail's) are the better used, else 16.
inline int matrix_side(const depthwise_params& p) { return matrix_use(p, 8) > matrix_use(p, 16) ? 8 : 16; }

// The rule where nothing was measured: nhwc_matrix over nhwc_register where at least half of
// its tiles' outputs lie inside the map (matrix_use). Counted (sm_90 SASS, scripts/sass_budget.py, 16-bit,
// through relu6) it issues 2.7, 1.2, 3.7 and 1.7 instructions per DRAM byte on full tiles of
// 3x3 and 5x5 filters at stride 1 and 2 (8 x 8 tiles: 2.9, 1.2, 3.8, 1.8), where the register
// kernel issues 5.1, 3.0, 11.7 and 6.5 on strips that waste at most an eighth: half-empty tiles still leave it ahead (maps of
// 1 to 4 pixels a side, a quarter of an 8 x 8 tile used at most, do not).
inline bool matrix_preferred(const depthwise_params& p) { return matrix_use(p, matrix_side(p)) >= 0.5; }

// The plan for `p` (which matrix_limits accepts); false where the grid would exceed the
// device's. Each block takes a run of
// consecutive tiles of one channel vector, long enough (up to 8 tiles) that the grid fills
// the device about 8 times over at the kernel's residency: a block loads its B fragments once
// for its run.
// The grid of tiles of `side` over `channels` channels from `first`: each block takes a run
// of consecutive tiles of one channel group, long enough (up to 8 tiles) that the grid fills the
// device about 8 times over at the kernel's residency (a block loads its B fragments once for
// its run); false where it would exceed the device's.
inline bool plan_matrix_tiles(const depthwise_params& p, const platform::device_properties& dev, int side, int first,
                              int channels, nhwc_matrix_tile& t, platform::dims& grid) {
  t.first_channel = first;
  t.tiles_x = (p.out_w() + side - 1) / side;
  t.tiles_y = (p.out_h() + side - 1) / side;
  const long long tiles = static_cast<long long>(p.n) * t.tiles_x * t.tiles_y;
  const long long vectors = channels / (8 * matrix_tile_vectors(side));  // the blocks' channel groups
  if (tiles >= (1LL << 31)) return false;
  t.tiles = static_cast<int>(tiles);
  long long run = walk_length(tiles * vectors, dev, 2, 1);  // (a block a worker, two resident, the fewest)
  if ((tiles + run - 1) / run > dev.max_grid_y) run = (tiles + dev.max_grid_y - 1) / dev.max_grid_y;
  t.tiles_per_block = static_cast<int>(run);
  if (vectors > dev.max_grid_x) return false;
  grid = platform::dims{static_cast<unsigned>(vectors), static_cast<unsigned>((tiles + run - 1) / run), 1};
  return true;
}

// The plan for `p` (which matrix_limits accepts): its tiles' side, and with side 8 the tail's
// tiles of side 16 for the channels past the last whole block; false where a grid would exceed
// the device's.
template <class T>
bool plan_nhwc_matrix(const depthwise_params& p, const platform::device_properties& dev, matrix_plan& plan) {
  plan.side = matrix_side(p);
  const int main = plan.side == 8 ? matrix_side8_channels(p) : p.c;
  plan.tail_grid = platform::dims{0, 0, 0};
  return plan_matrix_tiles(p, dev, plan.side, 0, main, plan.tile, plan.grid) &&
         (main == p.c || plan_matrix_tiles(p, dev, 16, main, p.c - main, plan.tail_tile, plan.tail_grid));
}

// The kernel specialisation for the problem's filter and the tiles' side (G != none: the data
// gradient's, stride 1); T half or bfloat16, compiled where mma.sync is (elsewhere null: no
// such kernel, and no plan launches one).
template <class T, gate_kind G = gate_kind::none>
forward_kernel_pointer<T, nhwc_matrix_tile> matrix_kernel(const depthwise_params& p, int side) {
  if constexpr (sizeof(T) == 2 && platform::compiles_mma_sync) {
    return register_filter_case<G != gate_kind::none>(p, [side](auto k, auto s) {
      constexpr int K = decltype(k)::value, S = decltype(s)::value;
      constexpr auto needs = kernels::mma_sync_unit::needs<T>;
      return side == 8 ? platform::registered<kernels::depthwise_nhwc_matrix<T, K, S, G, 8>, needs>()
                       : platform::registered<kernels::depthwise_nhwc_matrix<T, K, S, G, 16>, needs>();
    });
  } else {
    return (void)p, (void)side, nullptr;
  }
}

// Launches nhwc_matrix (the caller checked matrix_limits) on the forward of shape `s` (the
// layer's, or, G != none, the transposed problem `p` of a stride-1 data gradient: grad_output
// through the gate, the filter rotated) on tensors aligned to 16 bytes, the gate's saved tensor
// included (launch_forward_register runs nhwc_register elsewhere).
template <class T, gate_kind G>
status launch_matrix(const depthwise_params& p, const depthwise_shape& s, const platform::device_properties& dev,
                     const T* input, register_gate gate, const T* weight, const T* bias, T* output, T* pre,
                     stream_t stream) {
  if constexpr (sizeof(T) == 2 && platform::compiles_mma_sync) {
    matrix_plan plan;
    if (!plan_nhwc_matrix<T>(p, dev, plan))
      return invalid(status::unsupported_variant, "depthwise", "nhwc_matrix: the grid exceeds the device's limits");
    status st = status::success;
    if (plan.grid.x != 0)  // (side 8 on fewer than 32 channels: the tail takes them all)
      st = platform::launch(matrix_kernel<T, G>(p, plan.side), plan.launch(stream), s, plan.tile, input, gate, weight, bias,
                            output, pre);
    if (st == status::success && plan.tail_grid.x != 0)
      st = platform::launch(matrix_kernel<T, G>(p, 16), plan.launch_tail(stream), s, plan.tail_tile, input, gate, weight,
                            bias, output, pre);
    return st;
  } else {
    (void)p, (void)s, (void)dev, (void)input, (void)gate, (void)weight, (void)bias, (void)output, (void)pre, (void)stream;
    return invalid(status::unsupported_variant, "depthwise", "nhwc_matrix: no kernel for this type in this build");
  }
}

}  // namespace detail
}  // namespace dsconv
