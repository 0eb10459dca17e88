#pragma once
// The inverted-residual blocks of MobileNetV2 and EfficientNet-B0: the layers of each block of
// the embedded tables (layers.hpp) gathered into one dsconv block description.

#include <stdexcept>
#include <string>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "layers.hpp"

namespace dsconv_bench {

struct network_block {
  std::string model;  // mobilenet_v2 | efficientnet_b0
  int input = 0;      // 224 | 32
  std::string block;  // its number in the table
  dsconv::inverted_residual_params params;  // n = 0 and the layout unset: see at()

  std::string name() const { return model + "/" + std::to_string(input) + "/block" + block; }
  dsconv::inverted_residual_params at(int batch, dsconv::layout l) const {
    dsconv::inverted_residual_params p = params;
    p.n = batch, p.data_layout = l;
    return p;
  }
};

// Every block of every embedded table, in table order (the head layer is no block).
inline const std::vector<network_block>& all_blocks() {
  static const std::vector<network_block> blocks = [] {
    std::vector<network_block> out;
    for (const layer& l : all_layers()) {
      if (l.block == "head") continue;
      if (out.empty() || out.back().model != l.model || out.back().input != l.input || out.back().block != l.block) {
        network_block b;
        b.model = l.model, b.input = l.input, b.block = l.block;
        b.params.c_in = l.cin, b.params.h = b.params.w = l.h_in, b.params.act = l.act;
        out.push_back(b);
      }
      dsconv::inverted_residual_params& p = out.back().params;
      if (l.role == "expand") {
        p.expanded = l.cout;
      } else if (l.role == "depthwise") {
        if (p.expanded == 0) p.expanded = l.cin;  // no expand layer
        p.kernel = l.k, p.stride = l.stride, p.act = l.act;
        if (l.pad != l.k / 2) throw std::runtime_error("block " + out.back().name() + ": depthwise padding is not kernel / 2");
      } else if (l.role == "se_reduce") {
        p.se_channels = l.cout;
      } else if (l.role == "project") {
        p.c_out = l.cout, p.residual = l.residual;
      } else if (l.role != "se_expand") {
        throw std::runtime_error("block " + out.back().name() + ": unexpected layer role " + l.role);
      }
    }
    return out;
  }();
  return blocks;
}

}  // namespace dsconv_bench
