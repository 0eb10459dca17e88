#pragma once
// Runtime of the GPU platforms. CUDA and HIP mirror each other's APIs, so one file serves
// both: cuda.hpp / hip.hpp include their runtime, define DSCONV_GPU(Name) as cudaName /
// hipName and the few type aliases whose names differ, then include this file.

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "../../status.hpp"
#include "../error_detail.hpp"
#include "../launch_types.hpp"

namespace dsconv {
namespace platform {
namespace gpu_detail {

// An empty kernel compiled for the same targets as dsconv's kernels: what the runtime reports
// of the code it runs for it on a device is what it runs for dsconv's matrix-unit kernels.
template <int>
DSCONV_KERNEL void matrix_unit_probe() {}

inline status map_error(gpu_error_t e, const char* what) {
  if (e == DSCONV_GPU(Success)) return status::success;
  status s = status::platform_error;
  if (e == DSCONV_GPU(ErrorNoDevice) || e == DSCONV_GPU(ErrorInsufficientDriver))
    s = status::no_device;
  else if (e == DSCONV_GPU(ErrorMemoryAllocation))
    s = status::out_of_memory;
  else if (e == DSCONV_GPU(ErrorInvalidConfiguration))
    s = status::invalid_launch_config;
  else if (e == DSCONV_GPU(ErrorLaunchFailure) || e == DSCONV_GPU(ErrorLaunchOutOfResources))
    s = status::launch_failed;
  return fail(s, std::string(what) + ": " + DSCONV_GPU(GetErrorString)(e));
}

}  // namespace gpu_detail

// Queues `kernel` on cfg.stream. Errors of the launch itself come back here; faults while
// the kernel runs come back from synchronize(). An error some earlier call left pending is
// reported as such, and nothing is launched: after the launch, the runtime's last error is
// then this launch's own.
template <class... Params, class... Args>
status launch(void (*kernel)(Params...), const launch_config& cfg, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "launch: argument count differs from the kernel's");
  const gpu_error_t earlier = DSCONV_GPU(GetLastError)();
  if (earlier != DSCONV_GPU(Success))
    return gpu_detail::map_error(earlier, (std::string(cfg.name) + ": not launched, an earlier error was pending").c_str());
  kernel<<<::dim3(cfg.grid.x, cfg.grid.y, cfg.grid.z), ::dim3(cfg.block.x, cfg.block.y, cfg.block.z),
           cfg.shared_bytes, cfg.stream>>>(static_cast<Params>(std::forward<Args>(args))...);
  return gpu_detail::map_error(DSCONV_GPU(GetLastError)(), cfg.name);
}

inline status synchronize(stream_t stream) {
  return gpu_detail::map_error(DSCONV_GPU(StreamSynchronize)(stream), "synchronize");
}

// Properties of the current device, read once per device and cached.
inline status get_device_properties(device_properties& p) {
  int device = 0;
  status s = gpu_detail::map_error(DSCONV_GPU(GetDevice)(&device), "get device");
  if (s != status::success) return s;
  constexpr int max_devices = 64;
  static device_properties cache[max_devices];
  static bool cached[max_devices] = {};
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (device < 0 || device >= max_devices) return fail(status::no_device, "device ordinal out of range");
  if (!cached[device]) {
    gpu_device_prop_t prop;
    s = gpu_detail::map_error(DSCONV_GPU(GetDeviceProperties)(&prop, device), "device properties");
    if (s != status::success) return s;
    device_properties& d = cache[device];
    std::snprintf(d.name, sizeof d.name, "%s", prop.name);
#if defined(DSCONV_PLATFORM_CUDA)
    std::snprintf(d.arch, sizeof d.arch, "sm_%d", 10 * prop.major + prop.minor);
#else
    std::snprintf(d.arch, sizeof d.arch, "%.*s", static_cast<int>(std::strcspn(prop.gcnArchName, ":")), prop.gcnArchName);
#endif
    d.multiprocessor_count = prop.multiProcessorCount;
    d.warp_size = prop.warpSize;
    d.max_threads_per_block = prop.maxThreadsPerBlock;
    d.max_threads_per_multiprocessor = prop.maxThreadsPerMultiProcessor;
    d.shared_memory_per_block = prop.sharedMemPerBlock;
#if defined(DSCONV_PLATFORM_CUDA)
    d.registers_per_multiprocessor = prop.regsPerMultiprocessor;
    d.shared_memory_per_multiprocessor = prop.sharedMemPerMultiprocessor;
    d.shared_memory_reserved_per_block = prop.reservedSharedMemPerBlock;
#else
    // HIP 5.2 reports the registers one block may use, not a CU's.
    d.registers_per_multiprocessor = prop.regsPerBlock;
    d.shared_memory_per_multiprocessor = prop.maxSharedMemoryPerMultiProcessor;
#endif
    d.max_grid_x = static_cast<unsigned>(prop.maxGridSize[0]);
    d.max_grid_y = static_cast<unsigned>(prop.maxGridSize[1]);
    d.max_grid_z = static_cast<unsigned>(prop.maxGridSize[2]);
    // The device's matrix unit, if this build's code for the device can use it.
    gpu_func_attributes_t probe;
    const bool has_code =
        DSCONV_GPU(FuncGetAttributes)(&probe, reinterpret_cast<const void*>(&gpu_detail::matrix_unit_probe<0>)) ==
        DSCONV_GPU(Success);
    (void)DSCONV_GPU(GetLastError)();  // a failed query must not look like the next launch's error
#if defined(DSCONV_PLATFORM_CUDA)
    // mma.sync with f16, bf16 and tf32 operands on sm_80 and newer, f16 alone (m16n8k8) on
    // sm_75: whichever the lesser of the device and the code the device runs offers
    // (ptxVersion: the virtual architecture that code came from; the forms it lacks __trap()).
    const int device_arch = 10 * prop.major + prop.minor;
    const int arch = has_code && probe.ptxVersion < device_arch ? probe.ptxVersion : device_arch;
    d.matrix = usable_matrix_unit(nvidia_matrix_unit(arch), has_code);
#else
    // MFMA with 16x16x16 f16 and bf16 operands (the bf16 "_1k" form): CDNA2 and CDNA3. AMD code
    // objects are per target, so code for this device is code for its matrix cores.
    const std::string arch = prop.gcnArchName;
    const bool cdna = arch.rfind("gfx90a", 0) == 0 || arch.rfind("gfx94", 0) == 0;
    d.matrix = usable_matrix_unit(cdna ? matrix_unit::mfma : matrix_unit::none, has_code);
#endif
    cached[device] = true;
  }
  p = cache[device];
  return status::success;
}

inline status device_malloc(void** ptr, std::size_t bytes) {
  if (!ptr) return fail(status::null_pointer, "device_malloc: null result pointer");
  *ptr = nullptr;
  if (bytes == 0) return status::success;
  return gpu_detail::map_error(DSCONV_GPU(Malloc)(ptr, bytes), "device_malloc");
}
inline status device_free(void* ptr) { return gpu_detail::map_error(DSCONV_GPU(Free)(ptr), "device_free"); }
inline status copy_to_device(void* dst, const void* src, std::size_t bytes) {
  return gpu_detail::map_error(DSCONV_GPU(Memcpy)(dst, src, bytes, DSCONV_GPU(MemcpyHostToDevice)), "copy_to_device");
}
inline status copy_to_host(void* dst, const void* src, std::size_t bytes) {
  return gpu_detail::map_error(DSCONV_GPU(Memcpy)(dst, src, bytes, DSCONV_GPU(MemcpyDeviceToHost)), "copy_to_host");
}
inline status device_memset(void* dst, int byte, std::size_t bytes) {
  return gpu_detail::map_error(DSCONV_GPU(Memset)(dst, byte, bytes), "device_memset");
}

}  // namespace platform
}  // namespace dsconv
