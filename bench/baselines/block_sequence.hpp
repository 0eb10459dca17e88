#pragma once
// A GPU baseline for a whole block: the block's layers run one after another by the platform's
// layer baseline (`Layer`, e.g. cudnn_baseline: each with its own algorithm search, bias,
// residual and activation), what a framework without dsconv runs. Every intermediate tensor
// (expanded, depthwise output, and for squeeze-excitation the pooled vector, the reduced
// vector, the gate and the scaled depthwise output) goes through global memory. The
// squeeze-excitation's pool and scale, which are no convolutions, are `Squeeze`'s
// (cudnn_squeeze_excitation.hpp: cuDNN's reduce and op-tensor calls).

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "../kernel_bench/block_buffers.hpp"
#include "../kernel_bench/block_cases.hpp"
#include "../kernel_bench/buffer_sets.hpp"
#include "../kernel_bench/cases.hpp"

namespace dsconv_bench {

template <class T, template <class> class Layer, template <class> class Squeeze>
class block_sequence_baseline {
 public:
  static constexpr const char* name = Layer<T>::name;

  // Allocates the intermediate tensors and prepares every layer (its algorithm search runs on
  // set `b`'s tensors). Returns an error message, or empty.
  std::string prepare(const block_case& c, const block_buffer_set<T>& b) {
    p_ = c.params();
    const std::size_t n = static_cast<std::size_t>(p_.n), x = static_cast<std::size_t>(p_.expanded);
    const std::size_t in_map = n * x * p_.h * p_.w, out_map = n * x * p_.out_h() * p_.out_w();
    const std::size_t sizes[] = {p_.has_expand() ? in_map : 0, out_map, p_.se_channels ? n * x : 0,
                                 n * p_.se_channels, p_.se_channels ? n * x : 0, p_.se_channels ? out_map : 0};
    std::size_t total = 0;
    for (std::size_t s : sizes) total += s;
    if (intermediates_.allocate(total) != dsconv::status::success) return dsconv::last_error_detail();
    T* next = intermediates_.data();
    T** slots[] = {&expanded_, &depthwise_, &pooled_, &reduced_, &gate_, &scaled_};
    for (int i = 0; i < 6; ++i) *slots[i] = sizes[i] ? next : nullptr, next += sizes[i];

    layers_.clear();
    label_ = "layer sequence:";
    for (const layer& l : c.layers()) {
      const bench_case lc{l, c.batch, c.type, c.data_layout, implementation::baseline, layer_pass::forward};
      layers_.push_back({l.role, std::make_unique<Layer<T>>()});
      std::string e = layers_.back().impl->prepare(lc, layer_buffers(l.role, b));
      if (!e.empty()) return l.role + ": " + e;
      label_ += " " + l.role + " (" + layers_.back().impl->label() + ");";
    }
    if (p_.se_channels) {
      std::string e = squeeze_.prepare(p_);
      if (!e.empty()) return "squeeze-excitation: " + e;
      label_ += " pool and scale (" + squeeze_.label() + ")";
    }
    return {};
  }

  const std::string& label() const { return label_; }

  // Queues the block's layers; returns an error message, or empty.
  std::string run(const block_buffer_set<T>& b) const {
    std::string e;
    for (const auto& l : layers_) {
      if (e.empty() && l.role == "se_reduce") e = squeeze_.pool(depthwise_, pooled_);
      if (e.empty()) e = l.impl->run(layer_buffers(l.role, b));
      if (e.empty() && l.role == "se_expand") e = squeeze_.scale(depthwise_, gate_, scaled_);
    }
    return e;
  }

 private:
  struct prepared_layer {
    std::string role;
    std::unique_ptr<Layer<T>> impl;
  };

  // The tensors of the block's layer `role` (the layer table's roles) in set `b`.
  buffer_set<T> layer_buffers(const std::string& role, const block_buffer_set<T>& b) const {
    const dsconv::inverted_residual_weights<T>& w = b.weights;
    auto in = [](const T* p) { return const_cast<T*>(p); };  // the baselines take inputs as T*
    buffer_set<T> s;
    if (role == "expand") {
      s.input = in(b.input), s.weight = in(w.expand_weight), s.bias = in(w.expand_bias), s.output = expanded_;
    } else if (role == "depthwise") {
      s.input = p_.has_expand() ? expanded_ : in(b.input), s.weight = in(w.depthwise_weight);
      s.bias = in(w.depthwise_bias), s.output = depthwise_;
    } else if (role == "se_reduce") {
      s.input = pooled_, s.weight = in(w.se_reduce_weight), s.bias = in(w.se_reduce_bias), s.output = reduced_;
    } else if (role == "se_expand") {
      s.input = reduced_, s.weight = in(w.se_expand_weight), s.bias = in(w.se_expand_bias), s.output = gate_;
    } else {  // project
      s.input = p_.se_channels ? scaled_ : depthwise_, s.weight = in(w.project_weight), s.bias = in(w.project_bias);
      s.residual = p_.residual ? b.input : nullptr, s.output = b.output;
    }
    return s;
  }

  dsconv::inverted_residual_params p_;
  dsconv::device_buffer<T> intermediates_;
  T *expanded_ = nullptr, *depthwise_ = nullptr, *pooled_ = nullptr, *reduced_ = nullptr, *gate_ = nullptr,
    *scaled_ = nullptr;
  std::vector<prepared_layer> layers_;
  Squeeze<T> squeeze_;
  std::string label_;
};

// Stands in for the pool and scale where the platform's baseline has none composed (MIOpen):
// blocks with squeeze-excitation report that instead of being timed.
template <class T>
class no_squeeze_excitation {
 public:
  std::string prepare(const dsconv::inverted_residual_params&) {
    return "the squeeze-excitation's pool and scale are not composed from this baseline's calls";
  }
  const std::string& label() const { return label_; }
  std::string pool(const T*, T*) const { return "no pool"; }
  std::string scale(const T*, const T*, T*) const { return "no scale"; }

 private:
  std::string label_;
};

}  // namespace dsconv_bench
