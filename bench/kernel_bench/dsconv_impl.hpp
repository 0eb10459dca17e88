#pragma once
// dsconv itself as a benchmark implementation: the public entry point of the case's pass with
// the heuristic's variant, or the one dsconv_bench --variant forces. The forward runs on the
// layer's activation (and residual, for 1x1 layers that have one); the backward passes without
// activation.

#include <cstddef>
#include <string>
#include <type_traits>

#include <dsconv/dsconv.hpp>

#include "buffer_sets.hpp"
#include "cases.hpp"

namespace dsconv_bench {

// The variant every dsconv benchmark runs (dsconv_bench --variant=NAME, a name of
// dsconv::to_string); empty: the heuristic's choice.
inline std::string& forced_variant() {
  static std::string name;
  return name;
}

template <class T>
class dsconv_impl {
 public:
  static constexpr const char* name = "dsconv";

  // Returns an error message, empty when the problem can run.
  std::string prepare(const bench_case& c, const buffer_set<T>&) {
    c_ = c;
    if (!resolve_forced_variant())
      return "no " + std::string(c.l.depthwise() ? "depthwise" : "pointwise") + " variant is named " + forced_variant();
    if (can_implement() != dsconv::status::success) return dsconv::last_error_detail();
    // The workspace that split-K and the weight gradient's per-block sums may use, allocated
    // once here, outside the timed calls; with it the heuristic may spread long reductions
    // over the whole device.
    workspace_bytes_ = workspace_size();
    if (workspace_buffer_.allocate((workspace_bytes_ + sizeof(float) - 1) / sizeof(float)) != dsconv::status::success)
      return dsconv::last_error_detail();
    workspace_ = workspace_buffer_.data();  // null when no workspace is needed
    label_ = "variant=" + std::string(variant_name()) + ", act=" + dsconv::to_string(c.activation()) +
             (c.residual() ? " +residual" : "") + (c.forward() ? "" : " (gradients of the layer without activation)");
    return {};
  }

  const std::string& label() const { return label_; }

  // Queues one call of the pass on the default stream; returns an error message, empty on
  // success.
  std::string run(const buffer_set<T>& b) const {
    dsconv::status s = dsconv::status::success;
    const bool dw = c_.l.depthwise();
    switch (c_.pass) {
      case layer_pass::forward:
        s = dw ? dsconv::depthwise_forward(c_.depthwise(), options<dsconv::depthwise_options>(), b.input, b.weight,
                                           b.bias, b.output)
               : dsconv::pointwise_forward(c_.pointwise(), options<dsconv::pointwise_options>(), b.input, b.weight,
                                           b.bias, b.residual, b.output);
        break;
      case layer_pass::backward_data:
        s = dw ? dsconv::depthwise_backward_data(c_.depthwise(), options<dsconv::depthwise_backward_options>(), b.output,
                                                 b.weight, b.input)
               : dsconv::pointwise_backward_data(c_.pointwise(), options<dsconv::pointwise_backward_options>(),
                                                 b.output, b.weight, b.input);
        break;
      case layer_pass::backward_weight:
        s = dw ? dsconv::depthwise_backward_weight(c_.depthwise(), options<dsconv::depthwise_backward_options>(),
                                                   b.input, b.output, b.weight, b.bias)
               : dsconv::pointwise_backward_weight(c_.pointwise(), options<dsconv::pointwise_backward_options>(),
                                                   b.input, b.output, b.weight, b.bias);
        break;
    }
    return s == dsconv::status::success ? std::string() : std::string(dsconv::last_error_detail());
  }

 private:
  // Sets the variants the calls force from forced_variant(); false where the case's operation
  // has no variant of that name.
  bool resolve_forced_variant() {
    dw_variant_ = dsconv::depthwise_variant::automatic;
    pw_variant_ = dsconv::pointwise_variant::automatic;
    const std::string& name = forced_variant();
    if (name.empty()) return true;
    if (c_.l.depthwise()) {
      for (auto v : dsconv::all_depthwise_variants)
        if (name == dsconv::to_string(v)) dw_variant_ = v;
      return dw_variant_ != dsconv::depthwise_variant::automatic;
    }
    for (auto v : dsconv::all_pointwise_variants)
      if (name == dsconv::to_string(v)) pw_variant_ = v;
    return pw_variant_ != dsconv::pointwise_variant::automatic;
  }

  dsconv::status can_implement() const {
    const bool dw = c_.l.depthwise();
    switch (c_.pass) {
      case layer_pass::forward:
        return dw ? dsconv::can_implement<T>(dw_variant_, c_.depthwise())
                  : dsconv::can_implement<T>(pw_variant_, c_.pointwise());
      case layer_pass::backward_data:
        return dw ? dsconv::can_implement_backward_data<T>(dw_variant_, c_.depthwise())
                  : dsconv::can_implement_backward_data<T>(pw_variant_, c_.pointwise());
      case layer_pass::backward_weight:
        return dw ? dsconv::can_implement_backward_weight<T>(dw_variant_, c_.depthwise())
                  : dsconv::can_implement_backward_weight<T>(pw_variant_, c_.pointwise());
    }
    return dsconv::status::success;
  }

  std::size_t workspace_size() const {
    const bool dw = c_.l.depthwise();
    switch (c_.pass) {
      case layer_pass::forward: return dw ? 0 : dsconv::pointwise_workspace_size<T>(c_.pointwise());
      case layer_pass::backward_data: return dw ? 0 : dsconv::pointwise_backward_data_workspace_size<T>(c_.pointwise());
      case layer_pass::backward_weight:
        return dw ? dsconv::depthwise_backward_weight_workspace_size<T>(c_.depthwise(), dw_variant_)
                  : dsconv::pointwise_backward_weight_workspace_size<T>(c_.pointwise());
    }
    return 0;
  }

  // The variant that runs: the forced one, or the heuristic's given the workspace.
  const char* variant_name() const {
    const bool dw = c_.l.depthwise();
    if (!forced_variant().empty()) return dw ? dsconv::to_string(dw_variant_) : dsconv::to_string(pw_variant_);
    switch (c_.pass) {
      case layer_pass::forward:
        return dw ? dsconv::to_string(dsconv::select_variant<T>(c_.depthwise()))
                  : dsconv::to_string(dsconv::select_variant<T>(c_.pointwise(), options<dsconv::pointwise_options>()));
      case layer_pass::backward_data:
        return dw ? dsconv::to_string(dsconv::select_backward_data_variant<T>(c_.depthwise()))
                  : dsconv::to_string(dsconv::select_backward_data_variant<T>(
                        c_.pointwise(), options<dsconv::pointwise_backward_options>()));
      case layer_pass::backward_weight:
        return dw ? dsconv::to_string(dsconv::select_backward_weight_variant<T>(c_.depthwise()))
                  : dsconv::to_string(dsconv::select_backward_weight_variant<T>(
                        c_.pointwise(), options<dsconv::pointwise_backward_options>()));
    }
    return "unknown";
  }

  // The call's options (any of the forward's and backward's option structs): the forced
  // variant, and the workspace where the struct takes one.
  template <class Options>
  Options options() const {
    Options o;
    if constexpr (std::is_same_v<decltype(o.variant), dsconv::depthwise_variant>) {
      o.variant = dw_variant_;
    } else {
      o.variant = pw_variant_;
    }
    if constexpr (!std::is_same_v<Options, dsconv::depthwise_options>) {
      o.workspace = workspace_;
      o.workspace_bytes = workspace_bytes_;
    }
    return o;
  }

  bench_case c_;
  dsconv::depthwise_variant dw_variant_ = dsconv::depthwise_variant::automatic;
  dsconv::pointwise_variant pw_variant_ = dsconv::pointwise_variant::automatic;
  std::string label_;
  dsconv::device_buffer<float> workspace_buffer_;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
};

}  // namespace dsconv_bench
