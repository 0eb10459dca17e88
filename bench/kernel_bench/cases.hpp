#pragma once
// The grid that dsconv_bench registers: every unique depthwise and 1x1 shape of MobileNetV2
// and EfficientNet-B0 at one input resolution x pass (forward, backward data, backward weight)
// x batch x element type x layout x implementation, each with its benchmark name and the
// minimum bytes and FLOPs that the pass must move and compute.

#include <cstddef>
#include <string>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "../support/layers.hpp"

namespace dsconv_bench {

enum class element_type { f32, f16, bf16 };
// The platform's baseline, and on CUDA a second, weaker one kept as a labelled extra column
// (cuDNN's legacy API; dsconv_bench --legacy).
enum class implementation { dsconv, baseline, extra_baseline };
// The backward passes are the gradients of the plain layer: no activation (the baselines'
// backward calls fuse none) and no residual.
inline constexpr layer_pass bench_passes[] = {layer_pass::forward, layer_pass::backward_data, layer_pass::backward_weight};

inline constexpr int bench_batches[] = {1, 8, 16, 32, 64, 128};
inline constexpr element_type bench_types[] = {element_type::f32, element_type::f16, element_type::bf16};
inline constexpr dsconv::layout bench_layouts[] = {dsconv::layout::nchw, dsconv::layout::nhwc};

inline const char* to_string(element_type t) {
  switch (t) {
    case element_type::f32: return "float";
    case element_type::f16: return "half";
    case element_type::bf16: return "bfloat16";
  }
  return "unknown";
}

inline std::size_t size_of(element_type t) { return t == element_type::f32 ? 4 : 2; }

// Element counts of the tensors that one pass reads or writes (0: a tensor it does not touch,
// such as the residual of a layer that has none, or the bias of the data gradient).
struct tensor_sizes {
  std::size_t input = 0, weight = 0, bias = 0, residual = 0, output = 0;
  std::size_t total() const { return input + weight + bias + residual + output; }
};

struct bench_case {
  layer l;
  int batch = 1;
  element_type type = element_type::f32;
  dsconv::layout data_layout = dsconv::layout::nchw;
  implementation impl = implementation::dsconv;
  layer_pass pass = layer_pass::forward;

  bool forward() const { return pass == layer_pass::forward; }
  // The layer's activation in the forward pass, none in the backward passes.
  dsconv::activation activation() const { return forward() ? l.act : dsconv::activation::none; }
  bool residual() const { return forward() && l.residual && !l.depthwise(); }

  dsconv::depthwise_params depthwise() const {
    dsconv::depthwise_params p = l.depthwise_params(batch, data_layout);
    p.act = activation();
    return p;
  }
  dsconv::pointwise_params pointwise() const {
    dsconv::pointwise_params p = l.pointwise_params(batch, data_layout);
    p.act = activation();
    return p;
  }

  // dw or pw for the forward pass, with bd (backward data) or bw (backward weight) after it for
  // the gradients: dwbd, dwbw, pwbd, pwbw.
  std::string op() const {
    return l.kind + (pass == layer_pass::backward_data ? "bd" : pass == layer_pass::backward_weight ? "bw" : "");
  }

  // The forward reads input, weight, bias (and residual) and writes output; the data gradient
  // reads grad_output (output's size) and weight and writes grad_input (input's size); the
  // weight gradient reads input and grad_output and writes grad_weight and grad_bias.
  tensor_sizes sizes() const {
    tensor_sizes s;
    const std::size_t n = static_cast<std::size_t>(batch);
    if (l.depthwise()) {
      const dsconv::depthwise_params p = depthwise();
      const auto out_c = static_cast<std::size_t>(p.out_c());
      s.input = n * p.c * p.h * p.w;
      s.weight = out_c * p.kernel_h * p.kernel_w;
      s.bias = out_c;
      s.output = n * out_c * p.out_h() * p.out_w();
    } else {
      const dsconv::pointwise_params p = pointwise();
      const std::size_t pixels = n * p.h * p.w;
      s.input = pixels * p.c_in;
      s.weight = static_cast<std::size_t>(p.c_out) * p.c_in;
      s.bias = p.c_out;
      s.output = pixels * p.c_out;
      s.residual = residual() ? s.output : 0;
    }
    if (pass == layer_pass::backward_data) s.bias = 0;
    return s;
  }

  // Every byte of every tensor the pass touches, once.
  double minimum_bytes() const { return static_cast<double>(sizes().total() * size_of(type)); }

  // Two FLOPs per multiply-add of the convolution, the same products in every pass (bias,
  // residual, activation and the bias gradient's sums not counted).
  double minimum_flops() const {
    if (l.depthwise()) {
      const dsconv::depthwise_params p = depthwise();
      return 2.0 * static_cast<double>(sizes().output) * p.kernel_h * p.kernel_w;
    }
    const dsconv::pointwise_params p = pointwise();
    return 2.0 * static_cast<double>(sizes().output) * p.c_in;
  }

  // model_input_index:shape, e.g. mobilenet_v2_224_3:c96_h112_k3_s2 or
  // mobilenet_v2_224_1:ci32_co16_h112.
  std::string shape_name() const {
    std::string s = l.model + "_" + std::to_string(l.input) + "_" + std::to_string(l.index) + ":";
    if (l.depthwise())
      s += "c" + std::to_string(l.cin) + "_h" + std::to_string(l.h_in) + "_k" + std::to_string(l.k) + "_s" +
           std::to_string(l.stride);
    else
      s += "ci" + std::to_string(l.cin) + "_co" + std::to_string(l.cout) + "_h" + std::to_string(l.h_in);
    return s;
  }

  // op/shape/b<batch>/type/layout/implementation, e.g.
  // dw/mobilenet_v2_224_3:c96_h112_k3_s2/b8/float/nchw/dsconv or
  // pwbw/mobilenet_v2_224_1:ci32_co16_h112/b1/half/nhwc/cudnn.
  std::string name(const char* baseline_name, const char* extra_name = "") const {
    return op() + "/" + shape_name() + "/b" + std::to_string(batch) + "/" + to_string(type) + "/" +
           dsconv::to_string(data_layout) + "/" +
           (impl == implementation::dsconv ? "dsconv" : impl == implementation::baseline ? baseline_name : extra_name);
  }
};

// The unique shapes at input resolution `input` (squeeze-excitation layers aside), depthwise
// first, in network order; a shape that both networks have is named after MobileNetV2's layer.
inline std::vector<layer> bench_shapes(int input) {
  std::vector<layer> at_input;
  for (const char* model : {"mobilenet_v2", "efficientnet_b0"})
    for (const auto& l : all_layers())
      if (l.input == input && l.model == model) at_input.push_back(l);
  std::vector<layer> out;
  for (const char* kind : {"dw", "pw"})
    for (const auto& l : unique_shapes(at_input))
      if (l.kind == kind) out.push_back(l);
  return out;
}

// Every case: the forward pass of every shape first, then the data gradients, then the weight
// gradients (a run cut short has the forward results), and within a pass a shape's batches,
// types, layouts and implementations one after another (dsconv next to its baselines).
inline std::vector<bench_case> all_cases(int input, bool with_baseline, bool with_extra = false) {
  std::vector<bench_case> cases;
  for (layer_pass pass : bench_passes)
    for (const auto& l : bench_shapes(input))
      for (int batch : bench_batches)
        for (element_type t : bench_types)
          for (dsconv::layout lay : bench_layouts)
            for (implementation impl : {implementation::dsconv, implementation::baseline, implementation::extra_baseline})
              if (impl == implementation::dsconv || (impl == implementation::baseline ? with_baseline : with_extra))
                cases.push_back(bench_case{l, batch, t, lay, impl, pass});
  return cases;
}

}  // namespace dsconv_bench
