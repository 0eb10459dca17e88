#pragma once
// The fused epilogue of the pointwise GEMM kernels: C[m][n] = act(acc + bias + residual),
// cuDNN's conv-bias-add-activation order, for one element inside the matrix.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../common/activation.hpp"
#include "gemm_operands.hpp"

namespace dsconv {
namespace kernels {

template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void gemm_store(const detail::gemm_operands& g, index_t m, index_t n, float acc,
                                                 const T* __restrict__ bias, const T* __restrict__ residual,
                                                 T* __restrict__ c) {
  if (bias) acc += to_float(platform::load(bias + (g.bias_along_m ? m : n)));
  const index_t off = m * g.c_m + n * g.c_n;
  if (residual) acc += to_float(platform::load(residual + off));
  platform::store(c + off, from_float<T>(detail::activate(acc, g.act)));
}

}  // namespace kernels
}  // namespace dsconv
