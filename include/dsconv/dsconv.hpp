#pragma once
// dsconv: depthwise and pointwise (1x1) convolution kernels for CUDA, HIP and the CPU host
// platform. The only header a user needs.

#include "config.hpp"
#include "dispatch/depthwise.hpp"
#include "dispatch/depthwise_backward.hpp"
#include "dispatch/inverted_residual.hpp"
#include "dispatch/pointwise.hpp"
#include "dispatch/pointwise_backward.hpp"
#include "dispatch/variants.hpp"
#include "instantiations.hpp"
#include "memory.hpp"
#include "params.hpp"
#include "platform/platform.hpp"
// After the platform: the 16-bit types need the GPU runtime's intrinsics declared first (HIP).
#include "batch_norm.hpp"
#include "block_params.hpp"
#include "reference/depthwise.hpp"
#include "reference/pointwise.hpp"
#include "reference/depthwise_backward.hpp"
#include "reference/inverted_residual.hpp"
#include "reference/pointwise_backward.hpp"
#include "status.hpp"
#include "types.hpp"
#include "version.hpp"

namespace dsconv {

// Waits until all work queued on `stream` has finished; reports faults of that work.
inline status synchronize(stream_t stream = {}) { return platform::synchronize(stream); }

}  // namespace dsconv
