#pragma once
// dsconv::pointwise_forward: validate -> choose a variant -> launch.

#include <type_traits>

#include "../kernels/pointwise/direct.hpp"
#include "../kernels/pointwise/split_k_reduce.hpp"
#include "../platform/platform.hpp"
#include "../problem.hpp"
#include "launch_shape.hpp"
#include "pointwise_plan.hpp"
#include "prepare.hpp"
#include "validate.hpp"
#include "variants.hpp"

namespace dsconv {
namespace detail {

// Why plan_variant refused `variant` for `p` (for the error detail).
template <class T>
std::string why_unsupported(pointwise_variant variant, const pointwise_params& p, const platform::device_properties& dev) {
  if (variant == pointwise_variant::warp_dot) return "both GEMM sides exceed 8, or the grid exceeds the device's limits";
  if (variant == pointwise_variant::mma_large || variant == pointwise_variant::mma_small) {
    if (dev.matrix == platform::matrix_unit::none)
      return "the device has no matrix unit (NVIDIA sm_75+, AMD gfx90a/gfx94x, or the host at warp width 32 or 64)";
    if (dev.matrix == platform::matrix_unit::mma_sync_f16 && !std::is_same<T, half>::value)
      return "Turing's tensor cores (sm_75, or code compiled for it) multiply half only";
    if (!mma_usable<T>(p, dev)) return "float runs on NVIDIA tensor cores only with pointwise_params::allow_tf32";
  }
  if (variant == pointwise_variant::split_k) return "K has fewer than two slices of 32 channels";
  return "the grid exceeds the device's limits";
}

// The tiled kernels as class templates, so launch_tiled can instantiate them.
template <class T, class Tile, bool KMajorB, class Out>
struct simt_gemm {
  static constexpr auto kernel = kernels::pointwise_gemm_tiled<T, Tile, KMajorB, Out>;
};
template <class T, class Tile, bool KMajorB, class Out>
struct mma_gemm {
  static constexpr auto kernel = kernels::pointwise_gemm_mma<T, Tile, KMajorB, Out>;
};

// Launches Kernel<T, Tile, KMajorB, Out> over `grid`, B's contiguity chosen from the operands
// (a compile-time fact inside the kernel).
template <class Tile, template <class, class, bool, class> class Kernel, class T, class Out>
status launch_tiled(const char* name, platform::dims grid, stream_t stream, const gemm_operands& g, const T* a,
                    const T* b, Out out) {
  // A tile moves runs of consecutive elements as vectors; where a buffer's rows are not aligned
  // for its runs, the tile's element form moves single elements, consecutive across a warp.
  if constexpr (!std::is_same<typename Tile::element_form, Tile>::value) {
    const bool aligned = g.a_align >= Tile::template a_run<T> * static_cast<int>(sizeof(T)) &&
                         g.b_align >= Tile::template b_run<T> * static_cast<int>(sizeof(T)) &&
                         out.vector_elems >= Tile::run;
    if (!aligned) return launch_tiled<typename Tile::element_form, Kernel>(name, grid, stream, g, a, b, out);
  }
  platform::launch_config cfg;
  cfg.stream = stream;
  cfg.grid = grid;
  cfg.block = platform::dims{Tile::threads, 1, 1};
  cfg.name = name;
  if (g.weight_is_a) return platform::launch(platform::registered<Kernel<T, Tile, false, Out>::kernel, Tile::template needs<T>>(), cfg, g, a, b, out);
  return platform::launch(platform::registered<Kernel<T, Tile, true, Out>::kernel, Tile::template needs<T>>(), cfg, g, a, b, out);
}

// Calls launch(Unit{}) with the matrix unit of `dev` when this build has kernels for it: only
// those are instantiated (CUDA builds no MFMA kernels, HIP no mma.sync ones, the host
// platform both).
template <class Launch>
status with_matrix_unit(const platform::device_properties& dev, Launch launch) {
  if constexpr (platform::compiles_mma_sync)
    if (dev.matrix == platform::matrix_unit::mma_sync || dev.matrix == platform::matrix_unit::mma_sync_f16)
      return launch(kernels::mma_sync_unit{});
  if constexpr (platform::compiles_mfma)
    if (dev.matrix == platform::matrix_unit::mfma) return launch(kernels::mfma_unit{});
  return invalid(status::unsupported_variant, "pointwise", "this build has no kernels for the device's matrix unit");
}

// launch_tiled with the grid of Tile over the whole GEMM and the fused epilogue.
template <class Tile, template <class, class, bool, class> class Kernel, class T>
status launch_whole(const char* name, const pointwise_params& p, const platform::device_properties& dev,
                    stream_t stream, const gemm_operands& g, const T* a, const T* b, kernels::fused_output<T> out) {
  platform::dims grid;
  if (!plan_gemm<Tile>(p, dev, grid))
    return invalid(status::unsupported_variant, "pointwise", std::string(name) + ": the grid exceeds the device's limits");
  return launch_tiled<Tile, Kernel>(name, grid, stream, g, a, b, out);
}

// split_k: partial sums of each K slice into the workspace, then their ordered sum and the
// epilogue (two launches on the same stream).
template <class T>
status launch_split_k(const pointwise_params& p, const platform::device_properties& dev, stream_t stream, const T* a,
                      const T* b, kernels::fused_output<T> out, const pointwise_options& options) {
  split_k_plan plan;
  if (!plan_split_k<T>(p, dev, plan))
    return invalid(status::unsupported_variant, "pointwise", "split_k: K has fewer than two slices");
  if (!options.workspace || static_cast<index_t>(options.workspace_bytes) < plan.workspace_bytes)
    return invalid(status::insufficient_workspace, "pointwise",
                   "split_k needs " + std::to_string(plan.workspace_bytes) + " bytes of workspace, the options give " +
                       std::to_string(options.workspace ? options.workspace_bytes : 0));
  align_operands(plan.g, a, b);
  float* workspace = static_cast<float*>(options.workspace);
  const kernels::partial_output partial{workspace, kernels::partial_vector_elems(plan.g, workspace)};
  const status s =
      plan.tensor_cores
          ? with_matrix_unit(dev,
                             [&](auto unit) {
                               return launch_tiled<typename mma_tiles<decltype(unit)>::small, mma_gemm>(
                                   "pointwise_split_k_mma", plan.grid, stream, plan.g, a, b, partial);
                             })
          : launch_tiled<gemm_small_tile, simt_gemm>("pointwise_split_k_gemm", plan.grid, stream, plan.g, a, b, partial);
  if (s != status::success) return s;
  return platform::launch(platform::registered<kernels::pointwise_split_k_reduce<T>>(),
                          grid_stride_launch(plan.g.batches * plan.g.m * plan.g.n, grid_stride_block_threads, dev, stream,
                                             "pointwise_split_k_reduce"),
                          plan.g, static_cast<const float*>(options.workspace), out);
}

}  // namespace detail

// Whether `variant` can run problem `p` with elements of type T on the current device (a
// host-only check; no buffers involved).
template <class T = float>
status can_implement(pointwise_variant variant, const pointwise_params& p) {
  if (!is_valid(variant))
    return detail::invalid(status::invalid_variant, "pointwise", "variant value " + std::to_string(static_cast<int>(variant)));
  status s = detail::validate_params(p, sizeof(T));
  if (s != status::success) return s;
  if (variant == pointwise_variant::automatic || variant == pointwise_variant::direct) return status::success;
  platform::device_properties dev;
  s = platform::get_device_properties(dev);
  if (s != status::success) return s;
  platform::dims grid;
  if (!detail::plan_variant<T>(variant, p, dev, grid))
    return detail::invalid(status::unsupported_variant, "pointwise",
                           std::string(to_string(variant)) + ": " + detail::why_unsupported<T>(variant, p, dev));
  return status::success;
}

// The variant that `automatic` runs for `p` with elements of type T on the current device,
// given the workspace of `options`.
template <class T = float>
pointwise_variant select_variant(const pointwise_params& p, const pointwise_options& options = {}) {
  platform::device_properties dev;
  if (platform::get_device_properties(dev) != status::success) return pointwise_variant::direct;
  return detail::choose_pointwise<T>(p, dev, options.workspace ? options.workspace_bytes : 0);
}

// Bytes of workspace the split_k variant needs for `p` (0 where it cannot run `p`). With at
// least that much in pointwise_options, automatic may choose split_k for small grids.
template <class T = float>
std::size_t pointwise_workspace_size(const pointwise_params& p) {
  platform::device_properties dev;
  detail::split_k_plan plan;
  if (detail::validate_params(p, sizeof(T)) != status::success || platform::get_device_properties(dev) != status::success ||
      !detail::plan_split_k<T>(p, dev, plan))
    return 0;
  return static_cast<std::size_t>(plan.workspace_bytes);
}

template <class T>
status pointwise_forward(const pointwise_params& p, const pointwise_options& options, const T* input, const T* weight,
                         const T* bias, const T* residual, T* output, stream_t stream = {}) {
  platform::device_properties dev;
  pointwise_variant variant = pointwise_variant::automatic;
  const status s = detail::prepare_launch(
      detail::validate(p, input, weight, bias, residual, output,
                       detail::buffer{options.workspace, static_cast<index_t>(options.workspace_bytes)}),
      options.variant, [&] { return can_implement<T>(options.variant, p); },
      [&] { return select_variant<T>(p, options); }, dev, variant);
  if (s != status::success) return s;
  const detail::pointwise_shape shape = detail::make_shape(p);
  detail::gemm_operands g = detail::make_gemm(shape);
  const T* a = g.weight_is_a ? weight : input;
  const T* b = g.weight_is_a ? input : weight;
  detail::align_operands(g, a, b);
  const kernels::fused_output<T> out{bias, residual, output, kernels::fused_vector_elems(g, bias, residual, output)};
  switch (variant) {
    case pointwise_variant::gemm_large:
      return detail::launch_whole<detail::gemm_large_tile, detail::simt_gemm>("pointwise_gemm_large", p, dev, stream, g,
                                                                             a, b, out);
    case pointwise_variant::gemm_small:
      return detail::launch_whole<detail::gemm_small_tile, detail::simt_gemm>("pointwise_gemm_small", p, dev, stream, g,
                                                                             a, b, out);
    case pointwise_variant::mma_large:
      return detail::with_matrix_unit(dev, [&](auto unit) {
        return detail::launch_whole<typename detail::mma_tiles<decltype(unit)>::large, detail::mma_gemm>(
            "pointwise_mma_large", p, dev, stream, g, a, b, out);
      });
    case pointwise_variant::mma_small:
      return detail::with_matrix_unit(dev, [&](auto unit) {
        return detail::launch_whole<typename detail::mma_tiles<decltype(unit)>::small, detail::mma_gemm>(
            "pointwise_mma_small", p, dev, stream, g, a, b, out);
      });
    case pointwise_variant::split_k: return detail::launch_split_k(p, dev, stream, a, b, out, options);
    case pointwise_variant::warp_dot: {
      platform::launch_config cfg;
      cfg.stream = stream;
      if (!detail::plan_warp_dot(p, dev, cfg.grid)) break;
      cfg.block = platform::dims{detail::warp_dot_block_threads, 1, 1};
      cfg.name = "pointwise_warp_dot";
      return platform::launch(platform::registered<kernels::pointwise_warp_dot<T>>(), cfg, g, a, b, out);
    }
    case pointwise_variant::automatic:
    case pointwise_variant::direct:
      return platform::launch(platform::registered<kernels::pointwise_direct<T>>(),
                              detail::grid_stride_launch(shape.output_elements(), detail::grid_stride_block_threads, dev,
                                                         stream, "pointwise_direct"),
                              shape, input, weight, bias, residual, output);
  }
  return detail::invalid(status::unsupported_variant, "pointwise", "no launch plan for the chosen variant");
}

// input [n,c_in,h,w] or [n,h,w,c_in]; weight [c_out, c_in] in both layouts; bias [c_out] or
// nullptr; residual shaped like the output, or nullptr.
// output = act(conv + bias + residual), cuDNN's conv-bias-add-activation order.
template <class T>
status pointwise_forward(const pointwise_params& p, const T* input, const T* weight, const T* bias, const T* residual,
                         T* output, stream_t stream = {}) {
  return pointwise_forward(p, pointwise_options{}, input, weight, bias, residual, output, stream);
}

}  // namespace dsconv
