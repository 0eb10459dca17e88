#pragma once
// The activations of the epilogue, written once for float (kernels) and double (reference).

#include <cmath>

#include "../../config.hpp"
#include "../../types.hpp"

namespace dsconv {
namespace detail {

DSCONV_HOST_DEVICE DSCONV_FORCEINLINE float exp_of(float x) { return expf(x); }
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE double exp_of(double x) { return exp(x); }

template <class F>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE F clamp_relu6(F x) {
  return x < F(0) ? F(0) : (x > F(6) ? F(6) : x);
}

// relu6 = min(max(x,0),6); silu = x*sigmoid(x); hardswish = x*relu6(x+3)/6.
template <class F>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE F activate(F x, activation a) {
  switch (a) {
    case activation::none: return x;
    case activation::relu: return x < F(0) ? F(0) : x;
    case activation::relu6: return clamp_relu6(x);
    case activation::silu: return x / (F(1) + exp_of(-x));
    case activation::sigmoid: return F(1) / (F(1) + exp_of(-x));
    case activation::hardswish: return x * clamp_relu6(x + F(3)) / F(6);
  }
  return x;
}

}  // namespace detail
}  // namespace dsconv
