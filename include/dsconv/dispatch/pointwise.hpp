#pragma once
// dsconv::pointwise_forward: validate -> choose a variant -> launch; and the GEMM launches
// that every pointwise pass shares (pointwise_backward.hpp runs the gradients through them).

#include <string>
#include <type_traits>

#include "../kernels/pointwise/derivative_in_place.hpp"
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

// Why plan_variant refused `variant` for `pass` of `p` (for the error detail).
template <class T>
std::string why_unsupported(pointwise_variant variant, gemm_pass pass, const pointwise_params& p,
                            const platform::device_properties& dev) {
  if (variant == pointwise_variant::warp_dot)
    return pass == gemm_pass::backward_weight ? "the backward weight pass sums whole rows, which warp_dot does not"
                                              : "both GEMM sides exceed 8, or the grid exceeds the device's limits";
  if (variant == pointwise_variant::mma_large || variant == pointwise_variant::mma_small) {
    if (dev.matrix == platform::matrix_unit::none)
      return "the device has no matrix unit (NVIDIA sm_75+, AMD gfx90a/gfx94x, or the host at warp width 32 or 64)";
    if (dev.matrix == platform::matrix_unit::mma_sync_f16 && !std::is_same<T, half>::value)
      return "Turing's tensor cores (sm_75, or code compiled for it) multiply half only";
  }
  if (variant == pointwise_variant::split_k) return "K has fewer than two slices of 32 channels";
  if (variant == pointwise_variant::mma_stream) {
    if (pass != gemm_pass::forward) return "mma_stream runs the forward pass only";
    const std::string limit = stream_limits<T>(p, dev);
    return limit.empty() ? "the weights of one slice exceed shared memory, or the grid the device's limits" : limit;
  }
  return "the grid exceeds the device's limits";
}

// Whether `variant` can run `pass` of `p` on the current device; unsupported_variant names
// the reason.
template <class T>
status can_implement_pass(pointwise_variant variant, gemm_pass pass, const pointwise_params& p) {
  if (!is_valid(variant))
    return invalid(status::invalid_variant, "pointwise", "variant value " + std::to_string(static_cast<int>(variant)));
  status s = validate_params(p, sizeof(T));
  if (s != status::success) return s;
  if (variant == pointwise_variant::automatic || variant == pointwise_variant::direct) return status::success;
  platform::device_properties dev;
  s = platform::get_device_properties(dev);
  if (s != status::success) return s;
  platform::dims grid;
  if (!plan_variant<T>(variant, pass, p, dev, grid))
    return invalid(status::unsupported_variant, "pointwise",
                   std::string(to_string(variant)) + ": " + why_unsupported<T>(variant, pass, p, dev));
  return status::success;
}

template <class T>
pointwise_variant select_pass_variant(gemm_pass pass, const pointwise_params& p, std::size_t workspace_bytes) {
  platform::device_properties dev;
  if (platform::get_device_properties(dev) != status::success) return pointwise_variant::direct;
  return choose_pointwise<T>(pass, p, dev, workspace_bytes);
}

template <class T>
std::size_t pass_workspace_size(gemm_pass pass, const pointwise_params& p) {
  platform::device_properties dev;
  split_k_plan plan;
  if (validate_params(p, sizeof(T)) != status::success || platform::get_device_properties(dev) != status::success ||
      !plan_split_k<T>(make_pass_gemm(pass, p), dev, pass == gemm_pass::backward_weight, plan))
    return 0;
  return static_cast<std::size_t>(plan.workspace_bytes);
}

// The tiled kernels as class templates, so launch_tiled can instantiate them.
template <class T, class Tile, bool MMajorA, bool KMajorB, class Out>
struct simt_gemm {
  static constexpr auto kernel = kernels::pointwise_gemm_tiled<T, Tile, MMajorA, KMajorB, Out>;
};
template <class T, class Tile, bool MMajorA, bool KMajorB, class Out>
struct mma_gemm {
  static constexpr auto kernel = kernels::pointwise_gemm_mma<T, Tile, MMajorA, KMajorB, Out>;
};

// Launches Kernel<T, Tile, MMajorA, KMajorB, Out> over `grid`, the operands' contiguity chosen
// from `g` (compile-time facts inside the kernel). Lanes: the warp width of the one vendor
// whose GPU builds compile this tile (0: both vendors').
template <class Tile, template <class, class, bool, bool, class> class Kernel, int Lanes = 0, class T, class Out>
status launch_tiled(const char* name, platform::dims grid, stream_t stream, const gemm_operands& g, const T* a,
                    const T* b, Out out) {
  // A tile moves runs of consecutive elements as vectors; where a buffer's rows are not aligned
  // for its runs, the tile's element form moves single elements, consecutive across a warp.
  if constexpr (!std::is_same<typename Tile::element_form, Tile>::value) {
    const bool aligned = g.a_align >= Tile::template a_run<T> * static_cast<int>(sizeof(T)) &&
                         g.b_align >= Tile::template b_run<T> * static_cast<int>(sizeof(T)) &&
                         out.vector_elems >= Tile::run;
    using element_form = typename Tile::element_form;
    if (!aligned) {
      if (element_form::bm != Tile::bm || element_form::bn != Tile::bn)  // (its grid: planned with the variant's)
        grid = platform::dims{static_cast<unsigned>((g.n + element_form::bn - 1) / element_form::bn),
                              static_cast<unsigned>((g.m + element_form::bm - 1) / element_form::bm), grid.z};
      return launch_tiled<element_form, Kernel, Lanes>(name, grid, stream, g, a, b, out);
    }
  }
  platform::launch_config cfg;
  cfg.stream = stream;
  cfg.grid = grid;
  cfg.block = platform::dims{Tile::threads, 1, 1};
  cfg.name = name;
  constexpr auto needs = Tile::template needs<T>;
  if (g.a_m_contiguous)
    return platform::launch(platform::registered<Kernel<T, Tile, true, false, Out>::kernel, needs, Lanes>(), cfg, g, a, b, out);
  if (g.b_k_contiguous)
    return platform::launch(platform::registered<Kernel<T, Tile, false, true, Out>::kernel, needs, Lanes>(), cfg, g, a, b, out);
  return platform::launch(platform::registered<Kernel<T, Tile, false, false, Out>::kernel, needs, Lanes>(), cfg, g, a, b, out);
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

// A tile that only the GPU builds of the vendor whose warps have Lanes lanes compile.
template <class Tile, int Lanes>
struct vendor_tile {
  using tile = Tile;
  static constexpr int lanes = Lanes;
};

// Calls launch(vendor_tile<...>{}) with the small SIMT tile of the vendor of `dev`
// (gemm_small_tile_amd on AMD, whose waves have 64 lanes, gemm_small_tile_nvidia elsewhere):
// each GPU build compiles its own only, the host platform both.
template <class Launch>
status with_small_simt_tile(const platform::device_properties& dev, Launch launch) {
  using nvidia = vendor_tile<gemm_small_tile_nvidia, platform::mma_warp_lanes>;
  using amd = vendor_tile<gemm_small_tile_amd, platform::mfma_wave_lanes>;
  if constexpr (!platform::compiles_mfma)
    return launch(nvidia{});
  else if constexpr (!platform::compiles_mma_sync)
    return launch(amd{});
  else
    return dev.warp_size == amd::lanes ? launch(amd{}) : launch(nvidia{});
}

// A pass ready to launch: its GEMM (aligned to the pointers), operands and output.
template <class T>
struct gemm_call {
  gemm_operands g;
  const T* a;
  const T* b;
  kernels::fused_output<T> out;
};

// launch_tiled with the grid of Tile over the whole GEMM.
template <class Tile, template <class, class, bool, bool, class> class Kernel, int Lanes = 0, class T>
status launch_whole(const char* name, const platform::device_properties& dev, stream_t stream, const gemm_call<T>& c) {
  platform::dims grid;
  if (!plan_gemm<Tile>(c.g, dev, grid))
    return invalid(status::unsupported_variant, "pointwise", std::string(name) + ": the grid exceeds the device's limits");
  return launch_tiled<Tile, Kernel, Lanes>(name, grid, stream, c.g, c.a, c.b, c.out);
}

// split_k: partial sums of each K slice (and A's row sums, where the output wants them) into
// the workspace, then their ordered sum and the epilogue (two launches on the same stream).
template <class T>
status launch_split_k(const platform::device_properties& dev, stream_t stream,
                      const gemm_call<T>& c, void* workspace_ptr, std::size_t workspace_bytes) {
  split_k_plan plan;
  if (!plan_split_k<T>(c.g, dev, c.out.sums_rows(), plan))
    return invalid(status::unsupported_variant, "pointwise", "split_k: K has fewer than two slices");
  if (!workspace_ptr || static_cast<index_t>(workspace_bytes) < plan.workspace_bytes)
    return invalid(status::insufficient_workspace, "pointwise",
                   "split_k needs " + std::to_string(plan.workspace_bytes) + " bytes of workspace, the options give " +
                       std::to_string(workspace_ptr ? workspace_bytes : 0));
  float* workspace = static_cast<float*>(workspace_ptr);
  float* row_sums = c.out.sums_rows() ? workspace + plan.row_sums_offset / static_cast<index_t>(sizeof(float)) : nullptr;
  const kernels::partial_output partial{workspace, kernels::partial_vector_elems(plan.g, workspace), row_sums};
  const status s =
      plan.tensor_cores
          ? with_matrix_unit(dev,
                             [&](auto unit) {
                               return launch_tiled<typename mma_tiles<decltype(unit)>::small, mma_gemm>(
                                   "pointwise_split_k_mma", plan.grid, stream, plan.g, c.a, c.b, partial);
                             })
          : with_small_simt_tile(dev, [&](auto v) {
              using V = decltype(v);
              return launch_tiled<typename V::tile, simt_gemm, V::lanes>("pointwise_split_k_gemm", plan.grid, stream,
                                                                         plan.g, c.a, c.b, partial);
            });
  if (s != status::success) return s;
  return platform::launch(platform::registered<kernels::pointwise_split_k_reduce<T>>(),
                          grid_stride_launch(plan.g.batches * plan.g.m * plan.g.n, grid_stride_block_threads, dev, stream,
                                             "pointwise_split_k_reduce"),
                          plan.g, static_cast<const float*>(workspace), static_cast<const float*>(row_sums), c.out);
}

// Runs `variant` (concrete) on a prepared pass.
template <class T>
status run_gemm(pointwise_variant variant, const pointwise_params& p, const platform::device_properties& dev,
                stream_t stream, const gemm_call<T>& call, void* workspace, std::size_t workspace_bytes) {
  gemm_call<T> c = call;
  c.g.single_tf32 = p.allow_tf32;  // (float on NVIDIA's tensor cores: one TF32 product, or three)
  switch (variant) {
    case pointwise_variant::gemm_large: return launch_whole<gemm_large_tile, simt_gemm>("pointwise_gemm_large", dev, stream, c);
    case pointwise_variant::gemm_small:
      return with_small_simt_tile(dev, [&](auto v) {
        using V = decltype(v);
        return launch_whole<typename V::tile, simt_gemm, V::lanes>("pointwise_gemm_small", dev, stream, c);
      });
    case pointwise_variant::mma_large:
      return with_matrix_unit(dev, [&](auto unit) {
        return launch_whole<typename mma_tiles<decltype(unit)>::large, mma_gemm>("pointwise_mma_large", dev, stream, c);
      });
    case pointwise_variant::mma_small:
      return with_matrix_unit(dev, [&](auto unit) {
        return launch_whole<typename mma_tiles<decltype(unit)>::small, mma_gemm>("pointwise_mma_small", dev, stream, c);
      });
    case pointwise_variant::split_k: return launch_split_k(dev, stream, c, workspace, workspace_bytes);
    case pointwise_variant::mma_stream: break;  // (the forward pass only: pointwise_forward launches it)
    case pointwise_variant::warp_dot: {
      platform::launch_config cfg;
      cfg.stream = stream;
      if (!plan_warp_dot(c.g, dev, cfg.grid)) break;
      cfg.block = platform::dims{warp_dot_block_threads, 1, 1};
      cfg.name = "pointwise_warp_dot";
      return platform::launch(platform::registered<kernels::pointwise_warp_dot<T>>(), cfg, c.g, c.a, c.b, c.out);
    }
    case pointwise_variant::automatic:
    case pointwise_variant::direct:
      return platform::launch(platform::registered<kernels::pointwise_direct<T>>(),
                              grid_stride_launch(c.g.batches * c.g.m * c.g.n, grid_stride_block_threads, dev, stream,
                                                 "pointwise_direct"),
                              c.g, c.a, c.b, c.out);
  }
  return invalid(status::unsupported_variant, "pointwise", "no launch plan for the chosen variant");
}

}  // namespace detail

// Whether `variant` can run problem `p` with elements of type T on the current device (a
// host-only check; no buffers involved).
template <class T = float>
status can_implement(pointwise_variant variant, const pointwise_params& p) {
  return detail::can_implement_pass<T>(variant, detail::gemm_pass::forward, p);
}

// The variant that `automatic` runs for `p` with elements of type T on the current device,
// given the workspace of `options`.
template <class T = float>
pointwise_variant select_variant(const pointwise_params& p, const pointwise_options& options = {}) {
  return detail::select_pass_variant<T>(detail::gemm_pass::forward, p, options.workspace ? options.workspace_bytes : 0);
}

// Bytes of workspace the split_k variant needs for `p` (0 where it cannot run `p`). With at
// least that much in pointwise_options, automatic may choose split_k for small grids.
template <class T = float>
std::size_t pointwise_workspace_size(const pointwise_params& p) {
  return detail::pass_workspace_size<T>(detail::gemm_pass::forward, p);
}

template <class T>
status pointwise_forward(const pointwise_params& p, const pointwise_options& options, const T* input, const T* weight,
                         const T* bias, const T* residual, T* output, stream_t stream = {}) {
  const detail::forward_saved saved = detail::forward_saved::of(options);
  platform::device_properties dev;
  pointwise_variant variant = pointwise_variant::automatic;
  const status s = detail::prepare_launch(
      detail::validate(p, input, weight, bias, residual, output,
                       detail::buffer{options.workspace, static_cast<index_t>(options.workspace_bytes)},
                       saved),
      options.variant, [&] { return can_implement<T>(options.variant, p); },
      [&] { return select_variant<T>(p, options); }, dev, variant);
  if (s != status::success) return s;
  T* pre = saved.written<T>();
  const bool derivative = saved.writes_derivative();
  if (variant == pointwise_variant::mma_stream)
    return detail::launch_stream(p, dev, stream, input, weight, bias, residual, output, pre, derivative);
  detail::gemm_call<T> c{detail::make_gemm(detail::make_shape(p)), nullptr, nullptr, {}};
  c.a = c.g.weight_is_a ? weight : input;
  c.b = c.g.weight_is_a ? input : weight;
  detail::align_operands(c.g, c.a, c.b);
  c.out = kernels::fused_output<T>{bias, residual, output, kernels::fused_vector_elems(c.g, bias, residual, output, pre), pre};
  const status ran = detail::run_gemm(variant, p, dev, stream, c, options.workspace, options.workspace_bytes);
  if (ran != status::success || !derivative) return ran;
  // (the GEMM epilogues wrote z: kernels/pointwise/derivative_in_place.hpp)
  const index_t count = static_cast<index_t>(p.n) * p.c_out * p.h * p.w;
  return platform::launch(platform::registered<kernels::pointwise_derivative_in_place<T>>(),
                          detail::grid_stride_launch(count, detail::grid_stride_block_threads, dev, stream,
                                                     "pointwise_derivative_in_place"),
                          pre, count, p.act);
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
