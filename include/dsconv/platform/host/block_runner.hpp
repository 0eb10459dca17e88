#pragma once
// Runs one thread block on the calling OS thread: every emulated thread is a fiber, and a
// scheduler on the thread's own stack resumes each runnable fiber in turn, in the block's
// schedule (settings.hpp: ascending, descending or shuffled, by thread or by warp), until it
// reaches a barrier or finishes. Once no fiber can run, the barrier states are resolved: a
// warp whose lanes all wait at a warp-collective operation is released, then a block whose
// threads all wait at the same block barrier (one source line). Anything else (some threads
// exited, or wait at another barrier) is divergence: reported as an error, and the waiting
// fibers are unwound with an exception so the block always ends.
// Shared memory is poisoned at every block start (shared_memory.hpp); while traffic is
// counted, each thread's shared-memory accesses are logged and turned into bank wavefronts
// whenever the block meets at a barrier (shared_banks.hpp).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../status.hpp"
#include "stream.hpp"
#include "../launch_types.hpp"
#include "context.hpp"
#include "settings.hpp"
#include "shared_banks.hpp"
#include "shared_memory.hpp"
#include "traffic.hpp"

namespace dsconv {
namespace platform {
namespace host_detail {

// A type-erased reference to the callable that runs the kernel for the current thread.
struct kernel_body {
  void (*invoke)(const void* callable) = nullptr;
  const void* callable = nullptr;

  template <class F>
  static kernel_body from(const F& f) {
    return kernel_body{[](const void* c) { (*static_cast<const F*>(c))(); }, &f};
  }
};

// A place in the source: where a barrier is.
struct source_line {
  const char* file = "";
  int line = 0;
  bool operator==(const source_line& o) const { return line == o.line && std::strcmp(file, o.file) == 0; }
  std::string text() const { return std::string(file) + ":" + std::to_string(line); }
};

// Thrown into fibers that wait at a barrier when their block is aborted.
struct block_abort {};

enum class fiber_state : unsigned char { runnable, at_block_barrier, at_warp_barrier, finished };

// An asynchronous copy to shared memory (async_copy.hpp) not yet landed: its 16 bytes, read
// when it was issued, and the commit group it belongs to.
struct pending_copy {
  unsigned char* dst;
  unsigned group;
  unsigned char size;  // bytes it lands: 4, 8 or 16
  unsigned char bytes[16];
};

struct fiber {
  context ctx;
  void* asan_fake_stack = nullptr;
  fiber_stack stack;
  dims tid;
  unsigned linear = 0, warp = 0, lane = 0;
  fiber_state state = fiber_state::finished;
  source_line barrier_site;  // the block barrier it waits at
  unsigned exchange_parity = 0;
  access_context accesses;                 // which request of the warp an access joins
  std::vector<shared_access> shared_log;  // since the last block barrier, while counting
  std::vector<pending_copy> pending_copies;  // issued, landing only when a wait requires it
  unsigned copy_groups = 0;                  // commit groups closed

  explicit fiber(std::size_t stack_bytes) : stack(stack_bytes) {}
  stack_bounds bounds() const { return {stack.bottom(), stack.size()}; }
};

// Bytes each lane can publish to one warp-collective operation (an m16n8k16 product's 12
// operand elements as floats).
inline constexpr std::size_t warp_gather_stride = 48;

class block_runner;
inline block_runner*& current_runner() {
  thread_local block_runner* runner = nullptr;
  return runner;
}

inline void fiber_entry();

class block_runner {
 public:
  struct block_launch {
    kernel_body body;
    dims grid_dim, block_dim, block_idx;
    unsigned warp_size;
    matrix_unit matrix;        // what the device and its code offer: what the matrix operations may execute
    std::size_t shared_bytes;  // dynamic
    std::size_t shared_limit;  // static and dynamic, per block: the device's
    std::size_t stack_bytes;
    schedule order;            // of this block: never rotate
    std::uint64_t seed;        // of this block's shuffles
  };

  // Runs one block to completion. Returns success, barrier_divergence or kernel_fault,
  // with a description in `message`.
  status run(const block_launch& launch, std::string& message) {
    launch_ = &launch;
    const unsigned n = static_cast<unsigned>(launch.block_dim.volume());
    while (fibers_.size() < n) fibers_.push_back(std::make_unique<fiber>(launch.stack_bytes));
    if (stack_bytes_ != launch.stack_bytes) {
      for (auto& f : fibers_) f = std::make_unique<fiber>(launch.stack_bytes);
      stack_bytes_ = launch.stack_bytes;
    }
    for (unsigned i = 0; i < n; ++i) {
      fiber& f = *fibers_[i];
      f.tid = dims{i % launch.block_dim.x, (i / launch.block_dim.x) % launch.block_dim.y,
                   i / (launch.block_dim.x * launch.block_dim.y)};
      f.linear = i;
      f.warp = i / launch.warp_size;
      f.lane = i % launch.warp_size;
      f.state = fiber_state::runnable;
      f.barrier_site = source_line{};
      f.exchange_parity = 0;
      f.accesses.clear();
      f.shared_log.clear();
      f.pending_copies.clear();
      f.copy_groups = 0;
      start_context(f.ctx, f.stack, &fiber_entry);
    }
    threads_ = n;
    warps_ = (n + launch.warp_size - 1) / launch.warp_size;
    if (exchange_.size() < warps_) exchange_.resize(warps_);
    shared_.begin_block(launch.shared_bytes, launch.shared_limit);
    aborting_ = false;
    result_ = status::success;
    message_.clear();

    block_runner* const outer = current_runner();
    current_runner() = this;
    std::uint64_t pass = 0;
    do {
      for (const unsigned i : pass_order(pass++)) {
        fiber& f = *fibers_[i];
        if (f.state != fiber_state::runnable) continue;
        current_ = &f;
        switch_context(scheduler_, &scheduler_fake_stack_, f.ctx, f.bounds());
      }
    } while (resolve_barriers());
    if (!aborting_) count_shared_accesses();
    current_runner() = outer;
    current_ = nullptr;
    message = message_;
    return result_;
  }

  fiber& current() const { return *current_; }
  const block_launch& launch() const { return *launch_; }
  unsigned lanes_in_warp(unsigned warp) const {
    const unsigned first = warp * launch_->warp_size;
    return threads_ - first < launch_->warp_size ? threads_ - first : launch_->warp_size;
  }
  void* dynamic_shared() { return shared_.dynamic(); }
  void* static_shared(const void* key, std::size_t bytes, std::size_t align) {
    return shared_.static_array(key, bytes, align);
  }
  block_traffic& traffic() { return traffic_; }

  // Whether the block's asynchronous copies land as they are issued (async_copy.hpp): every
  // other block of a grid, by its index; the others' land as late as their waits allow.
  bool lands_copies_early() const {
    const dims& b = launch_->block_idx;
    const dims& g = launch_->grid_dim;
    return (b.x + g.x * (b.y + static_cast<std::size_t>(g.y) * b.z)) % 2 == 1;
  }

  // Faults unless [addr, addr + bytes) is the block's shared memory.
  void check_shared(const void* addr, std::size_t bytes) const {
    if (!shared_.contains(addr, bytes))
      throw std::logic_error("a shared-memory access (shared_load / shared_store) outside the block's shared memory");
  }

  // Logs a shared-memory access of the calling thread for the bank model.
  void record_shared(const shared_site& site, const void* addr, std::size_t bytes, bool store) {
    check_shared(addr, bytes);
    shared_access a{site, shared_.offset_of(addr), static_cast<std::uint16_t>(bytes), store, current_->accesses.id(), 0};
    a.occurrence = current_->accesses.next(a.site_key());
    current_->shared_log.push_back(a);
  }

  // __syncthreads() at `site`: suspends the calling thread until every thread of the block
  // arrives at the same barrier.
  void block_barrier(source_line site) {
    current_->barrier_site = site;
    wait(fiber_state::at_block_barrier);
  }

  // Exchanges one value of up to 8 bytes among the lanes of the calling thread's warp:
  // each lane publishes `value`, and gets back what lane `source(lane)` published (its own
  // value where the source lane is absent or out of range).
  template <class T, class SourceLane>
  T warp_exchange(T value, SourceLane source) {
    static_assert(sizeof(T) <= sizeof(std::uint64_t), "warp exchange carries at most 8 bytes");
    fiber& f = *current_;
    lane_slot* slots = publish(&value, sizeof(T));
    const unsigned src = source(f.lane);
    T result = value;
    if (src < lanes_in_warp(f.warp)) std::memcpy(&result, slots[src].bytes, sizeof(T));
    return result;
  }

  // Every lane of the calling thread's warp publishes `bytes` bytes (at most
  // warp_gather_stride); after a warp barrier, returns what each lane published:
  // lane l's bytes at result + l * warp_gather_stride. Warp-collective matrix operations are
  // built on it.
  const unsigned char* warp_gather(const void* data, std::size_t bytes) {
    return publish(data, bytes)->bytes;
  }

  // Bit i set when lane i of the calling thread's warp passed a true predicate.
  unsigned long long warp_ballot(bool predicate) {
    fiber& f = *current_;
    const unsigned char flag = predicate ? 1 : 0;
    const lane_slot* slots = publish(&flag, 1);
    unsigned long long mask = 0;
    for (unsigned l = 0, n = lanes_in_warp(f.warp); l < n; ++l) mask |= (slots[l].bytes[0] ? 1ULL : 0ULL) << l;
    return mask;
  }

  void fiber_main(stack_bounds scheduler_stack) {
    if (scheduler_stack.bottom) scheduler_stack_ = scheduler_stack;
    fiber& f = *current_;
    if (!aborting_) {
      try {
        launch_->body.invoke(launch_->body.callable);
      } catch (const block_abort&) {
      } catch (const std::exception& e) {
        abort_block(status::kernel_fault, describe(f) + " threw: " + e.what());
      } catch (...) {
        abort_block(status::kernel_fault, describe(f) + " threw an exception that is not a std::exception");
      }
    }
    f.state = fiber_state::finished;
    switch_context(f.ctx, nullptr, scheduler_, scheduler_stack_);
    __builtin_unreachable();
  }

 private:
  struct lane_slot {
    alignas(8) unsigned char bytes[warp_gather_stride];
  };
  struct warp_slots {
    lane_slot slots[2][max_warp_size];
  };

  // Publishes the calling lane's `bytes` and waits at the warp barrier; returns the warp's
  // slots. Two slot sets are used alternately: a lane can only publish into a set again
  // after the next warp barrier, by which time every lane has read it.
  lane_slot* publish(const void* data, std::size_t bytes) {
    fiber& f = *current_;
    if (bytes > warp_gather_stride) throw std::length_error("warp-collective operation publishes too many bytes");
    lane_slot* slots = exchange_[f.warp].slots[f.exchange_parity];
    f.exchange_parity ^= 1u;
    std::memcpy(slots[f.lane].bytes, data, bytes);
    wait(fiber_state::at_warp_barrier);
    return slots;
  }

  void wait(fiber_state why) {
    fiber& f = *current_;
    f.state = why;
    switch_context(f.ctx, &f.asan_fake_stack, scheduler_, scheduler_stack_);
    if (aborting_) throw block_abort{};
  }

  std::string describe(const fiber& f) const {
    const dims& b = launch_->block_idx;
    return "thread (" + std::to_string(f.tid.x) + "," + std::to_string(f.tid.y) + "," + std::to_string(f.tid.z) +
           ") of block (" + std::to_string(b.x) + "," + std::to_string(b.y) + "," + std::to_string(b.z) + ")";
  }

  void abort_block(status why, std::string message) {
    if (!aborting_) {
      result_ = why;
      message_ = std::move(message);
    }
    aborting_ = true;
  }

  // The order in which pass `pass` resumes the threads (fixed orders are the same each pass).
  const std::vector<unsigned>& pass_order(std::uint64_t pass) {
    const schedule s = launch_->order;
    const bool shuffled = s == schedule::shuffle || s == schedule::warp_shuffle;
    if (pass > 0 && !shuffled) return order_;
    const bool by_warp = s == schedule::warp_descending || s == schedule::warp_shuffle;
    const unsigned units = by_warp ? warps_ : threads_;
    std::vector<unsigned>& unit_order = unit_order_;
    unit_order.resize(units);
    std::iota(unit_order.begin(), unit_order.end(), 0u);
    if (s == schedule::descending || s == schedule::warp_descending) std::reverse(unit_order.begin(), unit_order.end());
    if (shuffled) {
      mixed_bits rng(mix(launch_->seed ^ mix(pass)));
      std::shuffle(unit_order.begin(), unit_order.end(), rng);
    }
    order_.clear();
    for (const unsigned u : unit_order) {
      if (!by_warp) {
        order_.push_back(u);
        continue;
      }
      for (unsigned l = 0, n = lanes_in_warp(u); l < n; ++l) order_.push_back(u * launch_->warp_size + l);
    }
    return order_;
  }

  std::string block_name() const {
    const dims& b = launch_->block_idx;
    return "block (" + std::to_string(b.x) + "," + std::to_string(b.y) + "," + std::to_string(b.z) + ")";
  }

  // Whether the threads waiting at the block barrier all wait at the same one; if not,
  // aborts the block naming the call sites.
  bool one_barrier() {
    const source_line& site = fibers_[0]->barrier_site;
    unsigned same = 0;
    const fiber* other = nullptr;
    for (unsigned i = 0; i < threads_; ++i) {
      if (fibers_[i]->barrier_site == site)
        ++same;
      else if (!other)
        other = fibers_[i].get();
    }
    if (!other) return true;
    abort_block(status::barrier_divergence,
                block_name() + ": threads wait at different barriers: " + std::to_string(same) + " of " +
                    std::to_string(threads_) + " at " + site.text() + ", " + describe(*other) + " and others at " +
                    other->barrier_site.text());
    return false;
  }

  // Turns the shared-memory accesses logged since the last block barrier into bank
  // wavefronts, warp by warp, and clears the logs.
  void count_shared_accesses() {
    if (!traffic_enabled()) return;
    std::vector<shared_access>* logs[max_warp_size];
    for (unsigned w = 0; w < warps_; ++w) {
      const unsigned n = lanes_in_warp(w);
      for (unsigned l = 0; l < n; ++l) logs[l] = &fibers_[w * launch_->warp_size + l]->shared_log;
      count_warp(logs, n, traffic_.shared_loads(), traffic_.shared_stores(), traffic_.shared_sites());
      for (unsigned l = 0; l < n; ++l) logs[l]->clear();
    }
  }

  // Called when no fiber is runnable. Returns false once every thread has finished.
  bool resolve_barriers() {
    unsigned finished = 0, at_block = 0, at_warp = 0;
    for (unsigned i = 0; i < threads_; ++i) {
      switch (fibers_[i]->state) {
        case fiber_state::finished: ++finished; break;
        case fiber_state::at_block_barrier: ++at_block; break;
        case fiber_state::at_warp_barrier: ++at_warp; break;
        case fiber_state::runnable: break;
      }
    }
    if (finished == threads_) return false;
    if (!aborting_ && at_warp > 0) release_complete_warps();
    if (!aborting_ && at_warp == 0) {
      if (at_block == threads_ && one_barrier()) {
        count_shared_accesses();
        release_all();
        return true;
      }
      if (at_block != threads_)
        abort_block(status::barrier_divergence,
                    block_name() + ": " + std::to_string(at_block) + " of " + std::to_string(threads_) +
                        " threads wait at a block barrier that " + std::to_string(finished) +
                        " threads never reach (they returned)");
    }
    if (aborting_) release_all();
    return true;
  }

  // Releases every warp whose lanes all wait at a warp-collective operation; a warp with
  // only some lanes there diverged.
  void release_complete_warps() {
    for (unsigned w = 0; w < warps_; ++w) {
      const unsigned first = w * launch_->warp_size, n = lanes_in_warp(w);
      unsigned waiting = 0;
      for (unsigned l = 0; l < n; ++l) waiting += fibers_[first + l]->state == fiber_state::at_warp_barrier;
      if (waiting == n) {
        for (unsigned l = 0; l < n; ++l) fibers_[first + l]->state = fiber_state::runnable;
      } else if (waiting > 0) {
        abort_block(status::barrier_divergence,
                    "warp " + std::to_string(w) + " of " + block_name() + ": " + std::to_string(waiting) + " of " +
                        std::to_string(n) +
                        " lanes wait at a warp-collective operation that the other lanes never reach");
        return;
      }
    }
  }

  void release_all() {
    for (unsigned i = 0; i < threads_; ++i)
      if (fibers_[i]->state != fiber_state::finished) fibers_[i]->state = fiber_state::runnable;
  }

  std::vector<std::unique_ptr<fiber>> fibers_;
  std::vector<warp_slots> exchange_;
  shared_arena shared_;
  std::vector<unsigned> order_, unit_order_;
  std::size_t stack_bytes_ = 0;
  unsigned threads_ = 0, warps_ = 0;
  const block_launch* launch_ = nullptr;
  fiber* current_ = nullptr;
  context scheduler_;
  void* scheduler_fake_stack_ = nullptr;
  stack_bounds scheduler_stack_;
  bool aborting_ = false;
  status result_ = status::success;
  std::string message_;
  block_traffic traffic_;
};

inline void fiber_entry() { current_runner()->fiber_main(enter_context()); }

}  // namespace host_detail
}  // namespace platform
}  // namespace dsconv
