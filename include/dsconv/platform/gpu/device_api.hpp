#pragma once
// What a kernel sees on a GPU: coordinates, barriers, warp-collective operations and dynamic
// shared memory, with the warp width of the target (32 on NVIDIA, 64 on AMD gfx9 / Hygon DCU).

#include "../../config.hpp"
#include "../launch_types.hpp"

namespace dsconv {
namespace platform {

DSCONV_DEVICE DSCONV_FORCEINLINE dims thread_idx() { return dims{threadIdx.x, threadIdx.y, threadIdx.z}; }
DSCONV_DEVICE DSCONV_FORCEINLINE dims block_idx() { return dims{blockIdx.x, blockIdx.y, blockIdx.z}; }
DSCONV_DEVICE DSCONV_FORCEINLINE dims block_dim() { return dims{blockDim.x, blockDim.y, blockDim.z}; }
DSCONV_DEVICE DSCONV_FORCEINLINE dims grid_dim() { return dims{gridDim.x, gridDim.y, gridDim.z}; }
DSCONV_DEVICE DSCONV_FORCEINLINE int warp_size() { return warpSize; }
DSCONV_DEVICE DSCONV_FORCEINLINE int lane_id() {
#if defined(DSCONV_PLATFORM_HIP)
  return static_cast<int>(__lane_id());
#else
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return static_cast<int>(lane);
#endif
}

DSCONV_DEVICE DSCONV_FORCEINLINE void sync_threads() { __syncthreads(); }

template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE T* dynamic_shared() {
  extern __shared__ __attribute__((aligned(16))) unsigned char dsconv_dynamic_shared_memory[];
  return reinterpret_cast<T*>(dsconv_dynamic_shared_memory);
}

namespace gpu_detail {
template <class Shuffle>
DSCONV_DEVICE DSCONV_FORCEINLINE unsigned shuffle_word(unsigned x, Shuffle op) {
  return static_cast<unsigned>(op(static_cast<int>(x)));
}

// Moves any value of up to 8 bytes through 32-bit shuffles.
template <class T, class Shuffle>
DSCONV_DEVICE DSCONV_FORCEINLINE T shuffle_value(T v, Shuffle op) {
  static_assert(sizeof(T) <= 8, "shuffles carry at most 8 bytes");
  unsigned words[2] = {0u, 0u};
  __builtin_memcpy(words, &v, sizeof(T));
  words[0] = shuffle_word(words[0], op);
  if (sizeof(T) > 4) words[1] = shuffle_word(words[1], op);
  __builtin_memcpy(&v, words, sizeof(T));
  return v;
}

DSCONV_DEVICE DSCONV_FORCEINLINE int clamp_width(int width) { return width < warpSize ? width : warpSize; }
}  // namespace gpu_detail

#if defined(DSCONV_PLATFORM_HIP)
#define DSCONV_GPU_SHFL(kind, x, arg, width) __shfl##kind(x, arg, width)
#else
#define DSCONV_GPU_SHFL(kind, x, arg, width) __shfl##kind##_sync(0xffffffffu, x, arg, width)
#endif

template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE T shfl(T v, int src_lane, int width = max_warp_size) {
  const int w = gpu_detail::clamp_width(width);
  return gpu_detail::shuffle_value(v, [=](int x) { return DSCONV_GPU_SHFL(, x, src_lane, w); });
}
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE T shfl_xor(T v, int lane_mask, int width = max_warp_size) {
  const int w = gpu_detail::clamp_width(width);
  return gpu_detail::shuffle_value(v, [=](int x) { return DSCONV_GPU_SHFL(_xor, x, lane_mask, w); });
}
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE T shfl_down(T v, unsigned delta, int width = max_warp_size) {
  const int w = gpu_detail::clamp_width(width);
  return gpu_detail::shuffle_value(v, [=](int x) { return DSCONV_GPU_SHFL(_down, x, delta, w); });
}
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE T shfl_up(T v, unsigned delta, int width = max_warp_size) {
  const int w = gpu_detail::clamp_width(width);
  return gpu_detail::shuffle_value(v, [=](int x) { return DSCONV_GPU_SHFL(_up, x, delta, w); });
}

#undef DSCONV_GPU_SHFL

DSCONV_DEVICE DSCONV_FORCEINLINE unsigned long long ballot(bool predicate) {
#if defined(DSCONV_PLATFORM_HIP)
  return static_cast<unsigned long long>(__ballot(predicate));
#else
  return static_cast<unsigned long long>(__ballot_sync(0xffffffffu, predicate));
#endif
}

}  // namespace platform
}  // namespace dsconv
