#pragma once
// The baseline of the platform this program is compiled for, as `baseline_impl<T>` (forward
// cases), `backward_baseline_impl<T>` (data and weight gradients) and `block_baseline_impl<T>`
// (block cases: the block's layers one after another, block_sequence.hpp): cuDNN's graph API on
// CUDA (the API PyTorch uses), MIOpen on HIP where it is installed, the CPU reference on the host
// platform. HIP without MIOpen has none (has_baseline is false) and the benchmark measures dsconv
// alone. CUDA has a second, weaker one, `extra_baseline_impl<T>` and the like (cuDNN's legacy
// API, as earlier runs measured it), timed only on request (dsconv_bench --legacy): a labelled
// extra column, never the reference.

#include <string>

#include "../kernel_bench/block_buffers.hpp"
#include "../kernel_bench/buffer_sets.hpp"
#include "block_sequence.hpp"
#include "../kernel_bench/cases.hpp"
#include "cudnn.hpp"
#include "cudnn_backward.hpp"
#include "cudnn_graph_baseline.hpp"
#include "cudnn_squeeze_excitation.hpp"
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
  std::string prepare(const block_case&, const block_buffer_set<T>&) { return "no baseline on this platform"; }
  std::string run(const block_buffer_set<T>&) const { return "no baseline on this platform"; }

 private:
  std::string label_;
};

#if !defined(DSCONV_PLATFORM_CUDA)
template <class T>
using extra_baseline_impl = no_baseline<T>;
template <class T>
using extra_backward_baseline_impl = no_baseline<T>;
template <class T>
using extra_block_baseline_impl = no_baseline<T>;
inline constexpr bool has_extra_baseline = false;
#endif

#if defined(DSCONV_PLATFORM_CUDA)
template <class T>
using baseline_impl = cudnn_graph_baseline<T>;
template <class T>
using backward_baseline_impl = cudnn_graph_baseline<T>;
template <class T>
using block_baseline_impl = block_sequence_baseline<T, cudnn_graph_baseline, cudnn_squeeze_excitation>;
inline constexpr bool has_baseline = true;
template <class T>
using extra_baseline_impl = cudnn_baseline<T>;
template <class T>
using extra_backward_baseline_impl = cudnn_backward_baseline<T>;
template <class T>
using extra_block_baseline_impl = block_sequence_baseline<T, cudnn_baseline, cudnn_squeeze_excitation>;
inline constexpr bool has_extra_baseline = true;
inline std::string baseline_description() {
  return cudnn_detail::description() + " through its graph API (extra, with --legacy: its legacy API)";
}
#elif defined(DSCONV_BENCH_HAS_MIOPEN)
template <class T>
using baseline_impl = miopen_baseline<T>;
template <class T>
using backward_baseline_impl = miopen_backward_baseline<T>;
template <class T>
using block_baseline_impl = block_sequence_baseline<T, miopen_baseline, no_squeeze_excitation>;
inline constexpr bool has_baseline = true;
inline std::string baseline_description() { return miopen_detail::description(); }
#elif defined(DSCONV_PLATFORM_HOST)
template <class T>
using baseline_impl = reference_baseline<T>;
template <class T>
using backward_baseline_impl = reference_baseline<T>;
template <class T>
using block_baseline_impl = reference_block_baseline<T>;
inline constexpr bool has_baseline = true;
inline std::string baseline_description() { return "dsconv::reference (CPU, double accumulation)"; }
#else
template <class T>
using baseline_impl = no_baseline<T>;
template <class T>
using backward_baseline_impl = no_baseline<T>;
template <class T>
using block_baseline_impl = no_baseline<T>;
inline constexpr bool has_baseline = false;
inline std::string baseline_description() { return "none (built without MIOpen)"; }
#endif

}  // namespace dsconv_bench
