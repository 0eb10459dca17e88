#pragma once
// Baseline of the host platform: the library's own CPU reference (dsconv::reference, double
// accumulation, one thread), forward and backward. Device memory is host memory there, so it
// runs on the same buffers as dsconv.

#include <string>

#include <dsconv/dsconv.hpp>

#include "../kernel_bench/buffer_sets.hpp"
#include "../kernel_bench/cases.hpp"

#if defined(DSCONV_PLATFORM_HOST)

namespace dsconv_bench {

template <class T>
class reference_baseline {
 public:
  static constexpr const char* name = "reference";

  std::string prepare(const bench_case& c, const buffer_set<T>&) {
    c_ = c;
    label_ = std::string("dsconv::reference, act=") + dsconv::to_string(c.activation()) +
             (c.residual() ? " +residual" : "") + (c.forward() ? "" : " (gradients of the layer without activation)");
    return {};
  }

  const std::string& label() const { return label_; }

  // The case's pass in the buffers that dsconv_impl uses for it (buffer_sets.hpp).
  std::string run(const buffer_set<T>& b) const {
    namespace ref = dsconv::reference;
    dsconv::status s = dsconv::status::success;
    const bool dw = c_.l.depthwise();
    switch (c_.pass) {
      case layer_pass::forward:
        s = dw ? ref::depthwise_forward(c_.depthwise(), b.input, b.weight, b.bias, b.output)
               : ref::pointwise_forward(c_.pointwise(), b.input, b.weight, b.bias, b.residual, b.output);
        break;
      case layer_pass::backward_data:
        s = dw ? ref::depthwise_backward_data(c_.depthwise(), b.output, b.weight, b.input)
               : ref::pointwise_backward_data(c_.pointwise(), b.output, b.weight, b.input);
        break;
      case layer_pass::backward_weight:
        s = dw ? ref::depthwise_backward_weight(c_.depthwise(), b.input, b.output, b.weight, b.bias)
               : ref::pointwise_backward_weight(c_.pointwise(), b.input, b.output, b.weight, b.bias);
        break;
    }
    return s == dsconv::status::success ? std::string() : std::string(dsconv::last_error_detail());
  }

 private:
  bench_case c_;
  std::string label_;
};

}  // namespace dsconv_bench

#endif
