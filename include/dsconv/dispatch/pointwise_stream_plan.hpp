#pragma once
// Launch plan of the streaming 1x1 variant, mma_stream (kernels/pointwise/nhwc_stream.hpp):
// the warps' output slice, the grid of blocks that walk the pixel tiles, and the launch.

#include <cstdint>
#include <string>
#include <type_traits>

#include "../config.hpp"
#include "../kernels/pointwise/nhwc_stream.hpp"
#include "../params.hpp"
#include "../platform/platform.hpp"
#include "../problem.hpp"
#include "launch_shape.hpp"
#include "validate.hpp"

namespace dsconv {
namespace detail {

// A block's staged weights stay within the default per-block shared memory.
inline constexpr std::size_t stream_shared_cap = 48 * 1024;

struct stream_plan {
  stream_tile tile{};
  platform::dims grid;
  std::size_t shared_bytes = 0;
};

// Why mma_stream cannot run the forward of `p` with elements of type T on `dev` (empty: it can).
template <class T>
std::string stream_limits(const pointwise_params& p, const platform::device_properties& dev) {
  if (p.data_layout != layout::nhwc) return "needs the nhwc layout";
  if (sizeof(T) != 2) return "multiplies half and bfloat16 only";
  if (!platform::compiles_mma_sync) return "this build has no tensor-core kernels";
  const bool unit = dev.matrix == platform::matrix_unit::mma_sync ||
                    (dev.matrix == platform::matrix_unit::mma_sync_f16 && std::is_same<T, half>::value);
  if (!unit) return "needs NVIDIA tensor cores that multiply the type (half: sm_75+, bfloat16: sm_80+)";
  if (p.c_in % 8 != 0 || p.c_out % 8 != 0) return "needs c_in and c_out in whole 16-byte runs (multiples of 8)";
  return "";
}

// The slice's n tiles: the most of 4, 3, 2, 1 that divide c_out / 8 and whose staged weights fit.
inline int stream_slice_tiles(const pointwise_params& p) {
  const int chunks = (p.c_in + stream_chunk - 1) / stream_chunk;
  for (int nt : {4, 3, 2, 1})
    if ((p.c_out / 8) % nt == 0 && static_cast<std::size_t>(nt) * chunks * 32 * 16 <= stream_shared_cap) return nt;
  return 0;
}

// Thread-instructions per DRAM byte that mma_stream issues on `p`, from its SASS (sm_90, nvcc
// 13.0, scripts/sass_budget.py): a warp's 32-pixel tile of a slice takes about 4 + 27 NT
// instructions a 32-channel chunk and 350 for its (relu) epilogue, every slice reading the whole
// of K; a tile moves 2 (c_in + c_out) bytes a lane. Thin layers come to 2.3 to 3.5, wide ones to
// 10 and more (their activations are re-read once per slice), where the staged GEMM (mma_small)
// shares them between slices.
inline double stream_instructions_per_byte(const pointwise_params& p) {
  const int nt = stream_slice_tiles(p);
  if (nt == 0) return 1e30;
  const double chunks = (p.c_in + stream_chunk - 1) / stream_chunk, slices = p.c_out / (8.0 * nt);
  return slices * (chunks * (4.0 + 27.0 * nt) + 350.0) / (2.0 * (p.c_in + p.c_out));
}
// The heuristic's limit for mma_stream: within the 7.9 instructions per byte an H200 issues at
// full bandwidth, with room to spare.
inline constexpr double stream_instruction_limit = 6.0;

// The plan for `p` (which stream_limits accepts) and the call's tensors (null: a plan for
// feasibility only); false where the weights of one n tile exceed shared memory or the grid the
// device's limits.
inline bool plan_stream(const pointwise_params& p, const platform::device_properties& dev, const void* input,
                        const void* weight, const void* residual, const void* output, const void* pre,
                        stream_plan& plan) {
  stream_tile& t = plan.tile;
  t.slice_tiles = stream_slice_tiles(p);
  if (t.slice_tiles == 0) return false;
  t.chunks = (p.c_in + stream_chunk - 1) / stream_chunk;
  const long long pixels = static_cast<long long>(p.n) * p.h * p.w;
  const long long tiles = (pixels + stream_rows - 1) / stream_rows;
  if (tiles >= (1LL << 31)) return false;
  t.tiles = static_cast<int>(tiles);
  const long long slices = p.c_out / (8 * t.slice_tiles);
  const long long warps_per_block = stream_block_threads / 32;
  // Blocks that walk the tiles of a slice: twice what the multiprocessors hold at once over all
  // slices (each warp then takes several tiles, the next one's loads issued during this one's
  // epilogue), never more than the tiles give a warp.
  const long long resident = 2LL * dev.multiprocessor_count * stream_resident_blocks;
  long long gx = (resident + slices - 1) / slices;
  const long long most = (tiles + warps_per_block - 1) / warps_per_block;
  if (gx > most) gx = most;
  if (gx < 1) gx = 1;
  if (gx > dev.max_grid_x || slices > dev.max_grid_y) return false;
  t.warps = static_cast<int>(gx * warps_per_block);
  t.aligned = (!input || aligned_16(input)) && (!weight || aligned_16(weight)) &&
              (!residual || aligned_16(residual)) && (!output || aligned_16(output)) &&
              (!pre || aligned_16(pre));
  plan.grid = platform::dims{static_cast<unsigned>(gx), static_cast<unsigned>(slices), 1};
  plan.shared_bytes = static_cast<std::size_t>(t.slice_tiles) * t.chunks * 32 * 16;
  return true;
}

// The kernel of a plan's slice width; T half or bfloat16, compiled where mma.sync is.
template <class T>
auto stream_kernel(int slice_tiles) {
  constexpr auto needs =
      std::is_same<T, half>::value ? platform::matrix_unit::mma_sync_f16 : platform::matrix_unit::mma_sync;
  switch (slice_tiles) {
    case 4: return platform::registered<kernels::pointwise_nhwc_stream<T, 4>, needs>();
    case 3: return platform::registered<kernels::pointwise_nhwc_stream<T, 3>, needs>();
    case 2: return platform::registered<kernels::pointwise_nhwc_stream<T, 2>, needs>();
    default: return platform::registered<kernels::pointwise_nhwc_stream<T, 1>, needs>();
  }
}

// Launches mma_stream on the forward of `p` (the caller checked stream_limits).
template <class T>
status launch_stream(const pointwise_params& p, const platform::device_properties& dev, stream_t stream, const T* input,
                     const T* weight, const T* bias, const T* residual, T* output, T* pre) {
  if constexpr (sizeof(T) == 2 && platform::compiles_mma_sync) {
    stream_plan plan;
    if (!plan_stream(p, dev, input, weight, residual, output, pre, plan))
      return invalid(status::unsupported_variant, "pointwise", "mma_stream: the weights of one slice exceed shared "
                                                               "memory, or the grid the device's limits");
    return platform::launch(stream_kernel<T>(plan.tile.slice_tiles),
                            planned_launch(stream_block_threads, plan.grid, plan.shared_bytes, "pointwise_mma_stream",
                                           stream),
                            make_shape(p), plan.tile, input, weight, bias, residual, output, pre);
  } else {
    (void)p, (void)dev, (void)stream, (void)input, (void)weight, (void)bias, (void)residual, (void)output, (void)pre;
    return invalid(status::unsupported_variant, "pointwise", "mma_stream: no kernel for this type in this build");
  }
}

}  // namespace detail
}  // namespace dsconv
