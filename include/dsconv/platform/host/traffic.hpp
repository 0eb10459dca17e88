#pragma once
// Memory traffic counters of the host platform. Kernels read and write global memory through
// platform::load / platform::store; here each warp's k-th access at one call site (within one
// iteration of a marked loop: access_context.hpp) is grouped into one request, as a GPU's
// load/store unit would coalesce it, and the distinct 32-byte
// sectors of each request are counted. Sectors per request (4 for a coalesced 32-lane float
// load) and total sectors against the minimum a problem must move are the performance
// evidence a machine without a GPU can produce; so are the shared-memory bank wavefronts
// against their ideal (shared_banks.hpp), counted alongside.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "shared_banks.hpp"

namespace dsconv {
namespace platform {
namespace host_detail {

inline constexpr unsigned sector_bytes = 32;

struct traffic_counters {
  std::uint64_t load_requests = 0, load_sectors = 0, load_bytes = 0;
  std::uint64_t store_requests = 0, store_sectors = 0, store_bytes = 0;
  bank_counters shared_loads, shared_stores;  // shared memory: wavefronts against the ideal
  bank_sites shared_sites;                    // the same per call site

  traffic_counters& operator+=(const traffic_counters& o) {
    shared_loads += o.shared_loads;
    shared_stores += o.shared_stores;
    shared_sites += o.shared_sites;
    load_requests += o.load_requests;
    load_sectors += o.load_sectors;
    load_bytes += o.load_bytes;
    store_requests += o.store_requests;
    store_sectors += o.store_sectors;
    store_bytes += o.store_bytes;
    return *this;
  }
  std::uint64_t sectors() const { return load_sectors + store_sectors; }
  std::uint64_t bytes() const { return load_bytes + store_bytes; }
  double load_sectors_per_request() const { return load_requests ? double(load_sectors) / double(load_requests) : 0.0; }
  double store_sectors_per_request() const {
    return store_requests ? double(store_sectors) / double(store_requests) : 0.0;
  }
};

// Counting costs a hash-map update per access, so it runs only while a recorder is alive.
inline std::atomic<int>& traffic_recorders_alive() {
  static std::atomic<int> n{0};
  return n;
}
inline bool traffic_enabled() { return traffic_recorders_alive().load(std::memory_order_relaxed) != 0; }

// The requests of one block, flushed into totals when the block ends.
class block_traffic {
 public:
  // An access of a lane of `warp` at `site`, the k-th there in its access context `context`.
  void add(unsigned warp, std::uint64_t context, const void* site, unsigned k, bool store, const void* addr,
           std::size_t bytes) {
    const key id{warp, k, store, reinterpret_cast<std::uintptr_t>(site), context};
    std::vector<std::uint64_t>& sectors = requests_[id];
    const auto first = reinterpret_cast<std::uintptr_t>(addr) / sector_bytes;
    const auto last = (reinterpret_cast<std::uintptr_t>(addr) + bytes - 1) / sector_bytes;
    for (std::uint64_t s = first; s <= last; ++s)
      if (std::find(sectors.begin(), sectors.end(), s) == sectors.end()) sectors.push_back(s);
    (store ? block_.store_bytes : block_.load_bytes) += bytes;
  }

  // Adds this block's requests to `into` and starts empty for the next block.
  void flush(traffic_counters& into) {
    for (const auto& r : requests_) {
      if (r.first.store) {
        ++block_.store_requests;
        block_.store_sectors += r.second.size();
      } else {
        ++block_.load_requests;
        block_.load_sectors += r.second.size();
      }
    }
    into += block_;
    block_ = traffic_counters{};
    requests_.clear();
  }

 private:
  struct key {
    unsigned warp, k;
    bool store;
    std::uintptr_t site;
    std::uint64_t context;
    bool operator==(const key& o) const {
      return warp == o.warp && k == o.k && store == o.store && site == o.site && context == o.context;
    }
  };
  struct key_hash {
    std::size_t operator()(const key& v) const {
      std::uint64_t h = v.site * 0x9e3779b97f4a7c15ULL ^ v.context;
      h ^= (static_cast<std::uint64_t>(v.warp) << 33) ^ (static_cast<std::uint64_t>(v.k) << 1) ^ (v.store ? 1u : 0u);
      return static_cast<std::size_t>(h * 0xff51afd7ed558ccdULL >> 17);
    }
  };
  std::unordered_map<key, std::vector<std::uint64_t>, key_hash> requests_;
  traffic_counters block_;

 public:
  // Where the block runner adds the requests of the block's shared-memory accesses.
  bank_counters& shared_loads() { return block_.shared_loads; }
  bank_counters& shared_stores() { return block_.shared_stores; }
  bank_sites& shared_sites() { return block_.shared_sites; }
};

}  // namespace host_detail
}  // namespace platform
}  // namespace dsconv
