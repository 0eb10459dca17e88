#pragma once
// The CUDA platform's reference baseline: cuDNN through its graph (backend) API, as PyTorch
// runs convolutions (cudnn_graph.hpp: heuristics, every configuration timed, the fastest kept),
// for every pass of a layer case:
//   - forward: conv -> + bias [-> + residual] [-> activation] as one graph where cuDNN's
//     runtime-fusion engines take it (fp32 intermediates); otherwise the convolution's graph
//     into a scratch tensor followed by one pointwise graph for the epilogue. relu, relu6 (a
//     relu clipped at 6), silu (swish, beta 1) and sigmoid have graph forms; hardswish none.
//   - data gradient: the backward-data graph.
//   - weight gradient: the backward-filter graph, then the bias gradient as a reduction graph
//     (cuDNN has no filter gradient that also sums the bias), or, where no reduction engine
//     takes it, the classic cudnnConvolutionBackwardBias.
// Depthwise layers are grouped convolutions: groups follow from the filter's C / groups = 1.
// The label names the engines and what was fused.

#if defined(DSCONV_PLATFORM_CUDA)

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "../kernel_bench/buffer_sets.hpp"
#include "../kernel_bench/cases.hpp"
#include "convolution_shape.hpp"
#include "cudnn_graph.hpp"
#include "cudnn_problem.hpp"

namespace dsconv_bench {
namespace cudnn_graph {

// Engine configurations finalized and timed per graph: PyTorch's default
// torch.backends.cudnn.benchmark_limit. dsconv_bench --cudnn_configs=N changes it.
inline int& config_limit() {
  static int limit = 10;
  return limit;
}

// The activation as graph operations; false where the graph API has no form for it.
inline bool activation_math(dsconv::activation a, pointwise_math& m) {
  switch (a) {
    case dsconv::activation::relu: m = {CUDNN_POINTWISE_RELU_FWD, 0.0}; return true;
    case dsconv::activation::relu6: m = {CUDNN_POINTWISE_RELU_FWD, 6.0}; return true;
    case dsconv::activation::silu: m = {CUDNN_POINTWISE_SWISH_FWD, 0.0}; return true;
    case dsconv::activation::sigmoid: m = {CUDNN_POINTWISE_SIGMOID_FWD, 0.0}; return true;
    default: return false;
  }
}

// The buffers of a set that a graph's tensors are bound to; the uid of a real tensor is its
// role's value.
enum class role : std::int64_t { input = 1, weight, bias, residual, output, scratch };
// Virtual tensors (graph intermediates) take uids from here on.
inline constexpr std::int64_t first_virtual_uid = 100;

}  // namespace cudnn_graph

template <class T>
class cudnn_graph_baseline {
 public:
  static constexpr const char* name = "cudnn_graph";

  // Builds the case's graphs and chooses their plans on set `b`. Returns an error message, or
  // empty.
  std::string prepare(const bench_case& c, const buffer_set<T>& b) {
    c_ = c;
    shape_ = convolution_shape_of(c);
    nhwc_ = c.data_layout == dsconv::layout::nhwc;
    switch (c.pass) {
      case layer_pass::forward: return prepare_forward(b);
      case layer_pass::backward_data: return prepare_backward_data(b);
      case layer_pass::backward_weight: return prepare_backward_weight(b);
    }
    return "unknown pass";
  }

  const std::string& label() const { return label_; }

  // Queues the case's pass on set `b`: its graphs one after another (and the classic bias
  // gradient where it stands in). Returns an error message, or empty.
  std::string run(const buffer_set<T>& b) const {
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      const std::string e = steps_[i].run(pointers(steps_[i], b));
      if (!e.empty()) return e;
    }
    if (!legacy_bias_) return {};
    const float one = 1.0f, zero = 0.0f;
    return cudnn_detail::check(cudnnConvolutionBackwardBias(legacy_.handle, &one, legacy_.y.get(), b.output, &zero,
                                                            legacy_.bias.get(), b.bias),
                               "cudnnConvolutionBackwardBias");
  }

 private:
  using graph_plan = cudnn_graph::graph_plan;
  using descriptor = cudnn_graph::descriptor;
  using role = cudnn_graph::role;

  static constexpr cudnnDataType_t data_type = cudnn_detail::data_type<T>();
  static constexpr bool float_data = std::is_same<T, float>::value;

  cudnn_graph::tensor_shape input_shape() const {
    return cudnn_graph::activation_shape(shape_.n, shape_.channels, shape_.h, shape_.w, nhwc_);
  }
  cudnn_graph::tensor_shape output_shape() const {
    return cudnn_graph::activation_shape(shape_.n, shape_.k, shape_.out_h, shape_.out_w, nhwc_);
  }
  cudnn_graph::tensor_shape weight_shape() const {
    return cudnn_graph::filter_shape(shape_.k, shape_.channels / shape_.groups, shape_.kernel, shape_.kernel, nhwc_);
  }

  // A real tensor bound to role `r`'s buffer, kept in `parts`.
  const descriptor& real(cudnn_graph::graph_parts& parts, role r, const cudnn_graph::tensor_shape& s,
                         cudnn_graph::errors& err, const char* what) const {
    return parts.keep(cudnn_graph::tensor(static_cast<std::int64_t>(r), s, data_type, false, what, err));
  }
  // A graph intermediate in fp32 of the output's shape.
  const descriptor& intermediate(cudnn_graph::graph_parts& parts, std::int64_t& next_uid,
                                 cudnn_graph::errors& err) const {
    return parts.keep(cudnn_graph::tensor(next_uid++, output_shape(), CUDNN_DATA_FLOAT, true, "intermediate", err));
  }
  // One convolution operation of `kind` on a, b into result (cudnn_graph::convolution_operation).
  void add_convolution(cudnn_graph::graph_parts& parts, cudnn_graph::convolution_kind kind, const descriptor& a,
                       const descriptor& b, const descriptor& result, cudnn_graph::errors& err) const {
    const descriptor& conv = parts.keep(cudnn_graph::convolution(shape_.stride, shape_.pad, err));
    parts.add(cudnn_graph::convolution_operation(kind, a, b, result, conv, err));
  }

  std::vector<void*> pointers(const graph_plan& g, const buffer_set<T>& b) const {
    std::vector<void*> p;
    for (std::int64_t uid : g.uids) {
      switch (static_cast<role>(uid)) {
        case role::input: p.push_back(b.input); break;
        case role::weight: p.push_back(b.weight); break;
        case role::bias: p.push_back(b.bias); break;
        case role::residual: p.push_back(const_cast<T*>(b.residual)); break;
        case role::output: p.push_back(b.output); break;
        case role::scratch: p.push_back(scratch_.data()); break;
      }
    }
    return p;
  }

  // Plans the graph of `parts` on set `b` as the next step; `roles` are its real tensors.
  // Returns an error message, or empty; `engine` says what was chosen.
  std::string add_step(cudnn_graph::graph_parts parts, const cudnn_graph::errors& err, std::vector<role> roles,
                       const buffer_set<T>& b, std::string& engine) {
    if (!err.ok()) return err.message();
    graph_plan g;
    for (role r : roles) g.uids.push_back(static_cast<std::int64_t>(r));
    const std::string e = g.build(std::move(parts), pointers(g, b), float_data, cudnn_graph::config_limit());
    if (!e.empty()) return e;
    engine = g.label();
    steps_.push_back(std::move(g));
    return {};
  }

  // The epilogue's operations on `z` (the convolution's result): + bias, + residual, the
  // activation, each into a new fp32 intermediate but the last, which writes `y`. Returns the
  // real tensors' roles it reads.
  std::vector<role> epilogue(cudnn_graph::graph_parts& parts, const descriptor& z, const descriptor& y,
                             std::int64_t& next_uid, cudnn_graph::errors& err) const {
    std::vector<role> roles = {role::bias};
    cudnn_graph::pointwise_math act;
    const bool has_act = cudnn_graph::activation_math(c_.activation(), act);
    const descriptor* value = &z;
    auto step = [&](const cudnn_graph::pointwise_math& m, const descriptor* operand, bool last) {
      const descriptor& target = last ? y : intermediate(parts, next_uid, err);
      parts.add(cudnn_graph::pointwise_operation(m, *value, operand, target, err, parts));
      value = &target;
    };
    const descriptor& bias = real(parts, role::bias, cudnn_graph::channel_shape(shape_.k, nhwc_), err, "bias");
    step({CUDNN_POINTWISE_ADD, 0.0}, &bias, !c_.residual() && !has_act);
    if (c_.residual()) {
      roles.push_back(role::residual);
      step({CUDNN_POINTWISE_ADD, 0.0}, &real(parts, role::residual, output_shape(), err, "residual"), !has_act);
    }
    if (has_act) step(act, nullptr, true);
    return roles;
  }

  std::string prepare_forward(const buffer_set<T>& b) {
    cudnn_graph::pointwise_math act;
    if (c_.activation() != dsconv::activation::none && !cudnn_graph::activation_math(c_.activation(), act))
      return std::string("cuDNN's graph API has no ") + dsconv::to_string(c_.activation()) + " operation";
    const std::string epilogue_text =
        std::string("bias") + (c_.residual() ? " + residual" : "") + " + " + dsconv::to_string(c_.activation());

    // One graph: the convolution, then the epilogue on fp32 intermediates.
    std::string fused_error, engine;
    {
      cudnn_graph::errors err;
      cudnn_graph::graph_parts parts;
      std::int64_t next_uid = cudnn_graph::first_virtual_uid;
      const descriptor& x = real(parts, role::input, input_shape(), err, "x");
      const descriptor& w = real(parts, role::weight, weight_shape(), err, "w");
      const descriptor& y = real(parts, role::output, output_shape(), err, "y");
      const descriptor& z = intermediate(parts, next_uid, err);
      add_convolution(parts, cudnn_graph::convolution_kind::forward, x, w, z, err);
      std::vector<role> roles = {role::input, role::weight, role::output};
      for (role r : epilogue(parts, z, y, next_uid, err)) roles.push_back(r);
      fused_error = add_step(std::move(parts), err, roles, b, engine);
      if (fused_error.empty()) {
        label_ = "graph API, conv + " + epilogue_text + " fused in one graph: " + engine;
        return {};
      }
    }

    // Two graphs: the convolution into scratch, then the epilogue from scratch into the output.
    if (scratch_.allocate(c_.sizes().output) != dsconv::status::success)
      return std::string("scratch: ") + dsconv::last_error_detail();
    std::string conv_engine, epilogue_engine;
    {
      cudnn_graph::errors err;
      cudnn_graph::graph_parts parts;
      const descriptor& x = real(parts, role::input, input_shape(), err, "x");
      const descriptor& w = real(parts, role::weight, weight_shape(), err, "w");
      const descriptor& z = real(parts, role::scratch, output_shape(), err, "conv output");
      add_convolution(parts, cudnn_graph::convolution_kind::forward, x, w, z, err);
      const std::string e = add_step(std::move(parts), err, {role::input, role::weight, role::scratch}, b, conv_engine);
      if (!e.empty()) return "convolution graph: " + e + " (one fused graph: " + fused_error + ")";
    }
    {
      cudnn_graph::errors err;
      cudnn_graph::graph_parts parts;
      std::int64_t next_uid = cudnn_graph::first_virtual_uid;
      const descriptor& z = real(parts, role::scratch, output_shape(), err, "conv output");
      const descriptor& y = real(parts, role::output, output_shape(), err, "y");
      std::vector<role> roles = {role::scratch, role::output};
      for (role r : epilogue(parts, z, y, next_uid, err)) roles.push_back(r);
      const std::string e = add_step(std::move(parts), err, roles, b, epilogue_engine);
      if (!e.empty()) return "epilogue graph: " + e + " (one fused graph: " + fused_error + ")";
    }
    label_ = "graph API, conv (" + conv_engine + ") then " + epilogue_text + " as a pointwise graph (" +
             epilogue_engine + "); one fused graph was refused: " + fused_error;
    return {};
  }

  std::string prepare_backward_data(const buffer_set<T>& b) {
    // dx goes into the input buffer, dy comes from the output buffer (buffer_sets.hpp).
    cudnn_graph::errors err;
    cudnn_graph::graph_parts parts;
    const descriptor& w = real(parts, role::weight, weight_shape(), err, "w");
    const descriptor& dy = real(parts, role::output, output_shape(), err, "dy");
    const descriptor& dx = real(parts, role::input, input_shape(), err, "dx");
    add_convolution(parts, cudnn_graph::convolution_kind::backward_data, w, dy, dx, err);
    std::string engine;
    const std::string e = add_step(std::move(parts), err, {role::weight, role::output, role::input}, b, engine);
    if (!e.empty()) return "backward-data graph: " + e;
    label_ = "graph API, backward data: " + engine + " (gradients of the layer without activation)";
    return {};
  }

  std::string prepare_backward_weight(const buffer_set<T>& b) {
    std::string filter_engine, bias_engine;
    {
      cudnn_graph::errors err;
      cudnn_graph::graph_parts parts;
      const descriptor& x = real(parts, role::input, input_shape(), err, "x");
      const descriptor& dy = real(parts, role::output, output_shape(), err, "dy");
      const descriptor& dw = real(parts, role::weight, weight_shape(), err, "dw");
      add_convolution(parts, cudnn_graph::convolution_kind::backward_filter, x, dy, dw, err);
      const std::string e = add_step(std::move(parts), err, {role::input, role::output, role::weight}, b, filter_engine);
      if (!e.empty()) return "backward-filter graph: " + e;
    }
    std::string reduction_error;
    {
      cudnn_graph::errors err;
      cudnn_graph::graph_parts parts;
      const descriptor& dy = real(parts, role::output, output_shape(), err, "dy");
      const descriptor& db = real(parts, role::bias, cudnn_graph::channel_shape(shape_.k, nhwc_), err, "dbias");
      parts.add(cudnn_graph::sum_operation(dy, db, err, parts));
      reduction_error = add_step(std::move(parts), err, {role::output, role::bias}, b, bias_engine);
    }
    if (!reduction_error.empty()) {
      // The classic call sums the bias where no engine takes the reduction graph.
      const std::string e = legacy_.template describe<T>(c_);
      if (!e.empty()) return "bias gradient: " + e + " (reduction graph: " + reduction_error + ")";
      legacy_bias_ = true;
      bias_engine = "cudnnConvolutionBackwardBias; the reduction graph was refused: " + reduction_error;
    }
    label_ = "graph API, backward filter: " + filter_engine + "; bias gradient: " + bias_engine +
             " (gradients of the layer without activation)";
    return {};
  }

  bench_case c_;
  convolution_shape shape_;
  bool nhwc_ = false;
  std::vector<graph_plan> steps_;
  // The convolution's output where the epilogue runs apart; mutable: every (const) run writes it.
  mutable dsconv::device_buffer<T> scratch_;
  cudnn_detail::convolution_problem legacy_;
  bool legacy_bias_ = false;
  std::string label_;
};

}  // namespace dsconv_bench

#endif
