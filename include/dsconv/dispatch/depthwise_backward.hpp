#pragma once
// The gradients of a depthwise layer: dsconv::depthwise_backward_data (grad_input) and
// dsconv::depthwise_backward_weight (grad_weight and grad_bias from the same pass), of z =
// conv + bias; with a fused activation, grad_output is dL/dy and the call multiplies it by
// act'() as it reads it (depthwise_backward_options::activation_saved, or act'(z) itself:
// activation_derivative). Variants: direct (any shape); nhwc_register and nchw_register for the
// data gradient of stride 1 where the forward variant takes the transposed problem and the
// activation is none, relu or relu6 from the saved output, or any from its derivative (the
// forward's register kernels on grad_output with the rotated filter, each word gated as it
// arrives; nhwc_register's float data gradient through a gate on a kernel of its own whose
// threads walk down rows, gating each input once: nhwc_register_column.hpp); nhwc_register and
// nchw_register also for the data gradient of stride 2 of their filters (their transposed
// kernels: each element sums its own taps, from dz in registers); nhwc_register for the weight
// gradient of the forward's register filters on its strips; nchw_tiled and nhwc_tiled
// (multiplier 1; the data gradient also needs pad <= (kernel - 1) * dilation): the data gradient
// of stride 1 on the forward's tiled kernels (grad_output convolved with the rotated filter), of
// larger strides on the transposed kernels (each element sums only its own taps), the weight
// gradient on the forward's tiles with per-block sums added in a fixed order (with a workspace,
// over more blocks: the same bits on every run either way).

#include <string>

#include "../kernels/depthwise/backward_direct.hpp"
#include "../platform/platform.hpp"
#include "../problem.hpp"
#include "depthwise.hpp"
#include "depthwise_backward_plan.hpp"
#include "launch_shape.hpp"
#include "prepare.hpp"
#include "validate.hpp"
#include "variants.hpp"

namespace dsconv {
namespace detail {

// The gate a backward pass of `p` applies: the tensor it reads and its activation (make_gate_tensor).
template <class T>
gate_tensor<T> make_gate_tensor(activation act, activation_tensors gates) {
  return {static_cast<const T*>(gates.read(act)), gates.gate(act)};
}

// Why `variant` of the register family cannot run the data gradient of `p` through the gate of
// activation `gate` (activation_tensors::gate; empty: it can): gated inline (none; relu and relu6
// from their output; any activation from its derivative: kernels/common/gradient_gate.hpp); at
// stride 1 the forward kernel on grad_output with the rotated filter (the transposed problem),
// within the forward variant's limits for it; at stride 2 the layout's register transposed
// kernel (kernels/depthwise/n*_register_transposed.hpp: nhwc_register and nchw_register), for
// the register filters (nhwc_register: channels in whole 16-byte vectors, rows of fewer than
// 2^30 elements; any padding the transposed problem admits).
template <class T>
std::string register_data_refusal(depthwise_variant variant, const depthwise_params& p, activation gate,
                                  const platform::device_properties& dev) {
  const bool register_variant = variant == depthwise_variant::nhwc_register || variant == depthwise_variant::nchw_register;
  const bool transposed_kernel = register_variant && p.stride_h == 2 && p.stride_w == 2;
  if ((p.stride_h != 1 || p.stride_w != 1) && !transposed_kernel)
    return register_variant ? " runs the data gradient of stride 1 or 2 only" : " runs the data gradient of stride 1 only";
  if (!register_gated(gate))
    return " runs the data gradient of activations none, relu and relu6 from their output, or of any activation from "
           "its derivative (activation_derivative), only";
  if (!transposable(p)) return " needs pad <= (kernel - 1) * dilation in both dimensions";
  if (transposed_kernel) {
    const bool nhwc = variant == depthwise_variant::nhwc_register;
    const char* limit = nhwc ? register_limits(p, sizeof(T))
                             : p.data_layout != layout::nchw ? "needs the nchw layout" : register_filter_limits(p);
    if (*limit) return std::string(" ") + limit;
    if (nhwc && 2LL * p.w * p.c >= (1LL << 31))  // (its walks step by two rows of grad_input 32 bits wide)
      return " needs grad_input rows of fewer than 2^30 elements";
    register_plan plan;
    nchw_register_plan nchw_plan;
    const bool fits = nhwc ? plan_nhwc_register_transposed<T>(p, dev, nullptr, nullptr, nullptr, plan)
                           : plan_nchw_register_transposed<T>(p, dev, nullptr, nullptr, nullptr, nchw_plan);
    return fits ? "" : ": the grid is too large";
  }
  return register_refusal<T>(variant, transposed_problem(p), dev, p.act != activation::none);
}

// Why `variant` of the register family cannot run the weight gradient of `p` (empty: it can):
// nhwc_register on the forward's strips (kernels/depthwise/nhwc_register_weight.hpp), within the
// forward's limits; the others have no weight-gradient kernel.
template <class T>
std::string register_weight_refusal(depthwise_variant variant, const depthwise_params& p, const platform::device_properties& dev) {
  if (variant != depthwise_variant::nhwc_register) return " runs the forward pass and the data gradient only";
  const std::string limit = register_limits(p, sizeof(T));
  if (!limit.empty()) return " " + limit;
  register_weight_plan plan;
  return plan_nhwc_register_weight<T>(p, dev, nullptr, nullptr, nullptr, 0, plan) ? "" : ": the grid is too large";
}

// Whether `variant` can run the backward data (weight: `weight`) pass of `p` through the gate of
// activation `gate` (activation_tensors::gate).
template <class T>
status can_implement_depthwise_backward(depthwise_variant variant, const depthwise_params& p, bool weight, activation gate) {
  const char* op = weight ? "depthwise backward weight" : "depthwise backward data";
  if (!is_valid(variant)) return invalid(status::invalid_variant, op, "variant value " + std::to_string(static_cast<int>(variant)));
  status s = validate_params(p, sizeof(T));
  if (s != status::success) return s;
  if (variant == depthwise_variant::automatic || variant == depthwise_variant::direct) return status::success;
  platform::device_properties dev;
  s = platform::get_device_properties(dev);
  if (s != status::success) return s;
  if (register_family(variant)) {
    const std::string refusal =
        weight ? register_weight_refusal<T>(variant, p, dev) : register_data_refusal<T>(variant, p, gate, dev);
    return refusal.empty() ? status::success : invalid(status::unsupported_variant, op, to_string(variant) + refusal);
  }
  const bool nchw = variant == depthwise_variant::nchw_tiled;
  const std::string name = to_string(variant);
  if (p.data_layout != (nchw ? layout::nchw : layout::nhwc))
    return invalid(status::unsupported_variant, op, name + " needs the " + (nchw ? "nchw" : "nhwc") + " layout");
  if (p.multiplier != 1) return invalid(status::unsupported_variant, op, name + " needs multiplier 1");
  const T* aligned = nullptr;  // the plan's feasibility does not depend on the pointer
  if (weight) {
    weight_plan plan;
    if (!plan_backward_weight(p, nchw, dev, aligned, 0, plan))
      return invalid(status::unsupported_variant, op, name + ": even one output row's input exceeds shared memory, or the grid is too large");
    return status::success;
  }
  if (!transposable(p))
    return invalid(status::unsupported_variant, op, name + " needs pad <= (kernel - 1) * dilation in both dimensions");
  depthwise_plan plan;
  bool forward = false;
  if (!plan_backward_data(p, nchw, dev, aligned, plan, forward))
    return invalid(status::unsupported_variant, op, name + ": even one row's grad_output exceeds shared memory, or the grid is too large");
  return status::success;
}

// The variant automatic runs (the forward's rule: the fewest instructions per DRAM byte by
// count): for the data gradient the layout's tensor-core kernel where it applies and the rule
// prefers it for the transposed problem (preferred_matrix); the layout's register kernel where
// it applies, then the layout's tiled kernel where it applies, else direct.
template <class T>
depthwise_variant select_depthwise_backward(const depthwise_params& p, bool weight, activation gate) {
  const bool nchw = p.data_layout == layout::nchw;
  const std::string detail = last_error_detail();  // a refusal here is a choice, not an error to report
  depthwise_variant chosen = depthwise_variant::direct;
  const depthwise_variant matrix = weight ? depthwise_variant::automatic : preferred_matrix(transposed_problem(p));
  for (depthwise_variant candidate : {matrix, nchw ? depthwise_variant::nchw_register : depthwise_variant::nhwc_register,
                                      nchw ? depthwise_variant::nchw_tiled : depthwise_variant::nhwc_tiled})
    if (candidate != depthwise_variant::automatic &&
        can_implement_depthwise_backward<T>(candidate, p, weight, gate) == status::success) {
      chosen = candidate;
      break;
    }
  platform::error_detail_slot() = detail;
  return chosen;
}

}  // namespace detail

// Whether `variant` can run a backward pass of `p` given the options' saved tensor (without
// options: the tensor the forward saved, activation_saved; a register variant gates silu,
// sigmoid and hardswish from their derivative only).
template <class T = float>
status can_implement_backward_data(depthwise_variant variant, const depthwise_params& p,
                                   const depthwise_backward_options& options = {}) {
  return detail::can_implement_depthwise_backward<T>(variant, p, false, detail::gates_of(options).gate(p.act));
}
template <class T = float>
status can_implement_backward_weight(depthwise_variant variant, const depthwise_params& p,
                                     const depthwise_backward_options& options = {}) {
  return detail::can_implement_depthwise_backward<T>(variant, p, true, detail::gates_of(options).gate(p.act));
}
// The variants automatic runs (detail::select_depthwise_backward) with the options' saved tensor.
template <class T = float>
depthwise_variant select_backward_data_variant(const depthwise_params& p, const depthwise_backward_options& options = {}) {
  return detail::select_depthwise_backward<T>(p, false, detail::gates_of(options).gate(p.act));
}
template <class T = float>
depthwise_variant select_backward_weight_variant(const depthwise_params& p, const depthwise_backward_options& options = {}) {
  return detail::select_depthwise_backward<T>(p, true, detail::gates_of(options).gate(p.act));
}

// Bytes of workspace with which the weight gradient of `variant` (automatic: the one it runs)
// spreads each channel's sums over several blocks (partial sums, added in a fixed order
// afterwards): where one block per channel (group) would leave the device idle. 0 where it
// gains nothing or the variant cannot run `p`.
template <class T = float>
std::size_t depthwise_backward_weight_workspace_size(const depthwise_params& p,
                                                     depthwise_variant variant = depthwise_variant::automatic) {
  platform::device_properties dev;
  if (!is_valid(variant) || can_implement_backward_weight<T>(variant, p) != status::success ||
      platform::get_device_properties(dev) != status::success)
    return 0;
  if (variant == depthwise_variant::automatic) variant = select_backward_weight_variant<T>(p);
  const std::size_t any = ~std::size_t{0} >> 1;
  if (variant == depthwise_variant::nhwc_register) {
    detail::register_weight_plan plan;
    return detail::plan_nhwc_register_weight<T>(p, dev, nullptr, nullptr, nullptr, any, plan)
               ? static_cast<std::size_t>(plan.workspace_bytes) : 0;
  }
  detail::weight_plan plan;
  const T* aligned = nullptr;
  if (variant == depthwise_variant::direct || !detail::plan_backward_weight(p, p.data_layout == layout::nchw, dev, aligned, any, plan))
    return 0;
  return static_cast<std::size_t>(plan.workspace_bytes);
}

// grad_output [n, c*multiplier, out_h, out_w] in the layer's layout: dL/dy; weight as the
// forward's; grad_input shaped like the input. With p.act != none, options.activation_saved is
// required (variants.hpp).
template <class T>
status depthwise_backward_data(const depthwise_params& p, const depthwise_backward_options& options, const T* grad_output,
                               const T* weight, T* grad_input, stream_t stream = {}) {
  platform::device_properties dev;
  depthwise_variant variant = depthwise_variant::automatic;
  const status s = detail::prepare_launch(
      detail::validate_backward_data(p, grad_output, weight, grad_input, detail::gates_of(options)), options.variant,
      [&] { return can_implement_backward_data<T>(options.variant, p, options); },
      [&] { return select_backward_data_variant<T>(p, options); }, dev, variant);
  if (s != status::success) return s;
  const detail::gate_tensor<T> gate = detail::make_gate_tensor<T>(p.act, detail::gates_of(options));
  const detail::depthwise_shape shape = detail::make_shape(p);
  if (detail::register_family(variant)) {
    const depthwise_params q = detail::transposed_problem(p);
    detail::depthwise_shape rotated = detail::make_shape(q);
    rotated.rotate_filter = true;
    const detail::register_gate by = detail::make_register_gate(gate);
    const auto launch = [&](auto kind) {
      constexpr detail::gate_kind G = decltype(kind)::value;
      if (p.stride_h == 2) {  // (the register variants' transposed kernels: the refusal admits no other)
        detail::register_plan plan;
        detail::nchw_register_plan nchw_plan;
        if (variant == depthwise_variant::nhwc_register
                ? !detail::plan_nhwc_register_transposed<T>(p, dev, grad_output, gate.saved, grad_input, plan)
                : !detail::plan_nchw_register_transposed<T>(p, dev, grad_output, gate.saved, grad_input, nchw_plan))
          return detail::invalid(status::unsupported_variant, "depthwise backward data", "the grid is too large");
        if (variant == depthwise_variant::nhwc_register)
          return platform::launch(detail::register_transposed_kernel<T, G>(p), plan.launch(stream), shape, plan.tile,
                                  grad_output, by, weight, grad_input);
        return platform::launch(detail::nchw_register_transposed_kernel<T, G>(p, nchw_plan.word_windows), nchw_plan.launch(stream), shape,
                                nchw_plan.tile, grad_output, by, weight, grad_input);
      }
      return detail::launch_forward_register<T, G>(variant, q, rotated, dev, grad_output, by, weight,
                                                   static_cast<const T*>(nullptr), grad_input, static_cast<T*>(nullptr),
                                                   stream);
    };
    using kind = detail::gate_kind;
    // (the refusal admits none, relu and relu6 from their output and any activation from its
    // derivative only: no gate, clamp or scale)
    switch (detail::gate_kind_of(gate.act)) {
      case kind::clamp: return launch(std::integral_constant<kind, kind::clamp>{});
      case kind::scale: return launch(std::integral_constant<kind, kind::scale>{});
      case kind::none: break;
    }
    return launch(std::integral_constant<kind, kind::none>{});
  }
  if (variant == depthwise_variant::nchw_tiled || variant == depthwise_variant::nhwc_tiled) {
    const bool nchw = variant == depthwise_variant::nchw_tiled;
    detail::depthwise_plan plan;
    bool forward = false;
    if (!detail::plan_backward_data(p, nchw, dev, detail::least_aligned(grad_output, gate.saved), plan, forward))
      return detail::invalid(status::unsupported_variant, "depthwise backward data", "no launch plan for the chosen variant");
    if (forward) {
      const depthwise_params q = detail::transposed_problem(p);
      detail::depthwise_shape rotated = detail::make_shape(q);
      rotated.rotate_filter = true;
      return detail::launch_forward_tiled(q, rotated, plan, grad_output, gate, weight, static_cast<const T*>(nullptr),
                                          grad_input, static_cast<T*>(nullptr), stream);
    }
    const platform::launch_config cfg =
        plan.launch(nchw ? "depthwise_nchw_backward_data" : "depthwise_nhwc_backward_data", stream);
    return nchw ? platform::launch(detail::transposed_kernel<detail::nchw_backward_data_family, T>(p), cfg, shape, plan.tile,
                                   grad_output, gate, weight, grad_input)
                : platform::launch(detail::transposed_kernel<detail::nhwc_backward_data_family, T>(p), cfg, shape, plan.tile,
                                   grad_output, gate, weight, grad_input);
  }
  return platform::launch(platform::registered<kernels::depthwise_backward_data_direct<T>>(),
                          detail::grid_stride_launch(shape.input_elements(), detail::grid_stride_block_threads, dev, stream,
                                                     "depthwise_backward_data_direct"),
                          shape, grad_output, gate, weight, grad_input);
}

// The plain call: p.act must be none (a fused activation needs the options' saved tensor).
template <class T>
status depthwise_backward_data(const depthwise_params& p, const T* grad_output, const T* weight, T* grad_input,
                               stream_t stream = {}) {
  return depthwise_backward_data(p, depthwise_backward_options{}, grad_output, weight, grad_input, stream);
}

// input like the forward's; grad_output: dL/dy; grad_weight [c*multiplier][kernel_h][kernel_w];
// grad_bias [c*multiplier] or nullptr.
template <class T>
status depthwise_backward_weight(const depthwise_params& p, const depthwise_backward_options& options, const T* input,
                                 const T* grad_output, T* grad_weight, T* grad_bias, stream_t stream = {}) {
  platform::device_properties dev;
  depthwise_variant variant = depthwise_variant::automatic;
  const status s = detail::prepare_launch(
      detail::validate_backward_weight(p, input, grad_output, grad_weight, grad_bias, detail::gates_of(options),
                                       detail::buffer{options.workspace, static_cast<index_t>(options.workspace_bytes)}),
      options.variant, [&] { return can_implement_backward_weight<T>(options.variant, p, options); },
      [&] { return select_backward_weight_variant<T>(p, options); }, dev, variant);
  if (s != status::success) return s;
  const detail::gate_tensor<T> gate = detail::make_gate_tensor<T>(p.act, detail::gates_of(options));
  const detail::depthwise_shape shape = detail::make_shape(p);
  const int taps = p.kernel_h * p.kernel_w;
  // The blocks' partial sums (where they wrote them) added in block order.
  const auto reduce = [&](const float* partial, int groups) {
    return platform::launch(platform::registered<kernels::depthwise_weight_reduce<T>>(),
                            detail::grid_stride_launch(static_cast<index_t>(p.c) * (taps + 1), detail::grid_stride_block_threads,
                                                       dev, stream, "depthwise_weight_reduce"),
                            partial, groups, p.c, taps, grad_weight, grad_bias);
  };
  const std::size_t workspace_bytes = options.workspace ? options.workspace_bytes : 0;
  if (variant == depthwise_variant::nhwc_register) {
    detail::register_weight_plan plan;
    if (!detail::plan_nhwc_register_weight<T>(p, dev, input, grad_output, gate.saved, workspace_bytes, plan))
      return detail::invalid(status::unsupported_variant, "depthwise backward weight", "no launch plan for the chosen variant");
    float* partial = plan.grid.y > 1 ? static_cast<float*>(options.workspace) : nullptr;
    const status launched = platform::launch(detail::register_weight_kernel<T>(p), plan.launch(stream), shape, plan.tile,
                                             input, grad_output, gate, detail::make_register_gate(gate), partial,
                                             grad_weight, grad_bias);
    return launched != status::success || !partial ? launched : reduce(partial, static_cast<int>(plan.grid.y));
  }
  if (variant == depthwise_variant::nchw_tiled || variant == depthwise_variant::nhwc_tiled) {
    const bool nchw = variant == depthwise_variant::nchw_tiled;
    detail::weight_plan plan;
    if (!detail::plan_backward_weight(p, nchw, dev, input, workspace_bytes, plan))
      return detail::invalid(status::unsupported_variant, "depthwise backward weight", "no launch plan for the chosen variant");
    if (plan.items.groups > 1) plan.items.partial = static_cast<float*>(options.workspace);
    const platform::launch_config cfg =
        plan.tile.launch(nchw ? "depthwise_nchw_backward_weight" : "depthwise_nhwc_backward_weight", stream);
    const status launched =
        nchw ? platform::launch(detail::tiled_kernel<detail::nchw_backward_weight_family, T>(p), cfg, shape,
                                plan.tile.tile, plan.items, input, grad_output, gate, grad_weight, grad_bias)
             : platform::launch(detail::tiled_kernel<detail::nhwc_backward_weight_family, T>(p), cfg, shape,
                                plan.tile.tile, plan.items, input, grad_output, gate, grad_weight, grad_bias);
    return launched != status::success || !plan.items.partial ? launched : reduce(plan.items.partial, plan.items.groups);
  }
  return platform::launch(platform::registered<kernels::depthwise_backward_weight_direct<T>>(),
                          detail::grid_stride_launch(shape.weight_elements() + shape.out_c, detail::grid_stride_block_threads,
                                                     dev, stream, "depthwise_backward_weight_direct"),
                          shape, input, grad_output, gate, grad_weight, grad_bias);
}

template <class T>
status depthwise_backward_weight(const depthwise_params& p, const T* input, const T* grad_output, T* grad_weight,
                                 T* grad_bias, stream_t stream = {}) {
  return depthwise_backward_weight(p, depthwise_backward_options{}, input, grad_output, grad_weight, grad_bias, stream);
}

}  // namespace dsconv
