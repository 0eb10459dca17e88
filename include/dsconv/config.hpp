#pragma once
// Chooses the platform from the compiler and defines the DSCONV_ qualifiers that every other
// header uses. Nothing here names a CUDA or HIP runtime symbol.

// clang's HIP mode is checked first: it is the only one of the three that defines __HIP__.
#if defined(__HIP__)
#define DSCONV_PLATFORM_HIP 1
#elif defined(__CUDACC__)
#define DSCONV_PLATFORM_CUDA 1
#else
#define DSCONV_PLATFORM_HOST 1
#endif

#if defined(DSCONV_PLATFORM_HOST)
#define DSCONV_HOST_DEVICE
#define DSCONV_DEVICE
// Host kernels are ordinary function templates; hidden visibility keeps two shared libraries
// that both include dsconv from resolving each other's copies.
#define DSCONV_KERNEL __attribute__((visibility("hidden")))
#define DSCONV_LAUNCH_BOUNDS(max_threads, min_blocks)
#else
#define DSCONV_HOST_DEVICE __host__ __device__
#define DSCONV_DEVICE __device__
// Kernels defined in headers and linked into several shared libraries must not collide
// (CUB and Thrust once launched the wrong kernel that way): hidden visibility prevents it.
#define DSCONV_KERNEL __global__ __attribute__((visibility("hidden")))
#endif

// The block size a kernel is launched with, and how many of its blocks should fit on a
// multiprocessor. CUDA trades registers for that occupancy; HIP's second argument means
// waves per SIMD instead, so there only the block size is passed (without it hipcc assumes
// 1024 threads and caps a thread at 64 VGPRs).
#if defined(DSCONV_PLATFORM_CUDA)
#define DSCONV_LAUNCH_BOUNDS(max_threads, min_blocks) __launch_bounds__(max_threads, min_blocks)
#elif defined(DSCONV_PLATFORM_HIP)
#define DSCONV_LAUNCH_BOUNDS(max_threads, min_blocks) __launch_bounds__(max_threads)
#endif

// On AMD, the fewest waves a SIMD should hold of a kernel (so its VGPRs stay within 512 / n on
// gfx90a, 256 / n on gfx906): what DSCONV_LAUNCH_BOUNDS's second argument does on NVIDIA, for
// kernels whose in-flight loads need several blocks resident. Nothing elsewhere.
#if defined(DSCONV_PLATFORM_HIP)
#define DSCONV_WAVES_PER_SIMD(n) __attribute__((amdgpu_waves_per_eu(n)))
#else
#define DSCONV_WAVES_PER_SIMD(n)
#endif

// True while compiling code that runs on a GPU (the device pass of nvcc or hipcc).
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define DSCONV_DEVICE_PASS 1
#endif

// Asks a GPU compiler to unroll a loop (so that register arrays stay in registers). On the host
// platform loops stay as the optimiser leaves them: unrolled, the kernels' host code was ~20
// times larger (every shared access is a recorded call there) and took minutes to compile,
// for no gain in the emulation's speed.
#if !defined(DSCONV_PLATFORM_HOST)
#define DSCONV_UNROLL _Pragma("unroll")
#else
#define DSCONV_UNROLL
#endif

// Asks a GPU compiler to unroll a loop `n` times, n an integral constant expression (a
// constexpr variable of the kernel, say): whole where a loop's registers fit, once where not.
#if !defined(DSCONV_PLATFORM_HOST)
#define DSCONV_UNROLL_BY(n) _Pragma(DSCONV_STRINGIFY(unroll n))
#define DSCONV_STRINGIFY(x) #x
#else
#define DSCONV_UNROLL_BY(n)
#endif

// Keeps a GPU compiler from unrolling a loop of run-time length, where unrolled copies would
// hold more registers live than a kernel has (the fused block's K stages).
#if !defined(DSCONV_PLATFORM_HOST)
#define DSCONV_NO_UNROLL _Pragma("unroll 1")
#else
#define DSCONV_NO_UNROLL
#endif

#define DSCONV_FORCEINLINE inline __attribute__((always_inline))
#define DSCONV_NOINLINE __attribute__((noinline))

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DSCONV_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(DSCONV_ASAN)
#define DSCONV_ASAN 1
#endif

namespace dsconv {
// Global tensor offsets are 64-bit: the largest layers at batch 128 stay far below 2^31
// elements, but user problems need not, and validation rejects anything past this type.
using index_t = long long;
// The widest wavefront any supported target has (AMD gfx9 / Hygon DCU). Kernels size
// per-warp arrays with it; the actual width is a run-time query (platform::warp_size()).
inline constexpr int max_warp_size = 64;
}  // namespace dsconv
