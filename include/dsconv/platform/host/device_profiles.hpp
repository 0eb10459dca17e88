#pragma once
// The GPUs the host platform can pretend to be. The planners and heuristics read a device's
// multiprocessor count, shared memory, registers, warp width and matrix unit; on the host
// they read one of these profiles, so what a test exercises is what that GPU would run,
// whatever the number of CPU cores that emulate it (worker threads are a separate setting).
// Numbers from the vendors' data sheets for one representative part of each architecture.

#include <cstddef>
#include <cstring>

#include "../launch_types.hpp"

namespace dsconv {
namespace platform {
namespace host_detail {

inline device_properties make_profile(const char* name, const char* arch, int sms, int warp, int max_threads_per_sm,
                                      int registers, std::size_t shared_per_block, std::size_t shared_per_sm,
                                      std::size_t reserved_per_block, matrix_unit unit) {
  device_properties p;
  std::strncpy(p.name, name, sizeof p.name - 1);
  std::strncpy(p.arch, arch, sizeof p.arch - 1);
  p.multiprocessor_count = sms;
  p.warp_size = warp;
  p.max_threads_per_block = 1024;
  p.max_threads_per_multiprocessor = max_threads_per_sm;
  p.registers_per_multiprocessor = registers;
  p.shared_memory_per_block = shared_per_block;
  p.shared_memory_per_multiprocessor = shared_per_sm;
  p.shared_memory_reserved_per_block = reserved_per_block;
  p.max_grid_x = 2147483647u;
  p.max_grid_y = p.max_grid_z = 65535u;
  p.matrix = unit;
  return p;
}

// Since sm_80 the CUDA runtime reserves 1 KiB of a multiprocessor's shared memory per resident
// block. sm75: Tesla T4 (Turing's tensor cores: mma.sync m16n8k8 for f16 only). sm80: A100. sm90:
// H100 SXM. gfx906: MI50 (the class of Hygon's DCUs; no matrix cores). gfx90a: MI210.
inline const device_properties* device_profiles(std::size_t& count) {
  constexpr std::size_t kib = 1024;
  static const device_properties profiles[] = {
      make_profile("sm80", "sm_80", 108, 32, 2048, 65536, 48 * kib, 164 * kib, kib, matrix_unit::mma_sync),
      make_profile("sm90", "sm_90", 132, 32, 2048, 65536, 48 * kib, 228 * kib, kib, matrix_unit::mma_sync),
      make_profile("sm75", "sm_75", 40, 32, 1024, 65536, 48 * kib, 64 * kib, 0, matrix_unit::mma_sync_f16),
      make_profile("gfx906", "gfx906", 60, 64, 2560, 65536, 64 * kib, 64 * kib, 0, matrix_unit::none),
      make_profile("gfx90a", "gfx90a", 104, 64, 2048, 131072, 64 * kib, 64 * kib, 0, matrix_unit::mfma),
  };
  count = sizeof profiles / sizeof profiles[0];
  return profiles;
}

// The profile called `name`, or null.
inline const device_properties* find_device_profile(const char* name) {
  std::size_t n = 0;
  const device_properties* all = device_profiles(n);
  for (std::size_t i = 0; name && i < n; ++i)
    if (std::strcmp(all[i].name, name) == 0) return &all[i];
  return nullptr;
}

// Without a choice, the profile of the emulated warp width's vendor.
inline const device_properties& default_device_profile(int warp_size) {
  return *find_device_profile(warp_size == mfma_wave_lanes ? "gfx90a" : "sm80");
}

}  // namespace host_detail
}  // namespace platform
}  // namespace dsconv
