#pragma once
// A block's shared memory on the host platform: one arena per worker that holds the dynamic
// shared memory of the launch, then each static array (DSCONV_SHARED_ARRAY) at the place the
// block first declares it, with a guard gap after each. At every block start all of it reads
// as 0xff bytes (a NaN in every floating-point type), as stale or uninitialised shared memory
// would on a GPU: a kernel that reads what it did not write this block computes NaN. Under
// AddressSanitizer the gaps and the unused rest are poisoned, so an access past an array
// faults. Offsets from the arena's start are the shared-memory addresses the bank model
// (shared_banks.hpp) sees.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../config.hpp"

#if defined(DSCONV_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace dsconv {
namespace platform {
namespace host_detail {

class shared_arena {
 public:
  // More than any GPU gives a block; the device profile's limit is checked separately.
  static constexpr std::size_t capacity = 256 * 1024;
  static constexpr std::size_t gap = 64;  // between allocations: a small overrun lands in poison

  shared_arena() : base_(static_cast<unsigned char*>(std::aligned_alloc(128, capacity))) {
    if (!base_) throw std::bad_alloc();
    std::memset(base_, 0xff, capacity);
    poison(0, capacity);
  }
  shared_arena(const shared_arena&) = delete;
  shared_arena& operator=(const shared_arena&) = delete;
  ~shared_arena() {
    unpoison(0, capacity);
    std::free(base_);
  }

  // Starts a block with `dynamic_bytes` of dynamic shared memory and `limit` bytes of shared
  // memory in all (the device's per-block limit).
  void begin_block(std::size_t dynamic_bytes, std::size_t limit) {
    unpoison(0, used_);
    std::memset(base_, 0xff, used_);
    poison(0, used_);
    statics_.clear();
    limit_ = limit;
    declared_ = dynamic_bytes;
    used_ = round_up(dynamic_bytes, 16) + gap;
    unpoison(0, dynamic_bytes);
  }

  void* dynamic() { return base_; }

  // The block's static array for declaration `key`: allocated by the first thread that
  // reaches the declaration, the same memory for every other thread of the block.
  void* static_array(const void* key, std::size_t bytes, std::size_t align) {
    for (const auto& s : statics_)
      if (s.key == key) return base_ + s.offset;
    const std::size_t offset = round_up(used_, align > 16 ? align : 16);
    declared_ += bytes;
    if (declared_ > limit_ || offset + bytes + gap > capacity)
      throw std::length_error("static and dynamic shared memory of the block (" + std::to_string(declared_) +
                              " bytes) exceed the device's " + std::to_string(limit_) + " bytes per block");
    statics_.push_back({key, offset});
    used_ = offset + bytes + gap;
    unpoison(offset, bytes);
    return base_ + offset;
  }

  // Whether [p, p + bytes) lies in the arena.
  bool contains(const void* p, std::size_t bytes) const {
    const auto a = reinterpret_cast<std::uintptr_t>(p), base = reinterpret_cast<std::uintptr_t>(base_);
    return a >= base && a + bytes <= base + capacity;
  }

  // The shared-memory address of `p`, a pointer into the arena.
  std::uint32_t offset_of(const void* p) const {
    return static_cast<std::uint32_t>(static_cast<const unsigned char*>(p) - base_);
  }

 private:
  struct allocation {
    const void* key;
    std::size_t offset;
  };
  static std::size_t round_up(std::size_t x, std::size_t a) { return (x + a - 1) / a * a; }
  void poison(std::size_t offset, std::size_t bytes) {
#if defined(DSCONV_ASAN)
    ASAN_POISON_MEMORY_REGION(base_ + offset, bytes);
#else
    (void)offset, (void)bytes;
#endif
  }
  void unpoison(std::size_t offset, std::size_t bytes) {
#if defined(DSCONV_ASAN)
    ASAN_UNPOISON_MEMORY_REGION(base_ + offset, bytes);
#else
    (void)offset, (void)bytes;
#endif
  }

  unsigned char* base_;
  std::size_t used_ = 0, declared_ = 0, limit_ = 0;
  std::vector<allocation> statics_;
};

}  // namespace host_detail
}  // namespace platform
}  // namespace dsconv
