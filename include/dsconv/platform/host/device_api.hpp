#pragma once
// What a kernel sees on the host platform: its coordinates, barriers, warp-collective
// operations, dynamic shared memory, and the access recorder behind platform::load/store.
// All of it reads the fiber that is running now, never a copy taken earlier: a fiber
// resumes after other fibers of the block have run.

#include <cstddef>
#include <cstring>

#include "stream.hpp"
#include "../launch_types.hpp"
#include "block_runner.hpp"
#include "traffic.hpp"

namespace dsconv {
namespace platform {

inline dims thread_idx() { return host_detail::current_runner()->current().tid; }
inline dims block_idx() { return host_detail::current_runner()->launch().block_idx; }
inline dims block_dim() { return host_detail::current_runner()->launch().block_dim; }
inline dims grid_dim() { return host_detail::current_runner()->launch().grid_dim; }
inline int warp_size() { return static_cast<int>(host_detail::current_runner()->launch().warp_size); }
inline int lane_id() { return static_cast<int>(host_detail::current_runner()->current().lane); }

inline void sync_threads() { host_detail::current_runner()->block_barrier(); }

// Dynamic shared memory of the block (launch_config::shared_bytes), 16-byte aligned.
template <class T>
inline T* dynamic_shared() {
  return static_cast<T*>(host_detail::current_runner()->dynamic_shared());
}

// Warp shuffles with CUDA's semantics for `width` (a power of two up to the warp size):
// lanes form segments of `width`, and a source outside the caller's segment yields the
// caller's own value.
template <class T>
inline T shfl(T v, int src_lane, int width = max_warp_size) {
  const unsigned w = static_cast<unsigned>(width < warp_size() ? width : warp_size());
  return host_detail::current_runner()->warp_exchange(
      v, [&](unsigned lane) { return (lane & ~(w - 1)) + (static_cast<unsigned>(src_lane) & (w - 1)); });
}
template <class T>
inline T shfl_xor(T v, int lane_mask, int width = max_warp_size) {
  const unsigned w = static_cast<unsigned>(width < warp_size() ? width : warp_size());
  return host_detail::current_runner()->warp_exchange(v, [&](unsigned lane) {
    const unsigned src = lane ^ static_cast<unsigned>(lane_mask);
    return (src & ~(w - 1)) == (lane & ~(w - 1)) ? src : lane;
  });
}
template <class T>
inline T shfl_down(T v, unsigned delta, int width = max_warp_size) {
  const unsigned w = static_cast<unsigned>(width < warp_size() ? width : warp_size());
  return host_detail::current_runner()->warp_exchange(v, [&](unsigned lane) {
    const unsigned src = lane + delta;
    return (src & ~(w - 1)) == (lane & ~(w - 1)) ? src : lane;
  });
}
template <class T>
inline T shfl_up(T v, unsigned delta, int width = max_warp_size) {
  const unsigned w = static_cast<unsigned>(width < warp_size() ? width : warp_size());
  return host_detail::current_runner()->warp_exchange(
      v, [&](unsigned lane) { return (lane & (w - 1)) >= delta ? lane - delta : lane; });
}

// Bit i of the result is set when lane i of the warp passed a true predicate.
inline unsigned long long ballot(bool predicate) { return host_detail::current_runner()->warp_ballot(predicate); }

namespace host_detail {
// Records one global-memory access for the traffic counters. Not inlined: its return
// address identifies the call site, which groups the lanes' accesses into requests.
DSCONV_NOINLINE inline void record_access(const void* addr, std::size_t bytes, bool store) {
  if (!traffic_enabled()) return;
  block_runner* runner = current_runner();
  if (!runner) return;  // host code touching memory through the helpers is not kernel traffic
  const void* site = __builtin_return_address(0);
  fiber& f = runner->current();
  runner->traffic().add(f.warp, site, f.sites.next(site), store, addr, bytes);
}
}  // namespace host_detail

}  // namespace platform
}  // namespace dsconv
