#pragma once
// The algorithm a GPU baseline's search chose for a pass (cudnn_search.hpp, miopen_search.hpp),
// with the workspace its calls get: allocated once while the case is prepared, scratch that
// every timed run writes.

#include <cstddef>

#include <dsconv/dsconv.hpp>

namespace dsconv_bench {

template <class Algorithm>
struct chosen_algorithm {
  Algorithm algo{};
  dsconv::device_buffer<unsigned char> workspace;
  std::size_t workspace_bytes = 0;
};

}  // namespace dsconv_bench
