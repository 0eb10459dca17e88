#pragma once
// Problem descriptions of the two operations.

#include "types.hpp"

namespace dsconv {
namespace detail {
// Output extent of one spatial dimension in 64-bit arithmetic, so no int parameter can
// overflow it. Returns 0 when there is no output (the dilated kernel is larger than the
// padded input) or when the parameters are invalid (stride or dilation < 1).
constexpr long long conv_out_extent(long long in, long long kernel, long long stride, long long pad,
                                    long long dilation) {
  if (stride < 1 || dilation < 1 || kernel < 1) return 0;
  const long long span = in + 2 * pad - dilation * (kernel - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

// Narrows an extent to the int of the public API; an extent that int cannot hold becomes -1,
// which validation reports as a size overflow.
constexpr int narrow_extent(long long e) { return e > 2147483647LL ? -1 : static_cast<int>(e); }
}  // namespace detail

struct depthwise_params {
  int n = 0, c = 0, h = 0, w = 0;  // input
  int kernel_h = 3, kernel_w = 3;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;  // symmetric zero padding
  int dilation_h = 1, dilation_w = 1;
  int multiplier = 1;  // output channels = c * multiplier
  layout data_layout = layout::nchw;
  activation act = activation::none;

  // (h + 2*pad_h - dilation_h*(kernel_h-1) - 1) / stride_h + 1; 0 when there is no output
  // or the parameters are invalid, -1 when the extent does not fit an int.
  int out_h() const { return detail::narrow_extent(detail::conv_out_extent(h, kernel_h, stride_h, pad_h, dilation_h)); }
  int out_w() const { return detail::narrow_extent(detail::conv_out_extent(w, kernel_w, stride_w, pad_w, dilation_w)); }
  // Output channels as a 64-bit value (c * multiplier can exceed int).
  long long out_c() const { return static_cast<long long>(c) * multiplier; }
};

struct pointwise_params {
  int n = 0, c_in = 0, c_out = 0, h = 0, w = 0;
  layout data_layout = layout::nchw;
  activation act = activation::none;
  // float only: lets NVIDIA tensor cores (sm_80+) multiply with operands rounded to TF32
  // (10-bit mantissa, relative error ~1e-3), one product each. Off by default: they then
  // multiply each operand as two TF32 parts, three products (22 of float's 24 bits: about fp32
  // arithmetic's accuracy, three times the tensor-core work). AMD matrix cores multiply float
  // in fp32 either way.
  bool allow_tf32 = false;
};

}  // namespace dsconv
