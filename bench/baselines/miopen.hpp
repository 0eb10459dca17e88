#pragma once
// Baseline of the HIP platform for the forward pass, when MIOpen is installed: MIOpen with the
// forward algorithm that its exhaustive search finds fastest (miopen_search.hpp). The
// convolution is followed by separate bias, residual and activation operations (MIOpen has no
// SiLU activation, so SiLU runs as x * sigmoid(x): a logistic activation and a
// multiplication). Descriptors and the handle: miopen_problem.hpp.

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
class miopen_baseline {
 public:
  static constexpr const char* name = "miopen";

  // Describes the problem and searches for the fastest algorithm on set `b`. Returns an
  // error message, or empty.
  std::string prepare(const bench_case& c, const buffer_set<T>& b) {
    using namespace miopen_detail;
    act_kind_ = c.activation();
    has_residual_ = b.residual != nullptr;
    std::string e = problem_.template describe<T>(c);
    if (e.empty() && !act_.get()) e = "MIOpen descriptor creation failed";
    if (e.empty()) e = find_fastest<forward_search>(problem_, b, algo_);
    if (e.empty()) e = prepare_activation(c.sizes().output);
    if (!e.empty()) return e;
    label_ = std::string("algo=") + forward_search::name(algo_.algo) + ", act=" + dsconv::to_string(act_kind_) +
             (has_residual_ ? " +residual" : "") + ", conv + separate bias" + (has_residual_ ? ", residual" : "") +
             (act_kind_ == dsconv::activation::none ? "" : std::string(", ") + dsconv::to_string(act_kind_)) + " ops" +
             (act_kind_ == dsconv::activation::silu ? " (silu as logistic + multiply)" : "");
    return run(b);
  }

  const std::string& label() const { return label_; }

  // Queues one forward pass (several MIOpen calls); returns an error message or empty.
  std::string run(const buffer_set<T>& b) const {
    using miopen_detail::check;
    const float one = 1.0f, zero = 0.0f;
    std::string e = check(miopenConvolutionForward(problem_.handle, &one, problem_.x.get(), b.input, problem_.w.get(),
                                                   b.weight, problem_.conv.get(), algo_.algo, &zero, problem_.y.get(),
                                                   b.output, algo_.workspace.data(), algo_.workspace_bytes),
                          "miopenConvolutionForward");
    if (e.empty())
      e = check(miopenOpTensor(problem_.handle, miopenTensorOpAdd, &one, problem_.y.get(), b.output, &one,
                               problem_.bias.get(), b.bias, &zero, problem_.y.get(), b.output),
                "bias (miopenOpTensor)");
    if (e.empty() && has_residual_)
      e = check(miopenOpTensor(problem_.handle, miopenTensorOpAdd, &one, problem_.y.get(), b.output, &one,
                               problem_.y.get(), b.residual, &zero, problem_.y.get(), b.output),
                "residual (miopenOpTensor)");
    if (!e.empty() || act_kind_ == dsconv::activation::none) return e;
    if (act_kind_ != dsconv::activation::silu)
      return check(miopenActivationForward(problem_.handle, act_.get(), &one, problem_.y.get(), b.output, &zero,
                                           problem_.y.get(), b.output),
                   "miopenActivationForward");
    e = check(miopenActivationForward(problem_.handle, act_.get(), &one, problem_.y.get(), b.output, &zero,
                                      problem_.y.get(), sigmoid_.data()),
              "miopenActivationForward (logistic)");
    if (e.empty())
      e = check(miopenOpTensor(problem_.handle, miopenTensorOpMul, &one, problem_.y.get(), b.output, &one,
                               problem_.y.get(), sigmoid_.data(), &zero, problem_.y.get(), b.output),
                "silu (miopenOpTensor)");
    return e;
  }

 private:
  std::string prepare_activation(std::size_t output_elements) {
    using miopen_detail::check;
    miopenActivationMode_t mode = miopenActivationPASTHRU;
    double alpha = 0.0;
    switch (act_kind_) {
      case dsconv::activation::none: return {};
      case dsconv::activation::relu: mode = miopenActivationRELU; break;
      case dsconv::activation::relu6: mode = miopenActivationCLIPPEDRELU, alpha = 6.0; break;
      case dsconv::activation::sigmoid:
      case dsconv::activation::silu: mode = miopenActivationLOGISTIC; break;
      default: return std::string("MIOpen has no ") + dsconv::to_string(act_kind_) + " activation";
    }
    if (act_kind_ == dsconv::activation::silu && sigmoid_.allocate(output_elements) != dsconv::status::success)
      return std::string("silu scratch: ") + dsconv::last_error_detail();
    return check(miopenSetActivationDescriptor(act_.get(), mode, alpha, 0.0, 1.0), "activation descriptor");
  }

  miopen_detail::convolution_problem problem_;
  miopen_detail::activation_descriptor act_;
  // Scratch that every (const) run writes: the algorithm's workspace, and sigmoid(y) for silu.
  mutable chosen_algorithm<miopenConvFwdAlgorithm_t> algo_;
  mutable dsconv::device_buffer<T> sigmoid_;
  dsconv::activation act_kind_ = dsconv::activation::none;
  bool has_residual_ = false;
  std::string label_;
};

}  // namespace dsconv_bench

#endif
