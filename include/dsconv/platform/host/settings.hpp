#pragma once
// Run-time settings of the host platform, read once from the environment:
//   DSCONV_HOST_WORKERS     worker threads that run blocks (default: the number of cores;
//                           1 runs blocks in order on the calling thread: deterministic)
//   DSCONV_HOST_WARP_SIZE   emulated warp width, a power of two from 1 to 64 (default 32;
//                           64 behaves like AMD wavefronts)
//   DSCONV_HOST_STACK_KIB   stack size of each emulated thread (default 64, 256 under ASan)

#include <atomic>
#include <cstdlib>
#include <thread>

#include "../../config.hpp"

namespace dsconv {
namespace platform {
namespace host_detail {

inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return (*end == '\0' && x > 0 && x < (1L << 20)) ? static_cast<int>(x) : fallback;
}

constexpr bool valid_warp_size(int w) { return w >= 1 && w <= max_warp_size && (w & (w - 1)) == 0; }

struct settings {
  std::atomic<int> workers;
  std::atomic<int> warp_size;
  std::atomic<int> stack_kib;

  settings() {
    const unsigned cores = std::thread::hardware_concurrency();
    workers = env_int("DSCONV_HOST_WORKERS", cores ? static_cast<int>(cores) : 1);
    const int w = env_int("DSCONV_HOST_WARP_SIZE", 32);
    warp_size = valid_warp_size(w) ? w : 32;
#if defined(DSCONV_ASAN)
    stack_kib = env_int("DSCONV_HOST_STACK_KIB", 256);
#else
    stack_kib = env_int("DSCONV_HOST_STACK_KIB", 64);
#endif
  }
};

inline settings& host_settings() {
  static settings s;
  return s;
}

}  // namespace host_detail
}  // namespace platform
}  // namespace dsconv
