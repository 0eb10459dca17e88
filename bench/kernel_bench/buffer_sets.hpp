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

template <class T>
class buffer_sets {
 public:
  // `count` sets of tensors of `sizes`, every element random.
  dsconv::status allocate(const tensor_sizes& sizes, int count, unsigned long long seed) {
    sets_.clear();
    const std::size_t per_set = aligned(sizes.input) + aligned(sizes.weight) + aligned(sizes.bias) +
                                aligned(sizes.residual) + aligned(sizes.output);
    dsconv::status s = arena_.allocate(per_set * static_cast<std::size_t>(count));
    if (s != dsconv::status::success) return s;
    T* next = arena_.data();
    auto take = [&next](std::size_t n) {
      T* p = n ? next : nullptr;
      next += aligned(n);
      return p;
    };
    for (int i = 0; i < count; ++i) {
      buffer_set<T> b;
      b.input = take(sizes.input);
      b.weight = take(sizes.weight);
      b.bias = take(sizes.bias);
      b.residual = take(sizes.residual);
      b.output = take(sizes.output);
      sets_.push_back(b);
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

  int count() const { return static_cast<int>(sets_.size()); }
  const buffer_set<T>& operator[](int i) const { return sets_[static_cast<std::size_t>(i)]; }
  std::size_t bytes() const { return arena_.size() * sizeof(T); }

 private:
  // Each tensor starts on a 256-byte boundary, as a fresh device allocation would.
  static std::size_t aligned(std::size_t n) {
    constexpr std::size_t per_line = 256 / sizeof(T);
    return (n + per_line - 1) / per_line * per_line;
  }

  dsconv::device_buffer<T> arena_;
  std::vector<buffer_set<T>> sets_;
};

}  // namespace dsconv_bench
