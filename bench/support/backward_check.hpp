#pragma once
// Runs one network layer's backward pass through dsconv on device buffers and checks it
// against the double-precision reference: the data gradient (grad_input) or the weight
// gradient (grad_weight and grad_bias from the same call). The layer's fused activation is
// part of the pass, as in training: its gradient is applied to grad_output as the call reads
// it, from the tensor the forward saved, which counts in the minimum: the output for relu and
// relu6 (activation_saved), act'(z) for silu, sigmoid and hardswish (activation_derivative, what
// the PyTorch package saves: the gate is then one multiply).

#include <dsconv/dsconv.hpp>

#include "layer_check.hpp"

namespace dsconv_bench {

namespace detail {

// The backward call of either operation with its options, plain where the layer has no
// activation: depthwise_/pointwise_backward_data or _weight.
template <class T>
dsconv::status backward_call(const dsconv::depthwise_params& p, const dsconv::depthwise_backward_options& o, bool weight,
                             const T* first, const T* second, T* grad, T* grad_bias) {
  return weight ? dsconv::depthwise_backward_weight(p, o, first, second, grad, grad_bias)
                : dsconv::depthwise_backward_data(p, o, first, second, grad);
}
template <class T>
dsconv::status backward_call(const dsconv::pointwise_params& p, const dsconv::pointwise_backward_options& o, bool weight,
                             const T* first, const T* second, T* grad, T* grad_bias) {
  return weight ? dsconv::pointwise_backward_weight(p, o, first, second, grad, grad_bias)
                : dsconv::pointwise_backward_data(p, o, first, second, grad);
}

template <class T>
std::size_t backward_workspace(const dsconv::depthwise_params& p, bool weight) {
  return weight ? dsconv::depthwise_backward_weight_workspace_size<T>(p) : 0;
}
template <class T>
std::size_t backward_workspace(const dsconv::pointwise_params& p, bool weight) {
  return weight ? dsconv::pointwise_backward_weight_workspace_size<T>(p) : dsconv::pointwise_backward_data_workspace_size<T>(p);
}

// The heuristic's choice with the workspace the call gets.
template <class T>
std::string backward_variant(const dsconv::depthwise_params& p, const dsconv::depthwise_backward_options& o, bool weight) {
  return dsconv::to_string(weight ? dsconv::select_backward_weight_variant<T>(p, o) : dsconv::select_backward_data_variant<T>(p, o));
}
template <class T>
std::string backward_variant(const dsconv::pointwise_params& p, const dsconv::pointwise_backward_options& o, bool weight) {
  return dsconv::to_string(weight ? dsconv::select_backward_weight_variant<T>(p, o) : dsconv::select_backward_data_variant<T>(p, o));
}

template <class T>
dsconv::status reference_backward(const dsconv::depthwise_params& p, bool weight, const T* x, const T* dy, const T* w,
                                  const T* saved, bool derivative, double* grad, double* grad_bias) {
  return weight ? dsconv::reference::depthwise_backward_weight(p, x, dy, grad, grad_bias, saved, derivative)
                : dsconv::reference::depthwise_backward_data(p, dy, w, grad, saved, derivative);
}
template <class T>
dsconv::status reference_backward(const dsconv::pointwise_params& p, bool weight, const T* x, const T* dy, const T* w,
                                  const T* saved, bool derivative, double* grad, double* grad_bias) {
  return weight ? dsconv::reference::pointwise_backward_weight(p, x, dy, grad, grad_bias, saved, derivative)
                : dsconv::reference::pointwise_backward_data(p, dy, w, grad, saved, derivative);
}

// One pass of `p` (depthwise or pointwise params, extents: input, output and weight element
// counts and output channels).
template <class T, class Params, class Options>
layer_result check_backward(const Params& p, std::size_t in_n, std::size_t out_n, std::size_t w_n, std::size_t channels,
                            bool weight, bool count_traffic, std::mt19937& gen) {
  layer_result r;
  const auto x = random_values<T>(weight ? in_n : 0, gen), w = random_values<T>(weight ? 0 : w_n, gen),
             dy = random_values<T>(out_n, gen);
  const bool gated = p.act != dsconv::activation::none;
  const auto saved = random_values<T>(gated ? out_n : 0, gen);
  const std::size_t grad_n = weight ? w_n : in_n, bias_n = weight ? channels : 0;
  r.minimum_bytes = static_cast<long long>((x.size() + w.size() + dy.size() + saved.size() + grad_n + bias_n) * sizeof(T));
  Options options;
  options.workspace_bytes = backward_workspace<T>(p, weight);
  dsconv::device_buffer<float> workspace;
  dsconv::device_buffer<T> dx, dw, ddy, dsaved, grad, grad_bias;
  const T poison = T(std::nanf(""));
  if ((weight ? dx.upload(x) : dw.upload(w)) != dsconv::status::success || ddy.upload(dy) != dsconv::status::success ||
      (gated && dsaved.upload(saved) != dsconv::status::success) ||
      grad.upload(std::vector<T>(grad_n, poison)) != dsconv::status::success ||
      (weight && grad_bias.upload(std::vector<T>(bias_n, poison)) != dsconv::status::success) ||
      workspace.allocate(options.workspace_bytes / sizeof(float)) != dsconv::status::success) {
    r.status = dsconv::status::out_of_memory;
    return r;
  }
  options.workspace = workspace.data();
  const bool derivative = gated && !dsconv::detail::gradient_from_output(p.act);
  (derivative ? options.activation_derivative : options.activation_saved) = gated ? dsaved.data() : nullptr;
  r.variant = backward_variant<T>(p, options, weight);
  r.status = run_measured(r, count_traffic, [&] {
    return weight ? backward_call(p, options, true, dx.data(), ddy.data(), grad.data(), grad_bias.data())
                  : backward_call(p, options, false, ddy.data(), dw.data(), grad.data(), static_cast<T*>(nullptr));
  });
  if (r.status != dsconv::status::success) return r;
  std::vector<double> ref(grad_n), ref_bias(bias_n);
  const dsconv::status checked = reference_backward(p, weight, x.data(), dy.data(), w.data(), gated ? saved.data() : nullptr,
                                                    derivative, ref.data(), weight ? ref_bias.data() : nullptr);
  if (checked != dsconv::status::success) {
    r.status = checked;
    r.detail = "reference: " + std::string(dsconv::last_error_detail());
    return r;
  }
  if (weight) {
    finish(r, {&grad, &grad_bias}, {&ref, &ref_bias});
  } else {
    finish(r, {&grad}, {&ref});
  }
  return r;
}

}  // namespace detail

// The layer's data (weight: `weight`) gradient at `batch` in layout `lay`.
template <class T>
layer_result check_layer_backward(const layer& l, int batch, dsconv::layout lay, bool weight, bool count_traffic,
                                  std::mt19937& gen) {
  if (l.depthwise()) {
    const auto p = l.depthwise_params(batch, lay);
    return detail::check_backward<T, dsconv::depthwise_params, dsconv::depthwise_backward_options>(
        p, static_cast<std::size_t>(batch) * p.c * p.h * p.w,
        static_cast<std::size_t>(batch) * p.out_c() * p.out_h() * p.out_w(),
        static_cast<std::size_t>(p.out_c()) * p.kernel_h * p.kernel_w, static_cast<std::size_t>(p.out_c()), weight,
        count_traffic, gen);
  }
  const auto p = l.pointwise_params(batch, lay);
  const std::size_t px = static_cast<std::size_t>(batch) * p.h * p.w;
  return detail::check_backward<T, dsconv::pointwise_params, dsconv::pointwise_backward_options>(
      p, px * p.c_in, px * p.c_out, static_cast<std::size_t>(p.c_out) * p.c_in, static_cast<std::size_t>(p.c_out), weight,
      count_traffic, gen);
}

}  // namespace dsconv_bench
