#pragma once
// How the reference stores a double result: unrounded into double, otherwise rounded once
// to float and then to the storage type (as a kernel's float accumulator would be).

#include <type_traits>

#include "../platform/float16.hpp"

namespace dsconv {
namespace reference {

template <class Out>
Out reference_output(double x) {
  if constexpr (std::is_same<Out, double>::value)
    return x;
  else
    return Out(static_cast<float>(x));
}

}  // namespace reference
}  // namespace dsconv
