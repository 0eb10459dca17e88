#pragma once
// Pointwise (1x1) direct kernel, for every pass: one element of C per thread per grid-stride
// step, a dot product over the whole (summed) K read through the operands' strides
// (gemm_operands.hpp), with the output's epilogue; threads of column 0 also sum their row of A
// where the backward weight pass wants the bias gradient. The correct baseline every faster
// variant is measured against.

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
void pointwise_direct(detail::gemm_operands g, const T* __restrict__ a, const T* __restrict__ b, fused_output<T> out) {
  const T* gate = static_cast<const T*>(g.gate);
  const index_t gate_batch = g.gate_on_a ? g.a_batch : g.b_batch;
  // Coordinates (output GEMM, row, column) of C.
  detail::for_each_grid_stride<3>(g.batches * g.m * g.n, {g.m, g.n}, [&](const auto& at) {
    const index_t batch = at.outer(), m = at[0], n = at[1];
    const bool sum_row = out.sums_rows() && n == 0;
    float acc = 0.f, row = 0.f;
    for (index_t kb = 0; kb < g.k_batches; ++kb) {
      const index_t gemm = batch + kb;  // an output GEMM or a summed one: never both above 0
      const T* ab = a + gemm * g.a_batch;
      const T* bb = b + gemm * g.b_batch;
      const T* gb = gate ? gate + gemm * gate_batch : nullptr;
      for (index_t k = 0; k < g.k; ++k) {
        const index_t a_off = m * g.a_m + k * g.a_k, b_off = k * g.b_k + n * g.b_n;
        float x = to_float(platform::load(ab + a_off)), y = to_float(platform::load(bb + b_off));
        if (gb) {
          float& gated = g.gate_on_a ? x : y;
          gated *= detail::activation_gradient(to_float(platform::load(gb + (g.gate_on_a ? a_off : b_off))), g.gate_act);
        }
        acc += x * y;
        if (sum_row) row += x;
      }
    }
    const gemm_block blk{batch, 0, 0, g.k};
    out.store(g, blk, m, n, acc);
    if (sum_row) out.store_row_sum(g, blk, m, row);
  });
}

}  // namespace kernels
}  // namespace dsconv
