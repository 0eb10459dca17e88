#pragma once
// What every pointwise GEMM kernel does around its main loop: find its GEMM of the batch and
// its K range, and store what it accumulated: through the fused epilogue
// C[m][n] = act(acc + bias + residual) (cuDNN's conv-bias-add-activation order), or as a
// split-K partial sum.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../common/activation.hpp"
#include "gemm_operands.hpp"

namespace dsconv {
namespace kernels {

// Where this block works: its GEMM of the batch (an image in the NCHW form; the only GEMM
// otherwise) and its range of K (all of it, unless split_k divides K over several blocks).
struct gemm_block {
  index_t batch, slice, k_begin, k_end;
};

// Reads the block's place from grid.z and moves the operand pointers to its GEMM.
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE gemm_block select_block(const detail::gemm_operands& g, const T* __restrict__& a,
                                                         const T* __restrict__& b) {
  const index_t z = platform::block_idx().z;
  gemm_block blk;
  blk.batch = z / g.slices, blk.slice = z % g.slices;
  blk.k_begin = blk.slice * g.k_slice;
  blk.k_end = blk.k_begin + g.k_slice < g.k ? blk.k_begin + g.k_slice : g.k;
  a += blk.batch * g.a_batch;
  b += blk.batch * g.b_batch;
  return blk;
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

// What a tiled GEMM kernel does with an accumulated element. fused_output: the epilogue above,
// into the output tensor.
template <class T>
struct fused_output {
  const T* bias;
  const T* residual;
  T* c;
  DSCONV_DEVICE DSCONV_FORCEINLINE void store(const detail::gemm_operands& g, const gemm_block& blk, index_t m,
                                              index_t n, float acc) const {
    gemm_store(g, m, n, acc, bias, residual ? residual + blk.batch * g.c_batch : nullptr, c + blk.batch * g.c_batch);
  }
};

// partial_output (split_k): the raw fp32 sum of the block's K range, into the workspace laid
// out as [slice][batch][m][n]; pointwise_split_k_reduce adds the slices and applies the epilogue.
struct partial_output {
  float* workspace;
  DSCONV_DEVICE DSCONV_FORCEINLINE void store(const detail::gemm_operands& g, const gemm_block& blk, index_t m,
                                              index_t n, float acc) const {
    platform::store(workspace + ((blk.slice * g.batches + blk.batch) * g.m + m) * g.n + n, acc);
  }
};

}  // namespace kernels
}  // namespace dsconv
