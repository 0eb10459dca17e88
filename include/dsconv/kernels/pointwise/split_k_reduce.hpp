#pragma once
// The second launch of split_k: each output element is the sum of its partial sums over the
// K slices (workspace [slice][batch][m][n], written by a tiled GEMM kernel with
// partial_output), added in slice order so that every run gives the same bits, then the
// fused epilogue (and the same for A's row sums, where the backward weight pass wants its bias
// gradient). Grid-stride over all elements; consecutive threads take consecutive n, so the
// workspace reads are coalesced.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../common/grid_stride.hpp"
#include "gemm_epilogue.hpp"
#include "gemm_operands.hpp"

namespace dsconv {
namespace kernels {

template <class T>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::grid_stride_block_threads, 1)
void pointwise_split_k_reduce(detail::gemm_operands g, const float* __restrict__ workspace,
                              const float* __restrict__ row_partials, fused_output<T> out) {
  // Coordinates (GEMM of the batch, row, column); the flat index is the offset in each slice.
  const index_t total = g.batches * g.m * g.n;
  detail::for_each_grid_stride<3>(total, {g.m, g.n}, [&](const auto& at) {
    float acc = 0.f;
    for (index_t s = 0; s < g.slices; ++s) acc += platform::load(workspace + s * total + at.index());
    out.store(g, gemm_block{at.outer(), 0, 0, g.k}, at[0], at[1], acc);
  });
  // The row sums of A (the backward weight's bias gradient), [slice][m], likewise.
  if (!row_partials) return;
  detail::for_each_grid_stride<2>(g.m, {1}, [&](const auto& at) {
    float acc = 0.f;
    for (index_t s = 0; s < g.slices; ++s) acc += platform::load(row_partials + s * g.m + at.index());
    out.store_row_sum(g, gemm_block{0, 0, 0, g.k}, at.index(), acc);
  });
}

}  // namespace kernels
}  // namespace dsconv
