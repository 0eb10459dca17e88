#pragma once
// Several copies ("sets") of one problem's tensors in one device allocation, filled with
// random values on the device. A benchmark rotates through the sets so that each launch
// reads tensors that the launches before it have pushed out of the L2 cache.

#include <cstddef>
#include <vector>

#include <dsconv/dsconv.hpp>
#include <dsconv/kernels/common/grid_stride.hpp>

#include "cases.hpp"

namespace dsconv_bench {

// Uniform values in [-1, 1) from a hash of the index: no host data to generate or upload.
template <class T>
DSCONV_KERNEL void fill_uniform_kernel(T* data, dsconv::index_t count, unsigned long long seed) {
  for (dsconv::index_t i = dsconv::detail::global_thread_index(); i < count;
       i += dsconv::detail::global_thread_count()) {
    unsigned long long h = (static_cast<unsigned long long>(i) + seed) * 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    h ^= h >> 31;
    data[i] = dsconv::from_float<T>(static_cast<float>(h >> 40) * (2.0f / 16777216.0f) - 1.0f);
  }
}

// The tensors of one pass, null where it has none (a residual, or the data gradient's bias).
// Each backward pass works in the forward's buffers: the data gradient reads grad_output from
// `output` and writes grad_input into `input`; the weight gradient reads `input` and `output`
// and writes grad_weight and grad_bias into `weight` and `bias`.
template <class T>
struct buffer_set {
  T* input = nullptr;
  T* weight = nullptr;
  T* bias = nullptr;
  const T* residual = nullptr;
  T* output = nullptr;
};

// `count` copies ("sets") of a list of tensors in one device allocation, every element
// random: the storage behind the layer cases' buffer_sets and the block cases' sets.
template <class T>
class rotated_tensors {
 public:
  // `count` sets of tensors of `sizes` elements (0: a tensor the set does not have, null).
  dsconv::status allocate(const std::vector<std::size_t>& sizes, int count, unsigned long long seed) {
    tensors_.clear();
    std::size_t per_set = 0;
    for (std::size_t n : sizes) per_set += aligned(n);
    dsconv::status s = arena_.allocate(per_set * static_cast<std::size_t>(count));
    if (s != dsconv::status::success) return s;
    T* next = arena_.data();
    for (int i = 0; i < count; ++i) {
      std::vector<T*> set;
      for (std::size_t n : sizes) {
        set.push_back(n ? next : nullptr);
        next += aligned(n);
      }
      tensors_.push_back(set);
    }
    dsconv::platform::device_properties dev;
    s = dsconv::platform::get_device_properties(dev);
    if (s != dsconv::status::success) return s;
    const auto count_all = static_cast<dsconv::index_t>(arena_.size());
    s = dsconv::platform::launch(fill_uniform_kernel<T>,
                                 dsconv::detail::grid_stride_launch(count_all, dsconv::detail::grid_stride_block_threads, dev, {}, "fill_uniform"),
                                 arena_.data(), count_all, seed);
    return s == dsconv::status::success ? dsconv::synchronize() : s;
  }

  int count() const { return static_cast<int>(tensors_.size()); }
  // Tensor `index` (in the order of allocate's sizes) of set `set`.
  T* at(int set, std::size_t index) const { return tensors_[static_cast<std::size_t>(set)][index]; }

  // The bytes of one set of tensors of `sizes`.
  static std::size_t set_bytes(const std::vector<std::size_t>& sizes) {
    std::size_t n = 0;
    for (std::size_t s : sizes) n += aligned(s);
    return n * sizeof(T);
  }

 private:
  // Each tensor starts on a 256-byte boundary, as a fresh device allocation would.
  static std::size_t aligned(std::size_t n) {
    constexpr std::size_t per_line = 256 / sizeof(T);
    return (n + per_line - 1) / per_line * per_line;
  }

  dsconv::device_buffer<T> arena_;
  std::vector<std::vector<T*>> tensors_;
};

// A layer case's sets (buffer_set above).
template <class T>
class buffer_sets {
 public:
  static std::vector<std::size_t> tensor_list(const tensor_sizes& s) {
    return {s.input, s.weight, s.bias, s.residual, s.output};
  }
  static std::size_t set_bytes(const bench_case& c) { return rotated_tensors<T>::set_bytes(tensor_list(c.sizes())); }

  // `count` sets of the tensors of `c`, every element random.
  dsconv::status allocate(const bench_case& c, int count, unsigned long long seed) {
    sets_.clear();
    const dsconv::status s = tensors_.allocate(tensor_list(c.sizes()), count, seed);
    for (int i = 0; s == dsconv::status::success && i < tensors_.count(); ++i) {
      buffer_set<T> b;
      b.input = tensors_.at(i, 0), b.weight = tensors_.at(i, 1), b.bias = tensors_.at(i, 2);
      b.residual = tensors_.at(i, 3), b.output = tensors_.at(i, 4);
      sets_.push_back(b);
    }
    return s;
  }

  int count() const { return static_cast<int>(sets_.size()); }
  const buffer_set<T>& operator[](int i) const { return sets_[static_cast<std::size_t>(i)]; }

 private:
  rotated_tensors<T> tensors_;
  std::vector<buffer_set<T>> sets_;
};

}  // namespace dsconv_bench
