#pragma once
// A flat index walked through a box of dimensions without dividing at each step. Kernels spread
// flat element ranges (plane, row, column, ...) over their threads with a fixed stride; turning
// every element's flat index back into coordinates costs one integer division per dimension,
// a long instruction sequence on GPUs, which would make memory-bound loops issue-bound. Here
// the start and the stride are split into coordinates once (per thread, before the loop), and
// each step adds the stride's coordinates with carries: a coordinate and a stride coordinate
// are both below their extent, so each carries at most one into the next.

#include "../../config.hpp"

namespace dsconv {
namespace detail {

// N coordinates of type I: the outermost unbounded, the N - 1 inner ones below their extents
// (innermost last). I is int inside a block, index_t for grid-stride walks over tensors.
template <int N, class I = int>
class index_walk {
  static_assert(N >= 2, "a walk has an outer and at least one inner coordinate");

 public:
  DSCONV_DEVICE DSCONV_FORCEINLINE index_walk(const I (&inner)[N - 1], I start, I stride)
      : index_(start), stride_(stride) {
    DSCONV_UNROLL
    for (int k = N - 2; k >= 0; --k) {
      extent_[k] = inner[k];
      at_[k] = start % inner[k];
      step_[k] = stride % inner[k];
      start /= inner[k];
      stride /= inner[k];
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

// Calls body(at) for the flat indices first, first + stride, ... below count, with `at` the
// index's coordinates (inner extents `inner`): the strided loops of kernels without a
// division per element.
template <int N, class I, class Body>
DSCONV_DEVICE DSCONV_FORCEINLINE void for_each_strided(I count, const I (&inner)[N - 1], I first, I stride, Body body) {
  if (first >= count) return;  // (also: no extent is zero below)
  for (index_walk<N, I> at(inner, first, stride); at.index() < count; at.advance()) body(at);
}

}  // namespace detail
}  // namespace dsconv
