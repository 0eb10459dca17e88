#pragma once
// The asynchronous copies of ../async_copy.hpp on the host platform, as late as a GPU may
// make them, or as early: a copy reads its source when issued and lands in shared memory only
// when a wait of its thread requires it (a commit group older than the ones a wait leaves
// pending, or any wait for all), but in every other block of a grid
// (block_runner::lands_copies_early) as it is issued. A kernel that reads a stage before
// waiting for it, or waits for too few groups, reads what shared memory held before in the
// first blocks: the poison of a block start, or an older stage; one that copies into a stage
// it has still to read (a ring a stage too short) reads the newer copy in the others. The
// tests see either.
// The instructions are not inlined: a kernel issues dozens per K step, and inlining each
// emulation made the matrix-unit kernels' code, and their compile time, several times larger.

#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "block_runner.hpp"

namespace dsconv {
namespace platform {
namespace host_detail {

inline fiber& async_copier() {
  block_runner* runner = current_runner();
  if (!runner) throw std::logic_error("an asynchronous copy outside a kernel");
  return runner->current();
}

// Issues the copy of `src_bytes` (0..size) bytes from `src` into the `size` (4, 8 or 16) bytes
// at `dst`, the rest zero.
DSCONV_NOINLINE inline void async_copy(void* dst, const void* src, int src_bytes, int size = 16) {
  current_runner()->check_shared(dst, static_cast<std::size_t>(size));
  if (size != 4 && size != 8 && size != 16) throw std::logic_error("an asynchronous copy of other than 4, 8 or 16 bytes");
  if (reinterpret_cast<std::uintptr_t>(dst) % size || reinterpret_cast<std::uintptr_t>(src) % size)
    throw std::logic_error("an asynchronous copy between addresses not both aligned to its size");
  if (src_bytes < 0 || src_bytes > size) throw std::logic_error("an asynchronous copy of more bytes than its size");
  if (current_runner()->lands_copies_early()) {
    std::memcpy(dst, src, static_cast<std::size_t>(src_bytes));
    std::memset(static_cast<unsigned char*>(dst) + src_bytes, 0, static_cast<std::size_t>(size - src_bytes));
    return;
  }
  fiber& f = async_copier();
  pending_copy c;
  c.dst = static_cast<unsigned char*>(dst);
  c.group = f.copy_groups;
  c.size = static_cast<unsigned char>(size);
  std::memcpy(c.bytes, src, static_cast<std::size_t>(src_bytes));
  std::memset(c.bytes + src_bytes, 0, static_cast<std::size_t>(size - src_bytes));
  f.pending_copies.push_back(c);
}

// Closes the group of the copies issued since the last commit.
inline void async_copy_commit() { ++async_copier().copy_groups; }

// Lands the copies of every committed group but the `pending` newest ones; with `all`, every
// copy, committed or not.
inline void async_copy_land(unsigned pending, bool all) {
  fiber& f = async_copier();
  std::size_t kept = 0;
  for (const pending_copy& c : f.pending_copies) {
    if (all || c.group + pending < f.copy_groups)
      std::memcpy(c.dst, c.bytes, c.size);
    else
      f.pending_copies[kept++] = c;
  }
  f.pending_copies.resize(kept);
}

}  // namespace host_detail
}  // namespace platform
}  // namespace dsconv
