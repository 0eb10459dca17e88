#pragma once
// Pointwise (1x1) convolution for matrix-vector shapes (the squeeze-excitation layers, whose
// maps are 1x1, and other GEMMs less than a tile wide): one warp per output, its lanes
// splitting K so that both operands are read contiguously, then a deterministic butterfly
// reduction over the warp (any warp width). Fused bias, residual and activation.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "gemm_epilogue.hpp"
#include "gemm_operands.hpp"
#include "../common/index_walk.hpp"

namespace dsconv {
namespace detail {
inline constexpr unsigned warp_dot_block_threads = 256;
}  // namespace detail

namespace kernels {

template <class T>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::warp_dot_block_threads, 1)
void pointwise_warp_dot(detail::gemm_operands g, const T* __restrict__ a, const T* __restrict__ b,
                        fused_output<T> out) {
  namespace pf = platform;
  const int ws = pf::warp_size();
  const int lane = static_cast<int>(pf::thread_idx().x) % ws;
  const index_t warps_per_block = pf::block_dim().x / ws;
  const index_t first = static_cast<index_t>(pf::block_idx().x) * warps_per_block + pf::thread_idx().x / ws;
  const index_t stride = static_cast<index_t>(pf::grid_dim().x) * warps_per_block;
  const gemm_block blk = select_block(g, a, b);
  // dz read as dL/dy times act'(gate) (backward data of a layer with a fused activation).
  const T* gate = block_gate<T>(g, blk);
  const auto operand = [&](const T* p, index_t off, bool gated) {
    const float v = to_float(pf::load(p + off));
    return gated ? v * detail::activation_gradient(to_float(pf::load(gate + off)), g.gate_act) : v;
  };
  // Outputs (row, column), one per warp, uniform per warp: no lane diverges. (One GEMM along K:
  // the planner sends no summed ones here.)
  detail::for_each_strided<2>(g.m * g.n, {g.n}, first, stride, [&](const auto& at) {
    const index_t m = at.outer(), n = at[0];
    float acc = 0.f;
    for (index_t k = blk.k_begin + lane; k < blk.k_end; k += ws)
      acc += operand(a, m * g.a_m + k * g.a_k, gate && g.gate_on_a) * operand(b, k * g.b_k + n * g.b_n, gate && !g.gate_on_a);
    for (int offset = ws / 2; offset > 0; offset /= 2) acc += pf::shfl_xor(acc, offset);
    if (lane == 0) out.store(g, blk, m, n, acc);
  });
}

}  // namespace kernels
}  // namespace dsconv
