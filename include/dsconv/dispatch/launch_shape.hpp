#pragma once
// Launch shapes shared by the launchers.

#include <cstdint>
#include <initializer_list>

#include "../config.hpp"
#include "../platform/platform.hpp"

namespace dsconv {
namespace detail {

// Of two pointers, one whose alignment is the lesser (the vector loads of a gated tensor read
// both at the same offsets).
template <class T>
const T* least_aligned(const T* a, const void* b) {
  const auto bits = [](const void* x) { return reinterpret_cast<std::uintptr_t>(x) & 15u; };
  return b && (bits(a) == 0 || (bits(b) & (~bits(b) + 1)) < (bits(a) & (~bits(a) + 1))) ? static_cast<const T*>(b) : a;
}

// Whether p may be read or written by 16-byte vector accesses.
inline bool aligned_16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Whether every tensor given (null: not given) is aligned to `bytes`: the tensor-core kernels'
// accesses (nhwc_matrix's 16-byte vectors, nchw_matrix's words) need it; where one is not,
// the layout's register kernel runs instead (launch_forward_register).
inline bool all_aligned(std::uintptr_t bytes, std::initializer_list<const void*> tensors) {
  for (const void* t : tensors)
    if (t && reinterpret_cast<std::uintptr_t>(t) % bytes != 0) return false;
  return true;
}

// The launch of a planned kernel: blocks of `threads`, the plan's grid and dynamic shared memory.
inline platform::launch_config planned_launch(unsigned threads, platform::dims grid, std::size_t shared_bytes,
                                              const char* name, platform::stream_t stream) {
  platform::launch_config cfg;
  cfg.block = platform::dims{threads, 1, 1};
  cfg.grid = grid;
  cfg.shared_bytes = shared_bytes;
  cfg.stream = stream;
  cfg.name = name;
  return cfg;
}

// The 1-D grid of blocks of `threads` for `items` threads with work, one item a thread (the
// register kernels' bands and walks): false where the items reach 2^31 (the kernels number them
// in 32 bits) or the blocks exceed the device's grid.
inline bool item_grid(long long items, unsigned threads, const platform::device_properties& dev, platform::dims& grid) {
  const long long blocks = (items + threads - 1) / threads;
  if (items >= (1LL << 31) || blocks > dev.max_grid_x) return false;
  grid = platform::dims{static_cast<unsigned>(blocks), 1, 1};
  return true;
}

// Consecutive pieces of work (bands, blocks, tiles) a worker of the register and tensor-core
// kernels walks (a thread, a warp or a block), for `items` pieces in all: one where that fills the
// device 8 times over at `resident_blocks` blocks of `workers` a multiprocessor, more (up to 8:
// each worker sets up once for them, and keeps what consecutive pieces share) where the grid is
// larger.
inline int walk_length(long long items, const platform::device_properties& dev, int resident_blocks, long long workers) {
  const long long wave = 8LL * dev.multiprocessor_count * resident_blocks * workers;
  const long long walk = items / wave;
  return static_cast<int>(walk < 1 ? 1 : walk > 8 ? 8 : walk);
}

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
