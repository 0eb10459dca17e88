#pragma once
// Baseline of the host platform: the library's own CPU reference (dsconv::reference, double
// accumulation, one thread), forward and backward, and for the block cases the reference
// composition of a block's layers. Device memory is host memory there, so it runs on the same
// buffers as dsconv.

#include <string>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "../kernel_bench/block_buffers.hpp"
#include "../kernel_bench/block_cases.hpp"
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

template <class T>
class reference_block_baseline {
 public:
  static constexpr const char* name = "reference";

  std::string prepare(const block_case& c, const block_buffer_set<T>&) {
    p_ = c.params();
    result_.assign(static_cast<std::size_t>(p_.n) * p_.c_out * p_.out_h() * p_.out_w(), 0.0);
    label_ = "dsconv::reference composition of the block's layers";
    return {};
  }

  const std::string& label() const { return label_; }

  // The block in double, rounded to T into the output.
  std::string run(const block_buffer_set<T>& b) const {
    if (dsconv::reference::inverted_residual_forward(p_, b.weights, b.input, result_.data()) != dsconv::status::success)
      return dsconv::last_error_detail();
    for (std::size_t i = 0; i < result_.size(); ++i) b.output[i] = dsconv::from_float<T>(static_cast<float>(result_[i]));
    return {};
  }

 private:
  dsconv::inverted_residual_params p_;
  mutable std::vector<double> result_;  // scratch of every (const) run
  std::string label_;
};

}  // namespace dsconv_bench

#endif
