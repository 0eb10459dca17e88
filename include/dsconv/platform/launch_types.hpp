#pragma once
// Launch description and device facts, identical on every platform. Included by each
// platform's runtime header after it has defined platform::stream_t.

#include <cstddef>

#include "../config.hpp"

namespace dsconv {
namespace platform {

// Grid, block and thread coordinates (CUDA's dim3 / uint3 without the runtime's header).
struct dims {
  unsigned x = 1, y = 1, z = 1;
  DSCONV_HOST_DEVICE constexpr unsigned long long volume() const {
    return static_cast<unsigned long long>(x) * y * z;
  }
};

struct launch_config {
  dims grid;
  dims block;
  std::size_t shared_bytes = 0;  // dynamic shared memory per block
  stream_t stream{};
  const char* name = "kernel";   // reported by the host platform's counters and errors
};

// Lanes a warp matrix multiply-accumulate (warp_mma.hpp) involves: a warp of NVIDIA's width.
inline constexpr int mma_warp_lanes = 32;

struct device_properties {
  int multiprocessor_count = 0;
  int warp_size = 0;
  int max_threads_per_block = 0;
  std::size_t shared_memory_per_block = 0;  // usable without opting in to more
  unsigned max_grid_x = 0, max_grid_y = 0, max_grid_z = 0;
  bool warp_mma = false;  // runs the tensor-core operations of warp_mma.hpp
};

}  // namespace platform
}  // namespace dsconv
