#pragma once
// Global- and shared-memory loads and stores for kernels. On a GPU they are plain accesses (a
// vec<T, N> of 8 or 16 bytes becomes one vector instruction); on the host platform each
// access is also recorded for the traffic counters and the shared-memory bank model. Kernels
// read and write memory only through these, so the counters see every byte.

#include <cstddef>
#include <type_traits>

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

#if defined(DSCONV_DEVICE_PASS)
namespace gpu_detail {
// The runtimes' 4- and 2-word vector types for accesses of 16 and 8 bytes: a vector of
// 16-bit class-type elements accessed as itself may be split into narrower loads (hipcc did
// so inside the GEMM staging); as machine words it stays one access (LDG.128,
// global_load_dwordx4).
template <std::size_t Bytes>
struct machine_vector {
  using type = void;
};
template <>
struct machine_vector<16> {
  using type = uint4;
};
template <>
struct machine_vector<8> {
  using type = uint2;
};
// v's bytes as the machine vector W.
template <class W, class T, int N>
DSCONV_DEVICE DSCONV_FORCEINLINE W machine_words(const vec<T, N>& v) {
  W w;
  __builtin_memcpy(&w, &v, sizeof w);
  return w;
}
}  // namespace gpu_detail
#endif

// Vector access to p[0..N); p must be aligned to sizeof(T) * N (kernels check before
// choosing a vector path).
template <int N, class T>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE vec<T, N> load_vec(const T* p) {
#if defined(DSCONV_DEVICE_PASS)
  using words = typename gpu_detail::machine_vector<sizeof(vec<T, N>)>::type;
  if constexpr (!std::is_void<words>::value) {
    const words w = *reinterpret_cast<const words*>(p);
    vec<T, N> v;
    __builtin_memcpy(&v, &w, sizeof v);
    return v;
  }
#endif
  return load(reinterpret_cast<const vec<T, N>*>(p));
}

// load_vec<N>(p) where `whole`, else zeros (reading nothing). On a GPU the zeros and the
// predicated load go into the same machine words: a vector of 16-bit elements zeroed and
// overwritten element-wise took two byte permutes an element on sm_90.
template <int N, class T>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE vec<T, N> load_vec_or_zero(const T* p, bool whole) {
#if defined(DSCONV_DEVICE_PASS)
  using words = typename gpu_detail::machine_vector<sizeof(vec<T, N>)>::type;
  if constexpr (!std::is_void<words>::value) {
    words w{};
    if (whole) w = *reinterpret_cast<const words*>(p);
    vec<T, N> v;
    __builtin_memcpy(&v, &w, sizeof v);
    return v;
  }
#endif
  vec<T, N> v{};
  if (whole) v = load_vec<N>(p);
  return v;
}

template <int N, class T>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE void store_vec(T* p, const vec<T, N>& v) {
#if defined(DSCONV_DEVICE_PASS)
  using words = typename gpu_detail::machine_vector<sizeof(vec<T, N>)>::type;
  if constexpr (!std::is_void<words>::value) {
    *reinterpret_cast<words*>(p) = gpu_detail::machine_words<words>(v);
    return;
  }
#endif
  store(reinterpret_cast<vec<T, N>*>(p), v);
}

// store_vec<N>(p, v) as one vector instruction whatever the code around it: inside the tiled
// GEMM kernels nvcc split the plain 16-byte store of a uint4 into four 4-byte stores (STG.E),
// so that each 16-byte run of their epilogue took four store instructions, each writing parts
// of sectors. On CUDA an explicit PTX vector store (st.global.v4 / .v2; the runtime's __stwb
// would make it a strong store, STG.E.128.STRONG.SM); elsewhere store_vec. Where store_vec
// already vectorises, it is the better choice: the explicit store takes a whole 64-bit address
// (no immediate offset), which pushed a register-blocked depthwise kernel into spilling on sm_75.
template <int N, class T>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE void store_vec_exact(T* p, const vec<T, N>& v) {
#if defined(__CUDA_ARCH__)
  using words = typename gpu_detail::machine_vector<sizeof(vec<T, N>)>::type;
  if constexpr (!std::is_void<words>::value) {
    const words w = gpu_detail::machine_words<words>(v);
    if constexpr (sizeof w == 16)
      asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w.x), "r"(w.y), "r"(w.z), "r"(w.w)
                   : "memory");
    else
      asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(w.x), "r"(w.y) : "memory");
    return;
  }
#endif
  store_vec<N>(p, v);
}

// Shared memory (dynamic_shared, DSCONV_SHARED_ARRAY): the same as load / store, recorded on
// the host platform for the bank model (host/shared_banks.hpp), which groups the lanes'
// accesses by the source line of the call: DSCONV_CALL_SITE's default arguments there,
// nothing on a GPU (DSCONV_CALL_SITE_ARGS passes them on).
#if defined(DSCONV_PLATFORM_HOST)
#define DSCONV_CALL_SITE , const char *site_file = __builtin_FILE(), unsigned site_line = __builtin_LINE()
#define DSCONV_CALL_SITE_ARGS , site_file, site_line
#else
#define DSCONV_CALL_SITE
#define DSCONV_CALL_SITE_ARGS
#endif
template <class T>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE T shared_load(const T* p DSCONV_CALL_SITE) {
#if defined(DSCONV_PLATFORM_HOST)
  if (host_detail::traffic_enabled()) host_detail::record_shared(p, sizeof(T), false, site_file, site_line);
#endif
  return *p;
}

template <class T>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE void shared_store(T* p, const T& v DSCONV_CALL_SITE) {
#if defined(DSCONV_PLATFORM_HOST)
  if (host_detail::traffic_enabled()) host_detail::record_shared(p, sizeof(T), true, site_file, site_line);
#endif
  *p = v;
}

// sizeof(U) bytes at p (aligned to them) as one U: e.g. two 16-bit elements as one 32-bit
// fragment register. On a GPU one shared-memory load; on the host a memcpy, which C++'s
// aliasing rules require there.
template <class U, class T>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE U shared_load_as(const T* p DSCONV_CALL_SITE) {
#if defined(DSCONV_DEVICE_PASS)
  return *reinterpret_cast<const U*>(p);
#else
#if defined(DSCONV_PLATFORM_HOST)
  if (host_detail::traffic_enabled()) host_detail::record_shared(p, sizeof(U), false, site_file, site_line);
#endif
  U r;
  __builtin_memcpy(&r, p, sizeof r);
  return r;
#endif
}

}  // namespace platform
}  // namespace dsconv
