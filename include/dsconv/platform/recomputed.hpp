#pragma once
// recomputed(x): x, as a value the compiler must take to be new where this is called, so that
// what a loop body derives from it (index math: quotients, steps) is computed in that body
// instead of being hoisted out of an enclosing loop and held in registers through all of it.
// A kernel at its register bound (the fused block kernel: 64 a thread) spilled such hoisted
// values, where recomputing them costs a few instructions an iteration of the outer loop.
// Nothing on the host platform.

#include "../config.hpp"

namespace dsconv {
namespace platform {

DSCONV_HOST_DEVICE DSCONV_FORCEINLINE int recomputed(int x) {
#if defined(DSCONV_PLATFORM_CUDA) && defined(__CUDA_ARCH__)
  asm volatile("" : "+r"(x));
#elif defined(DSCONV_PLATFORM_HIP) && defined(__HIP_DEVICE_COMPILE__)
  asm volatile("" : "+v"(x));
#endif
  return x;
}

// recomputed_test(bits): bits that a loop body tests, recomputed on AMD only. A test hoisted
// out of a loop is held through it as a 64-bit scalar mask on AMD (the fused block kernel ran
// out of scalar registers so), as a predicate register on NVIDIA, where recomputing the bits
// instead held a register of its own (and spilled on sm_75 and sm_80).
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE int recomputed_test(int bits) {
#if defined(DSCONV_PLATFORM_HIP) && defined(__HIP_DEVICE_COMPILE__)
  asm volatile("" : "+v"(bits));
#endif
  return bits;
}

// unwidened(stride): a 32-bit element stride (a tensor's channels) that NVIDIA's compiler keeps
// 32-bit, so that a thread's loads or stores stepping by it take one wide multiply-add an address
// (IMAD.WIDE) where they took a 64-bit add pair: LLVM had merged the stride's widening with
// that of the same value in the kernel's 64-bit offsets. Nothing on AMD (hipcc's addresses are
// formed otherwise) or the host platform.
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE int unwidened(int stride) {
#if defined(DSCONV_PLATFORM_CUDA) && defined(__CUDA_ARCH__)
  asm("" : "+r"(stride));
#endif
  return stride;
}

// held_global(p): p, a pointer into global memory, as an address NVIDIA's compiler holds in
// registers, so that accesses at steps from it take one wide multiply-add an address from it
// where the compiler had folded p's own offset into each (sm_90, nhwc_register's strip stores:
// a 64-bit add, shift and add pair a store, 5 instructions against 2). Asserted global, so
// that the accesses stay global ones (STG, not generic ST). Nothing on AMD or the host.
template <class T>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE T* held_global(T* p) {
#if defined(DSCONV_PLATFORM_CUDA) && defined(__CUDA_ARCH__)
  asm("" : "+l"(p));
  __builtin_assume(__isGlobal(p));
#endif
  return p;
}

}  // namespace platform
}  // namespace dsconv
