#pragma once
// dsconv::inverted_residual_forward: one call for a whole inverted-residual block
// (block_params.hpp): validate -> choose fused or unfused -> launch. The unfused variant runs
// the layer calls in sequence through the caller's workspace (the baseline, and the fallback
// for every block the fused kernel does not take); the fused one expands, filters and projects
// in one kernel (kernels/block/fused_nhwc.hpp), the expanded tensor never in global memory.

#include <string>

#include "../block_params.hpp"
#include "../kernels/block/fused_nhwc.hpp"
#include "../kernels/block/squeeze_excitation.hpp"
#include "../platform/platform.hpp"
#include "../problem.hpp"
#include "depthwise.hpp"
#include "inverted_residual_plan.hpp"
#include "inverted_residual_validate.hpp"
#include "launch_shape.hpp"
#include "pointwise.hpp"
#include "prepare.hpp"
#include "variants.hpp"

namespace dsconv {

// Whether `variant` can run `p` with elements of type T on the current device;
// unsupported_variant names the reason.
template <class T = float>
status can_implement(block_variant variant, const inverted_residual_params& p) {
  const char* op = "inverted_residual";
  if (!is_valid(variant))
    return detail::invalid(status::invalid_variant, op, "variant value " + std::to_string(static_cast<int>(variant)));
  status s = detail::validate_params(p, sizeof(T));
  if (s != status::success || variant != block_variant::fused) return s;
  const std::string limit = detail::fused_block_limits(p);
  if (!limit.empty()) return detail::invalid(status::unsupported_variant, op, "fused: " + limit);
  platform::device_properties dev;
  if ((s = platform::get_device_properties(dev)) != status::success) return s;
  detail::fused_block_plan plan;
  if (!detail::plan_fused_block(p, dev, sizeof(T), plan))
    return detail::invalid(status::unsupported_variant, op, "fused: no tile fits the device's shared memory and grid");
  return status::success;
}

// Bytes of workspace the unfused variant needs (the fused one needs none); 0 for invalid params.
template <class T = float>
std::size_t inverted_residual_workspace_size(const inverted_residual_params& p) {
  if (detail::validate_params(p, sizeof(T)) != status::success) return 0;
  return static_cast<std::size_t>(detail::unfused_layout(p, sizeof(T)).bytes);
}

// The planner: fused where the fused kernel runs the block and the cost model charges it no
// more bytes than the unfused sequence, or where the options give too little workspace for
// the unfused one; else unfused.
template <class T = float>
block_variant select_variant(const inverted_residual_params& p, const inverted_residual_options& options) {
  platform::device_properties dev;
  detail::fused_block_plan plan;
  if (detail::validate_params(p, sizeof(T)) != status::success || platform::get_device_properties(dev) != status::success ||
      !detail::plan_fused_block(p, dev, sizeof(T), plan))
    return block_variant::unfused;
  const bool workspace = options.workspace &&
                         options.workspace_bytes >= static_cast<std::size_t>(detail::unfused_layout(p, sizeof(T)).bytes);
  return !workspace || plan.traffic <= detail::unfused_traffic<T>(p, dev) ? block_variant::fused : block_variant::unfused;
}

namespace detail {

// The layer calls in sequence: expand, depthwise, the squeeze-excitation (pool, reduce,
// expand, scale), project with the residual.
template <class T>
status run_unfused_block(const inverted_residual_params& p, const inverted_residual_weights<T>& w, const T* input,
                         T* output, void* workspace, const platform::device_properties& dev, stream_t stream) {
  const unfused_workspace at = unfused_layout(p, sizeof(T));
  char* ws = static_cast<char*>(workspace);
  T* expanded = reinterpret_cast<T*>(ws + at.expanded);
  T* z = reinterpret_cast<T*>(ws + at.depthwise);
  status s = status::success;
  if (p.has_expand() &&
      (s = pointwise_forward<T>(p.expand(), input, w.expand_weight, w.expand_bias, nullptr, expanded, stream)) != status::success)
    return s;
  if ((s = depthwise_forward<T>(p.depthwise(), p.has_expand() ? expanded : input, w.depthwise_weight, w.depthwise_bias, z,
                                stream)) != status::success)
    return s;
  if (p.se_channels > 0) {
    T* pooled = reinterpret_cast<T*>(ws + at.pooled);
    T* reduced = reinterpret_cast<T*>(ws + at.reduced);
    T* gate = reinterpret_cast<T*>(ws + at.gate);
    const int pixels = p.out_h() * p.out_w();
    const int slices = p.data_layout == layout::nchw ? p.expanded : static_cast<int>(ceil_div(p.expanded, channel_mean_lanes));
    platform::launch_config mean;
    mean.grid = platform::dims{static_cast<unsigned>(p.n * slices), 1, 1};
    mean.block = platform::dims{channel_mean_threads, 1, 1};
    mean.shared_bytes = channel_mean_threads * sizeof(float);
    mean.stream = stream;
    mean.name = "channel_mean";
    if ((s = platform::launch(platform::registered<kernels::channel_mean<T>>(), mean, p.expanded, pixels, p.data_layout, z,
                              pooled)) != status::success ||
        (s = pointwise_forward<T>(p.se_reduce(), pooled, w.se_reduce_weight, w.se_reduce_bias, nullptr, reduced, stream)) !=
            status::success ||
        (s = pointwise_forward<T>(p.se_expand(), reduced, w.se_expand_weight, w.se_expand_bias, nullptr, gate, stream)) !=
            status::success ||
        (s = platform::launch(platform::registered<kernels::channel_scale<T>>(),
                              grid_stride_launch(static_cast<index_t>(p.n) * p.expanded * pixels, grid_stride_block_threads,
                                                 dev, stream, "channel_scale"),
                              p.n, p.expanded, pixels, p.data_layout, z, static_cast<const T*>(gate))) != status::success)
      return s;
  }
  return pointwise_forward<T>(p.project(), z, w.project_weight, w.project_bias, p.residual ? input : nullptr, output, stream);
}

}  // namespace detail

// input [n][c_in][h][w] (nchw) or [n][h][w][c_in] (nhwc); output [n][c_out][out_h][out_w] in
// the same layout: the block of `p` with weights `w` (folded with their batch norms). Queued on
// `stream`; nothing is launched or written unless the result is success.
template <class T>
status inverted_residual_forward(const inverted_residual_params& p, const inverted_residual_options& options,
                                 const inverted_residual_weights<T>& w, const T* input, T* output, stream_t stream = {}) {
  const char* op = "inverted_residual";
  platform::device_properties dev;
  block_variant variant = block_variant::automatic;
  const detail::buffer workspace{options.workspace, static_cast<index_t>(options.workspace_bytes)};
  status s = detail::prepare_launch(
      detail::validate(p, w, input, output, workspace), options.variant, [&] { return can_implement<T>(options.variant, p); },
      [&] { return select_variant<T>(p, options); }, dev, variant);
  if (s != status::success) return s;
  if (variant == block_variant::unfused) {
    const std::size_t need = static_cast<std::size_t>(detail::unfused_layout(p, sizeof(T)).bytes);
    if (!options.workspace || options.workspace_bytes < need)
      return detail::invalid(status::insufficient_workspace, op,
                             "unfused: " + std::to_string(need) + " bytes (inverted_residual_workspace_size), given " +
                                 std::to_string(options.workspace ? options.workspace_bytes : 0));
    return detail::run_unfused_block(p, w, input, output, options.workspace, dev, stream);
  }
  detail::fused_block_plan plan;
  if (!detail::plan_fused_block(p, dev, sizeof(T), plan))
    return detail::invalid(status::unsupported_variant, op, "fused: no launch plan");
  const detail::block_weight_ptrs<T> weights{w.expand_weight,  w.expand_bias,    w.depthwise_weight,
                                             w.depthwise_bias, w.project_weight, w.project_bias};
  return platform::launch(platform::registered<kernels::inverted_residual_fused_nhwc<T>>(),
                          plan.launch("inverted_residual_fused_nhwc", stream), detail::make_shape(p), plan.tile, weights,
                          input, output);
}

// As above with the default options: the fused variant where it runs the block; elsewhere
// insufficient_workspace (the unfused sequence needs the options' workspace).
template <class T>
status inverted_residual_forward(const inverted_residual_params& p, const inverted_residual_weights<T>& w, const T* input,
                                 T* output, stream_t stream = {}) {
  return inverted_residual_forward(p, inverted_residual_options{}, w, input, output, stream);
}

}  // namespace dsconv
