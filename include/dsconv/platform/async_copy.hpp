#pragma once
// Copies from global to shared memory that bypass registers where the target can: cp.async
// on NVIDIA sm_80 and newer, with hardware zero-fill for padding. Elsewhere (older NVIDIA
// GPUs, AMD, and the host platform) the same calls are a plain load and store, so a kernel
// is written once and runs everywhere. After the copies: async_copy_wait(), then a barrier.

#include "../config.hpp"
#include "memory_access.hpp"

namespace dsconv {
namespace platform {

// Copies 16 bytes from `src` (global, 16-byte aligned) to `dst` (shared, 16-byte aligned),
// or writes 16 zero bytes when `valid` is false (then `src` is not read, but must still be a
// valid global address: cp.async takes it either way).
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void async_copy_16(T* dst, const T* src, bool valid) {
  static_assert(16 % sizeof(T) == 0, "async_copy_16 moves whole elements");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned shared_addr = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_addr), "l"(src), "r"(valid ? 16 : 0));
#else
  constexpr int n = static_cast<int>(16 / sizeof(T));
  vec<T, n> v;
  if (valid) {
    v = load_vec<n>(src);
  } else {
    DSCONV_UNROLL
    for (int i = 0; i < n; ++i) v[i] = T(0.f);
  }
  shared_store(reinterpret_cast<vec<T, n>*>(dst), v);  // one 16-byte store, as cp.async writes
#endif
}

// Waits for this thread's outstanding async copies; a barrier must follow before other
// threads read what they wrote.
DSCONV_DEVICE DSCONV_FORCEINLINE void async_copy_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

}  // namespace platform
}  // namespace dsconv
