#pragma once
// Public controls of the host platform (namespace dsconv::host), for tests, benchmarks and
// users who run dsconv on the CPU: worker count, emulated warp width, launch count, and the
// global-memory traffic recorder.

#include <mutex>
#include <string>
#include <vector>

#include "../../status.hpp"
#include "../error_detail.hpp"
#include "context.hpp"
#include "runtime.hpp"
#include "settings.hpp"
#include "traffic.hpp"

namespace dsconv {
namespace host {

using traffic_counters = platform::host_detail::traffic_counters;
using launch_record = platform::host_detail::launch_record;

inline int worker_count() { return platform::host_detail::host_settings().workers.load(); }

// Worker threads for later launches (>= 1; 1 runs blocks in order: deterministic).
inline status set_worker_count(int workers) {
  if (workers < 1 || workers > 4096) return platform::fail(status::invalid_size, "set_worker_count: " + std::to_string(workers));
  platform::host_detail::host_settings().workers = workers;
  return status::success;
}

inline int warp_size() { return platform::host_detail::host_settings().warp_size.load(); }

// Emulated warp width for later launches: a power of two from 1 to 64.
inline status set_warp_size(int width) {
  if (!platform::host_detail::valid_warp_size(width))
    return platform::fail(status::invalid_size, "set_warp_size: " + std::to_string(width) + " is not a power of two in [1, 64]");
  platform::host_detail::host_settings().warp_size = width;
  return status::success;
}

// Launches attempted since the program started (also those that failed in a kernel; not
// those rejected before any block ran). Tests use it to prove that bad input launches nothing.
inline unsigned long long launch_count() {
  return platform::host_detail::launches().launches.load(std::memory_order_relaxed);
}

// "assembly" or "ucontext": which context switch this build uses.
inline const char* context_switch_kind() { return platform::host_detail::context_switch_name; }

// Records the global-memory traffic of every launch made while it is alive (from any
// thread). Counting slows kernels down several times, so it is off when no recorder exists.
class traffic_recorder {
 public:
  traffic_recorder() {
    auto& s = platform::host_detail::launches();
    std::lock_guard<std::mutex> lock(s.recorders_mutex);
    s.recorders.push_back(&records_);
    platform::host_detail::traffic_recorders_alive().fetch_add(1);
  }
  traffic_recorder(const traffic_recorder&) = delete;
  traffic_recorder& operator=(const traffic_recorder&) = delete;
  ~traffic_recorder() {
    auto& s = platform::host_detail::launches();
    std::lock_guard<std::mutex> lock(s.recorders_mutex);
    for (auto it = s.recorders.begin(); it != s.recorders.end(); ++it)
      if (*it == &records_) {
        s.recorders.erase(it);
        break;
      }
    platform::host_detail::traffic_recorders_alive().fetch_sub(1);
  }

  // One record per launch, in launch order. Read it after the launches have returned.
  const std::vector<launch_record>& launches() const { return records_; }

  traffic_counters total() const {
    traffic_counters t;
    for (const auto& r : records_) t += r.traffic;
    return t;
  }

  void clear() {
    std::lock_guard<std::mutex> lock(platform::host_detail::launches().recorders_mutex);
    records_.clear();
  }

 private:
  std::vector<launch_record> records_;
};

}  // namespace host
}  // namespace dsconv
