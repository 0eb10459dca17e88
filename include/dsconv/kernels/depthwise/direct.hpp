#pragma once
// Depthwise direct kernel: one output element per thread per grid-stride step, any shape,
// both layouts. The correct baseline every faster variant is measured against.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/activation.hpp"
#include "../common/grid_stride.hpp"

namespace dsconv {
namespace kernels {

template <class T>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::grid_stride_block_threads, 1)
void depthwise_direct(detail::depthwise_shape s, const T* __restrict__ input, const T* __restrict__ weight,
                      const T* __restrict__ bias, T* __restrict__ output) {
  const index_t total = s.output_elements();
  const bool nchw = s.data_layout == layout::nchw;
  for (index_t i = detail::global_thread_index(); i < total; i += detail::global_thread_count()) {
    // The output index is the output offset, so decompose it in the layout's order.
    index_t rest = i;
    int ox, oy, oc;
    if (nchw) {
      ox = static_cast<int>(rest % s.out_w), rest /= s.out_w;
      oy = static_cast<int>(rest % s.out_h), rest /= s.out_h;
      oc = static_cast<int>(rest % s.out_c), rest /= s.out_c;
    } else {
      oc = static_cast<int>(rest % s.out_c), rest /= s.out_c;
      ox = static_cast<int>(rest % s.out_w), rest /= s.out_w;
      oy = static_cast<int>(rest % s.out_h), rest /= s.out_h;
    }
    const index_t b = rest;
    const int ic = oc / s.multiplier;
    float acc = 0.f;
    for (int ky = 0; ky < s.kernel_h; ++ky) {
      const int iy = oy * s.stride_h - s.pad_h + ky * s.dilation_h;
      if (iy < 0 || iy >= s.h) continue;
      for (int kx = 0; kx < s.kernel_w; ++kx) {
        const int ix = ox * s.stride_w - s.pad_w + kx * s.dilation_w;
        if (ix < 0 || ix >= s.w) continue;
        const index_t in_off = nchw ? ((b * s.c + ic) * s.h + iy) * s.w + ix : ((b * s.h + iy) * s.w + ix) * s.c + ic;
        acc += to_float(platform::load(input + in_off)) *
               to_float(platform::load(weight + (static_cast<index_t>(oc) * s.kernel_h + ky) * s.kernel_w + kx));
      }
    }
    if (bias) acc += to_float(platform::load(bias + oc));
    platform::store(output + i, from_float<T>(detail::activate(acc, s.act)));
  }
}

}  // namespace kernels
}  // namespace dsconv
