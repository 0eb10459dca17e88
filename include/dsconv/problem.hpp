#pragma once
// The geometry of a validated problem with every derived extent computed once on the host:
// what kernels receive instead of the params structs (whose methods are host-only), and
// what the reference and the launchers share.

#include "config.hpp"
#include "block_params.hpp"
#include "params.hpp"

namespace dsconv {
namespace detail {

struct depthwise_shape {
  int n, c, h, w;           // input
  int multiplier;
  int out_c, out_h, out_w;  // output
  int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  layout data_layout;
  activation act;
  // The data gradient at stride 1, run as a forward convolution of grad_output: the filter
  // rotated by 180 degrees (tap (ky, kx) takes weight (kernel_h - 1 - ky, kernel_w - 1 - kx)).
  bool rotate_filter;
  // The forward saves act'(z) into its pre-activation pointer instead of z
  // (depthwise_options::activation_derivative).
  bool save_derivative;

  DSCONV_HOST_DEVICE index_t input_elements() const { return static_cast<index_t>(n) * c * h * w; }
  DSCONV_HOST_DEVICE index_t output_elements() const { return static_cast<index_t>(n) * out_c * out_h * out_w; }
  DSCONV_HOST_DEVICE index_t weight_elements() const { return static_cast<index_t>(out_c) * kernel_h * kernel_w; }
};

// Only meaningful for params that passed validation (every extent then fits an int).
inline depthwise_shape make_shape(const depthwise_params& p) {
  return depthwise_shape{p.n,          p.c,          p.h,          p.w,          p.multiplier,  static_cast<int>(p.out_c()),
                         p.out_h(),    p.out_w(),    p.kernel_h,   p.kernel_w,   p.stride_h,    p.stride_w,
                         p.pad_h,      p.pad_w,      p.dilation_h, p.dilation_w, p.data_layout, p.act,
                         false,        false};
}

struct pointwise_shape {
  int n, c_in, c_out, h, w;
  layout data_layout;
  activation act;
  bool save_derivative;  // as depthwise_shape's

  DSCONV_HOST_DEVICE index_t pixels() const { return static_cast<index_t>(h) * w; }
  DSCONV_HOST_DEVICE index_t input_elements() const { return static_cast<index_t>(n) * c_in * h * w; }
  DSCONV_HOST_DEVICE index_t output_elements() const { return static_cast<index_t>(n) * c_out * h * w; }
  DSCONV_HOST_DEVICE index_t weight_elements() const { return static_cast<index_t>(c_out) * c_in; }
};

inline pointwise_shape make_shape(const pointwise_params& p) {
  return pointwise_shape{p.n, p.c_in, p.c_out, p.h, p.w, p.data_layout, p.act, false};
}


// An inverted-residual block's geometry (pad: kernel / 2 on every side).
struct block_shape {
  int n, c_in, h, w, expanded, kernel, stride, pad, se_channels, c_out, out_h, out_w;
  layout data_layout;
  activation act;
  bool residual, has_expand;

  DSCONV_HOST_DEVICE int taps() const { return kernel * kernel; }
};

inline block_shape make_shape(const inverted_residual_params& p) {
  return block_shape{p.n,        p.c_in,        p.h,      p.w,        p.expanded,     p.kernel,
                     p.stride,   p.kernel / 2,  p.se_channels, p.c_out, p.out_h(),  p.out_w(),
                     p.data_layout, p.act,      p.residual,    p.has_expand()};
}

}  // namespace detail
}  // namespace dsconv
