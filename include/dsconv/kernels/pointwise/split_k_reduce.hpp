#pragma once
// The second launch of split_k: each output element is the sum of its partial sums over the
// K slices (workspace [slice][batch][m][n], written by a tiled GEMM kernel with
// partial_output), added in slice order so that every run gives the same bits, then the
// fused epilogue (and the same for A's row sums, where the backward weight pass wants its bias
// gradient). Grid-stride over all elements, in runs of 4 along n where the output and the
// workspace allow 16-byte accesses of them (one vector load a slice, one vector store, the
// activation a compile-time constant: the element loop switched on it for every element);
// consecutive threads take consecutive n, so the workspace reads are coalesced.

#include <cstdint>

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../common/activation.hpp"
#include "../common/grid_stride.hpp"
#include "gemm_epilogue.hpp"
#include "gemm_operands.hpp"

namespace dsconv {
namespace kernels {

template <class T>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::grid_stride_block_threads, 1)
void pointwise_split_k_reduce(detail::gemm_operands g, const float* __restrict__ workspace,
                              const float* __restrict__ row_partials, fused_output<T> out) {
  // Coordinates (GEMM of the batch, row, column of runs of R); the flat index times R is the
  // offset in each slice.
  const index_t total = g.batches * g.m * g.n;
  const bool vector = out.vector_elems >= 4 && g.n % 4 == 0 &&
                      reinterpret_cast<std::uintptr_t>(workspace) % (4 * sizeof(float)) == 0;
  const int R = vector ? 4 : 1;
  const index_t runs = total / R, first = detail::global_thread_index();
  if (first < runs) {
    // (the walk placed once: its divisions outside the activation's cases)
    const detail::index_walk<3, index_t> start({g.m, g.n / R}, first, detail::global_thread_count());
    detail::with_activation(g.act, [&](auto act) {
      detail::for_each_walked(runs, start, [&](const auto& at) {
        const gemm_block blk{at.outer(), 0, 0, g.k};
        const index_t off = at.index() * R;
        if (vector) {
          platform::vec<float, 4> acc{};
          for (index_t s = 0; s < g.slices; ++s) {
            const platform::vec<float, 4> part = platform::load_vec<4>(workspace + s * total + off);
            DSCONV_UNROLL
            for (int e = 0; e < 4; ++e) acc[e] += part[e];
          }
          out.template store_run<4>(g, blk, at[0], at[1] * 4, acc, act);
        } else {
          float acc = 0.f;
          for (index_t s = 0; s < g.slices; ++s) acc += platform::load(workspace + s * total + off);
          out.store(g, blk, at[0], at[1], acc, act);
        }
      });
    });
  }
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
