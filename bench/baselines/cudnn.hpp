#pragma once
// The CUDA platform's extra baseline for the forward pass (dsconv_bench --legacy; the reference
// is cuDNN's graph API, cudnn_graph_baseline.hpp): cuDNN's legacy API, running the forward algorithm
// that its own search finds fastest for the problem (cudnn_search.hpp). Bias, residual and
// activation are fused through cudnnConvolutionBiasActivationForward where cuDNN can fuse
// them (ReLU with any algorithm, identity only with IMPLICIT_PRECOMP_GEMM); otherwise the
// convolution is followed by separate bias, residual and activation operations. The label
// says which of the two ran. Descriptors, math types and the handle: cudnn_problem.hpp.

#if defined(DSCONV_PLATFORM_CUDA)

#include <cudnn.h>

#include <string>

#include <dsconv/dsconv.hpp>

#include "../kernel_bench/buffer_sets.hpp"
#include "../kernel_bench/cases.hpp"
#include "cudnn_problem.hpp"
#include "cudnn_search.hpp"

namespace dsconv_bench {
namespace cudnn_detail {

// The activation as a separate cuDNN operation; false when cuDNN has none for it.
inline bool separate_activation(dsconv::activation a, cudnnActivationMode_t& mode, double& coef) {
  coef = 0.0;
  switch (a) {
    case dsconv::activation::relu: mode = CUDNN_ACTIVATION_RELU; return true;
    case dsconv::activation::relu6: mode = CUDNN_ACTIVATION_CLIPPED_RELU, coef = 6.0; return true;
    case dsconv::activation::silu: mode = CUDNN_ACTIVATION_SWISH; return true;
    case dsconv::activation::sigmoid: mode = CUDNN_ACTIVATION_SIGMOID; return true;
    default: return false;
  }
}

}  // namespace cudnn_detail

template <class T>
class cudnn_baseline {
 public:
  static constexpr const char* name = "cudnn_legacy";

  // Describes the problem, searches for the fastest algorithm on set `b`, and decides
  // between the fused call and separate operations. Returns an error message, or empty.
  std::string prepare(const bench_case& c, const buffer_set<T>& b) {
    using namespace cudnn_detail;
    act_kind_ = c.activation();
    has_residual_ = b.residual != nullptr;
    std::string e = problem_.template describe<T>(c);
    if (e.empty() && !act_.get()) e = "cuDNN descriptor creation failed";
    if (e.empty()) e = find_fastest<forward_search>(problem_, b, algo_);
    if (e.empty()) e = choose_epilogue(b);
    if (!e.empty()) return e;
    // "legacy API": these are cuDNN's classic calls; its graph API could fuse more epilogues.
    label_ = std::string("legacy API, algo=") + forward_search::name(algo_.algo) +
             ", act=" + dsconv::to_string(act_kind_) + (has_residual_ ? " +residual" : "") +
             (fused_ ? ", fused (cudnnConvolutionBiasActivationForward)" : ", " + why_separate_);
    return {};
  }

  const std::string& label() const { return label_; }

  // Queues one forward pass (one or several cuDNN calls); returns an error message or empty.
  std::string run(const buffer_set<T>& b) const { return fused_ ? run_fused(b) : run_separate(b); }

 private:
  // Fuses where cuDNN can; a fused call that cuDNN then refuses falls back to separate
  // operations, and the label says why.
  std::string choose_epilogue(const buffer_set<T>& b) {
    using namespace cudnn_detail;
    fused_ = false;
    if (act_kind_ == dsconv::activation::relu || act_kind_ == dsconv::activation::none) {
      if (act_kind_ == dsconv::activation::none && algo_.algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) {
        why_separate_ = "conv + separate bias" + std::string(has_residual_ ? ", residual" : "") +
                        " ops (fused identity needs IMPLICIT_PRECOMP_GEMM, not the fastest here)";
      } else {
        std::string e = check(
            cudnnSetActivationDescriptor(
                act_.get(), act_kind_ == dsconv::activation::relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                CUDNN_NOT_PROPAGATE_NAN, 0.0),
            "activation descriptor");
        if (!e.empty()) return e;
        fused_ = true;
        e = run_fused(b);
        if (e.empty()) return {};
        fused_ = false;
        why_separate_ = "conv + separate bias/residual/activation ops (fused call refused: " + e + ")";
      }
    } else {
      why_separate_ = std::string("conv + separate bias") + (has_residual_ ? ", residual" : "") + ", " +
                      dsconv::to_string(act_kind_) + " ops (cuDNN fuses relu and identity only)";
    }
    separate_act_ = false;
    if (act_kind_ != dsconv::activation::none) {
      cudnnActivationMode_t mode;
      double coef = 0.0;
      if (!separate_activation(act_kind_, mode, coef))
        return std::string("cuDNN has no ") + dsconv::to_string(act_kind_) + " activation";
      std::string e =
          check(cudnnSetActivationDescriptor(act_.get(), mode, CUDNN_NOT_PROPAGATE_NAN, coef), "activation descriptor");
      if (e.empty() && act_kind_ == dsconv::activation::silu)
        e = check(cudnnSetActivationDescriptorSwishBeta(act_.get(), 1.0), "swish beta");
      if (!e.empty()) return e;
      separate_act_ = true;
    }
    return run_separate(b);
  }

  // y = act(conv(x) + z + bias), z = residual (alpha2 = 1) or y itself with alpha2 = 0.
  std::string run_fused(const buffer_set<T>& b) const {
    const float one = 1.0f, alpha2 = has_residual_ ? 1.0f : 0.0f;
    return cudnn_detail::check(
        cudnnConvolutionBiasActivationForward(problem_.handle, &one, problem_.x.get(), b.input, problem_.w.get(),
                                              b.weight, problem_.conv.get(), algo_.algo, algo_.workspace.data(),
                                              algo_.workspace_bytes, &alpha2, problem_.y.get(),
                                              has_residual_ ? static_cast<const void*>(b.residual) : b.output,
                                              problem_.bias.get(), b.bias, act_.get(), problem_.y.get(), b.output),
        "cudnnConvolutionBiasActivationForward");
  }

  std::string run_separate(const buffer_set<T>& b) const {
    using cudnn_detail::check;
    const float one = 1.0f, zero = 0.0f;
    std::string e = check(cudnnConvolutionForward(problem_.handle, &one, problem_.x.get(), b.input, problem_.w.get(),
                                                  b.weight, problem_.conv.get(), algo_.algo, algo_.workspace.data(),
                                                  algo_.workspace_bytes, &zero, problem_.y.get(), b.output),
                          "cudnnConvolutionForward");
    if (e.empty())
      e = check(cudnnAddTensor(problem_.handle, &one, problem_.bias.get(), b.bias, &one, problem_.y.get(), b.output),
                "bias (cudnnAddTensor)");
    if (e.empty() && has_residual_)
      e = check(cudnnAddTensor(problem_.handle, &one, problem_.y.get(), b.residual, &one, problem_.y.get(), b.output),
                "residual (cudnnAddTensor)");
    if (e.empty() && separate_act_)
      e = check(cudnnActivationForward(problem_.handle, act_.get(), &one, problem_.y.get(), b.output, &zero,
                                       problem_.y.get(), b.output),
                "cudnnActivationForward");
    return e;
  }

  cudnn_detail::convolution_problem problem_;
  cudnn_detail::activation_descriptor act_;
  // Mutable: its workspace is scratch that every (const) run writes.
  mutable chosen_algorithm<cudnnConvolutionFwdAlgo_t> algo_;
  dsconv::activation act_kind_ = dsconv::activation::none;
  bool has_residual_ = false, fused_ = false, separate_act_ = false;
  std::string why_separate_, label_;
};

}  // namespace dsconv_bench

#endif
