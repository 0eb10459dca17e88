#pragma once
// dsconv::depthwise_forward: validate -> choose a variant -> launch.

#include "../kernels/depthwise/direct.hpp"
#include "../platform/platform.hpp"
#include "../problem.hpp"
#include "launch_shape.hpp"
#include "prepare.hpp"
#include "validate.hpp"
#include "variants.hpp"

namespace dsconv {

// Whether `variant` can run problem `p` (a host-only check; no buffers involved).
inline status can_implement(depthwise_variant variant, const depthwise_params& p) {
  if (!is_valid(variant))
    return detail::invalid(status::invalid_variant, "depthwise", "variant value " + std::to_string(static_cast<int>(variant)));
  const status s = detail::validate_params(p);
  if (s != status::success) return s;
  switch (variant) {
    case depthwise_variant::automatic:
    case depthwise_variant::direct: return status::success;
  }
  return status::invalid_variant;
}

// The variant that `automatic` runs for `p` on the current device.
inline depthwise_variant select_variant(const depthwise_params&) { return depthwise_variant::direct; }

template <class T>
status depthwise_forward(const depthwise_params& p, const depthwise_options& options, const T* input, const T* weight,
                         const T* bias, T* output, stream_t stream = {}) {
  platform::device_properties dev;
  depthwise_variant variant = depthwise_variant::automatic;
  const status s =
      detail::prepare_launch("depthwise", options.variant, p, detail::validate(p, input, weight, bias, output), dev, variant);
  if (s != status::success) return s;
  const detail::depthwise_shape shape = detail::make_shape(p);
  switch (variant) {
    case depthwise_variant::automatic:
    case depthwise_variant::direct:
      return platform::launch(kernels::depthwise_direct<T>,
                              detail::grid_stride_launch(shape.output_elements(), 256, dev, stream, "depthwise_direct"),
                              shape, input, weight, bias, output);
  }
  return status::invalid_variant;
}

// input [n,c,h,w] (nchw) or [n,h,w,c] (nhwc); weight [c*multiplier, kernel_h, kernel_w];
// bias [c*multiplier] or nullptr; output [n, c*multiplier, out_h, out_w] in the input's
// layout. output = act(conv + bias). Queued on `stream`; nothing is launched or written
// unless the result is success.
template <class T>
status depthwise_forward(const depthwise_params& p, const T* input, const T* weight, const T* bias, T* output,
                         stream_t stream = {}) {
  return depthwise_forward(p, depthwise_options{}, input, weight, bias, output, stream);
}

}  // namespace dsconv
