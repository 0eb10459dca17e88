#pragma once
// Plain CPU depthwise backward passes with double accumulation, for tests and for users who
// want to validate results. Buffers are host memory; Out may be T, float or double. With a
// fused activation (p.act != none), grad_output is dL/dy and `activation_saved` the tensor the
// forward saved (its output for relu and relu6, its input z otherwise; act'(z) itself where
// saved_is_derivative): the gradients are those of z = conv + bias, dL/dz = dL/dy * act'(z).

#include <vector>

#include "../dispatch/validate.hpp"
#include "../kernels/common/activation.hpp"
#include "../problem.hpp"
#include "output.hpp"

namespace dsconv {
namespace reference {
namespace detail_backward {

// The backward call's saved tensor: what the forward saved, or act'(z) (saved_is_derivative).
inline detail::activation_tensors gates(const void* saved, bool saved_is_derivative) {
  return saved_is_derivative ? detail::activation_tensors{nullptr, saved} : detail::activation_tensors{saved, nullptr};
}

// dL/dz of every output element, in double, in the output's layout.
template <class T>
std::vector<double> gated_gradient(index_t count, activation act, const T* grad_output, const T* saved,
                                   bool saved_is_derivative) {
  const activation gate = gates(saved, saved_is_derivative).gate(act);
  std::vector<double> dz(static_cast<std::size_t>(count));
  for (index_t i = 0; i < count; ++i) {
    double g = static_cast<double>(to_float(grad_output[i]));
    if (act != activation::none) g *= detail::activation_gradient(static_cast<double>(to_float(saved[i])), gate);
    dz[static_cast<std::size_t>(i)] = g;
  }
  return dz;
}

// Calls tap(input offset, output offset, weight offset) for every product of the convolution.
template <class Tap>
void for_each_product(const detail::depthwise_shape& d, Tap tap) {
  const bool nchw = d.data_layout == layout::nchw;
  for (index_t b = 0; b < d.n; ++b)
    for (int oc = 0; oc < d.out_c; ++oc) {
      const int ic = oc / d.multiplier;
      for (int oy = 0; oy < d.out_h; ++oy)
        for (int ox = 0; ox < d.out_w; ++ox) {
          const index_t out = nchw ? ((b * d.out_c + oc) * d.out_h + oy) * d.out_w + ox
                                   : ((b * d.out_h + oy) * d.out_w + ox) * d.out_c + oc;
          for (int ky = 0; ky < d.kernel_h; ++ky)
            for (int kx = 0; kx < d.kernel_w; ++kx) {
              const index_t iy = static_cast<index_t>(oy) * d.stride_h - d.pad_h + static_cast<index_t>(ky) * d.dilation_h;
              const index_t ix = static_cast<index_t>(ox) * d.stride_w - d.pad_w + static_cast<index_t>(kx) * d.dilation_w;
              if (iy < 0 || iy >= d.h || ix < 0 || ix >= d.w) continue;
              const index_t in = nchw ? ((b * d.c + ic) * d.h + iy) * d.w + ix : ((b * d.h + iy) * d.w + ix) * d.c + ic;
              tap(in, out, (static_cast<index_t>(oc) * d.kernel_h + ky) * d.kernel_w + kx);
            }
        }
    }
}

}  // namespace detail_backward

// grad_input [n,c,h,w] (nchw) or [n,h,w,c] (nhwc) = the input's gradient; every element is
// written (zero where no output reads the input element).
template <class T, class Out>
status depthwise_backward_data(const depthwise_params& p, const T* grad_output, const T* weight, Out* grad_input,
                               const T* activation_saved = nullptr, bool saved_is_derivative = false) {
  const status s =
      detail::validate_backward_data(p, grad_output, weight, reinterpret_cast<const T*>(grad_input),
                                     detail_backward::gates(activation_saved, saved_is_derivative));
  if (s != status::success) return s;
  const detail::depthwise_shape d = detail::make_shape(p);
  const std::vector<double> dz = detail_backward::gated_gradient(d.output_elements(), d.act, grad_output, activation_saved,
                                                                   saved_is_derivative);
  std::vector<double> dx(static_cast<std::size_t>(d.input_elements()), 0.0);
  detail_backward::for_each_product(d, [&](index_t in, index_t out, index_t w) {
    dx[static_cast<std::size_t>(in)] += dz[static_cast<std::size_t>(out)] * static_cast<double>(to_float(weight[w]));
  });
  for (std::size_t i = 0; i < dx.size(); ++i) grad_input[i] = reference_output<Out>(dx[i]);
  return status::success;
}

// grad_weight [c*multiplier][kernel_h][kernel_w]; grad_bias [c*multiplier] or nullptr.
template <class T, class Out>
status depthwise_backward_weight(const depthwise_params& p, const T* input, const T* grad_output, Out* grad_weight,
                                 Out* grad_bias, const T* activation_saved = nullptr, bool saved_is_derivative = false) {
  const status s = detail::validate_backward_weight(p, input, grad_output, reinterpret_cast<const T*>(grad_weight),
                                                    reinterpret_cast<const T*>(grad_bias),
                                                    detail_backward::gates(activation_saved, saved_is_derivative),
                                                    detail::buffer{nullptr, 0});
  if (s != status::success) return s;
  const detail::depthwise_shape d = detail::make_shape(p);
  const std::vector<double> dz = detail_backward::gated_gradient(d.output_elements(), d.act, grad_output, activation_saved,
                                                                   saved_is_derivative);
  std::vector<double> dw(static_cast<std::size_t>(d.weight_elements()), 0.0), db(static_cast<std::size_t>(d.out_c), 0.0);
  detail_backward::for_each_product(d, [&](index_t in, index_t out, index_t w) {
    dw[static_cast<std::size_t>(w)] += dz[static_cast<std::size_t>(out)] * static_cast<double>(to_float(input[in]));
  });
  const bool nchw = d.data_layout == layout::nchw;
  const index_t plane = static_cast<index_t>(d.out_h) * d.out_w;
  for (index_t i = 0; i < d.output_elements(); ++i)
    db[static_cast<std::size_t>(nchw ? i / plane % d.out_c : i % d.out_c)] += dz[static_cast<std::size_t>(i)];
  for (std::size_t i = 0; i < dw.size(); ++i) grad_weight[i] = reference_output<Out>(dw[i]);
  if (grad_bias)
    for (std::size_t i = 0; i < db.size(); ++i) grad_bias[i] = reference_output<Out>(db[i]);
  return status::success;
}

}  // namespace reference
}  // namespace dsconv
