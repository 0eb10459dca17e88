#pragma once
// The taps of the data gradient at stride S > 1 (the forward convolution transposed): input
// element x receives dz from the outputs whose windows cover it, o = (x + pad - k * dilation)
// / S for the taps k where that division is exact, so each input element sums only its own
// taps (no multiply by an inserted zero, none skipped by a % test inside the sum). Along one
// dimension, for the element at padded position p = x + pad: its taps and the staged outputs
// they read.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../common/fast_divmod.hpp"

namespace dsconv {
namespace detail {

// Along one dimension with a compile-time filter size K and stride S (no dilation): the taps
// of the element at padded position p are k = first + j * S for j < count(), reading output
// o = top - j.
template <int K, int S>
struct transposed_taps_fixed {
  int first, top;
  DSCONV_DEVICE DSCONV_FORCEINLINE explicit transposed_taps_fixed(int p) : first(p % S), top(p / S) {}
  static constexpr int most = (K + S - 1) / S;  // the most taps an element has
  DSCONV_DEVICE DSCONV_FORCEINLINE bool has(int j) const { return first + j * S < K; }
};

// Calls tap(jy, jx) for each tap (ty.first + jy * S, tx.first + jx * S) of an element, by
// rows and columns of its taps in the order jy, jx: an unrolled loop in which each tap is one
// instruction on a GPU, predicated off for the lanes that lack that tap. Its iterations are
// marked (platform/loop_marks.hpp), so that on the host the lanes that have a tap make its
// requests, as on a GPU, and a lane's later taps are not matched with others' earlier ones.
template <int K, int S, class Tap>
DSCONV_DEVICE DSCONV_FORCEINLINE void for_each_fixed_tap(const transposed_taps_fixed<K, S>& ty,
                                                         const transposed_taps_fixed<K, S>& tx, Tap tap DSCONV_CALL_SITE) {
  DSCONV_LOOP_MARKS(marks);
  DSCONV_UNROLL
  for (int jy = 0; jy < transposed_taps_fixed<K, S>::most; ++jy)
    DSCONV_UNROLL
    for (int jx = 0; jx < transposed_taps_fixed<K, S>::most; ++jx) {
      marks.iteration();
      if (ty.has(jy) && tx.has(jx)) tap(jy, jx);
    }
}

// Along one dimension with run-time filter size, stride and dilation: calls tap(k, o) for each
// tap k of the element at padded position p (>= 0) and the output o it reads. `div` divides by
// the stride; `lift` is a multiple of the stride at least (kernel - 1) * dilation, so that
// p - k * dilation + lift is never negative. (Iterations marked as for_each_fixed_tap's.)
template <class Tap>
DSCONV_DEVICE DSCONV_FORCEINLINE void for_each_transposed_tap(int p, int kernel, int dilation, int lift,
                                                              const fast_divmod& div, Tap tap DSCONV_CALL_SITE) {
  DSCONV_LOOP_MARKS(marks);
  const int lifted_outputs = static_cast<int>(div.div(static_cast<unsigned>(lift)));
  for (int k = 0; k < kernel; ++k) {
    marks.iteration();
    const unsigned t = static_cast<unsigned>(p - k * dilation + lift);
    const unsigned q = div.div(t);
    if (t == q * div.divisor) tap(k, static_cast<int>(q) - lifted_outputs);
  }
}

}  // namespace detail
}  // namespace dsconv
