#pragma once
// Host platform: kernels run on the CPU, each thread of a block as a fiber.

#include "host/device_api.hpp"
#include "host/runtime.hpp"
#include "host/host_api.hpp"
