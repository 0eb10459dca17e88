#pragma once
// The block cases that dsconv_bench registers after the layer cases: every distinct
// inverted-residual block of MobileNetV2 and EfficientNet-B0 at one input resolution (forward
// only) x batch x element type x layout x implementation, each with its benchmark name and the
// minimum bytes and FLOPs of the whole block. The implementations: dsconv's fused variant
// (where its limits allow: NHWC, c_out <= 512 where it projects), its unfused variant (the layer
// kernels in sequence), and the platform's baseline running the block's layers one after
// another.

#include <cstddef>
#include <string>
#include <tuple>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "../support/blocks.hpp"
#include "cases.hpp"

namespace dsconv_bench {

// baseline and extra_baseline: the platform's baselines running the block's layers in sequence
// (cases.hpp's implementation).
enum class block_implementation { fused, unfused, baseline, extra_baseline };

struct block_case {
  network_block block;
  int batch = 1;
  element_type type = element_type::f32;
  dsconv::layout data_layout = dsconv::layout::nhwc;
  block_implementation impl = block_implementation::unfused;

  dsconv::inverted_residual_params params() const { return block.at(batch, data_layout); }

  // The block's layers in network order (the baseline's sequence).
  std::vector<layer> layers() const {
    std::vector<layer> out;
    for (const layer& l : all_layers())
      if (l.model == block.model && l.input == block.input && l.block == block.block) out.push_back(l);
    return out;
  }

  // Element counts of the block's tensors in the order that block_buffer_sets allocates them:
  // input, the ten weights and biases of inverted_residual_weights, output (0 for the ones the
  // block has not: no expand layer, no squeeze-excitation).
  std::vector<std::size_t> tensor_sizes() const {
    const dsconv::inverted_residual_params p = params();
    const std::size_t n = static_cast<std::size_t>(p.n), x = static_cast<std::size_t>(p.expanded),
                      se = static_cast<std::size_t>(p.se_channels), c_in = static_cast<std::size_t>(p.c_in),
                      c_out = static_cast<std::size_t>(p.c_out), taps = static_cast<std::size_t>(p.kernel) * p.kernel;
    const std::size_t expand = p.has_expand() ? 1 : 0;
    return {n * c_in * p.h * p.w,
            expand * x * c_in, expand * x,
            x * taps, x,
            se * x, se,
            x * se, se ? x : 0,
            c_out * x, c_out,
            n * c_out * p.out_h() * p.out_w()};
  }

  // Every byte of the block's input, weights and output once (the residual is the input): what
  // a block that keeps every intermediate tensor on chip moves at the least.
  double minimum_bytes() const {
    std::size_t elements = 0;
    for (std::size_t s : tensor_sizes()) elements += s;
    return static_cast<double>(elements * size_of(type));
  }

  // Two FLOPs per multiply-add of the block's convolutions (expand, depthwise, the
  // squeeze-excitation's two 1x1s, project).
  double minimum_flops() const {
    const dsconv::inverted_residual_params p = params();
    const double in_pixels = static_cast<double>(p.n) * p.h * p.w,
                 out_pixels = static_cast<double>(p.n) * p.out_h() * p.out_w();
    double macs = out_pixels * p.expanded * (p.kernel * p.kernel + p.c_out);
    if (p.has_expand()) macs += in_pixels * p.c_in * p.expanded;
    macs += 2.0 * p.n * p.expanded * p.se_channels;
    return 2.0 * macs;
  }

  // model_input_block:ir_c<in>_x<expanded>_k<kernel>_s<stride>_co<out>_h<size>[_se<reduced>],
  // e.g. mobilenet_v2_224_2:ir_c16_x96_k3_s2_co24_h112.
  std::string shape_name() const {
    const dsconv::inverted_residual_params& p = block.params;
    std::string s = block.model + "_" + std::to_string(block.input) + "_" + block.block + ":ir_c" +
                    std::to_string(p.c_in) + "_x" + std::to_string(p.expanded) + "_k" + std::to_string(p.kernel) +
                    "_s" + std::to_string(p.stride) + "_co" + std::to_string(p.c_out) + "_h" + std::to_string(p.h);
    if (p.se_channels) s += "_se" + std::to_string(p.se_channels);
    return s;
  }

  const char* impl_name(const char* baseline_name, const char* extra_name) const {
    switch (impl) {
      case block_implementation::fused: return "dsconv_fused";
      case block_implementation::unfused: return "dsconv_unfused";
      case block_implementation::baseline: return baseline_name;
      case block_implementation::extra_baseline: return extra_name;
    }
    return "unknown";
  }

  // block/shape/b<batch>/type/layout/implementation, e.g.
  // block/mobilenet_v2_224_2:ir_c16_x96_k3_s2_co24_h112/b8/half/nhwc/dsconv_fused.
  std::string name(const char* baseline_name, const char* extra_name = "") const {
    return "block/" + shape_name() + "/b" + std::to_string(batch) + "/" + to_string(type) + "/" +
           dsconv::to_string(data_layout) + "/" + impl_name(baseline_name, extra_name);
  }
};

// What makes two blocks the same problem, for benchmarks that measure each distinct block once.
inline auto block_key(const network_block& b) {
  const dsconv::inverted_residual_params& p = b.params;
  return std::make_tuple(p.c_in, p.h, p.expanded, p.kernel, p.stride, p.se_channels, p.c_out, p.act, p.residual);
}

// Every block case at input resolution `input`: blocks in network order (MobileNetV2's first,
// a block that both networks have named after MobileNetV2's), and per block its batches,
// types, layouts and implementations one after another.
inline std::vector<block_case> all_block_cases(int input, bool with_baseline, bool with_extra = false) {
  std::vector<network_block> blocks;
  for (const char* model : {"mobilenet_v2", "efficientnet_b0"})
    for (const network_block& b : all_blocks()) {
      if (b.input != input || b.model != model) continue;
      bool seen = false;
      for (const network_block& o : blocks) seen = seen || block_key(o) == block_key(b);
      if (!seen) blocks.push_back(b);
    }
  std::vector<block_case> cases;
  for (const network_block& b : blocks)
    for (int batch : bench_batches)
      for (element_type t : bench_types)
        for (dsconv::layout lay : bench_layouts)
          for (block_implementation impl :
               {block_implementation::fused, block_implementation::unfused, block_implementation::baseline,
                block_implementation::extra_baseline}) {
            // The fused variant where its documented limits (layout, output channels) allow;
            // whether a tile fits the device's shared memory shows when the case runs.
            if (impl == block_implementation::fused && !dsconv::detail::fused_block_limits(b.at(batch, lay)).empty())
              continue;
            if (impl == block_implementation::baseline && !with_baseline) continue;
            if (impl == block_implementation::extra_baseline && !with_extra) continue;
            cases.push_back(block_case{b, batch, t, lay, impl});
          }
  return cases;
}

}  // namespace dsconv_bench
