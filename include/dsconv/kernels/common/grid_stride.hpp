#pragma once
// 64-bit grid-stride iteration: a bounded grid covers any element count, so no launch is
// ever refused for size and no index wraps.

#include "../../config.hpp"
#include "../../platform/platform.hpp"

namespace dsconv {
namespace detail {

// The block size of every grid-stride kernel (declared in its launch bounds).
inline constexpr unsigned grid_stride_block_threads = 256;

DSCONV_DEVICE DSCONV_FORCEINLINE index_t global_thread_index() {
  return static_cast<index_t>(platform::block_idx().x) * platform::block_dim().x + platform::thread_idx().x;
}

DSCONV_DEVICE DSCONV_FORCEINLINE index_t global_thread_count() {
  return static_cast<index_t>(platform::grid_dim().x) * platform::block_dim().x;
}

}  // namespace detail
}  // namespace dsconv
