#pragma once
// The steps every entry point takes before it launches, in order: the requested variant is
// a known value, the problem and its buffers are valid, the variant can run the problem,
// and the device is known. Then the concrete variant to run is chosen.

#include <string>

#include "../platform/platform.hpp"
#include "../status.hpp"
#include "validate.hpp"

namespace dsconv {
namespace detail {

// `buffers` is the result of validate() for the call's problem and pointers. Finds
// can_implement, select_variant and is_valid for Variant by argument-dependent lookup.
template <class Variant, class Params>
status prepare_launch(const char* op, Variant requested, const Params& p, status buffers, platform::device_properties& dev,
                      Variant& chosen) {
  if (!is_valid(requested))
    return invalid(status::invalid_variant, op, "variant value " + std::to_string(static_cast<int>(requested)));
  if (buffers != status::success) return buffers;
  status s = can_implement(requested, p);
  if (s != status::success) return s;
  s = platform::get_device_properties(dev);
  if (s != status::success) return s;
  chosen = requested == Variant::automatic ? select_variant(p) : requested;
  return status::success;
}

}  // namespace detail
}  // namespace dsconv
