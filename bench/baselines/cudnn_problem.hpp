#pragma once
// A bench case as cuDNN sees it, for the forward and the backward baselines alike: the
// program's handle and the descriptors of input, output, bias, filter and convolution.
// The convolution is convolution_shape.hpp's. fp32 runs with CUDNN_FMA_MATH (no
// TF32, as dsconv computes fp32 in fp32); half and bfloat16 with tensor-core math and fp32
// accumulation.

#if defined(DSCONV_PLATFORM_CUDA)

#include <cudnn.h>

#include <string>
#include <type_traits>

#include <dsconv/dsconv.hpp>

#include "convolution_shape.hpp"
#include "owned_handle.hpp"

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

// The descriptors of one case: x (input), y (output), bias ([1, k, 1, 1]), w (filter) and the
// convolution. The backward passes use the same ones: dy is described by y, dx by x, dw by w
// and the bias gradient by bias.
struct convolution_problem {
  cudnnHandle_t handle = nullptr;
  tensor_descriptor x, y, bias;
  filter_descriptor w;
  convolution_descriptor conv;

  // Describes case `c` in element type T; returns an error message, or empty.
  template <class T>
  std::string describe(const bench_case& c) {
    handle = cudnn_detail::handle();
    if (!handle) return "cudnnCreate failed (no usable GPU or cuDNN library)";
    if (!x.get() || !y.get() || !bias.get() || !w.get() || !conv.get()) return "cuDNN descriptor creation failed";
    const cudnnTensorFormat_t format = c.data_layout == dsconv::layout::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    const cudnnDataType_t type = data_type<T>();

    const convolution_shape s = convolution_shape_of(c);
    // dsconv's weights, [k][kh][kw] (depthwise) and [k][c_in] (1x1), are valid KCRS and KRSC
    // filters alike, because one of C and R*S is 1; the filter takes the data's format.
    std::string e =
        check(cudnnSetTensor4dDescriptor(x.get(), format, type, s.n, s.channels, s.h, s.w), "input descriptor");
    if (e.empty())
      e = check(cudnnSetTensor4dDescriptor(y.get(), format, type, s.n, s.k, s.out_h, s.out_w), "output descriptor");
    if (e.empty()) e = check(cudnnSetTensor4dDescriptor(bias.get(), format, type, 1, s.k, 1, 1), "bias descriptor");
    if (e.empty())
      e = check(cudnnSetFilter4dDescriptor(w.get(), type, format, s.k, s.channels / s.groups, s.kernel, s.kernel),
                "filter descriptor");
    if (e.empty())
      e = check(cudnnSetConvolution2dDescriptor(conv.get(), s.pad, s.pad, s.stride, s.stride, 1, 1,
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                "convolution descriptor");
    if (e.empty()) e = check(cudnnSetConvolutionGroupCount(conv.get(), s.groups), "group count");
    if (e.empty())
      e = check(
          cudnnSetConvolutionMathType(conv.get(), type == CUDNN_DATA_FLOAT ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH),
          "math type");
    if (!e.empty()) return e;
    int on = 0, oc = 0, oh = 0, ow = 0;
    e = check(cudnnGetConvolution2dForwardOutputDim(conv.get(), x.get(), w.get(), &on, &oc, &oh, &ow), "output size");
    if (!e.empty()) return e;
    if (on != s.n || oc != s.k || oh != s.out_h || ow != s.out_w)
      return "cuDNN computes a different output size than dsconv";
    return {};
  }
};

}  // namespace cudnn_detail
}  // namespace dsconv_bench

#endif
