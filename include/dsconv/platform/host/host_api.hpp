#pragma once
// Public controls of the host platform (namespace dsconv::host), for tests, benchmarks and
// users who run dsconv on the CPU: the emulated device profile and warp width, the worker
// count, the schedules of threads and blocks, the launch count, the memory traffic recorder
// (global-memory sectors and shared-memory bank wavefronts), and the registry of compiled
// kernels and where they ran.

#include <cstdint>
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
using bank_counters = platform::host_detail::bank_counters;
using site_bank_counters = platform::host_detail::site_bank_counters;
using launch_record = platform::host_detail::launch_record;
using schedule = platform::host_detail::schedule;
using block_order = platform::host_detail::block_order;
using compiled_kernel = platform::host_detail::compiled_kernel;
using kernel_run = platform::host_detail::kernel_run;
using platform::host_detail::to_string;

// The GPUs the host platform can emulate for the planners (sm80, sm90, sm75, gfx906, gfx90a).
inline std::vector<platform::device_properties> device_profiles() {
  std::size_t n = 0;
  const platform::device_properties* all = platform::host_detail::device_profiles(n);
  return std::vector<platform::device_properties>(all, all + n);
}

// The emulated device for later launches and plans: a profile by name, with its warp width.
inline status set_device(const char* profile) {
  const platform::device_properties* p = platform::host_detail::find_device_profile(profile);
  if (!p) return platform::fail(status::invalid_size, std::string("set_device: no device profile '") + (profile ? profile : "") + "'");
  platform::host_detail::host_settings().set_device(*p);
  return status::success;
}

// Any device description (e.g. a profile with another multiprocessor count).
inline status set_device(const platform::device_properties& p) {
  if (p.multiprocessor_count < 1 || !platform::host_detail::valid_warp_size(p.warp_size) || p.max_threads_per_block < 1 ||
      p.shared_memory_per_block > platform::host_detail::shared_arena::capacity)
    return platform::fail(status::invalid_size, "set_device: the description has no multiprocessors, an invalid warp "
                                                "width or thread limit, or more shared memory than the host provides");
  platform::host_detail::host_settings().set_device(p);
  return status::success;
}

inline platform::device_properties device() { return platform::host_detail::host_settings().device(); }

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
  platform::host_detail::host_settings().set_warp_size(width);
  return status::success;
}

// Whether the matrix-unit kernels count as compiled for the device's matrix unit: false
// emulates a GPU build for targets without one (CUDA for sm_75 alone running on an sm_80),
// where the dispatcher must not choose them.
inline void set_matrix_code(bool compiled) { platform::host_detail::host_settings().matrix_code = compiled; }

// With true, later launches are checked and recorded (traffic_recorder::launches, with no
// traffic) but run no block and write nothing: for tools that list what the planners launch
// (tools/plan_launches.cpp) without the time of emulating it.
inline void set_plan_only(bool plan_only) { platform::host_detail::host_settings().plan_only = plan_only; }

// The order of a block's threads between barriers for later launches (settings.hpp).
inline void set_schedule(schedule s) { platform::host_detail::host_settings().thread_schedule = s; }
inline schedule current_schedule() { return platform::host_detail::host_settings().thread_schedule.load(); }
// The schedule called `name` ("rotate", "ascending", ...); false if there is none.
inline bool parse_schedule(const char* name, schedule& out) {
  return platform::host_detail::parse_name(name, platform::host_detail::schedule_names, out);
}

// The order in which later launches hand their blocks to the workers.
inline void set_block_order(block_order o) { platform::host_detail::host_settings().blocks = o; }
inline block_order current_block_order() { return platform::host_detail::host_settings().blocks.load(); }

// The seed of the shuffled schedules and block orders.
inline void set_seed(std::uint64_t seed) { platform::host_detail::host_settings().seed = seed; }

// Every kernel the program contains that a launcher names (platform::registered), and the
// warp widths, device profiles and schedules each has run under so far.
inline std::vector<compiled_kernel> compiled_kernels() { return platform::host_detail::registry().kernels(); }
inline std::vector<kernel_run> kernel_runs() { return platform::host_detail::registry().runs(); }

// Launches attempted since the program started (also those that failed in a kernel; not
// those rejected before any block ran). Tests use it to prove that bad input launches nothing.
inline unsigned long long launch_count() {
  return platform::host_detail::launches().launches.load(std::memory_order_relaxed);
}

// "assembly" or "ucontext": which context switch this build uses.
inline const char* context_switch_kind() { return platform::host_detail::context_switch_name; }

// Records the memory traffic of every launch made while it is alive (from any thread):
// global-memory requests and sectors, and shared-memory bank wavefronts. Counting slows
// kernels down several times, so it is off when no recorder exists.
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
