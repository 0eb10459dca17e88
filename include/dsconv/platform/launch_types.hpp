#pragma once
// Launch description and device facts, identical on every platform. Included by each
// platform's runtime header after it has defined platform::stream_t.

#include <cstddef>

#include "../config.hpp"

namespace dsconv {
namespace platform {

// Grid, block and thread coordinates (CUDA's dim3 / uint3 without the runtime's header).
struct dims {
  unsigned x = 1, y = 1, z = 1;
  DSCONV_HOST_DEVICE constexpr unsigned long long volume() const {
    return static_cast<unsigned long long>(x) * y * z;
  }
};

struct launch_config {
  dims grid;
  dims block;
  std::size_t shared_bytes = 0;  // dynamic shared memory per block
  stream_t stream{};
  const char* name = "kernel";   // reported by the host platform's counters and errors
};

// The matrix multiply-accumulate unit a device offers kernels.
enum class matrix_unit {
  none,
  mma_sync_f16,  // NVIDIA Turing tensor cores (sm_75): mma.sync m16n8k8 with f16 operands only (warp_mma.hpp)
  mma_sync,      // NVIDIA tensor cores through mma.sync (warp_mma.hpp): sm_80 and newer, f16, bf16 and tf32
  mfma,          // AMD matrix cores through MFMA (wave_mfma.hpp): gfx90a and gfx94x
};

// Whether a device whose unit is `device_unit` executes instructions that need `needs`: sm_80's
// mma.sync includes Turing's f16 form.
constexpr bool provides(matrix_unit device_unit, matrix_unit needs) {
  return needs == matrix_unit::none || device_unit == needs ||
         (needs == matrix_unit::mma_sync_f16 && device_unit == matrix_unit::mma_sync);
}

// NVIDIA's tensor cores as dsconv uses them at compute capability (or PTX version) `arch`,
// e.g. 75 for sm_75.
constexpr matrix_unit nvidia_matrix_unit(int arch) {
  return arch >= 80 ? matrix_unit::mma_sync : arch >= 75 ? matrix_unit::mma_sync_f16 : matrix_unit::none;
}

// Lanes a matrix operation involves: a warp of NVIDIA's width, a wave of AMD's.
inline constexpr int mma_warp_lanes = 32;
inline constexpr int mfma_wave_lanes = 64;
// The lanes a unit's operations involve (0 for none).
constexpr int matrix_unit_lanes(matrix_unit unit) {
  return unit == matrix_unit::none ? 0 : unit == matrix_unit::mfma ? mfma_wave_lanes : mma_warp_lanes;
}

// The matrix units this build has kernels for: each GPU compiler its vendor's, the host
// platform (which emulates both) both.
#if defined(DSCONV_PLATFORM_CUDA)
inline constexpr bool compiles_mma_sync = true, compiles_mfma = false;
#elif defined(DSCONV_PLATFORM_HIP)
inline constexpr bool compiles_mma_sync = false, compiles_mfma = true;
#else
inline constexpr bool compiles_mma_sync = true, compiles_mfma = true;
#endif

// The matrix unit dsconv's kernels may use on a device that has `device_unit`: none where the
// code that would run there was not compiled for it (AMD code objects are per target; the
// CUDA runtime takes the lesser of the device's and the code's architecture instead, since a
// build for sm_75 alone runs on an A100 through the PTX of compute_75, which has Turing's f16
// mma.sync and traps in the others).
constexpr matrix_unit usable_matrix_unit(matrix_unit device_unit, bool code_has_unit) {
  return code_has_unit ? device_unit : matrix_unit::none;
}

struct device_properties {
  char name[256] = {};  // the device's name (on the host platform: the emulated profile, e.g. "sm80")
  // The architecture, as the tuning tables name it: "sm_90" (NVIDIA, compute capability 9.0),
  // "gfx90a" (AMD, gcnArchName without its features); the host platform: its profile's.
  char arch[16] = {};
  int multiprocessor_count = 0;
  int warp_size = 0;
  int max_threads_per_block = 0;
  int max_threads_per_multiprocessor = 0;
  int registers_per_multiprocessor = 0;            // 32-bit registers (AMD: VGPRs of all SIMDs of a CU)
  std::size_t shared_memory_per_block = 0;         // usable without opting in to more
  std::size_t shared_memory_per_multiprocessor = 0;
  std::size_t shared_memory_reserved_per_block = 0;  // taken by the runtime from a multiprocessor per resident block
  unsigned max_grid_x = 0, max_grid_y = 0, max_grid_z = 0;
  matrix_unit matrix = matrix_unit::none;
};

}  // namespace platform
}  // namespace dsconv
