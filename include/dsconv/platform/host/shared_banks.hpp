#pragma once
// The shared-memory bank model of the host platform. Shared memory is 32 banks of 4-byte
// words, on NVIDIA and in AMD's LDS alike. A warp-wide access is served in phases of
// 128 bytes' worth of lanes, taken in lane order: the whole warp for accesses of up to 4
// bytes on NVIDIA (a half-wave on AMD), half of it for 8-byte and a quarter for 16-byte
// accesses (a quarter and an eighth of a 64-lane wave). A phase takes as many wavefronts as
// the most distinct words any one bank must deliver (lanes reading the same word share it);
// it ideally takes one. The conflict factor of a kernel is its wavefronts over that ideal.
//
// Kernels read and write shared memory through platform::shared_load / shared_store; on the
// host each lane's accesses are logged, and when the block next meets at a barrier (or ends)
// the k-th access at one call site of every lane of a warp (within one iteration of a marked
// loop: access_context.hpp) becomes one request. A call site is
// the source line of the shared_load / shared_store call (a GPU executes one access of the
// source as one instruction for the warp's lanes together). Not the code address: the host
// compiler may duplicate the code of one access into several paths (at -O2 it did in the fused
// block kernel, whose lanes then took different copies), and lanes split over the copies would
// count as separate partial requests: 1.33 instead of the 1.00 that -O1 measured there.
// The counters are also kept per call site (bank_sites), so that a conflict factor above
// its ideal names the access that causes it.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "access_context.hpp"

namespace dsconv {
namespace platform {
namespace host_detail {

inline constexpr unsigned shared_banks = 32, bank_bytes = 4, phase_bytes = shared_banks * bank_bytes;

// The file is compared by address: __builtin_FILE() at one call is one string literal.
struct shared_site {
  const char* file = nullptr;
  unsigned line = 0;
  bool operator==(const shared_site& o) const { return file == o.file && line == o.line; }
  bool operator<(const shared_site& o) const { return file != o.file ? file < o.file : line < o.line; }
};

struct shared_access {
  shared_site site;
  std::uint32_t offset;  // shared-memory address
  std::uint16_t bytes;
  bool store;
  std::uint64_t context;  // the lane's access context, and the access's occurrence at its
  unsigned occurrence;    // site there (access_context.hpp): with the site, its request
  // The key of a shared-memory call site (loads and stores apart) among a context's sites.
  std::uint64_t site_key() const {
    return mix_key(mix_key(reinterpret_cast<std::uintptr_t>(site.file), site.line), store);
  }
  bool same_request(const shared_access& o) const {
    return site == o.site && store == o.store && context == o.context && occurrence == o.occurrence;
  }
};

struct bank_counters {
  std::uint64_t requests = 0, wavefronts = 0, ideal = 0;

  bank_counters& operator+=(const bank_counters& o) {
    requests += o.requests;
    wavefronts += o.wavefronts;
    ideal += o.ideal;
    return *this;
  }
  double conflict_factor() const { return ideal ? double(wavefronts) / double(ideal) : 0.0; }
};

// The counters of one call site's loads or stores.
struct site_bank_counters {
  shared_site site;
  bool store = false;
  bank_counters counts;
};

// Per call site: a kernel has few sites, so a list.
struct bank_sites {
  std::vector<site_bank_counters> sites;

  void add(const shared_site& site, bool store, const bank_counters& c) {
    for (auto& s : sites)
      if (s.site == site && s.store == store) {
        s.counts += c;
        return;
      }
    sites.push_back({site, store, c});
  }
  bank_sites& operator+=(const bank_sites& o) {
    for (const auto& s : o.sites) add(s.site, s.store, s.counts);
    return *this;
  }
  // The site of loads (store false) or stores with the most wavefronts over their ideal (null
  // where none has any).
  const site_bank_counters* worst(bool store) const {
    const site_bank_counters* w = nullptr;
    for (const auto& s : sites)
      if (s.store == store && s.counts.wavefronts > s.counts.ideal &&
          (!w || s.counts.wavefronts - s.counts.ideal > w->counts.wavefronts - w->counts.ideal))
        w = &s;
    return w;
  }
};

struct lane_access {
  unsigned lane;
  std::uint32_t offset;
  unsigned bytes;
};

// One warp-wide request (the lanes' accesses, in ascending lane order): its wavefronts.
inline bank_counters count_request(const std::vector<lane_access>& lanes) {
  bank_counters c;
  if (lanes.empty()) return c;
  unsigned bytes = 4;
  for (const auto& a : lanes) bytes = std::max(bytes, a.bytes);
  const unsigned per_phase = std::max(1u, phase_bytes / bytes);
  ++c.requests;
  thread_local std::vector<std::uint32_t> words;
  for (std::size_t first = 0; first < lanes.size();) {
    const unsigned phase = lanes[first].lane / per_phase;
    std::size_t end = first;
    words.clear();
    for (; end < lanes.size() && lanes[end].lane / per_phase == phase; ++end) {
      const std::uint32_t w0 = lanes[end].offset / bank_bytes;
      const std::uint32_t w1 = (lanes[end].offset + lanes[end].bytes - 1) / bank_bytes;
      for (std::uint32_t w = w0; w <= w1; ++w) words.push_back(w);
    }
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    unsigned per_bank[shared_banks] = {};
    unsigned worst = 0;
    for (const std::uint32_t w : words) worst = std::max(worst, ++per_bank[w % shared_banks]);
    c.wavefronts += worst;
    ++c.ideal;
    first = end;
  }
  return c;
}

// Turns the logs of one warp's lanes (log[l] = lane l's accesses since the last barrier) into
// requests, adding loads to `loads` and stores to `stores`, and both to `sites`. Lanes that
// ran the same code have logs of the same requests in the same order, matched entry by entry;
// otherwise the accesses of one context, site and occurrence are matched.
inline void count_warp(std::vector<shared_access>* const* logs, unsigned lane_count, bank_counters& loads,
                       bank_counters& stores, bank_sites& sites) {
  const auto count = [&](const shared_site& site, bool store, const std::vector<lane_access>& lanes) {
    const bank_counters c = count_request(lanes);
    (store ? stores : loads) += c;
    sites.add(site, store, c);
  };
  bool lockstep = true;
  const std::vector<shared_access>& first = *logs[0];
  for (unsigned l = 1; l < lane_count && lockstep; ++l) {
    const std::vector<shared_access>& other = *logs[l];
    lockstep = other.size() == first.size();
    for (std::size_t j = 0; lockstep && j < first.size(); ++j) lockstep = other[j].same_request(first[j]);
  }
  std::vector<lane_access> request;
  if (lockstep) {
    for (std::size_t j = 0; j < first.size(); ++j) {
      request.clear();
      for (unsigned l = 0; l < lane_count; ++l) request.push_back({l, (*logs[l])[j].offset, (*logs[l])[j].bytes});
      count(first[j].site, first[j].store, request);
    }
    return;
  }
  // (context, site key, occurrence) -> the access's site and the request's lanes
  std::map<std::tuple<std::uint64_t, std::uint64_t, unsigned>, std::pair<const shared_access*, std::vector<lane_access>>>
      by_request;
  for (unsigned l = 0; l < lane_count; ++l)
    for (const shared_access& a : *logs[l]) {
      auto& r = by_request[{a.context, a.site_key(), a.occurrence}];
      r.first = &a;
      r.second.push_back({l, a.offset, a.bytes});
    }
  for (auto& r : by_request) count(r.second.first->site, r.second.first->store, r.second.second);
}

}  // namespace host_detail
}  // namespace platform
}  // namespace dsconv
