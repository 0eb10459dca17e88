#pragma once
// A flat index walked through a box of dimensions without dividing at each step. Kernels spread
// flat element ranges (plane, row, column, ...) over their threads with a fixed stride; turning
// every element's flat index back into coordinates costs one integer division per dimension,
// a long instruction sequence on GPUs, which would make memory-bound loops issue-bound. Here
// the start and the stride are split into coordinates once (per thread, before the loop), and
// each step adds the stride's coordinates with carries: a coordinate and a stride coordinate
// are both below their extent, so each carries at most one into the next.

#include <type_traits>

#include "../../config.hpp"
#include "../../platform/platform.hpp"

namespace dsconv {
namespace detail {

// q = a / b and r = a % b for 0 <= a < 2^22 and b >= 1 (a block's index math: thread ids and
// block sizes split by extents), from a float reciprocal and one correction: the quotient's
// error is below 1 there, and this is a few instructions where an integer division is a long
// sequence (weight-gradient blocks split their thread ids again for every item they take).
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE void small_divmod(int a, int b, int& q, int& r) {
  q = static_cast<int>(static_cast<float>(a) * (1.0f / static_cast<float>(b)));
  r = a - q * b;
  if (r < 0) {
    --q, r += b;
  } else if (r >= b) {
    ++q, r -= b;
  }
}
template <class I>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE void split(I a, I b, I& q, I& r) {
  if constexpr (std::is_same<I, int>::value) {
    small_divmod(a, b, q, r);
  } else {
    q = a / b, r = a % b;
  }
}

// N coordinates of type I: the outermost unbounded, the N - 1 inner ones below their extents
// (innermost last). I is int inside a block (start and stride below 2^22: small_divmod),
// index_t for grid-stride walks over tensors.
template <int N, class I = int>
class index_walk {
  static_assert(N >= 2, "a walk has an outer and at least one inner coordinate");

 public:
  DSCONV_DEVICE DSCONV_FORCEINLINE index_walk(const I (&inner)[N - 1], I start, I stride)
      : index_(start), stride_(stride) {
    DSCONV_UNROLL
    for (int k = N - 2; k >= 0; --k) {
      extent_[k] = inner[k];
      split(start, inner[k], start, at_[k]);
      split(stride, inner[k], stride, step_[k]);
    }
    outer_ = start;
    outer_step_ = stride;
  }

  // The flat index.
  DSCONV_DEVICE DSCONV_FORCEINLINE I index() const { return index_; }
  DSCONV_DEVICE DSCONV_FORCEINLINE I outer() const { return outer_; }
  // Inner coordinate k (0: the one just inside the outermost).
  DSCONV_DEVICE DSCONV_FORCEINLINE I operator[](int k) const { return at_[k]; }

  // One stride further.
  DSCONV_DEVICE DSCONV_FORCEINLINE void advance() {
    I carry = 0;
    DSCONV_UNROLL
    for (int k = N - 2; k >= 0; --k) {
      const I next = at_[k] + step_[k] + carry;
      carry = next >= extent_[k];
      at_[k] = carry ? next - extent_[k] : next;
    }
    outer_ += outer_step_ + carry;
    index_ += stride_;
  }

 private:
  I index_, stride_;
  I extent_[N - 1], at_[N - 1], step_[N - 1];
  I outer_, outer_step_;
};

// for_each_strided's loop from a walk placed beforehand: its divisions then stay outside a
// caller's branches, once for every case of a switch around the loop.
template <int N, class I, class Body>
DSCONV_DEVICE DSCONV_FORCEINLINE void for_each_walked(I count, index_walk<N, I> at, Body body DSCONV_CALL_SITE) {
  DSCONV_LOOP_MARKS(marks);
  for (; at.index() < count; at.advance()) {
    marks.iteration();
    body(at);
  }
}

// Calls body(at) for the flat indices first, first + stride, ... below count, with `at` the
// index's coordinates (inner extents `inner`): the strided loops of kernels without a
// division per element. Its iterations are marked (platform/loop_marks.hpp): a body that
// returns early for some elements idles those lanes in that iteration only.
template <int N, class I, class Body>
DSCONV_DEVICE DSCONV_FORCEINLINE void for_each_strided(I count, const I (&inner)[N - 1], I first, I stride,
                                                       Body body DSCONV_CALL_SITE) {
  if (first >= count) return;  // (also: no extent is zero below)
  for_each_walked(count, index_walk<N, I>(inner, first, stride), body DSCONV_CALL_SITE_ARGS);
}

}  // namespace detail
}  // namespace dsconv
