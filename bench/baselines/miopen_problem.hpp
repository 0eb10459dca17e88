#pragma once
// A bench case as MIOpen sees it, for the forward and the backward baselines alike, when MIOpen
// is installed (CMake defines DSCONV_BENCH_MIOPEN when it finds the package): the program's
// handle and the descriptors of input, output, bias, filter and convolution (the convolution
// is convolution_shape.hpp's); NHWC is described by strides. Defines
// DSCONV_BENCH_HAS_MIOPEN when the baseline is compiled in.

#if defined(DSCONV_PLATFORM_HIP) && defined(DSCONV_BENCH_MIOPEN)
#if __has_include(<miopen/miopen.h>)
#define DSCONV_BENCH_HAS_MIOPEN 1

#include <miopen/miopen.h>

#include <cstdlib>
#include <string>
#include <type_traits>

#include <dsconv/dsconv.hpp>

#include "convolution_shape.hpp"
#include "owned_handle.hpp"

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

// The descriptors of one case: x (input), y (output), bias ([1, k, 1, 1]), w (filter) and the
// convolution. The backward passes use the same ones: dy is described by y, dx by x, dw by w
// and the bias gradient by bias.
struct convolution_problem {
  miopenHandle_t handle = nullptr;
  tensor_descriptor x, y, bias, w;
  convolution_descriptor conv;

  // Describes case `c` in element type T; returns an error message, or empty.
  template <class T>
  std::string describe(const bench_case& c) {
    handle = miopen_detail::handle();
    if (!handle) return "miopenCreateWithStream failed (no usable GPU or MIOpen library)";
    if (!x.get() || !y.get() || !bias.get() || !w.get() || !conv.get()) return "MIOpen descriptor creation failed";
    const miopenDataType_t type = data_type<T>();
    const convolution_shape s = convolution_shape_of(c);
    std::string e = set_tensor(x.get(), type, c.data_layout, s.n, s.channels, s.h, s.w);
    if (e.empty()) e = set_tensor(y.get(), type, c.data_layout, s.n, s.k, s.out_h, s.out_w);
    if (e.empty()) e = set_tensor(bias.get(), type, c.data_layout, 1, s.k, 1, 1);
    // dsconv's weights, [k][kh][kw] and [k][c_in], are valid filters in either layout.
    if (e.empty()) e = set_tensor(w.get(), type, c.data_layout, s.k, s.channels / s.groups, s.kernel, s.kernel);
    if (e.empty())
      e = check(miopenInitConvolutionDescriptor(conv.get(), miopenConvolution, s.pad, s.pad, s.stride, s.stride, 1, 1),
                "convolution descriptor");
    if (e.empty()) e = check(miopenSetConvolutionGroupCount(conv.get(), s.groups), "group count");
    return e;
  }
};

}  // namespace miopen_detail
}  // namespace dsconv_bench

#endif
#endif
