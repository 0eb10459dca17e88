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

// The default arguments name the source line of the call: the barrier's identity, so that
// threads waiting at two different barriers are reported as divergence. (Code addresses
// would not do: an optimiser that duplicates a loop gives one barrier several.)
inline void sync_threads(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  host_detail::current_runner()->block_barrier(host_detail::source_line{file, line});
}

// Dynamic shared memory of the block (launch_config::shared_bytes), 16-byte aligned.
template <class T>
inline T* dynamic_shared() {
  return static_cast<T*>(host_detail::current_runner()->dynamic_shared());
}

// The block's static shared array of type A declared at `key` (DSCONV_SHARED_ARRAY).
template <class A>
inline A& static_shared(const void* key) {
  return *static_cast<A*>(host_detail::current_runner()->static_shared(key, sizeof(A), alignof(A)));
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
  const std::uint64_t context = f.accesses.id();
  runner->traffic().add(f.warp, context, site, f.accesses.next(reinterpret_cast<std::uintptr_t>(site)), store, addr, bytes);
}

// Logs one shared-memory access for the bank model; the call's source line groups lanes into
// requests (shared_banks.hpp).
DSCONV_NOINLINE inline void record_shared(const void* addr, std::size_t bytes, bool store, const char* file,
                                          unsigned line) {
  if (!traffic_enabled()) return;
  if (block_runner* runner = current_runner()) runner->record_shared(shared_site{file, line}, addr, bytes, store);
}

// The calling thread enters an instance of the marked loop at a call site, starts its next
// iteration, or leaves it (platform::loop_marks; access_context.hpp).
inline void loop_begin(const char* file, unsigned line) {
  if (block_runner* runner = current_runner())
    runner->current().accesses.begin(mix_key(reinterpret_cast<std::uintptr_t>(file), line));
}
inline void loop_iteration() {
  if (block_runner* runner = current_runner()) runner->current().accesses.iteration();
}
inline void loop_end() {
  if (block_runner* runner = current_runner()) runner->current().accesses.end();
}
}  // namespace host_detail

}  // namespace platform
}  // namespace dsconv
