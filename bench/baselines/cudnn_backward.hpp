#pragma once
// The CUDA platform's extra baseline for the backward passes (dsconv_bench --legacy), of the
// layer without activation: cuDNN's legacy backward data (cudnnConvolutionBackwardData) and backward filter
// (cudnnConvolutionBackwardFilter) with the algorithm that its own search finds fastest
// (cudnn_search.hpp). The weight pass also computes the bias gradient, as dsconv's does, with
// cudnnConvolutionBackwardBias: cuDNN's classic API has no filter gradient that also sums the
// bias, so that is a second read of grad_output, and the label says so.

#if defined(DSCONV_PLATFORM_CUDA)

#include <cudnn.h>

#include <string>

#include <dsconv/dsconv.hpp>

#include "../kernel_bench/buffer_sets.hpp"
#include "../kernel_bench/cases.hpp"
#include "cudnn_problem.hpp"
#include "cudnn_search.hpp"

namespace dsconv_bench {

template <class T>
class cudnn_backward_baseline {
 public:
  static constexpr const char* name = "cudnn_legacy";

  // Describes the problem and searches for the fastest algorithm of the case's pass on set
  // `b`. Returns an error message, or empty.
  std::string prepare(const bench_case& c, const buffer_set<T>& b) {
    using namespace cudnn_detail;
    weight_pass_ = c.pass == layer_pass::backward_weight;
    std::string e = problem_.template describe<T>(c);
    if (!e.empty()) return e;
    const char* algorithm = nullptr;
    if (weight_pass_) {
      e = find_fastest<backward_filter_search>(problem_, b, filter_algo_);
      algorithm = backward_filter_search::name(filter_algo_.algo);
    } else {
      e = find_fastest<backward_data_search>(problem_, b, data_algo_);
      algorithm = backward_data_search::name(data_algo_.algo);
    }
    if (!e.empty()) return e;
    label_ = std::string("legacy API, algo=") + algorithm + ", act=none (gradients of the layer without activation)" +
             (weight_pass_ ? ", bias gradient by cudnnConvolutionBackwardBias (a second read of grad_output)" : "");
    return {};
  }

  const std::string& label() const { return label_; }

  // Queues the pass: grad_input from grad_output (the output buffer) and the weight into the
  // input buffer, or grad_weight and grad_bias from the input and grad_output into the weight
  // and bias buffers. Returns an error message or empty.
  std::string run(const buffer_set<T>& b) const {
    using cudnn_detail::check;
    const float one = 1.0f, zero = 0.0f;
    const cudnn_detail::convolution_problem& d = problem_;
    if (!weight_pass_)
      return check(cudnnConvolutionBackwardData(d.handle, &one, d.w.get(), b.weight, d.y.get(), b.output, d.conv.get(),
                                                data_algo_.algo, data_algo_.workspace.data(),
                                                data_algo_.workspace_bytes, &zero, d.x.get(), b.input),
                   "cudnnConvolutionBackwardData");
    std::string e = check(cudnnConvolutionBackwardFilter(d.handle, &one, d.x.get(), b.input, d.y.get(), b.output,
                                                         d.conv.get(), filter_algo_.algo, filter_algo_.workspace.data(),
                                                         filter_algo_.workspace_bytes, &zero, d.w.get(), b.weight),
                          "cudnnConvolutionBackwardFilter");
    if (e.empty())
      e = check(cudnnConvolutionBackwardBias(d.handle, &one, d.y.get(), b.output, &zero, d.bias.get(), b.bias),
                "cudnnConvolutionBackwardBias");
    return e;
  }

 private:
  cudnn_detail::convolution_problem problem_;
  // Mutable: their workspaces are scratch that every (const) run writes.
  mutable chosen_algorithm<cudnnConvolutionBwdDataAlgo_t> data_algo_;
  mutable chosen_algorithm<cudnnConvolutionBwdFilterAlgo_t> filter_algo_;
  bool weight_pass_ = false;
  std::string label_;
};

}  // namespace dsconv_bench

#endif
