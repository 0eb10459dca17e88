#pragma once
// Baseline of the CUDA platform: cuDNN, running the forward algorithm that its own search
// (cudnnFindConvolutionForwardAlgorithmEx, which times every algorithm) finds fastest for the
// problem. Depthwise is a grouped convolution with groups = channels. Bias, residual and
// activation are fused through cudnnConvolutionBiasActivationForward where cuDNN can fuse
// them (ReLU with any algorithm, identity only with IMPLICIT_PRECOMP_GEMM); otherwise the
// convolution is followed by separate bias, residual and activation operations. The label
// says which of the two ran. fp32 runs with CUDNN_FMA_MATH (no TF32, as dsconv computes
// fp32 in fp32); half and bfloat16 with tensor-core math and fp32 accumulation.

#if defined(DSCONV_PLATFORM_CUDA)

#include <cudnn.h>

#include <string>
#include <type_traits>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "owned_handle.hpp"

#include "../kernel_bench/buffer_sets.hpp"
#include "../kernel_bench/cases.hpp"

namespace dsconv_bench {
namespace cudnn_detail {

inline std::string check(cudnnStatus_t s, const char* what) {
  return s == CUDNN_STATUS_SUCCESS ? std::string() : std::string(what) + ": " + cudnnGetErrorString(s);
}

// "cuDNN <major>.<minor>.<patch>" of the library loaded at run time.
inline std::string description() {
  const std::size_t v = cudnnGetVersion();
  return "cuDNN " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

// One handle for the whole program, on the default stream (where dsconv launches too). Never
// destroyed: destroying it after the CUDA runtime has unloaded at exit would fail.
inline cudnnHandle_t handle() {
  static const cudnnHandle_t h = [] {
    cudnnHandle_t created = nullptr;
    return cudnnCreate(&created) == CUDNN_STATUS_SUCCESS ? created : nullptr;
  }();
  return h;
}

// An owned descriptor.
template <class Handle, cudnnStatus_t (*Create)(Handle*), cudnnStatus_t (*Destroy)(Handle)>
using descriptor = owned_handle<Handle, cudnnStatus_t, CUDNN_STATUS_SUCCESS, Create, Destroy>;

using tensor_descriptor =
    descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using filter_descriptor =
    descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using convolution_descriptor =
    descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;
using activation_descriptor =
    descriptor<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor, cudnnDestroyActivationDescriptor>;

template <class T>
constexpr cudnnDataType_t data_type() {
  if constexpr (std::is_same<T, dsconv::half>::value)
    return CUDNN_DATA_HALF;
  else if constexpr (std::is_same<T, dsconv::bfloat16>::value)
    return CUDNN_DATA_BFLOAT16;
  else
    return CUDNN_DATA_FLOAT;
}

inline const char* algorithm_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "unknown";
  }
}

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
  static constexpr const char* name = "cudnn";

  // Describes the problem, searches for the fastest algorithm on set `b`, and decides
  // between the fused call and separate operations. Returns an error message, or empty.
  std::string prepare(const bench_case& c, const buffer_set<T>& b) {
    using namespace cudnn_detail;
    handle_ = handle();
    if (!handle_) return "cudnnCreate failed (no usable GPU or cuDNN library)";
    if (!x_.get() || !y_.get() || !bias_.get() || !w_.get() || !conv_.get() || !act_.get())
      return "cuDNN descriptor creation failed";
    act_kind_ = c.l.act;
    has_residual_ = b.residual != nullptr;
    const cudnnTensorFormat_t format = c.data_layout == dsconv::layout::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    const cudnnDataType_t type = data_type<T>();

    int n = c.batch, channels = 0, h = 0, w = 0, k = 0, kernel = 1, stride = 1, pad = 0, groups = 1, out_h = 0,
        out_w = 0;
    if (c.l.depthwise()) {
      const dsconv::depthwise_params p = c.depthwise();
      channels = p.c, h = p.h, w = p.w, k = static_cast<int>(p.out_c()), kernel = p.kernel_h, stride = p.stride_h,
      pad = p.pad_h, groups = p.c, out_h = p.out_h(), out_w = p.out_w();
    } else {
      const dsconv::pointwise_params p = c.pointwise();
      channels = p.c_in, h = p.h, w = p.w, k = p.c_out, out_h = p.h, out_w = p.w;
    }
    // dsconv's weights, [k][kh][kw] (depthwise) and [k][c_in] (1x1), are valid KCRS and KRSC
    // filters alike, because one of C and R*S is 1; the filter takes the data's format.
    std::string e = check(cudnnSetTensor4dDescriptor(x_.get(), format, type, n, channels, h, w), "input descriptor");
    if (e.empty())
      e = check(cudnnSetTensor4dDescriptor(y_.get(), format, type, n, k, out_h, out_w), "output descriptor");
    if (e.empty()) e = check(cudnnSetTensor4dDescriptor(bias_.get(), format, type, 1, k, 1, 1), "bias descriptor");
    if (e.empty())
      e = check(cudnnSetFilter4dDescriptor(w_.get(), type, format, k, channels / groups, kernel, kernel),
                "filter descriptor");
    if (e.empty())
      e = check(cudnnSetConvolution2dDescriptor(conv_.get(), pad, pad, stride, stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT),
                "convolution descriptor");
    if (e.empty()) e = check(cudnnSetConvolutionGroupCount(conv_.get(), groups), "group count");
    if (e.empty())
      e = check(
          cudnnSetConvolutionMathType(conv_.get(), type == CUDNN_DATA_FLOAT ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH),
          "math type");
    if (!e.empty()) return e;
    int on = 0, oc = 0, oh = 0, ow = 0;
    e = check(cudnnGetConvolution2dForwardOutputDim(conv_.get(), x_.get(), w_.get(), &on, &oc, &oh, &ow),
              "output size");
    if (!e.empty()) return e;
    if (on != n || oc != k || oh != out_h || ow != out_w) return "cuDNN computes a different output size than dsconv";

    e = find_algorithm(b);
    if (!e.empty()) return e;
    e = choose_epilogue(b);
    if (!e.empty()) return e;
    // "legacy API": these are cuDNN's classic calls; its graph API could fuse more epilogues.
    label_ = std::string("legacy API, algo=") + algorithm_name(algo_) + ", act=" + dsconv::to_string(c.l.act) +
             (has_residual_ ? " +residual" : "") +
             (fused_ ? ", fused (cudnnConvolutionBiasActivationForward)" : ", " + why_separate_);
    return {};
  }

  const std::string& label() const { return label_; }

  // Queues one forward pass (one or several cuDNN calls); returns an error message or empty.
  std::string run(const buffer_set<T>& b) const { return fused_ ? run_fused(b) : run_separate(b); }

 private:
  std::string find_algorithm(const buffer_set<T>& b) {
    using namespace cudnn_detail;
    int max_count = 0;
    std::string e = check(cudnnGetConvolutionForwardAlgorithmMaxCount(handle_, &max_count), "algorithm count");
    if (!e.empty()) return e;
    // The search may use as much workspace as the hungriest algorithm wants, up to a bound
    // that no depthwise or 1x1 algorithm worth having needs.
    constexpr std::size_t workspace_limit = std::size_t(1) << 30;
    std::size_t workspace = 0;
    for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a) {
      std::size_t bytes = 0;
      if (cudnnGetConvolutionForwardWorkspaceSize(handle_, x_.get(), w_.get(), conv_.get(), y_.get(),
                                                  static_cast<cudnnConvolutionFwdAlgo_t>(a),
                                                  &bytes) == CUDNN_STATUS_SUCCESS &&
          bytes <= workspace_limit && bytes > workspace)
        workspace = bytes;
    }
    if (workspace_.allocate(workspace) != dsconv::status::success)
      return std::string("workspace: ") + dsconv::last_error_detail();
    std::vector<cudnnConvolutionFwdAlgoPerf_t> results(static_cast<std::size_t>(max_count > 0 ? max_count : 1));
    int returned = 0;
    e = check(cudnnFindConvolutionForwardAlgorithmEx(handle_, x_.get(), b.input, w_.get(), b.weight, conv_.get(),
                                                     y_.get(), b.output, static_cast<int>(results.size()), &returned,
                                                     results.data(), workspace_.data(), workspace),
              "algorithm search");
    if (!e.empty()) return e;
    // Results come sorted by time; the first that ran is the fastest.
    for (int i = 0; i < returned; ++i)
      if (results[i].status == CUDNN_STATUS_SUCCESS && results[i].memory <= workspace) {
        algo_ = results[i].algo;
        workspace_bytes_ = results[i].memory;
        // Run it with the math type it was timed with.
        return check(cudnnSetConvolutionMathType(conv_.get(), results[i].mathType), "math type");
      }
    return "cuDNN found no algorithm that runs this problem";
  }

  // Fuses where cuDNN can; a fused call that cuDNN then refuses falls back to separate
  // operations, and the label says why.
  std::string choose_epilogue(const buffer_set<T>& b) {
    using namespace cudnn_detail;
    fused_ = false;
    if (act_kind_ == dsconv::activation::relu || act_kind_ == dsconv::activation::none) {
      if (act_kind_ == dsconv::activation::none && algo_ != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) {
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
        cudnnConvolutionBiasActivationForward(handle_, &one, x_.get(), b.input, w_.get(), b.weight, conv_.get(), algo_,
                                              workspace_.data(), workspace_bytes_, &alpha2, y_.get(),
                                              has_residual_ ? static_cast<const void*>(b.residual) : b.output,
                                              bias_.get(), b.bias, act_.get(), y_.get(), b.output),
        "cudnnConvolutionBiasActivationForward");
  }

  std::string run_separate(const buffer_set<T>& b) const {
    using cudnn_detail::check;
    const float one = 1.0f, zero = 0.0f;
    std::string e =
        check(cudnnConvolutionForward(handle_, &one, x_.get(), b.input, w_.get(), b.weight, conv_.get(), algo_,
                                      workspace_.data(), workspace_bytes_, &zero, y_.get(), b.output),
              "cudnnConvolutionForward");
    if (e.empty())
      e = check(cudnnAddTensor(handle_, &one, bias_.get(), b.bias, &one, y_.get(), b.output), "bias (cudnnAddTensor)");
    if (e.empty() && has_residual_)
      e = check(cudnnAddTensor(handle_, &one, y_.get(), b.residual, &one, y_.get(), b.output),
                "residual (cudnnAddTensor)");
    if (e.empty() && separate_act_)
      e = check(cudnnActivationForward(handle_, act_.get(), &one, y_.get(), b.output, &zero, y_.get(), b.output),
                "cudnnActivationForward");
    return e;
  }

  cudnnHandle_t handle_ = nullptr;
  cudnn_detail::tensor_descriptor x_, y_, bias_;
  cudnn_detail::filter_descriptor w_;
  cudnn_detail::convolution_descriptor conv_;
  cudnn_detail::activation_descriptor act_;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  mutable dsconv::device_buffer<unsigned char> workspace_;  // scratch that every (const) run writes
  std::size_t workspace_bytes_ = 0;
  dsconv::activation act_kind_ = dsconv::activation::none;
  bool has_residual_ = false, fused_ = false, separate_act_ = false;
  std::string why_separate_, label_;
};

}  // namespace dsconv_bench

#endif
