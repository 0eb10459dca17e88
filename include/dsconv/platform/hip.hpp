#pragma once
// HIP platform (AMD GPUs, Hygon DCU): the HIP runtime behind the shared GPU runtime and
// device API.

#include <hip/hip_runtime.h>

namespace dsconv {
namespace platform {
using stream_t = hipStream_t;
using gpu_error_t = hipError_t;
using gpu_device_prop_t = hipDeviceProp_t;
using gpu_func_attributes_t = hipFuncAttributes;
}  // namespace platform
}  // namespace dsconv

#define DSCONV_GPU(name) hip##name

#include "gpu/device_api.hpp"
#include "gpu/runtime.hpp"
