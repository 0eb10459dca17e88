#pragma once
// The baseline of the platform this program is compiled for, as `baseline_impl<T>` (forward
// cases) and `backward_baseline_impl<T>` (data and weight gradients): cuDNN on CUDA, MIOpen on
// HIP where it is installed, the CPU reference on the host platform. HIP without MIOpen has
// none (has_baseline is false) and the benchmark measures dsconv alone.

#include <string>

#include "../kernel_bench/buffer_sets.hpp"
#include "../kernel_bench/cases.hpp"
#include "cudnn.hpp"
#include "cudnn_backward.hpp"
#include "miopen.hpp"
#include "miopen_backward.hpp"
#include "reference.hpp"

namespace dsconv_bench {

// Stands in where a platform has no baseline; never registered.
template <class T>
class no_baseline {
 public:
  static constexpr const char* name = "none";
  std::string prepare(const bench_case&, const buffer_set<T>&) { return "no baseline on this platform"; }
  const std::string& label() const { return label_; }
  std::string run(const buffer_set<T>&) const { return "no baseline on this platform"; }

 private:
  std::string label_;
};

#if defined(DSCONV_PLATFORM_CUDA)
template <class T>
using baseline_impl = cudnn_baseline<T>;
template <class T>
using backward_baseline_impl = cudnn_backward_baseline<T>;
inline constexpr bool has_baseline = true;
inline std::string baseline_description() { return cudnn_detail::description(); }
#elif defined(DSCONV_BENCH_HAS_MIOPEN)
template <class T>
using baseline_impl = miopen_baseline<T>;
template <class T>
using backward_baseline_impl = miopen_backward_baseline<T>;
inline constexpr bool has_baseline = true;
inline std::string baseline_description() { return miopen_detail::description(); }
#elif defined(DSCONV_PLATFORM_HOST)
template <class T>
using baseline_impl = reference_baseline<T>;
template <class T>
using backward_baseline_impl = reference_baseline<T>;
inline constexpr bool has_baseline = true;
inline std::string baseline_description() { return "dsconv::reference (CPU, double accumulation)"; }
#else
template <class T>
using baseline_impl = no_baseline<T>;
template <class T>
using backward_baseline_impl = no_baseline<T>;
inline constexpr bool has_baseline = false;
inline std::string baseline_description() { return "none (built without MIOpen)"; }
#endif

}  // namespace dsconv_bench
