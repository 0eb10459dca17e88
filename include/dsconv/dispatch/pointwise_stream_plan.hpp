#pragma once
// Launch plan of the streaming 1x1 variant, mma_stream (kernels/pointwise/nhwc_stream.hpp):
// its form (held where K is at most four chunks, else streaming), the warps' output slice, the
// slices a block takes, the grid of blocks that walk the pixel tiles, and the launch.

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
  bool held = false;  // the held form (pointwise_nhwc_stream_held)
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

// The most chunks of K the held form takes (its kernel's KC = 4).
inline constexpr int stream_held_chunks = 4;

// Whether the held form takes `p`: K in at most four chunks.
inline bool stream_held(const pointwise_params& p) {
  return (p.c_in + stream_chunk - 1) / stream_chunk <= stream_held_chunks;
}

// The slice's blocks of 8 outputs: the most of 4, 3, 2, 1 that divide c_out / 8 and whose
// staged weights fit (the streaming form's: 512 bytes a block and chunk; the held form's one
// slice always does).
inline int stream_slice_tiles(const pointwise_params& p) {
  const int chunks = (p.c_in + stream_chunk - 1) / stream_chunk;
  for (int nt : {4, 3, 2, 1})
    if ((p.c_out / 8) % nt == 0 && static_cast<std::size_t>(nt) * chunks * 32 * 16 <= stream_shared_cap) return nt;
  return 0;
}

// Shared memory a block of the held form takes a slice of nb blocks: its weights (512 bytes a
// block and chunk) and its biases (16 bytes for each of a lane's accumulator quads: 512 an m tile).
inline std::size_t stream_held_slice_bytes(int nb, int chunks) {
  return static_cast<std::size_t>(nb) * chunks * 32 * 16 + static_cast<std::size_t>((nb + 1) / 2) * 4 * 8 * 16;
}

// The held form's slices a block takes: the most that divide the layer's and fit.
inline int stream_held_block_slices(int slices, std::size_t slice_bytes) {
  int best = 1;
  for (int d = 1; d <= slices; ++d)
    if (slices % d == 0 && static_cast<std::size_t>(d) * slice_bytes <= stream_shared_cap) best = d;
  return best;
}

// Thread-instructions per DRAM byte that mma_stream issues on `p`, from its SASS (sm_90, nvcc
// 13.0, scripts/sass_budget.py, the relu epilogue); a warp's 32-pixel tile moves 2 (c_in +
// c_out) bytes a lane, and every grid row runs every tile.
//   - streaming form: about 20 + 6 NB instructions a 32-channel chunk (20 more for an odd NB,
//     whose last m tile's fragments are assembled from 8-byte reads) and 260 a tile beside them,
//     every slice reading the whole of K: thin projections come to 1.5 to 2.5, wide layers to 5
//     and more (their activations are re-read once per slice), where the staged GEMM
//     (mma_small) shares them between slices;
//   - held form: about 145 a tile and 60 + 6 NB + 10 a chunk (15 more for an odd NB) a slice:
//     1.6 to 2.5 on the expand layers (16 -> 96 to 112 -> 672).
inline double stream_instructions_per_byte(const pointwise_params& p) {
  const int chunks = (p.c_in + stream_chunk - 1) / stream_chunk;
  const double bytes = 2.0 * (p.c_in + p.c_out);
  const int nb = stream_slice_tiles(p);
  if (nb == 0) return 1e30;
  const int slices = p.c_out / (8 * nb);
  if (stream_held(p)) {
    const int block = stream_held_block_slices(slices, stream_held_slice_bytes(nb, chunks));
    const double tile = 145.0 + block * (60.0 + 6.0 * nb + 10.0 * chunks + (nb % 2 ? 15.0 : 0.0));
    return slices / block * tile / bytes;
  }
  return slices * (chunks * (20.0 + 6.0 * nb + (nb % 2 ? 20.0 : 0.0)) + 260.0) / bytes;
}
// The heuristic's limit for mma_stream: the aim of a memory-bound main loop (an H200 issues 7.9
// instructions per DRAM byte at full bandwidth). Beyond it are the wide layers that re-read their
// activations once per slice, where the staged GEMM's main loop counts 2 to 3 (mma_small, 64 x
// 64 tiles, sm_90: 2.1 at 672 -> 112, 3.2 at 960 -> 160).
inline constexpr double stream_instruction_limit = 4.0;

// The plan for `p` (which stream_limits accepts) and the call's tensors (null: a plan for
// feasibility only); false where the weights of one n tile exceed shared memory or the grid the
// device's limits.
inline bool plan_stream(const pointwise_params& p, const platform::device_properties& dev, const void* input,
                        const void* weight, const void* residual, const void* output, const void* pre,
                        stream_plan& plan) {
  stream_tile& t = plan.tile;
  t.chunks = (p.c_in + stream_chunk - 1) / stream_chunk;
  t.slice_tiles = stream_slice_tiles(p);
  if (t.slice_tiles == 0) return false;
  plan.held = stream_held(p);
  const int slices = p.c_out / (8 * t.slice_tiles);
  t.block_slices = plan.held ? stream_held_block_slices(slices, stream_held_slice_bytes(t.slice_tiles, t.chunks)) : 1;
  const long long pixels = static_cast<long long>(p.n) * p.h * p.w;
  const long long tiles = (pixels + stream_rows - 1) / stream_rows;
  if (tiles >= (1LL << 31)) return false;
  t.tiles = static_cast<int>(tiles);
  const long long rows = slices / t.block_slices;  // the grid's rows: one a block's slices
  const long long warps_per_block = stream_block_threads / 32;
  // Blocks that walk the tiles of a row: twice what the multiprocessors hold at once over all
  // rows (each warp then takes several tiles, the next one's loads issued during this one's
  // products and epilogue), never more than the tiles give a warp.
  const long long resident = 2LL * dev.multiprocessor_count * stream_resident_blocks;
  long long gx = (resident + rows - 1) / rows;
  const long long most = (tiles + warps_per_block - 1) / warps_per_block;
  if (gx > most) gx = most;
  if (gx < 1) gx = 1;
  if (gx > dev.max_grid_x || rows > dev.max_grid_y) return false;
  t.warps = static_cast<int>(gx * warps_per_block);
  t.aligned = (!input || aligned_16(input)) && (!weight || aligned_16(weight)) &&
              (!residual || aligned_16(residual)) && (!output || aligned_16(output)) &&
              (!pre || aligned_16(pre));
  plan.grid = platform::dims{static_cast<unsigned>(gx), static_cast<unsigned>(rows), 1};
  plan.shared_bytes = plan.held ? t.block_slices * stream_held_slice_bytes(t.slice_tiles, t.chunks)
                                : static_cast<std::size_t>(t.slice_tiles) * t.chunks * 32 * 16;
  return true;
}

// of(std::integral_constant<int, NB>) for the slice width NB of a plan.
template <class Of>
auto with_slice_tiles(int slice_tiles, Of of) {
  switch (slice_tiles) {
    case 4: return of(std::integral_constant<int, 4>{});
    case 3: return of(std::integral_constant<int, 3>{});
    case 2: return of(std::integral_constant<int, 2>{});
    default: return of(std::integral_constant<int, 1>{});
  }
}

// The kernels' type (both forms, every slice width), spelled out: instantiations.hpp declares the
// selector below extern (DSCONV_INSTANTIATE_POINTWISE; why: dispatch/depthwise_register_plan.hpp,
// forward_kernel_pointer).
template <class T>
using stream_kernel_pointer = void (*)(pointwise_shape, stream_tile, const T*, const T*, const T*, const T*, T*, T*);

// The kernel of a plan's form and slice width; T half or bfloat16, compiled where mma.sync is
// (elsewhere null: no such kernel, and no plan launches one).
template <class T>
stream_kernel_pointer<T> stream_kernel(const stream_plan& plan) {
  if constexpr (sizeof(T) == 2 && platform::compiles_mma_sync) {
    constexpr auto needs =
        std::is_same<T, half>::value ? platform::matrix_unit::mma_sync_f16 : platform::matrix_unit::mma_sync;
    if (plan.held && plan.tile.chunks > 2)
      return with_slice_tiles(plan.tile.slice_tiles, [](auto nb) {
        return platform::registered<kernels::pointwise_nhwc_stream_held<T, decltype(nb)::value, 4>, needs>();
      });
    if (plan.held)
      return with_slice_tiles(plan.tile.slice_tiles, [](auto nb) {
        return platform::registered<kernels::pointwise_nhwc_stream_held<T, decltype(nb)::value, 2>, needs>();
      });
    return with_slice_tiles(plan.tile.slice_tiles, [](auto nb) {
      return platform::registered<kernels::pointwise_nhwc_stream<T, decltype(nb)::value>, needs>();
    });
  } else {
    return (void)plan, nullptr;
  }
}

// Launches mma_stream on the forward of `p` (the caller checked stream_limits); `pre` receives z,
// or act'(z) where `derivative`.
template <class T>
status launch_stream(const pointwise_params& p, const platform::device_properties& dev, stream_t stream, const T* input,
                     const T* weight, const T* bias, const T* residual, T* output, T* pre, bool derivative) {
  if constexpr (sizeof(T) == 2 && platform::compiles_mma_sync) {
    stream_plan plan;
    if (!plan_stream(p, dev, input, weight, residual, output, pre, plan))
      return invalid(status::unsupported_variant, "pointwise", "mma_stream: the weights of one slice exceed shared "
                                                               "memory, or the grid the device's limits");
    pointwise_shape shape = make_shape(p);
    shape.save_derivative = derivative;
    return platform::launch(stream_kernel<T>(plan),
                            planned_launch(stream_block_threads, plan.grid, plan.shared_bytes, "pointwise_mma_stream",
                                           stream),
                            shape, plan.tile, input, weight, bias, residual, output, pre);
  } else {
    (void)p, (void)dev, (void)stream, (void)input, (void)weight, (void)bias, (void)residual, (void)output, (void)pre,
        (void)derivative;
    return invalid(status::unsupported_variant, "pointwise", "mma_stream: no kernel for this type in this build");
  }
}

}  // namespace detail
}  // namespace dsconv
