#pragma once
// Pointwise (1x1) direct kernel: one output element per thread per grid-stride step, a dot
// product over c_in, both layouts, with the fused bias + residual + activation epilogue.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/activation.hpp"
#include "../common/grid_stride.hpp"

namespace dsconv {
namespace kernels {

template <class T>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::grid_stride_block_threads, 1)
void pointwise_direct(detail::pointwise_shape s, const T* __restrict__ input, const T* __restrict__ weight,
                      const T* __restrict__ bias, const T* __restrict__ residual, T* __restrict__ output) {
  const index_t total = s.output_elements();
  const index_t pixels = s.pixels();
  const bool nchw = s.data_layout == layout::nchw;
  for (index_t i = detail::global_thread_index(); i < total; i += detail::global_thread_count()) {
    int co;
    index_t x_base, x_step;  // input offset of channel 0 of this pixel, and of the next channel
    if (nchw) {
      const index_t p = i % pixels, t = i / pixels;
      co = static_cast<int>(t % s.c_out);
      x_base = t / s.c_out * s.c_in * pixels + p;
      x_step = pixels;
    } else {
      co = static_cast<int>(i % s.c_out);
      x_base = i / s.c_out * s.c_in;
      x_step = 1;
    }
    const T* w_row = weight + static_cast<index_t>(co) * s.c_in;
    float acc = 0.f;
    for (int ci = 0; ci < s.c_in; ++ci)
      acc += to_float(platform::load(input + x_base + ci * x_step)) * to_float(platform::load(w_row + ci));
    if (bias) acc += to_float(platform::load(bias + co));
    if (residual) acc += to_float(platform::load(residual + i));
    platform::store(output + i, from_float<T>(detail::activate(acc, s.act)));
  }
}

}  // namespace kernels
}  // namespace dsconv
