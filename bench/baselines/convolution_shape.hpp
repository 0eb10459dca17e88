#pragma once
// A bench case as the 2-D convolution that the GPU baselines (cuDNN, MIOpen) describe:
// depthwise as a grouped convolution with groups = channels, 1x1 as a convolution with a 1x1
// filter.

#include <dsconv/dsconv.hpp>

#include "../kernel_bench/cases.hpp"

namespace dsconv_bench {

struct convolution_shape {
  int n = 1, channels = 0, h = 0, w = 0;  // input
  int k = 0, out_h = 0, out_w = 0;        // output channels and size
  int kernel = 1, stride = 1, pad = 0, groups = 1;
};

inline convolution_shape convolution_shape_of(const bench_case& c) {
  convolution_shape s;
  s.n = c.batch;
  if (c.l.depthwise()) {
    const dsconv::depthwise_params p = c.depthwise();
    s.channels = p.c, s.h = p.h, s.w = p.w, s.k = static_cast<int>(p.out_c()), s.out_h = p.out_h(), s.out_w = p.out_w();
    s.kernel = p.kernel_h, s.stride = p.stride_h, s.pad = p.pad_h, s.groups = p.c;
  } else {
    const dsconv::pointwise_params p = c.pointwise();
    s.channels = p.c_in, s.h = p.h, s.w = p.w, s.k = p.c_out, s.out_h = p.h, s.out_w = p.w;
  }
  return s;
}

}  // namespace dsconv_bench
