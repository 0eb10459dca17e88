#pragma once
// Selects the platform (config.hpp decides from the compiler) and provides, in namespace
// dsconv::platform, the same interface on each:
//   runtime:  stream_t, launch(kernel, launch_config, args...), synchronize(stream),
//             get_device_properties, device_malloc/free, copy_to_device/host, device_memset
//   kernels:  thread_idx, block_idx, block_dim, grid_dim, warp_size, lane_id, sync_threads,
//             shfl / shfl_xor / shfl_down / shfl_up, ballot, dynamic_shared<T>,
//             load / store / load_vec / store_vec (memory_access.hpp), DSCONV_SHARED,
//             async_copy_16 / async_copy_wait (async_copy.hpp),
//             mma_16x8x16 / mma_16x8x8_tf32 / round_to_tf32 (warp_mma.hpp),
//             mfma_16x16x16 (wave_mfma.hpp)
// Only files under platform/ name CUDA or HIP symbols.

#include "../config.hpp"

#if defined(DSCONV_PLATFORM_CUDA)
#include "cuda.hpp"
#define DSCONV_SHARED __shared__
#elif defined(DSCONV_PLATFORM_HIP)
#include "hip.hpp"
#define DSCONV_SHARED __shared__
#else
#include "host.hpp"
// A worker runs one block at a time and all fibers of a block share its OS thread, so a
// thread_local is exactly one block's shared memory.
#define DSCONV_SHARED static thread_local
#endif

#include "float16.hpp"
#include "memory_access.hpp"
#include "async_copy.hpp"
#include "warp_mma.hpp"
#include "wave_mfma.hpp"

namespace dsconv {
using stream_t = platform::stream_t;
}  // namespace dsconv
