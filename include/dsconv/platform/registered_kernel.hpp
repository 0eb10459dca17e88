#pragma once
// platform::registered<Kernel>() is how launchers name the kernel they launch: on a GPU it is
// the kernel itself; on the host platform it also enters the kernel in the registry of
// compiled kernels (host/kernel_registry.hpp), which lets the test suite prove that every
// compiled kernel ran. Needs: the matrix unit the kernel's instructions need. Lanes: the warp
// width of the one vendor whose GPU builds compile the kernel (0: both vendors').

#include "../config.hpp"
#include "launch_types.hpp"

#if defined(DSCONV_PLATFORM_HOST)
#include "host/kernel_registry.hpp"
#else
namespace dsconv {
namespace platform {
template <auto Kernel, matrix_unit Needs = matrix_unit::none, int Lanes = 0>
inline constexpr auto registered() {
  return Kernel;
}
}  // namespace platform
}  // namespace dsconv
#endif
