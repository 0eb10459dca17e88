#pragma once
// Timing on the host platform: CPU wall time of the emulated launches (a launch there runs
// the whole grid before it returns). No cache to defeat and no copy bandwidth to compare
// with: the host platform's evidence is its traffic counters, not its time.

#include <chrono>
#include <string>

#include <dsconv/dsconv.hpp>

#include "kernel_bench/device_facts.hpp"

#if defined(DSCONV_PLATFORM_HOST)

namespace dsconv_bench {

class pass_timer {
 public:
  std::string init() { return {}; }

  // Calls launch(i) for i in [0, launches) and reports the seconds they took.
  template <class Launch>
  std::string time(int launches, double /*lead_seconds*/, Launch&& launch, double& seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    std::string e;
    for (int i = 0; i < launches && e.empty(); ++i) e = launch(i);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return e;
  }
};

inline std::string measure_device(device_facts& f) {
  f.description = "host platform (CPU), " + std::to_string(dsconv::host::worker_count()) + " worker threads, warp " +
                  std::to_string(dsconv::host::warp_size());
  return {};
}

}  // namespace dsconv_bench

#endif
