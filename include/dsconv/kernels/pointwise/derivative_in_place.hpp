#pragma once
// act'(z) in place of z in the tensor a 1x1 forward saved for its backward, where the GEMM
// epilogues wrote z (pointwise_options::activation_derivative on every variant but mma_stream,
// whose epilogue writes the derivative itself): one grid-stride pass over the tensor. The tiled
// GEMM's epilogue takes its activation at run time, and the six derivatives there (inlined at
// every element, or called) left its accumulators in scratch memory on AMD (bfloat16 builds).
// z rounded to T first: the derivative's error is its slope times that rounding, which z's own
// allows.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../common/activation.hpp"
#include "../common/grid_stride.hpp"

namespace dsconv {
namespace kernels {

template <class T>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::grid_stride_block_threads, 1)
void pointwise_derivative_in_place(T* __restrict__ saved, index_t count, activation act) {
  detail::with_activation(act, [&](auto a) {
    for (index_t i = detail::global_thread_index(); i < count; i += detail::global_thread_count())
      platform::store(saved + i, from_float<T>(detail::derivative_at<decltype(a)::value>(to_float(platform::load(saved + i)))));
  });
}

}  // namespace kernels
}  // namespace dsconv
