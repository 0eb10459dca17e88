#pragma once
// Validation of an inverted-residual block and its buffers (dispatch/inverted_residual.hpp):
// the block's own fields first, then each of its layers as the layer calls validate them (so a
// block passes exactly where its unfused sequence could run), then every buffer.

#include <string>

#include "../block_params.hpp"
#include "validate.hpp"

namespace dsconv {
namespace detail {

inline status validate_params(const inverted_residual_params& p, std::size_t element_bytes) {
  const char* op = "inverted_residual";
  status s = check_enums(op, p.data_layout, p.act);
  if (s == status::success)
    s = check_positive(op, status::invalid_size,
                       {{"n", p.n}, {"c_in", p.c_in}, {"h", p.h}, {"w", p.w}, {"expanded", p.expanded}, {"c_out", p.c_out}}, 1);
  if (s == status::success) s = check_positive(op, status::invalid_size, {{"se_channels", p.se_channels}}, 0);
  if (s == status::success) s = check_positive(op, status::invalid_kernel_size, {{"kernel", p.kernel}}, 1);
  if (s == status::success) s = check_positive(op, status::invalid_stride, {{"stride", p.stride}}, 1);
  if (s != status::success) return s;
  if (p.residual && (p.stride != 1 || p.c_out != p.c_in))
    return invalid(status::invalid_residual, op,
                   "stride " + std::to_string(p.stride) + ", c_in " + std::to_string(p.c_in) + ", c_out " + std::to_string(p.c_out));
  if (p.has_expand() && (s = validate_params(p.expand(), element_bytes)) != status::success) return s;
  if ((s = validate_params(p.depthwise(), element_bytes)) != status::success) return s;
  if (p.se_channels > 0 && ((s = validate_params(p.se_reduce(), element_bytes)) != status::success ||
                            (s = validate_params(p.se_expand(), element_bytes)) != status::success))
    return s;
  return validate_params(p.project(), element_bytes);
}

// The byte extents of a valid block's tensors.
struct inverted_residual_extents {
  index_t input, output, expand_weight, expanded_bias, depthwise_weight, se_reduce_weight, se_bias, se_expand_weight,
      project_weight, output_bias;
  template <class T>
  static inverted_residual_extents of(const inverted_residual_params& p) {
    const index_t e = sizeof(T), x = p.expanded, k = p.kernel;
    return {e * p.n * p.c_in * p.h * p.w,   e * p.n * p.c_out * p.out_h() * p.out_w(),
            e * x * p.c_in,                 e * x,
            e * x * k * k,                  e * p.se_channels * x,
            e * p.se_channels,              e * x * p.se_channels,
            e * p.c_out * x,                e * p.c_out};
  }
};

// input, weights and output; `workspace` (may be null) is written too. Weights a block has no
// layer for (no expand, no squeeze-excitation) are ignored.
template <class T>
status validate(const inverted_residual_params& p, const inverted_residual_weights<T>& w, const T* input, const T* output,
                buffer workspace) {
  static_assert(is_element_type<T>, "element type must be float, dsconv::half or dsconv::bfloat16");
  status s = validate_params(p, sizeof(T));
  if (s != status::success) return s;
  const inverted_residual_extents x = inverted_residual_extents::of<T>(p);
  const bool ex = p.has_expand(), se = p.se_channels > 0;
  // (Named buffers: nvcc's front end miscompiles temporaries inside these braced lists.)
  const buffer in{input, x.input}, out{output, x.output}, ew{ex ? w.expand_weight : nullptr, x.expand_weight},
      eb{ex ? w.expand_bias : nullptr, x.expanded_bias}, dw{w.depthwise_weight, x.depthwise_weight},
      db{w.depthwise_bias, x.expanded_bias}, rw{se ? w.se_reduce_weight : nullptr, x.se_reduce_weight},
      rb{se ? w.se_reduce_bias : nullptr, x.se_bias}, xw{se ? w.se_expand_weight : nullptr, x.se_expand_weight},
      xb{se ? w.se_expand_bias : nullptr, x.expanded_bias}, pw{w.project_weight, x.project_weight},
      pb{w.project_bias, x.output_bias};
  const char* op = "inverted_residual";
  if (ex && !w.expand_weight) return invalid(status::null_pointer, op, "expand_weight is null (the block expands)");
  if (se && (!w.se_reduce_weight || !w.se_expand_weight))
    return invalid(status::null_pointer, op, "a squeeze-excitation weight is null (se_channels > 0)");
  return check_backward_buffers(
      op, {{"output", out}, {"workspace", workspace}},
      {{"input", in}, {"expand_weight", ew}, {"expand_bias", eb}, {"depthwise_weight", dw}, {"depthwise_bias", db},
       {"se_reduce_weight", rw}, {"se_reduce_bias", rb}, {"se_expand_weight", xw}, {"se_expand_bias", xb},
       {"project_weight", pw}, {"project_bias", pb}},
      {"workspace", "expand_weight", "expand_bias", "depthwise_bias", "se_reduce_weight", "se_reduce_bias",
       "se_expand_weight", "se_expand_bias", "project_bias"});
}

}  // namespace detail
}  // namespace dsconv
