// The dsconv operator library for PyTorch: the schemas (ops.hpp says what each takes and
// returns) and their CPU kernels, which run dsconv's kernels on its host platform: the GPU
// kernels executed on the CPU, for testing and for machines without a GPU, not for speed.
// ops_cuda.cu registers the CUDA kernels in a library of its own.

#include "ops.hpp"

namespace dsconv_torch {
namespace {

// The host platform runs each call to completion before it returns: no stream, no device to
// choose, and no TF32 (float 1x1 layers match PyTorch's CPU convolution).
struct host_platform {
  struct scope {
    explicit scope(const at::Tensor&) {}
  };
  static device_context context(const at::Tensor&) { return {}; }
};

}  // namespace
}  // namespace dsconv_torch

TORCH_LIBRARY(dsconv, m) {
  m.def("depthwise_conv2d(Tensor input, Tensor weight, Tensor? bias, int[2] stride, int[2] padding, int[2] dilation, "
        "str activation, bool save_derivative) -> (Tensor, Tensor)");
  m.def("depthwise_conv2d_backward(Tensor grad_output, Tensor input, Tensor weight, Tensor saved, int[2] stride, "
        "int[2] padding, int[2] dilation, str activation, bool[3] output_mask) -> (Tensor, Tensor, Tensor)");
  m.def("pointwise_conv2d(Tensor input, Tensor weight, Tensor? bias, str activation, bool save_derivative) "
        "-> (Tensor, Tensor)");
  m.def("pointwise_conv2d_backward(Tensor grad_output, Tensor input, Tensor weight, Tensor saved, str activation, "
        "bool[3] output_mask) -> (Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(dsconv, CPU, m) { dsconv_torch::platform_kernels<dsconv_torch::host_platform>::register_all(m); }
