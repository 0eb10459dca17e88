// The CUDA kernels of the dsconv operators (schemas in ops_cpu.cpp, whose library is loaded
// first): dsconv's CUDA build, on the tensors' device and PyTorch's current stream there, so
// that the calls order with the rest of the model's work. Float 1x1 layers round to TF32 on
// the tensor cores where PyTorch allows it for convolutions (torch.backends.cudnn.allow_tf32),
// else multiply in two TF32 parts there (about fp32's accuracy).

#include <ATen/Context.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "ops.hpp"

namespace dsconv_torch {
namespace {

struct cuda_platform {
  // The input's device, current while the call runs (an input elsewhere, with a weight on a
  // GPU, is an error here rather than in the guard).
  struct scope {
    explicit scope(const at::Tensor& on) : guard(cuda_device(on)) {}
    static c10::Device cuda_device(const at::Tensor& on) {
      TORCH_CHECK(on.is_cuda(), "dsconv: input is on ", on.device(), " but another tensor of the call is on a GPU");
      return on.device();
    }
    c10::cuda::CUDAGuard guard;
  };
  static device_context context(const at::Tensor& on) {
    device_context ctx;
    ctx.stream = c10::cuda::getCurrentCUDAStream(on.device().index()).stream();
    ctx.allow_tf32 = at::globalContext().allowTF32CuDNN();
    return ctx;
  }
};

}  // namespace
}  // namespace dsconv_torch

TORCH_LIBRARY_IMPL(dsconv, CUDA, m) { dsconv_torch::platform_kernels<dsconv_torch::cuda_platform>::register_all(m); }
