#pragma once
// Copies from global to shared memory that bypass registers where the target can: cp.async
// on NVIDIA sm_80 and newer, with hardware zero-fill. Elsewhere on a GPU (older NVIDIA GPUs,
// AMD) the same calls are a plain load and store, so a kernel is written once and runs
// everywhere; the host platform lands each copy as late as a GPU may (host/async_copy.hpp).
// Copies may be gathered into commit groups, so that a multi-stage pipeline waits only for
// the oldest: issue the copies of a stage, async_copy_commit(); async_copy_wait_pending<N>()
// then waits until at most the N newest groups are outstanding, async_copy_wait() for all;
// either way a barrier must follow before other threads read what this thread copied.

#include "../config.hpp"
#include "memory_access.hpp"

#if defined(DSCONV_PLATFORM_HOST)
#include "host/async_copy.hpp"
#endif

namespace dsconv {
namespace platform {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define DSCONV_HAS_CP_ASYNC 1
#endif

// Whether a copy runs on while the thread goes on (cp.async; the host platform models it so),
// rather than being a load and a store in the thread's own order.
#if defined(DSCONV_HAS_CP_ASYNC) || defined(DSCONV_PLATFORM_HOST)
inline constexpr bool async_copies_overlap = true;
#else
inline constexpr bool async_copies_overlap = false;
#endif

// Copies the first `src_bytes` (0 to 16, whole elements) of the 16 bytes at `src` (global,
// 16-byte aligned) to `dst` (shared, 16-byte aligned) and zero-fills the rest; `src` must be
// a valid global address even when src_bytes is 0 (cp.async takes it either way).
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void async_copy_16(T* dst, const T* src, int src_bytes DSCONV_CALL_SITE) {
  static_assert(16 % sizeof(T) == 0, "async_copy_16 moves whole elements");
#if defined(DSCONV_HAS_CP_ASYNC)
  const unsigned shared_addr = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_addr), "l"(src), "r"(src_bytes));
#elif defined(DSCONV_PLATFORM_HOST)
  if (host_detail::traffic_enabled()) {
    if (src_bytes > 0) host_detail::record_access(src, static_cast<std::size_t>(src_bytes), false);
    host_detail::record_shared(dst, 16, true, site_file, site_line);
  }
  host_detail::async_copy(dst, src, src_bytes);
#else
  constexpr int n = static_cast<int>(16 / sizeof(T));
  vec<T, n> v;
  if (src_bytes == 16) {
    v = load_vec<n>(src);
  } else {
    DSCONV_UNROLL
    for (int i = 0; i < n; ++i) v[i] = i * static_cast<int>(sizeof(T)) < src_bytes ? load(src + i) : T(0.f);
  }
  shared_store(reinterpret_cast<vec<T, n>*>(dst), v);  // one 16-byte store, as cp.async writes
#endif
}

// Copies the 16 bytes at `src` to `dst` where `whole`, else zero-fills `dst` (reading
// nothing; `src` still a valid global address): for runs that lie wholly inside the matrix or
// wholly outside, where a predicate replaces the byte count (on sm_90, cp.async with a run-time
// count computes the address of a shortened read: four instructions more a copy).
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void async_copy_16_whole(T* dst, const T* src, bool whole DSCONV_CALL_SITE) {
#if defined(DSCONV_HAS_CP_ASYNC)
  static_assert(16 % sizeof(T) == 0, "async_copy_16_whole moves whole elements");
  const unsigned shared_addr = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile(
      "{\n .reg .pred ignore;\n setp.eq.u32 ignore, %2, 0;\n"
      " cp.async.cg.shared.global [%0], [%1], 16, ignore;\n}\n" ::"r"(shared_addr),
      "l"(src), "r"(static_cast<unsigned>(whole)));
#elif defined(DSCONV_PLATFORM_HOST)
  async_copy_16(dst, src, whole ? 16 : 0 DSCONV_CALL_SITE_ARGS);
#else
  // (one vector load or none, where the byte count's form loads element by element)
  constexpr int n = static_cast<int>(16 / sizeof(T));
  shared_store(reinterpret_cast<vec<T, n>*>(dst), load_vec_or_zero<n>(src, whole));
#endif
}

// Copies the N bytes (4, 8 or 16) at `src` (global) to `dst` (shared), both aligned to N,
// where `whole`, else zero-fills `dst` (reading nothing; `src` still a valid global address):
// pieces narrower than a 16-byte slot, or placed off one (nchw_matrix stages a row's columns 8
// bytes past a slot, where its fragments' windows start). cp.async.ca: .cg moves 16 bytes only.
template <int N, class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void async_copy_whole(T* dst, const T* src, bool whole DSCONV_CALL_SITE) {
  static_assert((N == 4 || N == 8 || N == 16) && N % sizeof(T) == 0, "cp.async moves 4, 8 or 16 bytes of whole elements");
#if defined(DSCONV_HAS_CP_ASYNC)
  const unsigned shared_addr = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile(
      "{\n .reg .pred ignore;\n setp.eq.u32 ignore, %2, 0;\n"
      " cp.async.ca.shared.global [%0], [%1], %3, ignore;\n}\n" ::"r"(shared_addr),
      "l"(src), "r"(static_cast<unsigned>(whole)), "n"(N));
#elif defined(DSCONV_PLATFORM_HOST)
  if (host_detail::traffic_enabled()) {
    if (whole) host_detail::record_access(src, static_cast<std::size_t>(N), false);
    host_detail::record_shared(dst, N, true, site_file, site_line);
  }
  host_detail::async_copy(dst, src, whole ? N : 0, N);
#else
  using words = vec<unsigned, N / 4>;
  shared_store(reinterpret_cast<words*>(dst), load_vec_or_zero<N / 4>(reinterpret_cast<const unsigned*>(src), whole));
#endif
}

// Copies the first `src_bytes` (whole elements, 0 to N) of the N bytes (4, 8 or 16) at `src`
// (global) to `dst` (shared), both aligned to N, and zero-fills the rest: a piece whose end lies
// past the tensor (nchw_matrix_plane's last word of an odd plane at the tensor's end). The byte
// count at run time costs sm_90 some instructions a copy over async_copy_whole's predicate.
template <int N, class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void async_copy_bytes(T* dst, const T* src, int src_bytes DSCONV_CALL_SITE) {
  static_assert((N == 4 || N == 8 || N == 16) && N % sizeof(T) == 0, "cp.async moves 4, 8 or 16 bytes of whole elements");
#if defined(DSCONV_HAS_CP_ASYNC)
  const unsigned shared_addr = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(shared_addr), "l"(src), "n"(N), "r"(src_bytes));
#elif defined(DSCONV_PLATFORM_HOST)
  if (host_detail::traffic_enabled()) {
    if (src_bytes > 0) host_detail::record_access(src, static_cast<std::size_t>(src_bytes), false);
    host_detail::record_shared(dst, N, true, site_file, site_line);
  }
  host_detail::async_copy(dst, src, src_bytes, N);
#else
  constexpr int n = static_cast<int>(N / sizeof(T));
  DSCONV_UNROLL
  for (int i = 0; i < n; ++i) shared_store(dst + i, i * static_cast<int>(sizeof(T)) < src_bytes ? load(src + i) : T(0.f));
#endif
}

// (A bool would convert to 1 byte.)
template <class T>
void async_copy_16(T* dst, const T* src, bool valid) = delete;

// Closes the group of this thread's copies issued since the last commit.
DSCONV_DEVICE DSCONV_FORCEINLINE void async_copy_commit() {
#if defined(DSCONV_HAS_CP_ASYNC)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#elif defined(DSCONV_PLATFORM_HOST)
  host_detail::async_copy_commit();
#endif
}

// Waits until at most the N newest of this thread's committed groups are outstanding.
template <int N>
DSCONV_DEVICE DSCONV_FORCEINLINE void async_copy_wait_pending() {
#if defined(DSCONV_HAS_CP_ASYNC)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#elif defined(DSCONV_PLATFORM_HOST)
  host_detail::async_copy_land(N, false);
#endif
}

// Waits for all of this thread's copies.
DSCONV_DEVICE DSCONV_FORCEINLINE void async_copy_wait() {
#if defined(DSCONV_HAS_CP_ASYNC)
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#elif defined(DSCONV_PLATFORM_HOST)
  host_detail::async_copy_land(0, true);
#endif
}

}  // namespace platform
}  // namespace dsconv
