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
  // The output's coordinates in the layout's order (its flat index is its offset):
  // (image, output channel, row, column) for NCHW, (pixel of all images, output channel) for NHWC.
  auto compute = [&](index_t i, int co, index_t x_base, index_t x_step) {
    const T* w_row = weight + static_cast<index_t>(co) * s.c_in;
    float acc = 0.f;
    for (int ci = 0; ci < s.c_in; ++ci)
      acc += to_float(platform::load(input + x_base + ci * x_step)) * to_float(platform::load(w_row + ci));
    if (bias) acc += to_float(platform::load(bias + co));
    if (residual) acc += to_float(platform::load(residual + i));
    platform::store(output + i, from_float<T>(detail::activate(acc, s.act)));
  };
  const index_t total = s.output_elements(), pixels = s.pixels();
  if (s.data_layout == layout::nchw)
    detail::for_each_grid_stride<4>(total, {s.c_out, s.h, s.w}, [&](const auto& at) {
      compute(at.index(), int(at[0]), at.outer() * s.c_in * pixels + at[1] * s.w + at[2], pixels);
    });
  else
    detail::for_each_grid_stride<2>(total, {s.c_out},
                                    [&](const auto& at) { compute(at.index(), int(at[0]), at.outer() * s.c_in, 1); });
}

}  // namespace kernels
}  // namespace dsconv
