#pragma once
// MIOpen's algorithm for one pass of a case, chosen the same way for the forward, backward
// data and backward weights passes: the pass's search workspace (its *GetWorkSpaceSize, the
// most any of its algorithms needs), MIOpen's exhaustive search on the case's buffers, and the
// fastest result with the workspace it reports.

#include "miopen_problem.hpp"

#if defined(DSCONV_BENCH_HAS_MIOPEN)

#include <miopen/miopen.h>

#include <cstddef>
#include <string>

#include <dsconv/dsconv.hpp>

#include "../kernel_bench/buffer_sets.hpp"
#include "chosen_algorithm.hpp"

namespace dsconv_bench {
namespace miopen_detail {

// What differs between the passes' searches: MIOpen's calls, the result's algorithm field, and
// which buffer of the set plays which role (buffer_sets.hpp).
struct forward_search {
  using algorithm = miopenConvFwdAlgorithm_t;

  static miopenStatus_t workspace_size(const convolution_problem& problem, std::size_t* bytes) {
    return miopenConvolutionForwardGetWorkSpaceSize(problem.handle, problem.w.get(), problem.x.get(),
                                                    problem.conv.get(), problem.y.get(), bytes);
  }
  template <class T>
  static miopenStatus_t find(const convolution_problem& problem, const buffer_set<T>& b, int requested, int* returned,
                             miopenConvAlgoPerf_t* results, void* workspace, std::size_t bytes) {
    return miopenFindConvolutionForwardAlgorithm(problem.handle, problem.x.get(), b.input, problem.w.get(), b.weight,
                                                 problem.conv.get(), problem.y.get(), b.output, requested, returned,
                                                 results, workspace, bytes, /*exhaustiveSearch=*/true);
  }
  static algorithm algorithm_of(const miopenConvAlgoPerf_t& r) { return r.fwd_algo; }
  static const char* name(algorithm a) {
    switch (a) {
      case miopenConvolutionFwdAlgoGEMM: return "GEMM";
      case miopenConvolutionFwdAlgoDirect: return "Direct";
      case miopenConvolutionFwdAlgoFFT: return "FFT";
      case miopenConvolutionFwdAlgoWinograd: return "Winograd";
      case miopenConvolutionFwdAlgoImplicitGEMM: return "ImplicitGEMM";
      default: return "unknown";
    }
  }
};

// dx from dy (the output buffer) and w; dx goes into the input buffer.
struct backward_data_search {
  using algorithm = miopenConvBwdDataAlgorithm_t;

  static miopenStatus_t workspace_size(const convolution_problem& problem, std::size_t* bytes) {
    return miopenConvolutionBackwardDataGetWorkSpaceSize(problem.handle, problem.y.get(), problem.w.get(),
                                                         problem.conv.get(), problem.x.get(), bytes);
  }
  template <class T>
  static miopenStatus_t find(const convolution_problem& problem, const buffer_set<T>& b, int requested, int* returned,
                             miopenConvAlgoPerf_t* results, void* workspace, std::size_t bytes) {
    return miopenFindConvolutionBackwardDataAlgorithm(problem.handle, problem.y.get(), b.output, problem.w.get(),
                                                      b.weight, problem.conv.get(), problem.x.get(), b.input, requested,
                                                      returned, results, workspace, bytes,
                                                      /*exhaustiveSearch=*/true);
  }
  static algorithm algorithm_of(const miopenConvAlgoPerf_t& r) { return r.bwd_data_algo; }
  static const char* name(algorithm a) {
    switch (a) {
      case miopenConvolutionBwdDataAlgoGEMM: return "GEMM";
      case miopenConvolutionBwdDataAlgoDirect: return "Direct";
      case miopenConvolutionBwdDataAlgoFFT: return "FFT";
      case miopenConvolutionBwdDataAlgoWinograd: return "Winograd";
      case miopenTransposeBwdDataAlgoGEMM: return "TransposeGEMM";
      case miopenConvolutionBwdDataAlgoImplicitGEMM: return "ImplicitGEMM";
      default: return "unknown";
    }
  }
};

// dw from x (the input buffer) and dy (the output buffer); dw goes into the weight buffer.
struct backward_weights_search {
  using algorithm = miopenConvBwdWeightsAlgorithm_t;

  static miopenStatus_t workspace_size(const convolution_problem& problem, std::size_t* bytes) {
    return miopenConvolutionBackwardWeightsGetWorkSpaceSize(problem.handle, problem.y.get(), problem.x.get(),
                                                            problem.conv.get(), problem.w.get(), bytes);
  }
  template <class T>
  static miopenStatus_t find(const convolution_problem& problem, const buffer_set<T>& b, int requested, int* returned,
                             miopenConvAlgoPerf_t* results, void* workspace, std::size_t bytes) {
    return miopenFindConvolutionBackwardWeightsAlgorithm(problem.handle, problem.y.get(), b.output, problem.x.get(),
                                                         b.input, problem.conv.get(), problem.w.get(), b.weight,
                                                         requested, returned, results, workspace, bytes,
                                                         /*exhaustiveSearch=*/true);
  }
  static algorithm algorithm_of(const miopenConvAlgoPerf_t& r) { return r.bwd_weights_algo; }
  static const char* name(algorithm a) {
    switch (a) {
      case miopenConvolutionBwdWeightsAlgoGEMM: return "GEMM";
      case miopenConvolutionBwdWeightsAlgoDirect: return "Direct";
      case miopenConvolutionBwdWeightsAlgoWinograd: return "Winograd";
      case miopenConvolutionBwdWeightsAlgoImplicitGEMM: return "ImplicitGEMM";
      default: return "unknown";
    }
  }
};

// Chooses the fastest algorithm of `Search`'s pass for `problem` on set `b` (whose output
// tensors the search overwrites) and keeps the search's workspace for it. Returns an error
// message, or empty.
template <class Search, class T>
std::string find_fastest(const convolution_problem& problem, const buffer_set<T>& b,
                         chosen_algorithm<typename Search::algorithm>& chosen) {
  std::size_t search_bytes = 0;
  std::string e = check(Search::workspace_size(problem, &search_bytes), "workspace size");
  if (!e.empty()) return e;
  if (chosen.workspace.allocate(search_bytes) != dsconv::status::success)
    return std::string("workspace: ") + dsconv::last_error_detail();
  miopenConvAlgoPerf_t results[8];
  int returned = 0;
  e = check(Search::find(problem, b, 8, &returned, results, chosen.workspace.data(), search_bytes), "algorithm search");
  if (!e.empty()) return e;
  if (returned < 1) return "MIOpen found no algorithm that runs this problem";
  // Results come sorted by time; the first is the fastest.
  chosen.algo = Search::algorithm_of(results[0]);
  chosen.workspace_bytes = results[0].memory <= search_bytes ? results[0].memory : search_bytes;
  return {};
}

}  // namespace miopen_detail
}  // namespace dsconv_bench

#endif
