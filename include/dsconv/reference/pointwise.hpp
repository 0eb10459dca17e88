#pragma once
// Plain CPU pointwise (1x1) convolution with double accumulation, for tests and for users
// who want to validate results. Buffers are host memory. Out may be T, float or double.

#include <cstddef>
#include <vector>

#include "../dispatch/validate.hpp"
#include "../kernels/common/activation.hpp"
#include "../problem.hpp"
#include "output.hpp"

namespace dsconv {
namespace reference {

template <class T, class Out>
status pointwise_forward(const pointwise_params& p, const T* input, const T* weight, const T* bias, const T* residual,
                         Out* output) {
  const status s = detail::validate(p, input, weight, bias, residual, reinterpret_cast<const T*>(output));
  if (s != status::success) return s;
  const detail::pointwise_shape d = detail::make_shape(p);
  const index_t pixels = d.pixels();
  const bool nchw = d.data_layout == layout::nchw;
  // The weights, and each pixel's inputs (`pixels` apart in NCHW), converted once rather than
  // at every product. Each sum runs over ci in order from the bias (the same bits as one output
  // at a time); four outputs advance side by side, where each addition of a single sum had
  // waited on the one before (the float 1x1 layer sweep spent 13 % of its time here).
  std::vector<double> w(static_cast<std::size_t>(d.c_out) * d.c_in), x(static_cast<std::size_t>(d.c_in));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = reference_input(weight[i]);
  constexpr int side_by_side = 4;
  for (index_t b = 0; b < d.n; ++b)
    for (index_t px = 0; px < pixels; ++px) {
      for (int ci = 0; ci < d.c_in; ++ci)
        x[ci] = reference_input(input[nchw ? (b * d.c_in + ci) * pixels + px : (b * pixels + px) * d.c_in + ci]);
      for (int co0 = 0; co0 < d.c_out; co0 += side_by_side) {
        const int count = d.c_out - co0 < side_by_side ? d.c_out - co0 : side_by_side;
        double acc[side_by_side] = {};
        const double* w_co[side_by_side];
        for (int j = 0; j < side_by_side; ++j) {
          const int co = co0 + (j < count ? j : 0);  // (past the last output: a copy of the first, not stored)
          acc[j] = bias ? reference_input(bias[co]) : 0.0;
          w_co[j] = w.data() + static_cast<std::size_t>(co) * d.c_in;
        }
        for (int ci = 0; ci < d.c_in; ++ci)
          for (int j = 0; j < side_by_side; ++j) acc[j] += x[ci] * w_co[j][ci];
        for (int j = 0; j < count; ++j) {
          const index_t out = nchw ? (b * d.c_out + co0 + j) * pixels + px : (b * pixels + px) * d.c_out + co0 + j;
          const double z = residual ? acc[j] + reference_input(residual[out]) : acc[j];
          output[out] = reference_output<Out>(detail::activate(z, d.act));
        }
      }
    }
  return status::success;
}

}  // namespace reference
}  // namespace dsconv
