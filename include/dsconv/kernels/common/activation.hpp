#pragma once
// The activations of the epilogue, written once for float (kernels) and double (reference).

#include <cmath>
#include <type_traits>

#include "../../config.hpp"
#include "../../types.hpp"

namespace dsconv {
namespace detail {

DSCONV_HOST_DEVICE DSCONV_FORCEINLINE float exp_of(float x) { return expf(x); }
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE double exp_of(double x) { return exp(x); }

// relu and relu6 keep NaN. On sm_80 and newer a float's are PTX's NaN-keeping minimum and
// maximum, one instruction for each bound, where nvcc compiled the comparison with 0 into a
// test and a select.
template <class F>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE F relu_of(F x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same<F, float>::value) {
    asm("max.NaN.f32 %0, %0, 0f00000000;" : "+f"(x));
    return x;
  }
#endif
  return x < F(0) ? F(0) : x;
}
template <class F>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE F clamp_relu6(F x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same<F, float>::value) {
    asm("min.NaN.f32 %0, %0, 0f40C00000;" : "+f"(x));  // (6)
    return relu_of(x);
  }
#endif
  return x < F(0) ? F(0) : (x > F(6) ? F(6) : x);
}

// relu6 = min(max(x,0),6); silu = x*sigmoid(x); hardswish = x*relu6(x+3)/6.
template <class F>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE F activate(F x, activation a) {
  switch (a) {
    case activation::none: return x;
    case activation::relu: return relu_of(x);
    case activation::relu6: return clamp_relu6(x);
    case activation::silu: return x / (F(1) + exp_of(-x));
    case activation::sigmoid: return F(1) / (F(1) + exp_of(-x));
    case activation::hardswish: return x * clamp_relu6(x + F(3)) / F(6);
  }
  return x;
}

// The same with the activation a compile-time constant (detail::with_activation's).
template <class F, activation A>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE F activate(F x, std::integral_constant<activation, A>) {
  return activate(x, A);
}

// f(std::integral_constant<activation, a>{}): the activation known at run time made a
// compile-time constant for f (an epilogue's switch then folds away), one switch for all of f.
template <class F>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE void with_activation(activation a, F&& f) {
  switch (a) {
    case activation::none: f(std::integral_constant<activation, activation::none>{}); break;
    case activation::relu: f(std::integral_constant<activation, activation::relu>{}); break;
    case activation::relu6: f(std::integral_constant<activation, activation::relu6>{}); break;
    case activation::silu: f(std::integral_constant<activation, activation::silu>{}); break;
    case activation::sigmoid: f(std::integral_constant<activation, activation::sigmoid>{}); break;
    case activation::hardswish: f(std::integral_constant<activation, activation::hardswish>{}); break;
  }
}

// The gate of a backward pass given act'(z) as the forward saved it (depthwise_options::
// activation_derivative), whatever the layer's activation: dL/dz = dL/dy * saved, one multiply.
// Not an activation a layer can name (is_valid rejects it, with_activation has no case for it):
// it stands in the gate's activation field (gate_tensor::act, gemm_operands::gate_act) only,
// where activation_gradient and gate_kind_of read it.
constexpr activation saved_derivative = static_cast<activation>(-1);

// The activation's derivative at the point the forward saw, from the tensor the forward saved
// (backward passes multiply dL/dy by it to get dL/dz, z the activation's input): relu and relu6
// from their output y (the derivative is 1 exactly where 0 < y, and y < 6 for relu6), silu,
// sigmoid and hardswish from their input z. Where the derivative jumps (z = 0, 6, +-3) it takes
// PyTorch's value.
//
// saved_derivative: the forward saved act'(z) itself (its activation_derivative option), so
// that the gradient is the saved value whatever the layer's activation.
template <class F>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE F activation_gradient(F saved, activation a) {
  if (a == saved_derivative) return saved;
  switch (a) {
    case activation::none: return F(1);
    case activation::relu: return saved > F(0) ? F(1) : F(0);
    case activation::relu6: return saved > F(0) && saved < F(6) ? F(1) : F(0);
    // s = sigmoid(z) = 1 / (1 + e) with e = exp(-z), and 1 - s = e / (1 + e) = e * s: one
    // exponential and one division (not 1 - s, which loses the digits of 1 - s where s is near
    // 1: at z = 8 float keeps 3 of them). Where e overflows (z below about -88 in float) s is 0
    // and 1 - s is 1.
    case activation::silu: {
      const F e = exp_of(-saved), s = F(1) / (F(1) + e), t = s > F(0) ? e * s : F(1);
      return s * (F(1) + saved * t);
    }
    case activation::sigmoid: {
      const F e = exp_of(-saved), s = F(1) / (F(1) + e), t = s > F(0) ? e * s : F(1);
      return s * t;
    }
    case activation::hardswish: return saved < F(-3) ? F(0) : saved <= F(3) ? saved / F(3) + F(0.5) : F(1);
  }
  return F(1);
}

// e^x and 1/x for the register kernels' silu gate (gradient_gate.hpp) at the GPU's approximate
// rates: on NVIDIA ex2.approx.ftz after one multiply (MUFU.EX2; __expf adds a range test and two
// predicated multiplies for results below 2^-126, where the gate's 1 + e^-z does not need them)
// and rcp.approx.ftz (MUFU.RCP), each within 2 units of float's roundoff but for the multiply's
// rounding of x log2(e); AMD's v_exp_f32 and v_rcp_f32; the library's exact functions on the host
// platform. Where a 16-bit type stages dz the type's rounding (2^-11, 2^-8) hides them; in float
// they stay within 1e-6 of |dz| for |z| <= 8. 1/inf is 0, 2^-inf is 0.
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE float approximate_exp(float x) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x * 1.44269504088896341f));
  return r;
#elif defined(__HIP_DEVICE_COMPILE__)
  return __expf(x);
#else
  return expf(x);
#endif
}
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE float approximate_reciprocal(float x) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
#elif defined(__HIP_DEVICE_COMPILE__)
  return __builtin_amdgcn_rcpf(x);
#else
  return 1.f / x;
#endif
}

// act'(z) as a forward saves it for the backward's one-multiply gate (activation_derivative),
// A a compile-time constant: relu's and relu6's 0 / 1 from z (the same as from their output),
// silu's and sigmoid's as activation_gradient takes them but at the approximate exponential and
// reciprocal above (each within 2 units of float's roundoff), hardswish's
// exactly. Where the derivative jumps it takes activation_gradient's (PyTorch's) value.
template <activation A>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE float derivative_at(float z) {
  if constexpr (A == activation::none) {
    return 1.f;
  } else if constexpr (A == activation::relu || A == activation::relu6 || A == activation::hardswish) {
    return activation_gradient(z, A);
  } else {
    // (1 - s as e s, as activation_gradient takes it; where e overflows, s = 0 and 1 - s = 1)
    const float e = approximate_exp(-z), s = approximate_reciprocal(1.f + e), t = s > 0.f ? e * s : 1.f;
    return A == activation::silu ? s * (z * t + 1.f) : s * t;
  }
}

// The same with the activation known at run time.
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE float derivative_at(float z, activation a) {
  switch (a) {
    case activation::none: return 1.f;
    case activation::relu: return derivative_at<activation::relu>(z);
    case activation::relu6: return derivative_at<activation::relu6>(z);
    case activation::silu: return derivative_at<activation::silu>(z);
    case activation::sigmoid: return derivative_at<activation::sigmoid>(z);
    case activation::hardswish: return derivative_at<activation::hardswish>(z);
  }
  return 1.f;
}

// What a forward stores into the tensor it saves for its backward (its `pre` pointer): z, or
// act'(z) where it saves the derivative (depthwise_options::activation_derivative).
template <activation A>
DSCONV_HOST_DEVICE DSCONV_FORCEINLINE float saved_value(float z, bool derivative) {
  return derivative ? derivative_at<A>(z) : z;
}

// Which tensor activation_gradient takes: the forward's output (relu, relu6) or its input.
constexpr bool gradient_from_output(activation a) { return a == activation::relu || a == activation::relu6; }

}  // namespace detail
}  // namespace dsconv
