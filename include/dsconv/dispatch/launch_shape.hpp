#pragma once
// Launch shapes shared by the launchers.

#include "../config.hpp"
#include "../platform/platform.hpp"

namespace dsconv {
namespace detail {

// A 1-D grid for a grid-stride kernel over `elements`: enough blocks to fill every
// multiprocessor several times over, never more than the work or the device allow.
inline platform::launch_config grid_stride_launch(index_t elements, unsigned block_threads,
                                                  const platform::device_properties& dev, platform::stream_t stream,
                                                  const char* name) {
  const index_t wanted = (elements + block_threads - 1) / block_threads;
  const index_t resident = static_cast<index_t>(dev.multiprocessor_count > 0 ? dev.multiprocessor_count : 1) * 32;
  index_t blocks = wanted < resident ? wanted : resident;
  if (blocks > static_cast<index_t>(dev.max_grid_x)) blocks = dev.max_grid_x;
  if (blocks < 1) blocks = 1;
  platform::launch_config cfg;
  cfg.grid = platform::dims{static_cast<unsigned>(blocks), 1, 1};
  cfg.block = platform::dims{block_threads, 1, 1};
  cfg.stream = stream;
  cfg.name = name;
  return cfg;
}

}  // namespace detail
}  // namespace dsconv
