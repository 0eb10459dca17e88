#pragma once
// Baseline of the host platform: the library's own CPU reference (dsconv::reference, double
// accumulation, one thread). Device memory is host memory there, so it runs on the same
// buffers as dsconv.

#include <string>

#include <dsconv/dsconv.hpp>

#include "../kernel_bench/buffer_sets.hpp"
#include "../kernel_bench/cases.hpp"

#if defined(DSCONV_PLATFORM_HOST)

namespace dsconv_bench {

template <class T>
class reference_baseline {
 public:
  static constexpr const char* name = "reference";

  std::string prepare(const bench_case& c, const buffer_set<T>&) {
    c_ = c;
    label_ = std::string("dsconv::reference, act=") + dsconv::to_string(c.l.act) +
             (c.l.residual && !c.l.depthwise() ? " +residual" : "");
    return {};
  }

  const std::string& label() const { return label_; }

  std::string run(const buffer_set<T>& b) const {
    const dsconv::status s =
        c_.l.depthwise()
            ? dsconv::reference::depthwise_forward(c_.depthwise(), b.input, b.weight, b.bias, b.output)
            : dsconv::reference::pointwise_forward(c_.pointwise(), b.input, b.weight, b.bias, b.residual, b.output);
    return s == dsconv::status::success ? std::string() : std::string(dsconv::last_error_detail());
  }

 private:
  bench_case c_;
  std::string label_;
};

}  // namespace dsconv_bench

#endif
