#pragma once
// Run-time settings of the host platform, read once from the environment:
//   DSCONV_HOST_DEVICE       the GPU the planners see (device_profiles.hpp): sm80, sm90, sm75,
//                            gfx906 or gfx90a (default: sm80 at warp width 32, gfx90a at 64)
//   DSCONV_HOST_WARP_SIZE    emulated warp width, a power of two from 1 to 64 (default: the
//                            device's; 64 behaves like AMD wavefronts)
//   DSCONV_HOST_WORKERS      worker threads that run blocks (default: the number of cores;
//                            1 runs blocks one after another on the calling thread). Only
//                            how fast the emulation runs depends on it, never what it plans.
//   DSCONV_HOST_SCHEDULE     the order of a block's threads between barriers (block_runner.hpp):
//                            rotate (default), ascending, descending, shuffle, warp-descending,
//                            warp-shuffle
//   DSCONV_HOST_BLOCK_ORDER  the order in which blocks are handed to workers: ascending
//                            (default), descending, shuffle
//   DSCONV_HOST_SEED         seed of the shuffled orders (default 1)
//   DSCONV_HOST_STACK_KIB    stack size of each emulated thread (default 64, 256 under ASan)

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "../../config.hpp"
#include "../launch_types.hpp"
#include "device_profiles.hpp"

namespace dsconv {
namespace platform {
namespace host_detail {

// How the threads of a block take turns between barriers. A kernel that reads shared memory
// another thread wrote without a barrier in between gets the old (poisoned) value under some
// order: ascending hides a read of a lower-numbered thread's write, descending a read of a
// higher-numbered one's. rotate gives each block of a launch the next of the five fixed
// orders, so every kernel meets several of them in any run.
enum class schedule : unsigned char { rotate, ascending, descending, shuffle, warp_descending, warp_shuffle };
inline constexpr schedule fixed_schedules[] = {schedule::ascending, schedule::descending, schedule::shuffle,
                                               schedule::warp_descending, schedule::warp_shuffle};
inline constexpr const char* schedule_names[] = {"rotate",  "ascending",       "descending",
                                                 "shuffle", "warp-descending", "warp-shuffle"};

// The order in which a launch hands its blocks to the workers.
enum class block_order : unsigned char { ascending, descending, shuffle };
inline constexpr const char* block_order_names[] = {"ascending", "descending", "shuffle"};

inline const char* to_string(schedule s) { return schedule_names[static_cast<int>(s)]; }
inline const char* to_string(block_order o) { return block_order_names[static_cast<int>(o)]; }

// Sets `out` to the enumerator called `name` in `names`; false (out unchanged) if none is.
template <class E, std::size_t N>
bool parse_name(const char* name, const char* const (&names)[N], E& out) {
  for (std::size_t i = 0; name && i < N; ++i)
    if (std::strcmp(name, names[i]) == 0) {
      out = static_cast<E>(i);
      return true;
    }
  return false;
}

inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return (*end == '\0' && x > 0 && x < (1L << 20)) ? static_cast<int>(x) : fallback;
}

constexpr bool valid_warp_size(int w) { return w >= 1 && w <= max_warp_size && (w & (w - 1)) == 0; }

// A mixing function for seeds: one well-spread 64-bit value from several inputs.
constexpr std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The bits std::shuffle draws, from a seed: the mixing function of a counter (splitmix64), which
// seeds in one step where std::mt19937_64 fills 312 words. A shuffled schedule seeds one each pass
// of a block between barriers; with std::mt19937_64 that seeding was 2% of the emulated float 1x1
// layer sweep's time.
class mixed_bits {
 public:
  using result_type = std::uint64_t;
  explicit mixed_bits(std::uint64_t seed) : state_(seed) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }
  result_type operator()() {
    const std::uint64_t x = state_;
    state_ += 0x9e3779b97f4a7c15ULL;
    return mix(x);
  }

 private:
  std::uint64_t state_;
};

struct settings {
  std::atomic<int> workers;
  std::atomic<int> warp_size;
  std::atomic<int> stack_kib;
  std::atomic<schedule> thread_schedule;
  std::atomic<block_order> blocks;
  std::atomic<std::uint64_t> seed;

  settings() {
    const unsigned cores = std::thread::hardware_concurrency();
    workers = env_int("DSCONV_HOST_WORKERS", cores ? static_cast<int>(cores) : 1);
    const device_properties* chosen = find_device_profile(std::getenv("DSCONV_HOST_DEVICE"));
    const int w = env_int("DSCONV_HOST_WARP_SIZE", chosen ? chosen->warp_size : 32);
    warp_size = valid_warp_size(w) ? w : 32;
    profile_ = chosen ? *chosen : default_device_profile(warp_size);
    profile_chosen_ = chosen != nullptr;
    schedule threads = schedule::rotate;
    parse_name(std::getenv("DSCONV_HOST_SCHEDULE"), schedule_names, threads);
    thread_schedule = threads;
    block_order order = block_order::ascending;
    parse_name(std::getenv("DSCONV_HOST_BLOCK_ORDER"), block_order_names, order);
    blocks = order;
    seed = static_cast<std::uint64_t>(env_int("DSCONV_HOST_SEED", 1));
#if defined(DSCONV_ASAN)
    stack_kib = env_int("DSCONV_HOST_STACK_KIB", 256);
#else
    stack_kib = env_int("DSCONV_HOST_STACK_KIB", 64);
#endif
  }

  // Whether the program's matrix-unit kernels count as compiled for the device's matrix unit
  // (false emulates a GPU build for a target without one, e.g. CUDA for sm_75 alone).
  std::atomic<bool> matrix_code{true};

  // Whether launches only plan: checked and recorded, no block run (host_api.hpp).
  std::atomic<bool> plan_only{false};

  // The emulated device: the profile with the emulated warp width. Each emulated matrix unit
  // needs its vendor's width, so at any other width the device has none.
  device_properties device() {
    std::lock_guard<std::mutex> lock(mutex_);
    device_properties p = profile_;
    p.warp_size = warp_size.load();
    p.matrix = usable_matrix_unit(p.matrix, matrix_code.load() && p.warp_size == matrix_unit_lanes(p.matrix));
    return p;
  }

  // A chosen profile brings its warp width.
  void set_device(const device_properties& p) {
    std::lock_guard<std::mutex> lock(mutex_);
    profile_ = p;
    profile_chosen_ = true;
    warp_size = p.warp_size;
  }

  // Until a profile is chosen, the default profile follows the warp width.
  void set_warp_size(int w) {
    std::lock_guard<std::mutex> lock(mutex_);
    warp_size = w;
    if (!profile_chosen_) profile_ = default_device_profile(w);
  }

 private:
  std::mutex mutex_;
  device_properties profile_;
  bool profile_chosen_ = false;
};

inline settings& host_settings() {
  static settings s;
  return s;
}

}  // namespace host_detail
}  // namespace platform
}  // namespace dsconv
