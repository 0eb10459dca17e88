#pragma once
// The host platform's runtime: streams, launches, memory and device facts. A launch runs
// the grid to completion before it returns (every stream is therefore always idle); blocks
// are spread over a pool of worker threads, the caller being one of them, in the chosen
// block order. The device facts are the emulated device profile's (settings.hpp), and
// launches are held to its limits.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../status.hpp"
#include "../error_detail.hpp"

#include "stream.hpp"
#include "../launch_types.hpp"
#include "block_runner.hpp"
#include "kernel_registry.hpp"
#include "settings.hpp"
#include "traffic.hpp"

namespace dsconv {
namespace platform {
namespace host_detail {

// Threads that call `work` together for each launch; the caller of run() is one of them.
class worker_pool {
 public:
  explicit worker_pool(int threads) : size_(threads < 1 ? 1 : threads) {
    for (int i = 1; i < size_; ++i) helpers_.emplace_back([this, i] { serve(i - 1); });
  }
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;
  ~worker_pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : helpers_) t.join();
  }
  int size() const { return size_; }

  // Calls work() on the calling thread and on up to `helpers` pool threads, and returns
  // when all calls have returned. Waking a helper costs microseconds, so a grid of one
  // block wakes none.
  template <class F>
  void run(F& work, int helpers) {
    helpers = helpers < static_cast<int>(helpers_.size()) ? helpers : static_cast<int>(helpers_.size());
    if (helpers > 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = kernel_body::from(work);
      active_ = helpers;
      pending_ = helpers;
      ++generation_;
    }
    if (helpers > 0) wake_.notify_all();
    work();
    if (helpers > 0) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [this] { return pending_ == 0; });
    }
  }

 private:
  void serve(int index) {
    unsigned long long seen = 0;
    for (;;) {
      kernel_body job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        if (index >= active_) continue;
        job = job_;
      }
      job.invoke(job.callable);
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_all();
    }
  }

  int size_;
  std::vector<std::thread> helpers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  kernel_body job_;
  int pending_ = 0, active_ = 0;
  unsigned long long generation_ = 0;
  bool stopping_ = false;
};

struct launch_record {
  std::string kernel;  // its registered name (with template arguments), else the launch's name
  dims grid, block;
  std::size_t shared_bytes = 0;
  traffic_counters traffic;
};

// Process-wide state of launches; one grid runs at a time.
struct launch_state {
  std::mutex launch_mutex;
  std::unique_ptr<worker_pool> pool;
  std::atomic<unsigned long long> launches{0};
  std::mutex recorders_mutex;
  std::vector<std::vector<launch_record>*> recorders;
};

inline launch_state& launches() {
  static launch_state s;
  return s;
}

inline status check_launch_config(const launch_config& cfg, const device_properties& dev) {
  const dims& g = cfg.grid;
  const dims& b = cfg.block;
  if (g.x < 1 || g.y < 1 || g.z < 1 || b.x < 1 || b.y < 1 || b.z < 1 || g.x > dev.max_grid_x || g.y > dev.max_grid_y ||
      g.z > dev.max_grid_z || b.z > 64u || b.volume() > static_cast<unsigned long long>(dev.max_threads_per_block) ||
      cfg.shared_bytes > dev.shared_memory_per_block)
    return fail(status::invalid_launch_config,
                std::string(cfg.name) + ": grid (" + std::to_string(g.x) + "," + std::to_string(g.y) + "," +
                    std::to_string(g.z) + "), block (" + std::to_string(b.x) + "," + std::to_string(b.y) + "," +
                    std::to_string(b.z) + "), " + std::to_string(cfg.shared_bytes) +
                    " bytes of dynamic shared memory exceed the limits");
  return status::success;
}

inline block_runner& worker_runner() {
  thread_local block_runner runner;
  return runner;
}

// The schedule of block `block` of launch number `launch`: the setting, or under rotate the
// next fixed order for each block.
inline schedule block_schedule(schedule setting, unsigned long long launch, unsigned long long block) {
  constexpr unsigned n = sizeof fixed_schedules / sizeof fixed_schedules[0];
  return setting == schedule::rotate ? fixed_schedules[(launch + block) % n] : setting;
}

// Bit i set when some block of a grid of `blocks` runs under fixed_schedules[i].
inline unsigned schedules_of_grid(schedule setting, unsigned long long launch, unsigned long long blocks) {
  constexpr unsigned n = sizeof fixed_schedules / sizeof fixed_schedules[0];
  unsigned mask = 0;
  for (unsigned long long b = 0; b < blocks && b < n; ++b)
    mask |= 1u << (static_cast<unsigned>(block_schedule(setting, launch, b)) - 1);
  return mask;
}

// The order in which a launch hands out its `total` blocks: the k-th hand-out runs block
// at(k). The shuffle is k -> (a k + c) mod total with a coprime to total, a permutation that
// needs no memory for any grid size.
class block_sequence {
  __extension__ typedef unsigned __int128 wide;  // a_ * k needs 128 bits for the largest grids

 public:
  block_sequence(block_order order, unsigned long long total, std::uint64_t seed) : order_(order), total_(total) {
    if (order != block_order::shuffle) return;
    mixed_bits rng(seed);
    a_ = rng() % total | 1;
    while (std::gcd(a_, total) != 1) a_ += 2;
    c_ = rng() % total;
    if (a_ == 1 && c_ == 0) c_ = 1 % total;  // never the ascending order, for two blocks or more
  }
  unsigned long long at(unsigned long long k) const {
    switch (order_) {
      case block_order::descending: return total_ - 1 - k;
      case block_order::shuffle: return static_cast<unsigned long long>((static_cast<wide>(a_) * k + c_) % total_);
      default: return k;
    }
  }

 private:
  block_order order_;
  unsigned long long total_, a_ = 1, c_ = 0;
};

// Runs every block of the grid; the first failing block stops the grid (later blocks are
// not started), as a fault stops a GPU grid. `kernel` identifies the kernel in the registry.
inline status run_grid(const launch_config& cfg, kernel_body body, const void* kernel) {
  if (current_runner())
    return fail(status::launch_failed, std::string(cfg.name) + ": launched from inside a kernel, which the host platform does not support");
  settings& s = host_settings();
  const device_properties dev = s.device();
  const status config = check_launch_config(cfg, dev);
  if (config != status::success) return config;

  launch_state& state = launches();
  std::lock_guard<std::mutex> serial(state.launch_mutex);
  const unsigned long long launch_index = state.launches.fetch_add(1, std::memory_order_relaxed);
  const int workers = s.workers.load();
  if (!state.pool || state.pool->size() != workers) {
    state.pool.reset();
    state.pool = std::make_unique<worker_pool>(workers);
  }
  const bool counting = traffic_enabled();
  const auto record = [&](const traffic_counters& traffic) {
    if (!counting) return;
    const std::string registered = registry().name_of(kernel);
    std::lock_guard<std::mutex> lock(state.recorders_mutex);
    for (auto* r : state.recorders)
      r->push_back(launch_record{registered.empty() ? cfg.name : registered, cfg.grid, cfg.block, cfg.shared_bytes, traffic});
  };
  if (s.plan_only.load()) {
    record(traffic_counters{});
    return status::success;
  }

  const dims grid = cfg.grid;
  const unsigned long long total = grid.volume();
  std::atomic<unsigned long long> next{0};
  std::atomic<bool> failed{false};
  std::mutex result_mutex;
  status result = status::success;
  std::string message;
  traffic_counters traffic;
  const unsigned warp = static_cast<unsigned>(dev.warp_size);
  const std::size_t stack_bytes = static_cast<std::size_t>(s.stack_kib.load()) * 1024;
  const schedule thread_schedule = s.thread_schedule.load();
  const std::uint64_t seed = mix(s.seed.load() ^ mix(launch_index));
  const block_sequence sequence(s.blocks.load(), total, seed);

  auto work = [&] {
    block_runner& runner = worker_runner();
    block_runner::block_launch block{};
    block.body = body;
    block.grid_dim = grid;
    block.block_dim = cfg.block;
    block.warp_size = warp;
    block.matrix = dev.matrix;
    block.shared_bytes = cfg.shared_bytes;
    block.shared_limit = dev.shared_memory_per_block;
    block.stack_bytes = stack_bytes;
    traffic_counters local;
    std::string block_message;
    while (!failed.load(std::memory_order_relaxed)) {
      const unsigned long long k = next.fetch_add(1, std::memory_order_relaxed);
      if (k >= total) break;
      const unsigned long long b = sequence.at(k);
      block.block_idx = dims{static_cast<unsigned>(b % grid.x), static_cast<unsigned>(b / grid.x % grid.y),
                             static_cast<unsigned>(b / (static_cast<unsigned long long>(grid.x) * grid.y))};
      block.order = block_schedule(thread_schedule, launch_index, b);
      block.seed = mix(seed ^ mix(b));
      const status st = runner.run(block, block_message);
      if (counting) runner.traffic().flush(local);
      if (st != status::success) {
        std::lock_guard<std::mutex> lock(result_mutex);
        if (result == status::success) {
          result = st;
          message = block_message;
        }
        failed = true;
      }
    }
    std::lock_guard<std::mutex> lock(result_mutex);
    traffic += local;
  };
  state.pool->run(work, static_cast<int>(std::min<unsigned long long>(total - 1, static_cast<unsigned long long>(workers))));
  registry().ran(kernel, dev.warp_size, dev.name, schedules_of_grid(thread_schedule, launch_index, total));

  record(traffic);
  if (result != status::success) return fail(result, std::string(cfg.name) + ": " + message);
  return status::success;
}

}  // namespace host_detail

// Launches `kernel` over cfg.grid x cfg.block with `args` converted to its parameter types.
// Returns when the grid has finished.
template <class... Params, class... Args>
status launch(void (*kernel)(Params...), const launch_config& cfg, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "launch: argument count differs from the kernel's");
  const std::tuple<std::decay_t<Params>...> packed(std::forward<Args>(args)...);
  auto invoke = [&packed, kernel] { std::apply(kernel, packed); };
  return host_detail::run_grid(cfg, host_detail::kernel_body::from(invoke), reinterpret_cast<const void*>(kernel));
}

inline status synchronize(stream_t) { return status::success; }

// The emulated device profile at the emulated warp width (settings.hpp).
inline status get_device_properties(device_properties& p) {
  p = host_detail::host_settings().device();
  return status::success;
}

// "Device" memory is ordinary memory, aligned like a GPU allocation.
inline status device_malloc(void** ptr, std::size_t bytes) {
  if (!ptr) return fail(status::null_pointer, "device_malloc: null result pointer");
  *ptr = nullptr;
  if (bytes == 0) return status::success;
  const std::size_t rounded = (bytes + 255) / 256 * 256;
  if (rounded < bytes) return fail(status::out_of_memory, "device_malloc: size overflows");
  *ptr = std::aligned_alloc(256, rounded);
  if (!*ptr) return fail(status::out_of_memory, "device_malloc: " + std::to_string(bytes) + " bytes");
  return status::success;
}
inline status device_free(void* ptr) {
  std::free(ptr);
  return status::success;
}
inline status copy_to_device(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
  return status::success;
}
inline status copy_to_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
  return status::success;
}
inline status device_memset(void* dst, int byte, std::size_t bytes) {
  if (bytes) std::memset(dst, byte, bytes);
  return status::success;
}

}  // namespace platform
}  // namespace dsconv
