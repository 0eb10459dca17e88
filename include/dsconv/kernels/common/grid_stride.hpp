#pragma once
// 64-bit grid-stride iteration: a bounded grid covers any element count, so no launch is
// ever refused for size and no index wraps.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "index_walk.hpp"

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

// The grid-stride loop over `count` elements, each given to body(at) with its coordinates
// (index_walk: no division per element).
template <int N, class Body>
DSCONV_DEVICE DSCONV_FORCEINLINE void for_each_grid_stride(index_t count, const index_t (&inner)[N - 1],
                                                           Body body DSCONV_CALL_SITE) {
  for_each_strided<N>(count, inner, global_thread_index(), global_thread_count(), body DSCONV_CALL_SITE_ARGS);
}

}  // namespace detail
}  // namespace dsconv
