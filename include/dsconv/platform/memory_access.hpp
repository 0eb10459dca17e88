#pragma once
// Global-memory loads and stores for kernels. On a GPU they are plain accesses (a vec<T, N>
// of 8 or 16 bytes becomes one vector instruction); on the host platform each access is also
// recorded for the traffic counters. Kernels read and write global memory only through
// these, so the counters see every byte.

#include "../config.hpp"

#if defined(DSCONV_PLATFORM_HOST)
#include "host/device_api.hpp"
#endif

namespace dsconv {
namespace platform {

// N consecutive elements moved as one access; aligned to its size, as vector loads need.
template <class T, int N>
struct alignas(sizeof(T) * N) vec {
  static_assert(N == 1 || N == 2 || N == 4 || N == 8 || N == 16, "vector width must be a power of two");
  T v[N];
  DSCONV_HOST_DEVICE T& operator[](int i) { return v[i]; }
  DSCONV_HOST_DEVICE const T& operator[](int i) const { return v[i]; }
};

template <class T>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE T load(const T* p) {
#if defined(DSCONV_PLATFORM_HOST)
  if (host_detail::traffic_enabled()) host_detail::record_access(p, sizeof(T), false);
#endif
  return *p;
}

template <class T>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE void store(T* p, const T& v) {
#if defined(DSCONV_PLATFORM_HOST)
  if (host_detail::traffic_enabled()) host_detail::record_access(p, sizeof(T), true);
#endif
  *p = v;
}

// Vector access to p[0..N); p must be aligned to sizeof(T) * N (kernels check before
// choosing a vector path).
template <int N, class T>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE vec<T, N> load_vec(const T* p) {
  return load(reinterpret_cast<const vec<T, N>*>(p));
}

template <int N, class T>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE void store_vec(T* p, const vec<T, N>& v) {
  store(reinterpret_cast<vec<T, N>*>(p), v);
}

}  // namespace platform
}  // namespace dsconv
