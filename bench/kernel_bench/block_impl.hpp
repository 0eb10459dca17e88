#pragma once
// dsconv itself as a block benchmark implementation: inverted_residual_forward with the
// case's variant (fused or unfused; the planner's choice where the case is the baseline's, as
// the agreement check runs it), with the workspace the library asks for, allocated outside
// the timed calls. The label names the variant and the one the planner would pick.

#include <string>

#include <dsconv/dsconv.hpp>

#include "block_buffers.hpp"
#include "block_cases.hpp"

namespace dsconv_bench {

template <class T>
class dsconv_block_impl {
 public:
  static constexpr const char* name = "dsconv";

  // Returns an error message, empty when the block can run.
  std::string prepare(const block_case& c, const block_buffer_set<T>&) {
    p_ = c.params();
    options_.variant = c.impl == block_implementation::fused     ? dsconv::block_variant::fused
                       : c.impl == block_implementation::unfused ? dsconv::block_variant::unfused
                                                                 : dsconv::block_variant::automatic;
    if (dsconv::can_implement<T>(options_.variant, p_) != dsconv::status::success) return dsconv::last_error_detail();
    options_.workspace_bytes = dsconv::inverted_residual_workspace_size<T>(p_);
    if (workspace_.allocate(options_.workspace_bytes) != dsconv::status::success) return dsconv::last_error_detail();
    options_.workspace = workspace_.data();
    dsconv::inverted_residual_options planner = options_;
    planner.variant = dsconv::block_variant::automatic;
    const char* picked = dsconv::to_string(dsconv::select_variant<T>(p_, planner));
    label_ = std::string("variant=") +
             (options_.variant == dsconv::block_variant::automatic ? picked : dsconv::to_string(options_.variant)) +
             ", planner picks " + picked + ", act=" + dsconv::to_string(p_.act) + (p_.residual ? " +residual" : "");
    return {};
  }

  const std::string& label() const { return label_; }

  // Queues one block on the default stream; returns an error message, empty on success.
  std::string run(const block_buffer_set<T>& b) const {
    return dsconv::inverted_residual_forward(p_, options_, b.weights, b.input, b.output) == dsconv::status::success
               ? std::string()
               : std::string(dsconv::last_error_detail());
  }

 private:
  dsconv::inverted_residual_params p_;
  dsconv::inverted_residual_options options_;
  dsconv::device_buffer<char> workspace_;
  std::string label_;
};

}  // namespace dsconv_bench
