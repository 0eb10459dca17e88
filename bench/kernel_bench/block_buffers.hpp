#pragma once
// Rotated sets of a block case's tensors (buffer_sets.hpp's storage): the input, the weights
// and biases, the output. Weights are uniform in [-1, 1) like every benchmark tensor; with
// relu6 and silu the block's values stay well inside half's and bfloat16's range.

#include <cstddef>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "block_cases.hpp"
#include "buffer_sets.hpp"

namespace dsconv_bench {

template <class T>
struct block_buffer_set {
  const T* input = nullptr;  // also the residual
  dsconv::inverted_residual_weights<T> weights;
  T* output = nullptr;
};

template <class T>
class block_buffer_sets {
 public:
  static std::size_t set_bytes(const block_case& c) { return rotated_tensors<T>::set_bytes(c.tensor_sizes()); }

  // `count` sets of the tensors of `c` (block_case::tensor_sizes' order), every element random.
  dsconv::status allocate(const block_case& c, int count, unsigned long long seed) {
    sets_.clear();
    const dsconv::status s = tensors_.allocate(c.tensor_sizes(), count, seed);
    for (int i = 0; s == dsconv::status::success && i < tensors_.count(); ++i) {
      auto at = [&](std::size_t t) { return tensors_.at(i, t); };
      block_buffer_set<T> b;
      b.input = at(0);
      b.weights = {at(1), at(2), at(3), at(4), at(5), at(6), at(7), at(8), at(9), at(10)};
      b.output = at(11);
      sets_.push_back(b);
    }
    return s;
  }

  int count() const { return static_cast<int>(sets_.size()); }
  const block_buffer_set<T>& operator[](int i) const { return sets_[static_cast<std::size_t>(i)]; }

 private:
  rotated_tensors<T> tensors_;
  std::vector<block_buffer_set<T>> sets_;
};

}  // namespace dsconv_bench
