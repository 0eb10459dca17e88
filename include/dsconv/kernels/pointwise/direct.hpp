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
    // Row m of A and column n of B walked by pointer (few values live across the loop); the
    // gate moves with the operand it gates.
    const index_t gate_step = g.gate_on_a ? g.a_k : g.b_k;
    for (index_t kb = 0; kb < g.k_batches; ++kb) {
      const index_t gemm = batch + kb;  // an output GEMM or a summed one: never both above 0
      const T* pa = a + gemm * g.a_batch + m * g.a_m;
      const T* pb = b + gemm * g.b_batch + n * g.b_n;
      const T* pg = gate ? gate + gemm * gate_batch + (g.gate_on_a ? m * g.a_m : n * g.b_n) : nullptr;
      for (index_t k = 0; k < g.k; ++k, pa += g.a_k, pb += g.b_k) {
        float x = to_float(platform::load(pa)), y = to_float(platform::load(pb));
        if (pg) {
          // (Not a reference to x or y: one chosen at run time would live in scratch memory.)
          const float slope = detail::activation_gradient(to_float(platform::load(pg)), g.gate_act);
          if (g.gate_on_a)
            x *= slope;
          else
            y *= slope;
          pg += gate_step;
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
