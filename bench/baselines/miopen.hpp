#pragma once
// Baseline of the HIP platform, when MIOpen is installed (CMake defines DSCONV_BENCH_MIOPEN
// when it finds the package): MIOpen with the forward algorithm that its exhaustive search
// (miopenFindConvolutionForwardAlgorithm) finds fastest. Depthwise is a grouped convolution
// with groups = channels; NHWC is described by strides. The convolution is followed by
// separate bias, residual and activation operations (MIOpen has no SiLU activation, so SiLU
// runs as x * sigmoid(x): a logistic activation and a multiplication). Defines
// DSCONV_BENCH_HAS_MIOPEN when the baseline is compiled in.

#if defined(DSCONV_PLATFORM_HIP) && defined(DSCONV_BENCH_MIOPEN)
#if __has_include(<miopen/miopen.h>)
#define DSCONV_BENCH_HAS_MIOPEN 1

#include <miopen/miopen.h>

#include <cstdlib>
#include <string>
#include <type_traits>

#include <dsconv/dsconv.hpp>

#include "owned_handle.hpp"

#include "../kernel_bench/buffer_sets.hpp"
#include "../kernel_bench/cases.hpp"

namespace dsconv_bench {
namespace miopen_detail {

inline std::string check(miopenStatus_t s, const char* what) {
  return s == miopenStatusSuccess ? std::string() : std::string(what) + ": " + miopenGetErrorString(s);
}

// "MIOpen <major>.<minor>.<patch>" of the library loaded at run time.
inline std::string description() {
  std::size_t major = 0, minor = 0, patch = 0;
  miopenGetVersion(&major, &minor, &patch);
  return "MIOpen " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

// One handle for the whole program, on the default stream (where dsconv launches too).
// MIOPEN_FIND_MODE=NORMAL (unless the user set a mode): MIOpen's default find mode answers
// from its database without timing the candidates, which the exhaustive search asks for.
inline miopenHandle_t handle() {
  static const miopenHandle_t h = [] {
    setenv("MIOPEN_FIND_MODE", "NORMAL", /*overwrite=*/0);
    miopenHandle_t created = nullptr;
    return miopenCreateWithStream(&created, nullptr) == miopenStatusSuccess ? created : nullptr;
  }();
  return h;
}

// An owned descriptor.
template <class Handle, miopenStatus_t (*Create)(Handle*), miopenStatus_t (*Destroy)(Handle)>
using descriptor = owned_handle<Handle, miopenStatus_t, miopenStatusSuccess, Create, Destroy>;

using tensor_descriptor =
    descriptor<miopenTensorDescriptor_t, miopenCreateTensorDescriptor, miopenDestroyTensorDescriptor>;
using convolution_descriptor =
    descriptor<miopenConvolutionDescriptor_t, miopenCreateConvolutionDescriptor, miopenDestroyConvolutionDescriptor>;
using activation_descriptor =
    descriptor<miopenActivationDescriptor_t, miopenCreateActivationDescriptor, miopenDestroyActivationDescriptor>;

template <class T>
constexpr miopenDataType_t data_type() {
  if constexpr (std::is_same<T, dsconv::half>::value)
    return miopenHalf;
  else if constexpr (std::is_same<T, dsconv::bfloat16>::value)
    return miopenBFloat16;
  else
    return miopenFloat;
}

// A 4-D tensor (or filter) with dimensions n, c, h, w in the given memory layout.
inline std::string set_tensor(miopenTensorDescriptor_t d, miopenDataType_t type, dsconv::layout l, int n, int c, int h,
                              int w) {
  const bool nhwc = l == dsconv::layout::nhwc;
  return check(
      miopenSet4dTensorDescriptorEx(d, type, n, c, h, w, c * h * w, nhwc ? 1 : h * w, nhwc ? w * c : w, nhwc ? c : 1),
      "tensor descriptor");
}

inline const char* algorithm_name(miopenConvFwdAlgorithm_t a) {
  switch (a) {
    case miopenConvolutionFwdAlgoGEMM: return "GEMM";
    case miopenConvolutionFwdAlgoDirect: return "Direct";
    case miopenConvolutionFwdAlgoFFT: return "FFT";
    case miopenConvolutionFwdAlgoWinograd: return "Winograd";
    case miopenConvolutionFwdAlgoImplicitGEMM: return "ImplicitGEMM";
    default: return "unknown";
  }
}

}  // namespace miopen_detail

template <class T>
class miopen_baseline {
 public:
  static constexpr const char* name = "miopen";

  // Describes the problem and searches for the fastest algorithm on set `b`. Returns an
  // error message, or empty.
  std::string prepare(const bench_case& c, const buffer_set<T>& b) {
    using namespace miopen_detail;
    handle_ = handle();
    if (!handle_) return "miopenCreateWithStream failed (no usable GPU or MIOpen library)";
    if (!x_.get() || !y_.get() || !bias_.get() || !w_.get() || !conv_.get() || !act_.get())
      return "MIOpen descriptor creation failed";
    act_kind_ = c.l.act;
    has_residual_ = b.residual != nullptr;
    const miopenDataType_t type = data_type<T>();
    const tensor_sizes sizes = c.sizes();

    int channels = 0, h = 0, w = 0, k = 0, kernel = 1, stride = 1, pad = 0, groups = 1, out_h = 0, out_w = 0;
    if (c.l.depthwise()) {
      const dsconv::depthwise_params p = c.depthwise();
      channels = p.c, h = p.h, w = p.w, k = static_cast<int>(p.out_c()), kernel = p.kernel_h, stride = p.stride_h,
      pad = p.pad_h, groups = p.c, out_h = p.out_h(), out_w = p.out_w();
    } else {
      const dsconv::pointwise_params p = c.pointwise();
      channels = p.c_in, h = p.h, w = p.w, k = p.c_out, out_h = p.h, out_w = p.w;
    }
    std::string e = set_tensor(x_.get(), type, c.data_layout, c.batch, channels, h, w);
    if (e.empty()) e = set_tensor(y_.get(), type, c.data_layout, c.batch, k, out_h, out_w);
    if (e.empty()) e = set_tensor(bias_.get(), type, c.data_layout, 1, k, 1, 1);
    // dsconv's weights, [k][kh][kw] and [k][c_in], are valid filters in either layout.
    if (e.empty()) e = set_tensor(w_.get(), type, c.data_layout, k, channels / groups, kernel, kernel);
    if (e.empty())
      e = check(miopenInitConvolutionDescriptor(conv_.get(), miopenConvolution, pad, pad, stride, stride, 1, 1),
                "convolution descriptor");
    if (e.empty()) e = check(miopenSetConvolutionGroupCount(conv_.get(), groups), "group count");
    if (!e.empty()) return e;

    std::size_t search_workspace = 0;
    e = check(
        miopenConvolutionForwardGetWorkSpaceSize(handle_, w_.get(), x_.get(), conv_.get(), y_.get(), &search_workspace),
        "workspace size");
    if (!e.empty()) return e;
    if (workspace_.allocate(search_workspace) != dsconv::status::success)
      return std::string("workspace: ") + dsconv::last_error_detail();
    miopenConvAlgoPerf_t results[8];
    int returned = 0;
    e = check(
        miopenFindConvolutionForwardAlgorithm(handle_, x_.get(), b.input, w_.get(), b.weight, conv_.get(), y_.get(),
                                              b.output, 8, &returned, results, workspace_.data(), search_workspace,
                                              /*exhaustiveSearch=*/true),
        "algorithm search");
    if (!e.empty()) return e;
    if (returned < 1) return "MIOpen found no algorithm that runs this problem";
    // Results come sorted by time; the first is the fastest.
    algo_ = results[0].fwd_algo;
    workspace_bytes_ = results[0].memory <= search_workspace ? results[0].memory : search_workspace;

    e = prepare_activation(sizes.output);
    if (!e.empty()) return e;
    label_ = std::string("algo=") + algorithm_name(algo_) + ", act=" + dsconv::to_string(act_kind_) +
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
    std::string e =
        check(miopenConvolutionForward(handle_, &one, x_.get(), b.input, w_.get(), b.weight, conv_.get(), algo_, &zero,
                                       y_.get(), b.output, workspace_.data(), workspace_bytes_),
              "miopenConvolutionForward");
    if (e.empty())
      e = check(miopenOpTensor(handle_, miopenTensorOpAdd, &one, y_.get(), b.output, &one, bias_.get(), b.bias, &zero,
                               y_.get(), b.output),
                "bias (miopenOpTensor)");
    if (e.empty() && has_residual_)
      e = check(miopenOpTensor(handle_, miopenTensorOpAdd, &one, y_.get(), b.output, &one, y_.get(), b.residual, &zero,
                               y_.get(), b.output),
                "residual (miopenOpTensor)");
    if (!e.empty() || act_kind_ == dsconv::activation::none) return e;
    if (act_kind_ != dsconv::activation::silu)
      return check(miopenActivationForward(handle_, act_.get(), &one, y_.get(), b.output, &zero, y_.get(), b.output),
                   "miopenActivationForward");
    e = check(miopenActivationForward(handle_, act_.get(), &one, y_.get(), b.output, &zero, y_.get(), sigmoid_.data()),
              "miopenActivationForward (logistic)");
    if (e.empty())
      e = check(miopenOpTensor(handle_, miopenTensorOpMul, &one, y_.get(), b.output, &one, y_.get(), sigmoid_.data(),
                               &zero, y_.get(), b.output),
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

  miopenHandle_t handle_ = nullptr;
  miopen_detail::tensor_descriptor x_, y_, bias_, w_;
  miopen_detail::convolution_descriptor conv_;
  miopen_detail::activation_descriptor act_;
  miopenConvFwdAlgorithm_t algo_ = miopenConvolutionFwdAlgoGEMM;
  // Scratch that every (const) run writes: the algorithm's workspace, and sigmoid(y) for silu.
  mutable dsconv::device_buffer<unsigned char> workspace_;
  mutable dsconv::device_buffer<T> sigmoid_;
  std::size_t workspace_bytes_ = 0;
  dsconv::activation act_kind_ = dsconv::activation::none;
  bool has_residual_ = false;
  std::string label_;
};

}  // namespace dsconv_bench

#endif
#endif
