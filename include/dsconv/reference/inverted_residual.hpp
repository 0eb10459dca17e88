#pragma once
// The inverted-residual block on the CPU as the composition of the reference layers, in double
// from end to end (no rounding between layers), for tests and for users who want to validate
// results. Buffers are host memory.

#include <cstddef>
#include <vector>

#include "../block_params.hpp"
#include "../dispatch/inverted_residual_validate.hpp"
#include "depthwise.hpp"
#include "pointwise.hpp"

namespace dsconv {
namespace reference {

template <class T>
status inverted_residual_forward(const inverted_residual_params& p, const inverted_residual_weights<T>& w, const T* input,
                                 double* output) {
  status s = detail::validate_params(p, sizeof(T));
  if (s != status::success) return s;
  const bool ex = p.has_expand(), se = p.se_channels > 0;
  if (!input || !output || !w.depthwise_weight || !w.project_weight || (ex && !w.expand_weight) ||
      (se && (!w.se_reduce_weight || !w.se_expand_weight)))
    return status::null_pointer;
  const std::size_t n = p.n, x = p.expanded, in_px = static_cast<std::size_t>(p.h) * p.w,
                    out_px = static_cast<std::size_t>(p.out_h()) * p.out_w();
  // Every tensor in double (an absent bias stays absent).
  auto widen = [](const T* v, std::size_t count) {
    std::vector<double> d(v ? count : 0);
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = reference_input(v[i]);
    return d;
  };
  auto data = [](std::vector<double>& v) { return v.empty() ? nullptr : v.data(); };
  std::vector<double> in = widen(input, n * p.c_in * in_px);
  std::vector<double> expanded;
  if (ex) {
    std::vector<double> we = widen(w.expand_weight, x * p.c_in), be = widen(w.expand_bias, x);
    expanded.resize(n * x * in_px);
    if ((s = reference::pointwise_forward(p.expand(), in.data(), we.data(), data(be), static_cast<const double*>(nullptr),
                               expanded.data())) != status::success)
      return s;
  }
  std::vector<double> wd = widen(w.depthwise_weight, x * p.kernel * p.kernel), bd = widen(w.depthwise_bias, x);
  std::vector<double> z(n * x * out_px);
  if ((s = reference::depthwise_forward(p.depthwise(), ex ? expanded.data() : in.data(), wd.data(), data(bd), z.data())) !=
      status::success)
    return s;
  if (se) {
    // The gate: mean over the pixels, reduce (act), expand (sigmoid); then the scale.
    const bool nchw = p.data_layout == layout::nchw;
    std::vector<double> pooled(n * x, 0.0), reduced(n * p.se_channels), gate(n * x);
    for (std::size_t b = 0; b < n; ++b)
      for (std::size_t c = 0; c < x; ++c) {
        double sum = 0;
        for (std::size_t px = 0; px < out_px; ++px) sum += z[nchw ? (b * x + c) * out_px + px : (b * out_px + px) * x + c];
        pooled[b * x + c] = sum / static_cast<double>(out_px);
      }
    std::vector<double> rw = widen(w.se_reduce_weight, x * p.se_channels), rb = widen(w.se_reduce_bias, p.se_channels);
    std::vector<double> xw = widen(w.se_expand_weight, x * p.se_channels), xb = widen(w.se_expand_bias, x);
    if ((s = reference::pointwise_forward(p.se_reduce(), pooled.data(), rw.data(), data(rb), static_cast<const double*>(nullptr),
                               reduced.data())) != status::success ||
        (s = reference::pointwise_forward(p.se_expand(), reduced.data(), xw.data(), data(xb), static_cast<const double*>(nullptr),
                               gate.data())) != status::success)
      return s;
    for (std::size_t b = 0; b < n; ++b)
      for (std::size_t c = 0; c < x; ++c)
        for (std::size_t px = 0; px < out_px; ++px) z[nchw ? (b * x + c) * out_px + px : (b * out_px + px) * x + c] *= gate[b * x + c];
  }
  std::vector<double> wp = widen(w.project_weight, static_cast<std::size_t>(p.c_out) * x), bp = widen(w.project_bias, p.c_out);
  return reference::pointwise_forward(p.project(), z.data(), wp.data(), data(bp), p.residual ? in.data() : nullptr, output);
}

}  // namespace reference
}  // namespace dsconv
