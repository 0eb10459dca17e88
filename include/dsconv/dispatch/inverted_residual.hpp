#pragma once
// dsconv::inverted_residual_forward: one call for a whole inverted-residual block
// (block_params.hpp): validate -> choose fused or unfused -> launch. The unfused variant runs
// the layer calls in sequence through the caller's workspace (the baseline, and the fallback
// for every block the fused kernel does not take); the fused one expands, filters and projects
// in one kernel (kernels/block/fused_nhwc.hpp), the expanded tensor never in global memory.
// With squeeze-excitation, whose project waits for the pool of the whole depthwise output, the
// fused variant expands and filters in that kernel, which writes the depthwise output once with
// its tiles' pool sums; then the pool's finish, the squeeze-excitation's 1x1s, the scale and the
// project run as in the unfused sequence (through the caller's workspace).

#include <string>
#include <type_traits>

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
#include "tuning/block_fusion.hpp"
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
  if (!detail::plan_fused_block<T>(p, dev, plan))
    return detail::invalid(status::unsupported_variant, op, "fused: no tile fits the device's shared memory and grid");
  return status::success;
}

namespace detail {
// The fused variant's plan for `p` on `dev` and its workspace (blocks with squeeze-excitation;
// 0 without); false where the fused kernel cannot run `p`. Planned once per call: the planner
// tries every tile.
template <class T>
bool plan_fused(const inverted_residual_params& p, const platform::device_properties& dev, fused_block_plan& plan,
                index_t& workspace) {
  workspace = 0;
  if (!plan_fused_block<T>(p, dev, plan)) return false;
  if (p.se_channels > 0)
    workspace =
        fused_squeeze_excitation_layout(p, sizeof(T), static_cast<index_t>(plan.tile.tiles_x) * plan.tile.tiles_y).bytes;
  return true;
}

// The fused variant's workspace on `dev` (0: none needed, or no plan).
template <class T>
index_t fused_workspace_bytes(const inverted_residual_params& p, const platform::device_properties& dev) {
  fused_block_plan plan;
  index_t workspace = 0;
  return plan_fused<T>(p, dev, plan, workspace) ? workspace : 0;
}

// The planner's choice (select_variant) given whether the fused kernel runs `p` and the
// workspace it needs, with the reason for reports: the fused kernel where the device's
// architecture measured it faster than the unfused sequence on this block (tuning/block_fusion.hpp),
// or where the options give too little workspace for the unfused sequence and enough for it;
// otherwise unfused.
struct block_choice {
  block_variant variant = block_variant::unfused;
  std::string reason;
};

// `given`: the workspace bytes of the call (0 without a workspace).
template <class T>
block_choice choose_variant(const inverted_residual_params& p, std::size_t given, const platform::device_properties& dev,
                            bool fused_runs, index_t fused_workspace) {
  if (!fused_runs) return {block_variant::unfused, "unfused: the fused kernel does not run this block here"};
  if (given < static_cast<std::size_t>(fused_workspace))
    return {block_variant::unfused, "unfused: the workspace is too small for the fused variant"};
  if (given < static_cast<std::size_t>(unfused_layout(p, sizeof(T)).bytes))
    return {block_variant::fused, "fused: the workspace is too small for the unfused sequence"};
  const tuning::fusion_verdict v = tuning::measured_fusion<T>(dev.arch, p);
  return {v.fuse ? block_variant::fused : block_variant::unfused, v.reason(dev.arch)};
}

inline std::size_t workspace_given(const inverted_residual_options& options) {
  return options.workspace ? options.workspace_bytes : 0;
}

// The planner's choice for `p` on the current device with `workspace_bytes` of workspace, and
// its reason.
template <class T>
block_choice explain_choice(const inverted_residual_params& p, std::size_t workspace_bytes) {
  platform::device_properties dev;
  fused_block_plan plan;
  index_t fused_workspace = 0;
  if (validate_params(p, sizeof(T)) != status::success || platform::get_device_properties(dev) != status::success)
    return {block_variant::unfused, "unfused: invalid parameters or no device"};
  const bool fused_runs = plan_fused<T>(p, dev, plan, fused_workspace);
  return choose_variant<T>(p, workspace_bytes, dev, fused_runs, fused_workspace);
}
}  // namespace detail

// Bytes of workspace that every variant that runs `p` on the current device needs at most: the
// unfused sequence's, and the fused variant's for blocks with squeeze-excitation (blocks without
// need none fused); 0 for invalid params.
template <class T = float>
std::size_t inverted_residual_workspace_size(const inverted_residual_params& p) {
  platform::device_properties dev;
  if (detail::validate_params(p, sizeof(T)) != status::success || platform::get_device_properties(dev) != status::success)
    return 0;
  const index_t unfused = detail::unfused_layout(p, sizeof(T)).bytes, fused = detail::fused_workspace_bytes<T>(p, dev);
  return static_cast<std::size_t>(unfused > fused ? unfused : fused);
}

// The planner: fused where the fused kernel runs the block and a GPU of the device's
// architecture measured it faster than the unfused sequence on the same block and type
// (tuning/block_fusion.hpp), or where the options give too little workspace for the unfused
// sequence (and enough for the fused variant); else unfused, the sequence of the layer calls.
template <class T = float>
block_variant select_variant(const inverted_residual_params& p, const inverted_residual_options& options) {
  return detail::explain_choice<T>(p, detail::workspace_given(options)).variant;
}

namespace detail {

// The pool: mean[b][c] = scale * the sum of x over its `pixels` of channel c (channel_mean).
template <class In, class T>
status launch_channel_mean(int n, int channels, int pixels, layout data_layout, float scale, const In* x, T* mean,
                           stream_t stream) {
  const int slices = data_layout == layout::nchw ? channels : static_cast<int>(ceil_div(channels, channel_mean_lanes));
  platform::launch_config config;
  config.grid = platform::dims{static_cast<unsigned>(n * slices), 1, 1};
  config.block = platform::dims{channel_mean_threads, 1, 1};
  config.shared_bytes = channel_mean_threads * sizeof(float);
  config.stream = stream;
  config.name = "channel_mean";
  return platform::launch(platform::registered<kernels::channel_mean<In, T>>(), config, channels, pixels, data_layout, scale,
                          x, mean);
}

// The project of NHWC images each with its own weight [n][c_out][expanded] (the gate folded
// in): one GEMM per image, on the small tiles.
template <class T>
status project_per_image(const inverted_residual_params& p, const T* z, const T* scaled_weight, const T* bias,
                         const T* residual, T* output, const platform::device_properties& dev, stream_t stream) {
  const pointwise_params pp = p.project();
  const index_t px = static_cast<index_t>(p.out_h()) * p.out_w();
  gemm_call<T> c{make_gemm(make_shape(pp)), z, scaled_weight, {}};
  c.g.m = px, c.g.batches = p.n;
  c.g.a_batch = px * p.expanded, c.g.b_batch = static_cast<index_t>(p.c_out) * p.expanded, c.g.c_batch = px * p.c_out;
  align_operands(c.g, c.a, c.b);
  c.out = kernels::fused_output<T>{bias, residual, output, kernels::fused_vector_elems(c.g, bias, residual, static_cast<const T*>(output)),
                                   nullptr};
  return run_gemm(mma_usable<T>(dev) ? pointwise_variant::mma_small : pointwise_variant::gemm_small, pp, dev, stream, c,
                  nullptr, 0);
}

// After the pool (the depthwise output z and, with squeeze-excitation, its pooled vector in the
// workspace): the squeeze-excitation's reduce and expand 1x1s, the scale of z by the gate (or,
// where the workspace layout says so, of the project weight per image), and the project with
// the residual.
template <class T>
status squeeze_excite_and_project(const inverted_residual_params& p, const inverted_residual_weights<T>& w, const T* input,
                                  T* z, const block_workspace& at, char* ws, T* output,
                                  const platform::device_properties& dev, stream_t stream) {
  status s = status::success;
  if (p.se_channels > 0) {
    const T* pooled = reinterpret_cast<const T*>(ws + at.pooled);
    T* reduced = reinterpret_cast<T*>(ws + at.reduced);
    T* gate = reinterpret_cast<T*>(ws + at.gate);
    const int pixels = p.out_h() * p.out_w();
    if ((s = pointwise_forward<T>(p.se_reduce(), pooled, w.se_reduce_weight, w.se_reduce_bias, nullptr, reduced, stream)) !=
            status::success ||
        (s = pointwise_forward<T>(p.se_expand(), reduced, w.se_expand_weight, w.se_expand_bias, nullptr, gate, stream)) !=
            status::success)
      return s;
    if (at.per_image_weight) {
      T* scaled = reinterpret_cast<T*>(ws + at.scaled_weight);
      if ((s = platform::launch(platform::registered<kernels::scale_columns_per_image<T>>(),
                                grid_stride_launch(static_cast<index_t>(p.n) * p.c_out * p.expanded,
                                                   grid_stride_block_threads, dev, stream, "scale_columns_per_image"),
                                p.n, p.c_out, p.expanded, w.project_weight, static_cast<const T*>(gate), scaled)) !=
          status::success)
        return s;
      return project_per_image<T>(p, z, scaled, w.project_bias, p.residual ? input : nullptr, output, dev, stream);
    }
    if ((s = platform::launch(platform::registered<kernels::channel_scale<T>>(),
                              grid_stride_launch(static_cast<index_t>(p.n) * p.expanded * pixels, grid_stride_block_threads,
                                                 dev, stream, "channel_scale"),
                              p.n, p.expanded, pixels, p.data_layout, z, static_cast<const T*>(gate))) != status::success)
      return s;
  }
  return pointwise_forward<T>(p.project(), z, w.project_weight, w.project_bias, p.residual ? input : nullptr, output, stream);
}

// The layer calls in sequence: expand, depthwise, the squeeze-excitation (pool, reduce,
// expand, scale), project with the residual.
template <class T>
status run_unfused_block(const inverted_residual_params& p, const inverted_residual_weights<T>& w, const T* input,
                         T* output, void* workspace, const platform::device_properties& dev, stream_t stream) {
  const block_workspace at = unfused_layout(p, sizeof(T));
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
  const int pixels = p.out_h() * p.out_w();
  if (p.se_channels > 0 &&
      (s = launch_channel_mean(p.n, p.expanded, pixels, p.data_layout, 1.f / static_cast<float>(pixels),
                               static_cast<const T*>(z), reinterpret_cast<T*>(ws + at.pooled), stream)) != status::success)
    return s;
  return squeeze_excite_and_project(p, w, input, z, at, ws, output, dev, stream);
}

// Whether the fused kernel on a matrix unit may stage its operands in 16-byte runs
// (fused_block_tile::vector_staging): of the operands it stages on the unit, rows that are whole
// runs of T and tensors 16-byte aligned. It stages the input and the expand weights (rows of
// c_in) where the block expands, the project weights (rows of expanded) where it projects.
template <class T>
bool fused_vector_staging(const inverted_residual_params& p, const block_weight_ptrs<T>& weights, const T* input) {
  constexpr int run = 16 / static_cast<int>(sizeof(T));
  const bool expand = !p.has_expand() || (p.c_in % run == 0 && aligned_16(input) && aligned_16(weights.expand_weight));
  const bool project = p.se_channels > 0 || (p.expanded % run == 0 && aligned_16(weights.project_weight));
  return expand && project;
}

// The fused kernel (Project: blocks without squeeze-excitation) as `plan` tiles it, on the
// device's matrix unit where the plan has that kernel's steps on it (fused_block_on_matrix_unit).
template <bool Project, class T>
status launch_fused_kernel(const inverted_residual_params& p, const fused_block_plan& plan,
                           const block_weight_ptrs<T>& weights, const T* input, T* output, float* pool_partial,
                           const platform::device_properties& dev, stream_t stream) {
  const platform::launch_config config = plan.launch("inverted_residual_fused_nhwc", stream);
  if (plan.tile.q_tiles > 0 || plan.tile.k_stage_rows > 0) {
    fused_block_tile tile = plan.tile;
    tile.vector_staging = fused_vector_staging(p, weights, input) ? 1 : 0;
    return with_matrix_unit(dev, [&](auto unit) {
      using Unit = decltype(unit);
      return platform::launch(
          platform::registered<kernels::inverted_residual_fused_nhwc<T, Project, Unit>, Unit::template needs<T>>(), config,
          make_shape(p), tile, weights, input, output, pool_partial);
    });
  }
  return platform::launch(platform::registered<kernels::inverted_residual_fused_nhwc<T, Project>>(), config, make_shape(p),
                          plan.tile, weights, input, output, pool_partial);
}

// The fused kernel as `plan` tiles it; with squeeze-excitation it writes the depthwise output
// and its tiles' pool sums into the workspace, and the rest follows as in the unfused sequence.
template <class T>
status run_fused_block(const inverted_residual_params& p, const fused_block_plan& plan,
                       const inverted_residual_weights<T>& w, const T* input, T* output, void* workspace,
                       const platform::device_properties& dev, stream_t stream) {
  const block_weight_ptrs<T> weights{w.expand_weight,  w.expand_bias,    w.depthwise_weight,
                                     w.depthwise_bias, w.project_weight, w.project_bias};
  if (p.se_channels == 0) return launch_fused_kernel<true>(p, plan, weights, input, output, nullptr, dev, stream);
  const int tiles = plan.tile.tiles_x * plan.tile.tiles_y;
  const block_workspace at = fused_squeeze_excitation_layout(p, sizeof(T), tiles);
  char* ws = static_cast<char*>(workspace);
  T* z = reinterpret_cast<T*>(ws + at.depthwise);
  float* partial = reinterpret_cast<float*>(ws + at.pool_partial);
  status s = launch_fused_kernel<false>(p, plan, weights, input, z, partial, dev, stream);
  if (s != status::success ||
      (s = launch_channel_mean(p.n, p.expanded, tiles, layout::nhwc, 1.f / static_cast<float>(p.out_h() * p.out_w()),
                               static_cast<const float*>(partial), reinterpret_cast<T*>(ws + at.pooled), stream)) !=
          status::success)
    return s;
  return squeeze_excite_and_project(p, w, input, z, at, ws, output, dev, stream);
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
  // The fused plan, made once: by the planner's choice (automatic), else below.
  detail::fused_block_plan plan;
  index_t fused_workspace = 0;
  bool planned = false, fused_runs = false;
  status s = detail::prepare_launch(
      detail::validate(p, w, input, output, workspace), options.variant, [&] { return can_implement<T>(options.variant, p); },
      [&] {
        planned = true;
        fused_runs = detail::plan_fused<T>(p, dev, plan, fused_workspace);
        return detail::choose_variant<T>(p, detail::workspace_given(options), dev, fused_runs, fused_workspace).variant;
      },
      dev, variant);
  if (s != status::success) return s;
  if (variant == block_variant::unfused) {
    const std::size_t need = static_cast<std::size_t>(detail::unfused_layout(p, sizeof(T)).bytes);
    if (!options.workspace || options.workspace_bytes < need)
      return detail::invalid(status::insufficient_workspace, op,
                             "unfused: " + std::to_string(need) + " bytes (inverted_residual_workspace_size), given " +
                                 std::to_string(options.workspace ? options.workspace_bytes : 0));
    return detail::run_unfused_block(p, w, input, output, options.workspace, dev, stream);
  }
  if (!planned) fused_runs = detail::plan_fused<T>(p, dev, plan, fused_workspace);
  if (!fused_runs) return detail::invalid(status::unsupported_variant, op, "fused: no launch plan");
  const std::size_t need = static_cast<std::size_t>(fused_workspace);
  if (need > 0 && (!options.workspace || options.workspace_bytes < need))
    return detail::invalid(status::insufficient_workspace, op,
                           "fused with squeeze-excitation: " + std::to_string(need) +
                               " bytes (inverted_residual_workspace_size), given " +
                               std::to_string(options.workspace ? options.workspace_bytes : 0));
  return detail::run_fused_block(p, plan, w, input, output, options.workspace, dev, stream);
}

// As above with the default options: the fused variant where it runs the block; elsewhere
// insufficient_workspace (the unfused sequence needs the options' workspace).
template <class T>
status inverted_residual_forward(const inverted_residual_params& p, const inverted_residual_weights<T>& w, const T* input,
                                 T* output, stream_t stream = {}) {
  return inverted_residual_forward(p, inverted_residual_options{}, w, input, output, stream);
}

}  // namespace dsconv
