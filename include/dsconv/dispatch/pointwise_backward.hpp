#pragma once
// The gradients of a pointwise (1x1) layer, each a GEMM through the forward's kernels
// (pointwise.hpp, gemm_operands.hpp): dsconv::pointwise_backward_data (grad_input = W^T dz) and
// dsconv::pointwise_backward_weight (grad_weight = dz x^T summed over every image and pixel,
// and grad_bias = the sums of dz, from the same pass), dz = dL/d(conv + bias + residual). With
// a workspace the weight gradient's long K is split over many blocks (split_k) and the
// partial sums added in a fixed order, so results are the same bits on every run.

#include "pointwise.hpp"

namespace dsconv {

// Whether `variant` can run the backward data (weight) pass of `p` with elements of type T on
// the current device (a host-only check). The weight pass runs every variant but warp_dot.
template <class T = float>
status can_implement_backward_data(pointwise_variant variant, const pointwise_params& p) {
  return detail::can_implement_pass<T>(variant, detail::gemm_pass::backward_data, p);
}
template <class T = float>
status can_implement_backward_weight(pointwise_variant variant, const pointwise_params& p) {
  return detail::can_implement_pass<T>(variant, detail::gemm_pass::backward_weight, p);
}

// The variants that automatic runs, given the workspace of `options`.
template <class T = float>
pointwise_variant select_backward_data_variant(const pointwise_params& p, const pointwise_backward_options& options = {}) {
  return detail::select_pass_variant<T>(detail::gemm_pass::backward_data, p, options.workspace ? options.workspace_bytes : 0);
}
template <class T = float>
pointwise_variant select_backward_weight_variant(const pointwise_params& p, const pointwise_backward_options& options = {}) {
  return detail::select_pass_variant<T>(detail::gemm_pass::backward_weight, p,
                                        options.workspace ? options.workspace_bytes : 0);
}

// Bytes of workspace split_k needs for each pass of `p` (0 where it cannot run it): with at
// least that much in pointwise_backward_options, automatic may choose it.
template <class T = float>
std::size_t pointwise_backward_data_workspace_size(const pointwise_params& p) {
  return detail::pass_workspace_size<T>(detail::gemm_pass::backward_data, p);
}
template <class T = float>
std::size_t pointwise_backward_weight_workspace_size(const pointwise_params& p) {
  return detail::pass_workspace_size<T>(detail::gemm_pass::backward_weight, p);
}

namespace detail {
// The pass's GEMM with dz's gate (the activation's gradient) where the layer has one.
inline gemm_operands gated(gemm_operands g, const pointwise_params& p, activation_tensors gates) {
  if (p.act != activation::none) g.gate = gates.read(p.act), g.gate_act = gates.gate(p.act);
  return g;
}
}  // namespace detail

// grad_output [n,c_out,h,w] or [n,h,w,c_out]: dL/dy; weight [c_out, c_in]; grad_input shaped
// like the input. With p.act != none, options.activation_saved or activation_derivative is
// required (variants.hpp).
template <class T>
status pointwise_backward_data(const pointwise_params& p, const pointwise_backward_options& options, const T* grad_output,
                               const T* weight, T* grad_input, stream_t stream = {}) {
  platform::device_properties dev;
  pointwise_variant variant = pointwise_variant::automatic;
  const status s = detail::prepare_launch(
      detail::validate_backward_data(p, grad_output, weight, grad_input, detail::gates_of(options),
                                     detail::buffer{options.workspace, static_cast<index_t>(options.workspace_bytes)}),
      options.variant, [&] { return can_implement_backward_data<T>(options.variant, p); },
      [&] { return select_backward_data_variant<T>(p, options); }, dev, variant);
  if (s != status::success) return s;
  detail::gemm_call<T> c{detail::gated(detail::make_backward_data_gemm(detail::make_shape(p)), p, detail::gates_of(options)),
                         nullptr, nullptr, {}};
  c.a = c.g.weight_is_a ? weight : grad_output;
  c.b = c.g.weight_is_a ? grad_output : weight;
  detail::align_operands(c.g, c.a, c.b);
  c.out = kernels::fused_output<T>{nullptr, nullptr, grad_input,
                                   kernels::fused_vector_elems<T>(c.g, nullptr, nullptr, grad_input)};
  return detail::run_gemm(variant, p, dev, stream, c, options.workspace, options.workspace_bytes);
}

// The plain call: p.act must be none (a fused activation needs the options' saved tensor).
template <class T>
status pointwise_backward_data(const pointwise_params& p, const T* grad_output, const T* weight, T* grad_input,
                               stream_t stream = {}) {
  return pointwise_backward_data(p, pointwise_backward_options{}, grad_output, weight, grad_input, stream);
}

// input like the forward's; grad_output: dL/dy; grad_weight [c_out, c_in]; grad_bias [c_out]
// or nullptr.
template <class T>
status pointwise_backward_weight(const pointwise_params& p, const pointwise_backward_options& options, const T* input,
                                 const T* grad_output, T* grad_weight, T* grad_bias, stream_t stream = {}) {
  platform::device_properties dev;
  pointwise_variant variant = pointwise_variant::automatic;
  const status s = detail::prepare_launch(
      detail::validate_backward_weight(p, input, grad_output, grad_weight, grad_bias, detail::gates_of(options),
                                       detail::buffer{options.workspace, static_cast<index_t>(options.workspace_bytes)}),
      options.variant, [&] { return can_implement_backward_weight<T>(options.variant, p); },
      [&] { return select_backward_weight_variant<T>(p, options); }, dev, variant);
  if (s != status::success) return s;
  detail::gemm_call<T> c{detail::gated(detail::make_backward_weight_gemm(detail::make_shape(p)), p, detail::gates_of(options)),
                         grad_output, input, {}};
  detail::align_operands(c.g, c.a, c.b);
  c.out = kernels::fused_output<T>{nullptr, nullptr, grad_weight,
                                   kernels::fused_vector_elems<T>(c.g, nullptr, nullptr, grad_weight),
                                   nullptr, grad_bias};
  return detail::run_gemm(variant, p, dev, stream, c, options.workspace, options.workspace_bytes);
}

template <class T>
status pointwise_backward_weight(const pointwise_params& p, const T* input, const T* grad_output, T* grad_weight,
                                 T* grad_bias, stream_t stream = {}) {
  return pointwise_backward_weight(p, pointwise_backward_options{}, input, grad_output, grad_weight, grad_bias, stream);
}

}  // namespace dsconv
