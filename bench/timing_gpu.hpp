#pragma once
// Timing on the GPU platforms, CUDA and HIP alike through the platform layer's DSCONV_GPU
// spelling of the runtime: events around a pass of launches on the default stream, a spin
// kernel that keeps the device busy while the host queues the pass (so launch latency stays
// out of the measurement), and the device facts the counters refer to: L2 size, and the
// device-to-device copy bandwidth measured once.

#include <algorithm>
#include <cstddef>
#include <string>

#include <dsconv/dsconv.hpp>

#include "kernel_bench/device_facts.hpp"

#if defined(DSCONV_PLATFORM_CUDA) || defined(DSCONV_PLATFORM_HIP)

namespace dsconv_bench {
namespace gpu_timing {

inline std::string check(dsconv::platform::gpu_error_t e, const char* what) {
  return dsconv::platform::gpu_detail::map_error(e, what) == dsconv::status::success
             ? std::string()
             : std::string(dsconv::last_error_detail());
}

// Holds one multiprocessor for `cycles` clock cycles.
DSCONV_KERNEL void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

class event {
 public:
  event() {
    if (DSCONV_GPU(EventCreate)(&e_) != DSCONV_GPU(Success)) e_ = nullptr;
  }
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  ~event() {
    if (e_) (void)DSCONV_GPU(EventDestroy)(e_);
  }
  DSCONV_GPU(Event_t) get() const { return e_; }

 private:
  DSCONV_GPU(Event_t) e_ = nullptr;
};

}  // namespace gpu_timing

class pass_timer {
 public:
  // Creates the events and measures the spin kernel's clock rate.
  std::string init() {
    if (!start_.get() || !stop_.get()) return "event creation failed";
    constexpr long long probe_cycles = 1LL << 22;
    double seconds = 0;
    const std::string e = time(
        1, 0.0, [&](int) { return spin(probe_cycles); }, seconds);
    if (!e.empty()) return e;
    if (seconds <= 0) return "spin kernel took no time";
    cycles_per_second_ = static_cast<double>(probe_cycles) / seconds;
    return {};
  }

  // Spins for `lead_seconds`, then calls launch(i) for i in [0, launches) between two events,
  // and reports the seconds between the events.
  template <class Launch>
  std::string time(int launches, double lead_seconds, Launch&& launch, double& seconds) {
    using gpu_timing::check;
    seconds = 0;
    std::string e;
    if (lead_seconds > 0) e = spin(static_cast<long long>(lead_seconds * cycles_per_second_));
    if (e.empty()) e = check(DSCONV_GPU(EventRecord)(start_.get(), dsconv::stream_t{}), "event record");
    for (int i = 0; i < launches && e.empty(); ++i) e = launch(i);
    if (e.empty()) e = check(DSCONV_GPU(EventRecord)(stop_.get(), dsconv::stream_t{}), "event record");
    if (e.empty()) e = check(DSCONV_GPU(EventSynchronize)(stop_.get()), "event synchronize");
    float ms = 0;
    if (e.empty()) e = check(DSCONV_GPU(EventElapsedTime)(&ms, start_.get(), stop_.get()), "event elapsed time");
    seconds = static_cast<double>(ms) * 1e-3;
    return e;
  }

 private:
  std::string spin(long long cycles) {
    dsconv::platform::launch_config cfg;
    cfg.name = "spin";
    return dsconv::platform::launch(gpu_timing::spin_kernel, cfg, cycles) == dsconv::status::success
               ? std::string()
               : std::string(dsconv::last_error_detail());
  }

  gpu_timing::event start_, stop_;
  double cycles_per_second_ = 1e9;
};

// Device name, L2 size, and the bandwidth of the runtime's device-to-device copy over
// buffers many times the L2 (best of several copies, bytes read + written).
inline std::string measure_device(device_facts& f) {
  using gpu_timing::check;
  int device = 0;
  std::string e = check(DSCONV_GPU(GetDevice)(&device), "get device");
  dsconv::platform::gpu_device_prop_t prop;
  if (e.empty()) e = check(DSCONV_GPU(GetDeviceProperties)(&prop, device), "device properties");
  if (!e.empty()) return e;
  f.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  f.description = std::string(prop.name) + ", " + std::to_string(prop.multiProcessorCount) + " multiprocessors, L2 " +
                  std::to_string(f.l2_bytes >> 20) + " MiB";

  const std::size_t bytes = std::max<std::size_t>(std::size_t(256) << 20, 8 * f.l2_bytes);
  dsconv::device_buffer<unsigned char> a, b;
  if (a.allocate(bytes) != dsconv::status::success || b.allocate(bytes) != dsconv::status::success ||
      dsconv::platform::device_memset(a.data(), 1, bytes) != dsconv::status::success ||
      dsconv::platform::device_memset(b.data(), 2, bytes) != dsconv::status::success)
    return std::string("copy bandwidth buffers: ") + dsconv::last_error_detail();
  pass_timer timer;
  e = timer.init();
  if (!e.empty()) return e;
  double best = 0;
  for (int i = 0; i < 10 && e.empty(); ++i) {
    double seconds = 0;
    e = timer.time(
        1, 100e-6,
        [&](int) {
          return check(
              DSCONV_GPU(MemcpyAsync)(b.data(), a.data(), bytes, DSCONV_GPU(MemcpyDeviceToDevice), dsconv::stream_t{}),
              "device-to-device copy");
        },
        seconds);
    if (e.empty() && i > 0 && (best == 0 || seconds < best)) best = seconds;  // the first copy is the warm-up
  }
  if (!e.empty()) return e;
  f.copy_gbps = best > 0 ? 2.0 * static_cast<double>(bytes) / best * 1e-9 : 0.0;
  return {};
}

}  // namespace dsconv_bench

#endif
