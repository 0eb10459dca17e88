#pragma once
// Baseline of the HIP platform for the backward passes, of the layer without activation, when
// MIOpen is installed: MIOpen's backward data (miopenConvolutionBackwardData) and backward
// weights (miopenConvolutionBackwardWeights) with the algorithm that its exhaustive search finds
// fastest (miopen_search.hpp). The weight pass also computes the bias gradient, as dsconv's
// does, with miopenConvolutionBackwardBias: a second read of grad_output, which the label says.

#include "miopen_problem.hpp"

#if defined(DSCONV_BENCH_HAS_MIOPEN)

#include <miopen/miopen.h>

#include <string>

#include <dsconv/dsconv.hpp>

#include "../kernel_bench/buffer_sets.hpp"
#include "../kernel_bench/cases.hpp"
#include "miopen_search.hpp"

namespace dsconv_bench {

template <class T>
class miopen_backward_baseline {
 public:
  static constexpr const char* name = "miopen";

  // Describes the problem and searches for the fastest algorithm of the case's pass on set
  // `b`. Returns an error message, or empty.
  std::string prepare(const bench_case& c, const buffer_set<T>& b) {
    using namespace miopen_detail;
    weight_pass_ = c.pass == layer_pass::backward_weight;
    std::string e = problem_.template describe<T>(c);
    if (!e.empty()) return e;
    const char* algorithm = nullptr;
    if (weight_pass_) {
      e = find_fastest<backward_weights_search>(problem_, b, weights_algo_);
      algorithm = backward_weights_search::name(weights_algo_.algo);
    } else {
      e = find_fastest<backward_data_search>(problem_, b, data_algo_);
      algorithm = backward_data_search::name(data_algo_.algo);
    }
    if (!e.empty()) return e;
    label_ = std::string("algo=") + algorithm + ", act=none (gradients of the layer without activation)" +
             (weight_pass_ ? ", bias gradient by miopenConvolutionBackwardBias (a second read of grad_output)" : "");
    return run(b);
  }

  const std::string& label() const { return label_; }

  // Queues the pass: grad_input from grad_output (the output buffer) and the weight into the
  // input buffer, or grad_weight and grad_bias from the input and grad_output into the weight
  // and bias buffers. Returns an error message or empty.
  std::string run(const buffer_set<T>& b) const {
    using miopen_detail::check;
    const float one = 1.0f, zero = 0.0f;
    const miopen_detail::convolution_problem& d = problem_;
    if (!weight_pass_)
      return check(miopenConvolutionBackwardData(d.handle, &one, d.y.get(), b.output, d.w.get(), b.weight, d.conv.get(),
                                                 data_algo_.algo, &zero, d.x.get(), b.input,
                                                 data_algo_.workspace.data(), data_algo_.workspace_bytes),
                   "miopenConvolutionBackwardData");
    std::string e =
        check(miopenConvolutionBackwardWeights(d.handle, &one, d.y.get(), b.output, d.x.get(), b.input, d.conv.get(),
                                               weights_algo_.algo, &zero, d.w.get(), b.weight,
                                               weights_algo_.workspace.data(), weights_algo_.workspace_bytes),
              "miopenConvolutionBackwardWeights");
    if (e.empty())
      e = check(miopenConvolutionBackwardBias(d.handle, &one, d.y.get(), b.output, &zero, d.bias.get(), b.bias),
                "miopenConvolutionBackwardBias");
    return e;
  }

 private:
  miopen_detail::convolution_problem problem_;
  // Mutable: their workspaces are scratch that every (const) run writes.
  mutable chosen_algorithm<miopenConvBwdDataAlgorithm_t> data_algo_;
  mutable chosen_algorithm<miopenConvBwdWeightsAlgorithm_t> weights_algo_;
  bool weight_pass_ = false;
  std::string label_;
};

}  // namespace dsconv_bench

#endif
