#pragma once
// Execution contexts (fibers) for the host platform: a stack, and a switch between two
// contexts. x86-64 and AArch64 switch with a few instructions that save only the
// callee-saved registers; everything else falls back to ucontext, whose swapcontext makes a
// signal-mask system call on every switch (about 15x slower). Define
// DSCONV_HOST_FIBER_UCONTEXT to force the fallback (the test suite builds it too).

#include <cstddef>
#include <cstdint>
#include <new>

#include <sys/mman.h>
#include <unistd.h>

#include "../../config.hpp"

#if !defined(DSCONV_HOST_FIBER_UCONTEXT) && !defined(__x86_64__) && !defined(__aarch64__)
#define DSCONV_HOST_FIBER_UCONTEXT 1
#endif

#if defined(DSCONV_HOST_FIBER_UCONTEXT)
#include <ucontext.h>
#endif

#if defined(DSCONV_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace dsconv {
namespace platform {
namespace host_detail {

// A stack from mmap with an inaccessible guard page below it, so an overflow faults
// instead of silently overwriting the neighbouring fiber's frames.
class fiber_stack {
 public:
  fiber_stack() = default;
  explicit fiber_stack(std::size_t bytes) {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    size_ = (bytes + page - 1) / page * page;
    mapped_ = size_ + page;
    void* p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    base_ = static_cast<unsigned char*>(p);
    if (mprotect(base_, page, PROT_NONE) != 0) {
      munmap(base_, mapped_);
      throw std::bad_alloc();
    }
  }
  fiber_stack(const fiber_stack&) = delete;
  fiber_stack& operator=(const fiber_stack&) = delete;
  fiber_stack(fiber_stack&& o) noexcept { swap(o); }
  fiber_stack& operator=(fiber_stack&& o) noexcept {
    swap(o);
    return *this;
  }
  ~fiber_stack() {
    if (base_) munmap(base_, mapped_);
  }
  void* bottom() const { return base_ + (mapped_ - size_); }
  void* top() const { return base_ + mapped_; }
  std::size_t size() const { return size_; }

 private:
  void swap(fiber_stack& o) noexcept {
    unsigned char* b = base_;
    base_ = o.base_;
    o.base_ = b;
    std::size_t s = size_;
    size_ = o.size_;
    o.size_ = s;
    s = mapped_;
    mapped_ = o.mapped_;
    o.mapped_ = s;
  }
  unsigned char* base_ = nullptr;
  std::size_t size_ = 0, mapped_ = 0;
};

#if defined(DSCONV_HOST_FIBER_UCONTEXT)

struct context {
  ucontext_t uc;
};

inline void init_context(context& c, const fiber_stack& stack, void (*entry)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack.bottom();
  c.uc.uc_stack.ss_size = stack.size();
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
}

inline void raw_switch(context& from, context& to) { swapcontext(&from.uc, &to.uc); }

inline constexpr const char* context_switch_name = "ucontext";

#else

struct context {
  void* sp = nullptr;
};

#if defined(__x86_64__)
// Saves the System V callee-saved registers on the current stack, stores the stack pointer
// in *save, loads the new one and pops the same registers from it. Naked: no prologue, so
// the push/pop layout is exactly what init_context builds for a fresh fiber.
__attribute__((naked, noinline)) inline void switch_stack(void** /*save*/, void* /*load*/) {
  asm volatile(
      "pushq %rbp\n\t"
      "pushq %rbx\n\t"
      "pushq %r12\n\t"
      "pushq %r13\n\t"
      "pushq %r14\n\t"
      "pushq %r15\n\t"
      "movq %rsp, (%rdi)\n\t"
      "movq %rsi, %rsp\n\t"
      "popq %r15\n\t"
      "popq %r14\n\t"
      "popq %r13\n\t"
      "popq %r12\n\t"
      "popq %rbx\n\t"
      "popq %rbp\n\t"
      "ret\n\t");
}

inline void init_context(context& c, const fiber_stack& stack, void (*entry)()) {
  // Layout from the 16-byte aligned top: a zero fake return address at top-8 (so entry sees
  // the stack alignment of a called function), entry's address at top-16 for the final
  // `ret` of switch_stack, and six zeroed callee-saved registers below it.
  auto top = reinterpret_cast<std::uintptr_t>(stack.top()) & ~static_cast<std::uintptr_t>(15);
  auto* slots = reinterpret_cast<void**>(top);
  slots[-1] = nullptr;
  slots[-2] = reinterpret_cast<void*>(entry);
  for (int i = 3; i <= 8; ++i) slots[-i] = nullptr;
  c.sp = slots - 8;
}

#elif defined(__aarch64__)
// Saves x19-x30 and d8-d15 (AAPCS64 callee-saved) in a 160-byte frame on the current
// stack, stores sp in *save, loads the new sp and restores the same frame from it.
__attribute__((naked, noinline)) inline void switch_stack(void** /*save*/, void* /*load*/) {
  asm volatile(
      "sub sp, sp, #160\n\t"
      "stp x19, x20, [sp, #0]\n\t"
      "stp x21, x22, [sp, #16]\n\t"
      "stp x23, x24, [sp, #32]\n\t"
      "stp x25, x26, [sp, #48]\n\t"
      "stp x27, x28, [sp, #64]\n\t"
      "stp x29, x30, [sp, #80]\n\t"
      "stp d8, d9, [sp, #96]\n\t"
      "stp d10, d11, [sp, #112]\n\t"
      "stp d12, d13, [sp, #128]\n\t"
      "stp d14, d15, [sp, #144]\n\t"
      "mov x9, sp\n\t"
      "str x9, [x0]\n\t"
      "mov sp, x1\n\t"
      "ldp x19, x20, [sp, #0]\n\t"
      "ldp x21, x22, [sp, #16]\n\t"
      "ldp x23, x24, [sp, #32]\n\t"
      "ldp x25, x26, [sp, #48]\n\t"
      "ldp x27, x28, [sp, #64]\n\t"
      "ldp x29, x30, [sp, #80]\n\t"
      "ldp d8, d9, [sp, #96]\n\t"
      "ldp d10, d11, [sp, #112]\n\t"
      "ldp d12, d13, [sp, #128]\n\t"
      "ldp d14, d15, [sp, #144]\n\t"
      "add sp, sp, #160\n\t"
      "ret\n\t");
}

inline void init_context(context& c, const fiber_stack& stack, void (*entry)()) {
  // A zeroed frame whose saved x30 (the link register, restored and jumped to by `ret`) is
  // the entry function.
  auto top = reinterpret_cast<std::uintptr_t>(stack.top()) & ~static_cast<std::uintptr_t>(15);
  auto* frame = reinterpret_cast<void**>(top - 160);
  for (int i = 0; i < 20; ++i) frame[i] = nullptr;
  frame[11] = reinterpret_cast<void*>(entry);
  c.sp = frame;
}
#endif

inline void raw_switch(context& from, context& to) { switch_stack(&from.sp, to.sp); }

inline constexpr const char* context_switch_name = "assembly";

#endif

// Prepares `stack` to start `entry` afresh. A finished fiber never returned from its frames,
// so ASan's poisoning of their redzones is still in the shadow memory: clear it first.
inline void start_context(context& c, const fiber_stack& stack, void (*entry)()) {
#if defined(DSCONV_ASAN)
  __asan_unpoison_memory_region(stack.bottom(), stack.size());
#endif
  init_context(c, stack, entry);
}

// Bounds of a stack, for AddressSanitizer's fiber annotations.
struct stack_bounds {
  const void* bottom = nullptr;
  std::size_t size = 0;
};

// Switches from `from` to `to` and returns when `from` is resumed, with the bounds of the
// stack that resumed it. `from_fake_stack` keeps ASan's fake stack of `from` while it is
// suspended; pass null when `from` finishes and is never resumed, so ASan can free it.
inline stack_bounds switch_context(context& from, void** from_fake_stack, context& to, stack_bounds to_stack) {
  stack_bounds resumed_by;
#if defined(DSCONV_ASAN)
  __sanitizer_start_switch_fiber(from_fake_stack, to_stack.bottom, to_stack.size);
  raw_switch(from, to);
  __sanitizer_finish_switch_fiber(from_fake_stack ? *from_fake_stack : nullptr, &resumed_by.bottom, &resumed_by.size);
#else
  (void)from_fake_stack;
  (void)to_stack;
  raw_switch(from, to);
#endif
  return resumed_by;
}

// The first statement of a new context: completes the switch that started it and returns
// the bounds of the stack that started it (the worker thread's own stack).
inline stack_bounds enter_context() {
  stack_bounds started_by;
#if defined(DSCONV_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, &started_by.bottom, &started_by.size);
#endif
  return started_by;
}

}  // namespace host_detail
}  // namespace platform
}  // namespace dsconv
