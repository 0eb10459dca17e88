#pragma once
// What every pointwise GEMM kernel does around its main loop: pick its GEMM of the batch, and
// the fused epilogue C[m][n] = act(acc + bias + residual), cuDNN's conv-bias-add-activation
// order, for one element inside the matrix.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../common/activation.hpp"
#include "gemm_operands.hpp"

namespace dsconv {
namespace kernels {

// Moves the operand pointers to the GEMM of this block's grid.z index (an image in the NCHW
// form; the only GEMM otherwise).
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void select_batch(const detail::gemm_operands& g, const T* __restrict__& a,
                                                   const T* __restrict__& b, const T* __restrict__& residual,
                                                   T* __restrict__& c) {
  const index_t batch = platform::block_idx().z;
  a += batch * g.a_batch;
  b += batch * g.b_batch;
  c += batch * g.c_batch;
  if (residual) residual += batch * g.c_batch;
}

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
