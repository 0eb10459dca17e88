#pragma once
// Value types of the public API: layouts, activations and the 16-bit storage types.

#include "config.hpp"
#include "platform/float16.hpp"

namespace dsconv {

enum class layout { nchw, nhwc };

enum class activation { none, relu, relu6, silu, sigmoid, hardswish };

// Validation uses these to reject values cast from integers that name no enumerator.
constexpr bool is_valid(layout l) noexcept { return l == layout::nchw || l == layout::nhwc; }
constexpr bool is_valid(activation a) noexcept {
  return a == activation::none || a == activation::relu || a == activation::relu6 || a == activation::silu ||
         a == activation::sigmoid || a == activation::hardswish;
}

inline const char* to_string(layout l) noexcept {
  switch (l) {
    case layout::nchw: return "nchw";
    case layout::nhwc: return "nhwc";
  }
  return "unknown layout";
}

inline const char* to_string(activation a) noexcept {
  switch (a) {
    case activation::none: return "none";
    case activation::relu: return "relu";
    case activation::relu6: return "relu6";
    case activation::silu: return "silu";
    case activation::sigmoid: return "sigmoid";
    case activation::hardswish: return "hardswish";
  }
  return "unknown activation";
}

}  // namespace dsconv
