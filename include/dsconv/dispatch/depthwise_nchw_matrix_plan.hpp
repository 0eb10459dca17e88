#pragma once
// Launch plan of the tensor-core NCHW depthwise variant (kernels/depthwise/nchw_matrix.hpp, and
// its plane form for output planes of at most 8 x 8, nchw_matrix_plane.hpp): its limits, the form
// and the width of its staging loads, its grid of warps' runs of tiles, the rule that prefers it,
// and the kernel specialisation.

#include <cstdint>
#include <initializer_list>
#include <string>

#include "../config.hpp"
#include "../kernels/depthwise/nchw_matrix.hpp"
#include "../kernels/depthwise/nchw_matrix_plane.hpp"
#include "../kernels/pointwise/matrix_units.hpp"
#include "../params.hpp"
#include "../platform/platform.hpp"
#include "depthwise_register_plan.hpp"
#include "launch_shape.hpp"

namespace dsconv {
namespace detail {

struct nchw_matrix_plan {
  bool plane = false;  // the plane form (output planes of at most 8 x 8), else 16 x 16 tiles
  nchw_matrix_tile tile{};
  platform::dims grid;

  platform::launch_config launch(stream_t stream) const {
    return planned_launch(nchw_matrix_block_threads, grid, 0, "depthwise_nchw_matrix", stream);
  }
};

// Whether the plane form takes `p`: output planes of at most 8 x 8 (at stride 2 of an even
// input width).
inline bool nchw_matrix_plane_form(const depthwise_params& p) {
  return p.out_h() <= nchw_plane_side && p.out_w() <= nchw_plane_side && (p.stride_w == 1 || p.w % 2 == 0);
}

// Why nchw_matrix cannot run the forward of `p` with elements of type T on `dev` (empty: it
// can): the register kernels' filters with padding K / 2, 16-bit types on NVIDIA tensor cores
// that multiply them, rows of an even number of elements in and out (the tile form's halo words
// and outputs move as 32-bit words) or output planes of at most 8 x 8 (the plane form; at stride
// 2 of even input rows), and planes under 2^31 elements (32-bit offsets inside one); the plane
// form, images under 2^31 bytes (its steps from an image's plane to the next's).
template <class T>
std::string nchw_matrix_limits(const depthwise_params& p, const platform::device_properties& dev) {
  if (p.data_layout != layout::nchw) return "needs the nchw layout";
  if (*register_filter_limits(p)) return register_filter_limits(p);
  if (p.pad_h != p.kernel_h / 2 || p.pad_w != p.kernel_w / 2) return "needs padding kernel / 2";
  if (sizeof(T) != 2) return "multiplies half and bfloat16 only";
  if (!platform::compiles_mma_sync) return "this build has no tensor-core kernels";
  if (!platform::provides(dev.matrix, kernels::mma_sync_unit::needs<T>)) return "needs NVIDIA tensor cores that multiply the type (half: sm_75+, bfloat16: sm_80+)";
  if ((p.w % 2 != 0 || p.out_w() % 2 != 0) && !nchw_matrix_plane_form(p))
    return "needs input and output rows of an even number of elements, or output planes of at most 8 x 8 (at stride 2 of "
           "even input rows)";
  if (static_cast<long long>(p.h + 2 * nchw_matrix_side) * p.w >= (1LL << 31)) return "needs planes of fewer than 2^31 elements";
  if (nchw_matrix_plane_form(p) && static_cast<long long>(p.h) * p.w * p.c * 2 >= (1LL << 31))
    return "needs images of fewer than 2^31 bytes for output planes of at most 8 x 8 (32-bit steps between an image's planes)";
  return "";
}

// The widest staging load, 16, 8 or 4 bytes, that divides the input rows' bytes and the
// alignment of the input tensors given.
inline int nchw_matrix_granule(const depthwise_params& p, std::initializer_list<const void*> inputs) {
  int granule = 16;
  const auto divides = [&](int bytes) { return all_aligned(static_cast<std::uintptr_t>(bytes), inputs) && (p.w * 2) % bytes == 0; };
  while (granule > 4 && !divides(granule)) granule /= 2;
  return granule;
}

// The share of a warp tile's outputs that are inside the map: of 16 x 16 tiles 1 on maps whose
// sides are multiples of 16, 0.77 at 14x14 and 28x28; of the plane form's 8 x 8 planes 0.77 at
// 7x7, 0.25 at 4x4. (A tile without its other images, the last of a batch that does not fill
// it, makes their products but moves none of their bytes: at batch 1 a 5x5 tile at stride 1
// still counts 5.7 instructions per DRAM byte, where nchw_register's band counts 9.5.)
inline double nchw_matrix_tile_use(const depthwise_params& p) {
  const long long side = nchw_matrix_plane_form(p) ? nchw_plane_side : nchw_matrix_side;
  const long long ty = (p.out_h() + side - 1) / side, tx = (p.out_w() + side - 1) / side;
  return static_cast<double>(p.out_h()) * p.out_w() / static_cast<double>(ty * tx * side * side);
}

// The rule where nothing was measured: nchw_matrix over nchw_register for 5x5 filters where at
// least half of its tiles' outputs are used. Counted (sm_90 SASS, scripts/sass_budget.py, 16-bit,
// through relu6, whole tiles) it issues 3.9 and 3.0 instructions per DRAM byte for 5x5 filters at
// stride 1 and 2 (gated, the data gradient: 3.6), where nchw_register issues 9.5 and 4.4 (gated
// 8.4) on bands that waste little; the plane form 5.7 on 7x7 planes (3.4 on 8x8; 3.9 at stride 2
// to 7x7), where nchw_register's bands of 7 columns take about 15 (estimated). For 3x3 filters
// the counts are close, 4.0 and 2.7 against 3.8 and 2.3 (gated 3.4 against 3.5; the plane form
// 5.8 on 7x7 planes), and both keep 48 KiB or more in flight a multiprocessor (nchw_register
// 52-85 KiB, nchw_matrix's ring 60-70): those layers stay with nchw_register until a GPU
// measures both.
inline bool nchw_matrix_preferred(const depthwise_params& p) { return p.kernel_h == 5 && nchw_matrix_tile_use(p) >= 0.5; }

// The plan for `p` (which nchw_matrix_limits accepts) with the call's input tensors (null: a
// plan for feasibility only); false where the grid would exceed the device's. Each warp takes
// a run of consecutive tiles, long enough (up to 8) that the grid fills the device about 8
// times over at the kernel's resident blocks: a warp loads its channel's B bands once for its
// run.
template <class T>
bool plan_nchw_matrix(const depthwise_params& p, const platform::device_properties& dev, const void* input, const void* saved,
                      nchw_matrix_plan& plan) {
  nchw_matrix_tile& t = plan.tile;
  plan.plane = nchw_matrix_plane_form(p);
  const long long side = nchw_matrix_side;
  t.tiles_x = plan.plane ? 1 : static_cast<int>((p.out_w() + side - 1) / side);
  t.tiles_y = plan.plane ? 1 : static_cast<int>((p.out_h() + side - 1) / side);
  const int images = plan.plane ? nchw_plane_images(p.stride_h) : p.stride_h == 1 ? 2 : 1;
  const long long tiles = static_cast<long long>(p.c) * ((p.n + images - 1) / images) * t.tiles_x * t.tiles_y;
  if (tiles >= (1LL << 30)) return false;
  t.tiles = static_cast<int>(tiles);
  const int resident = plan.plane ? nchw_plane_resident_blocks(p.kernel_h, p.stride_h) : nchw_matrix_resident_blocks;
  const long long run = walk_length(tiles, dev, resident, nchw_matrix_warps);  // (a warp a worker)
  const long long blocks = (tiles + run * nchw_matrix_warps - 1) / (run * nchw_matrix_warps);
  if (blocks > dev.max_grid_x) return false;
  t.tiles_per_warp = static_cast<int>(run);
  t.granule = plan.plane ? (p.w % 2 == 0 ? 4 : 2) : nchw_matrix_granule(p, {input, saved});
  plan.grid = platform::dims{static_cast<unsigned>(blocks), 1, 1};
  return true;
}

// The kernel specialisation for the problem's filter (G != none: the data gradient's, stride 1);
// T half or bfloat16, compiled where mma.sync is (elsewhere null: no such kernel, and no plan
// launches one).
template <class T, gate_kind G = gate_kind::none>
forward_kernel_pointer<T, nchw_matrix_tile> nchw_matrix_kernel(const depthwise_params& p, bool plane) {
  if constexpr (sizeof(T) == 2 && platform::compiles_mma_sync) {
    return register_filter_case<G != gate_kind::none>(p, [plane](auto k, auto s) {
      constexpr int K = decltype(k)::value, S = decltype(s)::value;
      constexpr platform::matrix_unit needs = kernels::mma_sync_unit::needs<T>;
      return plane ? platform::registered<kernels::depthwise_nchw_matrix_plane<T, K, S, G>, needs>()
                   : platform::registered<kernels::depthwise_nchw_matrix<T, K, S, G>, needs>();
    });
  } else {
    return (void)p, (void)plane, nullptr;
  }
}

}  // namespace detail
}  // namespace dsconv
