#pragma once
// Plain CPU pointwise (1x1) backward passes with double accumulation, for tests and for users
// who want to validate results. Buffers are host memory; Out may be T, float or double. The
// activation and `activation_saved` as in depthwise_backward.hpp; with a residual, its gradient
// is dL/dz itself (the forward added it to z).

#include <vector>

#include "../dispatch/validate.hpp"
#include "../problem.hpp"
#include "depthwise_backward.hpp"
#include "output.hpp"

namespace dsconv {
namespace reference {

// grad_input [n,c_in,h,w] (nchw) or [n,h,w,c_in] (nhwc).
template <class T, class Out>
status pointwise_backward_data(const pointwise_params& p, const T* grad_output, const T* weight, Out* grad_input,
                               const T* activation_saved = nullptr, bool saved_is_derivative = false) {
  const status s = detail::validate_backward_data(p, grad_output, weight, reinterpret_cast<const T*>(grad_input),
                                                  detail_backward::gates(activation_saved, saved_is_derivative),
                                                  detail::buffer{nullptr, 0});
  if (s != status::success) return s;
  const detail::pointwise_shape d = detail::make_shape(p);
  const std::vector<double> dz = detail_backward::gated_gradient(d.output_elements(), d.act, grad_output, activation_saved,
                                                                   saved_is_derivative);
  const index_t pixels = d.pixels();
  const bool nchw = d.data_layout == layout::nchw;
  for (index_t b = 0; b < d.n; ++b)
    for (index_t px = 0; px < pixels; ++px)
      for (int ci = 0; ci < d.c_in; ++ci) {
        double acc = 0;
        for (int co = 0; co < d.c_out; ++co) {
          const index_t out = nchw ? (b * d.c_out + co) * pixels + px : (b * pixels + px) * d.c_out + co;
          acc += dz[static_cast<std::size_t>(out)] * static_cast<double>(to_float(weight[static_cast<index_t>(co) * d.c_in + ci]));
        }
        grad_input[nchw ? (b * d.c_in + ci) * pixels + px : (b * pixels + px) * d.c_in + ci] = reference_output<Out>(acc);
      }
  return status::success;
}

// grad_weight [c_out][c_in]; grad_bias [c_out] or nullptr.
template <class T, class Out>
status pointwise_backward_weight(const pointwise_params& p, const T* input, const T* grad_output, Out* grad_weight,
                                 Out* grad_bias, const T* activation_saved = nullptr, bool saved_is_derivative = false) {
  const status s = detail::validate_backward_weight(p, input, grad_output, reinterpret_cast<const T*>(grad_weight),
                                                    reinterpret_cast<const T*>(grad_bias),
                                                    detail_backward::gates(activation_saved, saved_is_derivative),
                                                    detail::buffer{nullptr, 0});
  if (s != status::success) return s;
  const detail::pointwise_shape d = detail::make_shape(p);
  const std::vector<double> dz = detail_backward::gated_gradient(d.output_elements(), d.act, grad_output, activation_saved,
                                                                   saved_is_derivative);
  const index_t pixels = d.pixels();
  const bool nchw = d.data_layout == layout::nchw;
  for (int co = 0; co < d.c_out; ++co) {
    double bias = 0;
    for (index_t b = 0; b < d.n; ++b)
      for (index_t px = 0; px < pixels; ++px)
        bias += dz[static_cast<std::size_t>(nchw ? (b * d.c_out + co) * pixels + px : (b * pixels + px) * d.c_out + co)];
    if (grad_bias) grad_bias[co] = reference_output<Out>(bias);
    for (int ci = 0; ci < d.c_in; ++ci) {
      double acc = 0;
      for (index_t b = 0; b < d.n; ++b)
        for (index_t px = 0; px < pixels; ++px) {
          const index_t out = nchw ? (b * d.c_out + co) * pixels + px : (b * pixels + px) * d.c_out + co;
          const index_t in = nchw ? (b * d.c_in + ci) * pixels + px : (b * pixels + px) * d.c_in + ci;
          acc += dz[static_cast<std::size_t>(out)] * static_cast<double>(to_float(input[in]));
        }
      grad_weight[static_cast<index_t>(co) * d.c_in + ci] = reference_output<Out>(acc);
    }
  }
  return status::success;
}

}  // namespace reference
}  // namespace dsconv
