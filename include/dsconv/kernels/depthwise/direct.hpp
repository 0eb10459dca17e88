#pragma once
// Depthwise direct kernel: one output element per thread per grid-stride step, any shape,
// both layouts. The correct baseline every faster variant is measured against.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/activation.hpp"
#include "../common/grid_stride.hpp"
#include "tile.hpp"

namespace dsconv {
namespace kernels {

template <class T>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::grid_stride_block_threads, 1)
void depthwise_direct(detail::depthwise_shape s, const T* __restrict__ input, const T* __restrict__ weight,
                      const T* __restrict__ bias, T* __restrict__ output, T* __restrict__ pre_activation) {
  // The output's coordinates in the layout's order (its flat index is its offset), the
  // channel split into input channel and multiplier copy.
  const bool nchw = s.data_layout == layout::nchw;
  auto compute = [&](index_t i, index_t b, int ic, int m, int oy, int ox) {
    const int oc = ic * s.multiplier + m;
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
    detail::store_activated(output, pre_activation, s.save_derivative, i, acc, s.act);
  };
  const index_t total = s.output_elements();
  if (nchw)
    detail::for_each_grid_stride<5>(total, {s.c, s.multiplier, s.out_h, s.out_w}, [&](const auto& at) {
      compute(at.index(), at.outer(), int(at[0]), int(at[1]), int(at[2]), int(at[3]));
    });
  else
    detail::for_each_grid_stride<5>(total, {s.out_h, s.out_w, s.c, s.multiplier}, [&](const auto& at) {
      compute(at.index(), at.outer(), int(at[2]), int(at[3]), int(at[0]), int(at[1]));
    });
}

}  // namespace kernels
}  // namespace dsconv
