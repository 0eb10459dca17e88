#pragma once
// Selects the platform (config.hpp decides from the compiler) and provides, in namespace
// dsconv::platform, the same interface on each:
//   runtime:  stream_t, launch(kernel, launch_config, args...), registered<kernel>(),
//             synchronize(stream),
//             get_device_properties, device_malloc/free, copy_to_device/host, device_memset
//   kernels:  thread_idx, block_idx, block_dim, grid_dim, warp_size, lane_id, sync_threads,
//             shfl / shfl_xor / shfl_down / shfl_up, ballot, dynamic_shared<T>,
//             DSCONV_SHARED_ARRAY(T, name, extents) (a static shared array),
//             load / store / load_vec / store_vec and shared_load / shared_load_as /
//             shared_store (memory_access.hpp), DSCONV_LOOP_MARKS (loop_marks.hpp),
//             async_copy_16 / async_copy_whole<N> / async_copy_wait (async_copy.hpp),
//             mma_16x8x16 / mma_16x8x8_tf32(_split) / round_to_tf32 (warp_mma.hpp),
//             mfma_16x16x16 (wave_mfma.hpp); recomputed / recomputed_test / unwidened /
//             held_global (recomputed.hpp, included where a kernel uses them)
// Only files under platform/ name CUDA or HIP symbols.

#include "../config.hpp"

#if defined(DSCONV_PLATFORM_CUDA)
#include "cuda.hpp"
#elif defined(DSCONV_PLATFORM_HIP)
#include "hip.hpp"
#else
#include "host.hpp"
#endif

// DSCONV_SHARED_ARRAY(float, tile, [2][64]) declares `tile`, a float[2][64] in the block's
// shared memory, 16-byte aligned. On the host platform it is a reference into the block's
// arena (host/shared_memory.hpp), poisoned at every block start like dynamic shared memory;
// the static `key` (one per declaration and kernel instantiation) names it there.
#if defined(DSCONV_PLATFORM_HOST)
#define DSCONV_SHARED_ARRAY(T, name, extents) \
  static char name##_shared_key;              \
  T(&name) extents = ::dsconv::platform::static_shared<T extents>(&name##_shared_key)
#else
#define DSCONV_SHARED_ARRAY(T, name, extents) alignas(16) __shared__ T name extents
#endif

#include "float16.hpp"
#include "registered_kernel.hpp"
#include "memory_access.hpp"
#include "loop_marks.hpp"
#include "async_copy.hpp"
#include "warp_mma.hpp"
#include "wave_mfma.hpp"

namespace dsconv {
using stream_t = platform::stream_t;
}  // namespace dsconv
