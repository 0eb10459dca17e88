#pragma once
// How the reference reads an input element, and how it stores a double result: unrounded into double, otherwise rounded once
// to float and then to the storage type (as a kernel's float accumulator would be).

#include <type_traits>

#include "../platform/float16.hpp"

namespace dsconv {
namespace reference {

// An input element as the reference computes with it: a double stays one (the reference's own
// intermediate tensors, as the block's reference composes its layers), the storage types
// convert exactly.
inline double reference_input(double x) { return x; }
template <class T>
double reference_input(T x) {
  return static_cast<double>(to_float(x));
}

template <class Out>
Out reference_output(double x) {
  if constexpr (std::is_same<Out, double>::value)
    return x;
  else
    return Out(static_cast<float>(x));
}

}  // namespace reference
}  // namespace dsconv
