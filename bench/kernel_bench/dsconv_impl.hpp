#pragma once
// dsconv itself as a benchmark implementation: the public entry points with the heuristic's
// variant, on the layer's activation (and residual, for 1x1 layers that have one).

#include <string>

#include <dsconv/dsconv.hpp>

#include "buffer_sets.hpp"
#include "cases.hpp"

namespace dsconv_bench {

template <class T>
class dsconv_impl {
 public:
  static constexpr const char* name = "dsconv";

  // Returns an error message, empty when the problem can run.
  std::string prepare(const bench_case& c, const buffer_set<T>&) {
    c_ = c;
    const dsconv::status s = c.l.depthwise()
                                 ? dsconv::can_implement<T>(dsconv::depthwise_variant::automatic, c.depthwise())
                                 : dsconv::can_implement<T>(dsconv::pointwise_variant::automatic, c.pointwise());
    if (s != dsconv::status::success) return dsconv::last_error_detail();
    // The workspace split_k may use, allocated once here, outside the timed calls.
    options_ = dsconv::pointwise_options{};
    if (!c.l.depthwise()) {
      options_.workspace_bytes = dsconv::pointwise_workspace_size<T>(c.pointwise());
      if (workspace_.allocate(options_.workspace_bytes / sizeof(float)) != dsconv::status::success)
        return dsconv::last_error_detail();
      options_.workspace = workspace_.data();
    }
    label_ = std::string("variant=") +
             (c.l.depthwise() ? dsconv::to_string(dsconv::select_variant<T>(c.depthwise()))
                              : dsconv::to_string(dsconv::select_variant<T>(c.pointwise(), options_))) +
             ", act=" + dsconv::to_string(c.l.act) + (c.l.residual && !c.l.depthwise() ? " +residual" : "");
    return {};
  }

  const std::string& label() const { return label_; }

  // Queues one forward call on the default stream; returns an error message, empty on success.
  std::string run(const buffer_set<T>& b) const {
    const dsconv::status s =
        c_.l.depthwise() ? dsconv::depthwise_forward(c_.depthwise(), b.input, b.weight, b.bias, b.output)
                         : dsconv::pointwise_forward(c_.pointwise(), options_, b.input, b.weight, b.bias, b.residual,
                                                     b.output);
    return s == dsconv::status::success ? std::string() : std::string(dsconv::last_error_detail());
  }

 private:
  bench_case c_;
  std::string label_;
  dsconv::pointwise_options options_;
  dsconv::device_buffer<float> workspace_;
};

}  // namespace dsconv_bench
