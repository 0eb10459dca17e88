#pragma once
// CUDA platform: the CUDA runtime behind the shared GPU runtime and device API.

#include <cuda_runtime.h>

namespace dsconv {
namespace platform {
using stream_t = cudaStream_t;
using gpu_error_t = cudaError_t;
using gpu_device_prop_t = cudaDeviceProp;
using gpu_func_attributes_t = cudaFuncAttributes;
}  // namespace platform
}  // namespace dsconv

#define DSCONV_GPU(name) cuda##name

#include "gpu/device_api.hpp"
#include "gpu/runtime.hpp"
