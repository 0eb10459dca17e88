#pragma once
// The device a main-job program runs on, named for its report: on the host platform the GPU
// profile the planners see (--device, DSCONV_HOST_DEVICE; default sm80) and whether traffic is
// counted (--traffic 0|1); on a GPU the device itself (traffic is never counted there).

#include <cstdio>
#include <stdexcept>
#include <string>

#include <dsconv/dsconv.hpp>

#include "options.hpp"

namespace dsconv_bench {

// The device's description; throws where the profile is unknown, returns "" where no GPU
// is usable (the caller exits with 77).
inline std::string setup_device(const options& opt, bool& traffic) {
#if defined(DSCONV_PLATFORM_HOST)
  traffic = opt.get("traffic", nullptr, "1") != "0";
  const std::string profile = opt.get("device", "DSCONV_HOST_DEVICE", "sm80");
  if (dsconv::host::set_device(profile.c_str()) != dsconv::status::success)
    throw std::runtime_error("--device: " + std::string(dsconv::last_error_detail()));
  const dsconv::platform::device_properties emulated = dsconv::host::device();
  return "host platform (CPU, " + std::to_string(dsconv::host::worker_count()) + " worker threads) emulating " +
         emulated.name + " (" + std::to_string(emulated.multiprocessor_count) + " multiprocessors, warp " +
         std::to_string(emulated.warp_size) + ")";
#else
  (void)opt;
  traffic = false;
  dsconv::platform::device_properties dev;
  if (dsconv::platform::get_device_properties(dev) != dsconv::status::success) {
    std::fprintf(stderr, "no usable GPU: %s\n", dsconv::last_error_detail());
    return "";
  }
  return "GPU with " + std::to_string(dev.multiprocessor_count) + " multiprocessors, warp " + std::to_string(dev.warp_size);
#endif
}

}  // namespace dsconv_bench
