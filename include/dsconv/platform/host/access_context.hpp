#pragma once
// Which request of its warp a thread's memory access belongs to, for the traffic and bank
// models (traffic.hpp, shared_banks.hpp). A GPU issues each instruction once for the lanes of
// a warp that are active there; the host runs the lanes one after another, and joins their
// accesses back into requests by call site and occurrence: the k-th access of every lane at
// one site is one request. That holds while the lanes take the same path. In a loop whose
// body some lanes skip in some iterations (an element past a row's end, a lane with no work
// left), a GPU's idle lane is absent from that iteration's requests; counted over the whole
// kernel, its later accesses would shift into the requests of later iterations instead, and
// the requests would mix iterations (more sectors each, banks that no single instruction
// meets). So the loops that walk a thread's elements mark their iterations
// (platform::loop_marks, used by detail::for_each_strided), and the occurrence of an access
// is counted within its context: the loop instances and iterations it is nested in.

#include <cstdint>
#include <vector>

namespace dsconv {
namespace platform {
namespace host_detail {

// Mixes `v` into the hash `h` (splitmix64's finaliser).
inline std::uint64_t mix_key(std::uint64_t h, std::uint64_t v) {
  std::uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class access_context {
 public:
  // A thread's start: outside every marked loop.
  void clear() {
    depth_ = 0;
    top().reset(0);
  }

  // Entering an instance of the marked loop `loop` (its call site's key).
  void begin(std::uint64_t loop) {
    frame& parent = top();
    const unsigned instance = parent.loops.next(loop);
    const std::uint64_t base = mix_key(mix_key(parent.id, loop), instance);
    if (++depth_ == frames_.size()) frames_.emplace_back();
    top().reset(base);
  }
  // The next iteration of the innermost marked loop.
  void iteration() {
    frame& f = top();
    f.id = mix_key(f.base, f.iterations++);
    f.occurrences.clear();
    f.loops.clear();
  }
  void end() {
    if (depth_ > 0) --depth_;
  }

  // The current context (0 outside every marked loop), and the occurrence of an access at
  // `site` (a call site's key) within it: together the request the access belongs to.
  std::uint64_t id() const { return frames_[depth_].id; }
  unsigned next(std::uint64_t site) { return top().occurrences.next(site); }

 private:
  // Per key, how many times it came: a context has few sites, so a short list.
  class counters {
   public:
    unsigned next(std::uint64_t key) {
      for (auto& e : entries_)
        if (e.key == key) return e.count++;
      entries_.push_back({key, 1});
      return 0;
    }
    void clear() { entries_.clear(); }

   private:
    struct entry {
      std::uint64_t key;
      unsigned count;
    };
    std::vector<entry> entries_;
  };
  struct frame {
    std::uint64_t base = 0, id = 0;
    std::uint64_t iterations = 0;
    counters occurrences, loops;
    void reset(std::uint64_t b) {
      base = id = b;
      iterations = 0;
      occurrences.clear();
      loops.clear();
    }
  };
  frame& top() { return frames_[depth_]; }

  std::vector<frame> frames_ = std::vector<frame>(1);
  std::size_t depth_ = 0;
};

}  // namespace host_detail
}  // namespace platform
}  // namespace dsconv
