#pragma once
// The steps every entry point takes before it launches, in order: the problem and its
// buffers are valid, the requested variant exists and can run the problem, the device is
// known; then the concrete variant to run is chosen.

#include "../platform/platform.hpp"
#include "../status.hpp"

namespace dsconv {
namespace detail {

// `validated` is validate()'s result for the call; `supports` returns can_implement's
// status for the requested variant, `select` the heuristic's variant.
template <class Variant, class Supports, class Select>
status prepare_launch(status validated, Variant requested, Supports supports, Select select,
                      platform::device_properties& dev, Variant& chosen) {
  if (validated != status::success) return validated;
  status s = supports();
  if (s != status::success) return s;
  s = platform::get_device_properties(dev);
  if (s != status::success) return s;
  chosen = requested == Variant::automatic ? select() : requested;
  return status::success;
}

}  // namespace detail
}  // namespace dsconv
