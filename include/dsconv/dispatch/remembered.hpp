#pragma once
// Plans remembered per host thread. The planners run on the host before every launch (twice
// where the variant is chosen automatically: once to choose, once to launch), and some search
// or model what a GPU would do (the NCHW staging order counts a thousand lanes' stores per
// order; the fused block's tile search tries hundreds of tiles): tens to hundreds of
// microseconds, where the rest of a call takes about one and a kernel at batch 1 a few. A
// network has a few dozen distinct layers, so each host thread keeps what it computed, keyed by
// every value the computation reads; past 1024 entries it starts afresh.

#include <array>
#include <cstddef>
#include <unordered_map>

namespace dsconv {
namespace detail {

template <std::size_t N>
using plan_key = std::array<long long, N>;

// compute() for `key`, once per host thread and key (Compute: a lambda, so each call site keeps
// its own table).
template <std::size_t N, class Compute>
auto remembered(const plan_key<N>& key, Compute compute) -> decltype(compute()) {
  struct key_hash {
    std::size_t operator()(const plan_key<N>& k) const {
      std::size_t v = 0;
      for (const long long x : k) v = v * 0x9e3779b97f4a7c15ULL + static_cast<std::size_t>(x);
      return v;
    }
  };
  thread_local std::unordered_map<plan_key<N>, decltype(compute()), key_hash> table;
  const auto found = table.find(key);
  if (found != table.end()) return found->second;
  if (table.size() >= 1024) table.clear();
  return table[key] = compute();
}

}  // namespace detail
}  // namespace dsconv
