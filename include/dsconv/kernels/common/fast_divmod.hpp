#pragma once
// Division by a divisor fixed for a launch, as a multiply-high and a shift (Granlund and
// Montgomery, 1994): no integer-division instruction sequence inside a kernel's loops. The
// magic numbers take one division, made where a thread starts.

#include "../../config.hpp"

namespace dsconv {
namespace detail {

struct fast_divmod {
  unsigned divisor, multiplier, shift;

  // divisor >= 1.
  DSCONV_HOST_DEVICE explicit fast_divmod(unsigned d) : divisor(d), multiplier(0), shift(0) {
    while ((1ull << shift) < d) ++shift;
    multiplier = static_cast<unsigned>(((1ull << 32) * ((1ull << shift) - d)) / d + 1);
  }
  // n / divisor and n % divisor for n < 2^31.
  DSCONV_HOST_DEVICE DSCONV_FORCEINLINE unsigned div(unsigned n) const {
    const unsigned high = static_cast<unsigned>((static_cast<unsigned long long>(n) * multiplier) >> 32);
    return (high + n) >> shift;
  }
  DSCONV_HOST_DEVICE DSCONV_FORCEINLINE unsigned mod(unsigned n) const { return n - div(n) * divisor; }
};

}  // namespace detail
}  // namespace dsconv
