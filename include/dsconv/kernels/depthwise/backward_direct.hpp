#pragma once
// Depthwise direct backward kernels, any shape, both layouts: the correct baselines every
// faster variant is measured against.
//   data:   one grad_input element per thread per grid-stride step, summing its taps of every
//           channel copy (multiplier) through the forward transposed (transposed_taps.hpp).
//   weight: one weight (or bias) gradient element per thread, summing over every image and
//           output in a fixed order (deterministic, no atomics; little parallelism: the
//           tiled variants spread the sums over blocks).
// dz = grad_output times act'() where the layer fused an activation (gate).

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/fast_divmod.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/grid_stride.hpp"
#include "transposed_taps.hpp"

namespace dsconv {
namespace kernels {

template <class T>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::grid_stride_block_threads, 1)
void depthwise_backward_data_direct(detail::depthwise_shape s, const T* __restrict__ grad_output, detail::gate_tensor<T> gate,
                                    const T* __restrict__ weight, T* __restrict__ grad_input) {
  const bool nchw = s.data_layout == layout::nchw;
  const detail::fast_divmod div_h(static_cast<unsigned>(s.stride_h)), div_w(static_cast<unsigned>(s.stride_w));
  const int lift_h = ((s.kernel_h - 1) * s.dilation_h + s.stride_h - 1) / s.stride_h * s.stride_h;
  const int lift_w = ((s.kernel_w - 1) * s.dilation_w + s.stride_w - 1) / s.stride_w * s.stride_w;
  // The element's coordinates in the layout's order (its flat index is its offset).
  auto compute = [&](index_t i, index_t b, int ic, int iy, int ix) {
    float acc = 0.f;
    for (int m = 0; m < s.multiplier; ++m) {
      const int oc = ic * s.multiplier + m;
      detail::for_each_transposed_tap(iy + s.pad_h, s.kernel_h, s.dilation_h, lift_h, div_h, [&](int ky, int oy) {
        if (oy < 0 || oy >= s.out_h) return;
        detail::for_each_transposed_tap(ix + s.pad_w, s.kernel_w, s.dilation_w, lift_w, div_w, [&](int kx, int ox) {
          if (ox < 0 || ox >= s.out_w) return;
          const index_t out = nchw ? ((b * s.out_c + oc) * s.out_h + oy) * s.out_w + ox
                                   : ((b * s.out_h + oy) * s.out_w + ox) * s.out_c + oc;
          acc += detail::gated_load(grad_output, gate, out) *
                 to_float(platform::load(weight + (static_cast<index_t>(oc) * s.kernel_h + ky) * s.kernel_w + kx));
        });
      });
    }
    platform::store(grad_input + i, from_float<T>(acc));
  };
  const index_t total = s.input_elements();
  if (nchw)
    detail::for_each_grid_stride<4>(total, {s.c, s.h, s.w}, [&](const auto& at) {
      compute(at.index(), at.outer(), int(at[0]), int(at[1]), int(at[2]));
    });
  else
    detail::for_each_grid_stride<4>(total, {s.h, s.w, s.c}, [&](const auto& at) {
      compute(at.index(), at.outer(), int(at[2]), int(at[0]), int(at[1]));
    });
}

template <class T>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::grid_stride_block_threads, 1)
void depthwise_backward_weight_direct(detail::depthwise_shape s, const T* __restrict__ input, const T* __restrict__ grad_output,
                                      detail::gate_tensor<T> gate, T* __restrict__ grad_weight, T* __restrict__ grad_bias) {
  // Element strides of (image, row, column, channel) in both tensors: one linear form for
  // either layout (fewer values live across the loops than a form per layout).
  const bool nchw = s.data_layout == layout::nchw;
  const index_t in_x = nchw ? 1 : s.c, in_y = in_x * s.w, in_c = nchw ? static_cast<index_t>(s.h) * s.w : 1,
                in_b = static_cast<index_t>(s.c) * s.h * s.w;
  const index_t out_x = nchw ? 1 : s.out_c, out_y = out_x * s.out_w,
                out_c = nchw ? static_cast<index_t>(s.out_h) * s.out_w : 1,
                out_b = static_cast<index_t>(s.out_c) * s.out_h * s.out_w;
  // Coordinates (channel, copy, ky, kx): row ky = kernel_h is the bias (its kx = 0).
  detail::for_each_grid_stride<4>(static_cast<index_t>(s.c) * s.multiplier * (s.kernel_h + 1) * s.kernel_w,
                                  {static_cast<index_t>(s.multiplier), static_cast<index_t>(s.kernel_h + 1),
                                   static_cast<index_t>(s.kernel_w)},
                                  [&](const auto& at) {
    const int ic = int(at.outer()), oc = ic * s.multiplier + int(at[0]), ky = int(at[1]), kx = int(at[2]);
    const bool is_bias = ky == s.kernel_h;
    if (is_bias && (kx != 0 || !grad_bias)) return;
    float acc = 0.f;
    for (index_t b = 0; b < s.n; ++b)
      for (int oy = 0; oy < s.out_h; ++oy) {
        const int iy = oy * s.stride_h - s.pad_h + ky * s.dilation_h;
        if (!is_bias && (iy < 0 || iy >= s.h)) continue;
        for (int ox = 0; ox < s.out_w; ++ox) {
          const int ix = ox * s.stride_w - s.pad_w + kx * s.dilation_w;
          if (!is_bias && (ix < 0 || ix >= s.w)) continue;
          const float dz = detail::gated_load(grad_output, gate, b * out_b + oy * out_y + ox * out_x + oc * out_c);
          acc += is_bias ? dz : dz * to_float(platform::load(input + b * in_b + iy * in_y + ix * in_x + ic * in_c));
        }
      }
    if (is_bias)
      platform::store(grad_bias + oc, from_float<T>(acc));
    else
      platform::store(grad_weight + (static_cast<index_t>(oc) * s.kernel_h + ky) * s.kernel_w + kx, from_float<T>(acc));
  });
}

}  // namespace kernels
}  // namespace dsconv
