#pragma once
// Plain CPU depthwise convolution with double accumulation, for tests and for users who
// want to validate results. Buffers are host memory. Out may be T, float or double (double
// keeps the reference's full precision for comparisons).

#include "../dispatch/validate.hpp"
#include "../kernels/common/activation.hpp"
#include "../problem.hpp"
#include "output.hpp"

namespace dsconv {
namespace reference {

template <class T, class Out>
status depthwise_forward(const depthwise_params& p, const T* input, const T* weight, const T* bias, Out* output) {
  const status s = detail::validate(p, input, weight, bias, reinterpret_cast<const T*>(output));
  if (s != status::success) return s;
  const detail::depthwise_shape d = detail::make_shape(p);
  const bool nchw = d.data_layout == layout::nchw;
  for (index_t b = 0; b < d.n; ++b)
    for (int oc = 0; oc < d.out_c; ++oc) {
      const int ic = oc / d.multiplier;
      for (int oy = 0; oy < d.out_h; ++oy)
        for (int ox = 0; ox < d.out_w; ++ox) {
          double acc = bias ? reference_input(bias[oc]) : 0.0;
          for (int ky = 0; ky < d.kernel_h; ++ky)
            for (int kx = 0; kx < d.kernel_w; ++kx) {
              const index_t iy = static_cast<index_t>(oy) * d.stride_h - d.pad_h + static_cast<index_t>(ky) * d.dilation_h;
              const index_t ix = static_cast<index_t>(ox) * d.stride_w - d.pad_w + static_cast<index_t>(kx) * d.dilation_w;
              if (iy < 0 || iy >= d.h || ix < 0 || ix >= d.w) continue;
              const index_t in = nchw ? ((b * d.c + ic) * d.h + iy) * d.w + ix : ((b * d.h + iy) * d.w + ix) * d.c + ic;
              acc += reference_input(input[in]) *
                     reference_input(weight[(static_cast<index_t>(oc) * d.kernel_h + ky) * d.kernel_w + kx]);
            }
          const index_t out = nchw ? ((b * d.out_c + oc) * d.out_h + oy) * d.out_w + ox
                                   : ((b * d.out_h + oy) * d.out_w + ox) * d.out_c + oc;
          output[out] = reference_output<Out>(detail::activate(acc, d.act));
        }
    }
  return status::success;
}

}  // namespace reference
}  // namespace dsconv
