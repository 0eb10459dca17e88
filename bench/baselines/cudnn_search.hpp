#pragma once
// cuDNN's algorithm for one pass of a case, chosen the same way for the forward, backward data
// and backward filter passes: its own search (cudnnFind*AlgorithmEx, which times every
// algorithm on the case's buffers) with as much workspace as the hungriest algorithm wants,
// the fastest result that ran, that algorithm's math type, and then the workspace that
// algorithm needs (cudnnGet*WorkspaceSize), allocated once for the timed calls.

#if defined(DSCONV_PLATFORM_CUDA)

#include <cudnn.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "../kernel_bench/buffer_sets.hpp"
#include "chosen_algorithm.hpp"
#include "cudnn_problem.hpp"

namespace dsconv_bench {
namespace cudnn_detail {

// What differs between the passes' searches: cuDNN's types and calls, and which buffer of the
// set plays which role (buffer_sets.hpp).
struct forward_search {
  using algorithm = cudnnConvolutionFwdAlgo_t;
  using result = cudnnConvolutionFwdAlgoPerf_t;
  static constexpr int algorithm_count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;

  static cudnnStatus_t max_count(cudnnHandle_t h, int* count) {
    return cudnnGetConvolutionForwardAlgorithmMaxCount(h, count);
  }
  static cudnnStatus_t workspace_size(const convolution_problem& problem, algorithm a, std::size_t* bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(problem.handle, problem.x.get(), problem.w.get(), problem.conv.get(),
                                                   problem.y.get(), a, bytes);
  }
  template <class T>
  static cudnnStatus_t find(const convolution_problem& problem, const buffer_set<T>& b, int requested, int* returned,
                            result* results, void* workspace, std::size_t bytes) {
    return cudnnFindConvolutionForwardAlgorithmEx(problem.handle, problem.x.get(), b.input, problem.w.get(), b.weight,
                                                  problem.conv.get(), problem.y.get(), b.output, requested, returned,
                                                  results, workspace, bytes);
  }
  static const char* name(algorithm a) {
    switch (a) {
      case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
      case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
      case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
      case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
      case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
      case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
      case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
      case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
      default: return "unknown";
    }
  }
};

// dx from dy (the output buffer) and w; dx goes into the input buffer.
struct backward_data_search {
  using algorithm = cudnnConvolutionBwdDataAlgo_t;
  using result = cudnnConvolutionBwdDataAlgoPerf_t;
  static constexpr int algorithm_count = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;

  static cudnnStatus_t max_count(cudnnHandle_t h, int* count) {
    return cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, count);
  }
  static cudnnStatus_t workspace_size(const convolution_problem& problem, algorithm a, std::size_t* bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(problem.handle, problem.w.get(), problem.y.get(),
                                                        problem.conv.get(), problem.x.get(), a, bytes);
  }
  template <class T>
  static cudnnStatus_t find(const convolution_problem& problem, const buffer_set<T>& b, int requested, int* returned,
                            result* results, void* workspace, std::size_t bytes) {
    return cudnnFindConvolutionBackwardDataAlgorithmEx(problem.handle, problem.w.get(), b.weight, problem.y.get(),
                                                       b.output, problem.conv.get(), problem.x.get(), b.input,
                                                       requested, returned, results, workspace, bytes);
  }
  static const char* name(algorithm a) {
    switch (a) {
      case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return "ALGO_0";
      case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: return "ALGO_1";
      case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return "FFT";
      case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return "FFT_TILING";
      case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return "WINOGRAD";
      case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
      default: return "unknown";
    }
  }
};

// dw from x (the input buffer) and dy (the output buffer); dw goes into the weight buffer.
struct backward_filter_search {
  using algorithm = cudnnConvolutionBwdFilterAlgo_t;
  using result = cudnnConvolutionBwdFilterAlgoPerf_t;
  static constexpr int algorithm_count = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;

  static cudnnStatus_t max_count(cudnnHandle_t h, int* count) {
    return cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, count);
  }
  static cudnnStatus_t workspace_size(const convolution_problem& problem, algorithm a, std::size_t* bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(problem.handle, problem.x.get(), problem.y.get(),
                                                          problem.conv.get(), problem.w.get(), a, bytes);
  }
  template <class T>
  static cudnnStatus_t find(const convolution_problem& problem, const buffer_set<T>& b, int requested, int* returned,
                            result* results, void* workspace, std::size_t bytes) {
    return cudnnFindConvolutionBackwardFilterAlgorithmEx(problem.handle, problem.x.get(), b.input, problem.y.get(),
                                                         b.output, problem.conv.get(), problem.w.get(), b.weight,
                                                         requested, returned, results, workspace, bytes);
  }
  static const char* name(algorithm a) {
    switch (a) {
      case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: return "ALGO_0";
      case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1: return "ALGO_1";
      case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT: return "FFT";
      case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: return "ALGO_3";
      case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
      case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING: return "FFT_TILING";
      default: return "unknown";
    }
  }
};

// Chooses the fastest algorithm of `Search`'s pass for `problem` on set `b` (whose output
// tensors the search overwrites), sets the convolution descriptor to the math type it was
// timed with, and allocates its workspace. Returns an error message, or empty.
template <class Search, class T>
std::string find_fastest(convolution_problem& problem, const buffer_set<T>& b,
                         chosen_algorithm<typename Search::algorithm>& chosen) {
  int max_count = 0;
  std::string e = check(Search::max_count(problem.handle, &max_count), "algorithm count");
  if (!e.empty()) return e;
  // The search may use as much workspace as the hungriest algorithm wants, up to a bound that
  // no depthwise or 1x1 algorithm worth having needs.
  constexpr std::size_t workspace_limit = std::size_t(1) << 30;
  std::size_t search_bytes = 0;
  for (int a = 0; a < Search::algorithm_count; ++a) {
    std::size_t bytes = 0;
    if (Search::workspace_size(problem, static_cast<typename Search::algorithm>(a), &bytes) == CUDNN_STATUS_SUCCESS &&
        bytes <= workspace_limit && bytes > search_bytes)
      search_bytes = bytes;
  }
  if (chosen.workspace.allocate(search_bytes) != dsconv::status::success)
    return std::string("workspace: ") + dsconv::last_error_detail();
  std::vector<typename Search::result> results(static_cast<std::size_t>(max_count > 0 ? max_count : 1));
  int returned = 0;
  e = check(Search::find(problem, b, static_cast<int>(results.size()), &returned, results.data(),
                         chosen.workspace.data(), search_bytes),
            "algorithm search");
  if (!e.empty()) return e;
  // Results come sorted by time; the first that ran is the fastest.
  for (int i = 0; i < returned; ++i) {
    if (results[i].status != CUDNN_STATUS_SUCCESS || results[i].memory > search_bytes) continue;
    chosen.algo = results[i].algo;
    // Run it with the math type it was timed with, and with the workspace it needs in that
    // math type (never less than the search reported); the search's buffer goes back first.
    std::size_t needed = 0;
    e = check(cudnnSetConvolutionMathType(problem.conv.get(), results[i].mathType), "math type");
    if (e.empty()) e = check(Search::workspace_size(problem, chosen.algo, &needed), "workspace size");
    chosen.workspace_bytes = std::max(needed, results[i].memory);
    if (e.empty() && chosen.workspace.allocate(chosen.workspace_bytes) != dsconv::status::success)
      e = std::string("workspace: ") + dsconv::last_error_detail();
    return e;
  }
  return "cuDNN found no algorithm that runs this problem";
}

}  // namespace cudnn_detail
}  // namespace dsconv_bench

#endif
