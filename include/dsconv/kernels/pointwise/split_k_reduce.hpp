#pragma once
// The second launch of split_k: each output element is the sum of its partial sums over the
// K slices (workspace [slice][batch][m][n], written by a tiled GEMM kernel with
// partial_output), added in slice order so that every run gives the same bits, then the
// fused epilogue. Grid-stride over all elements; consecutive threads take consecutive n, so
// the workspace reads are coalesced.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../common/grid_stride.hpp"
#include "gemm_epilogue.hpp"
#include "gemm_operands.hpp"

namespace dsconv {
namespace kernels {

template <class T>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::grid_stride_block_threads, 1)
void pointwise_split_k_reduce(detail::gemm_operands g, const float* __restrict__ workspace, fused_output<T> out) {
  const index_t per_gemm = g.m * g.n, total = g.batches * per_gemm;
  for (index_t i = detail::global_thread_index(); i < total; i += detail::global_thread_count()) {
    const gemm_block blk{i / per_gemm, 0, 0, g.k};
    const index_t mn = i % per_gemm;
    float acc = 0.f;
    for (index_t s = 0; s < g.slices; ++s) acc += platform::load(workspace + s * total + i);
    out.store(g, blk, mn / g.n, mn % g.n, acc);
  }
}

}  // namespace kernels
}  // namespace dsconv
