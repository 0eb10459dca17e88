#pragma once
// The depthwise and 1x1 layers of MobileNetV2 and EfficientNet-B0 (data/layers/*.csv,
// embedded at build time), as dsconv problem descriptions.

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <dsconv/dsconv.hpp>
#include <dsconv_layer_tables.hpp>

namespace dsconv_bench {

// Which pass of a layer a check or benchmark runs: the forward, the data gradient or the
// weight gradient (with the bias gradient).
enum class layer_pass { forward, backward_data, backward_weight };

inline const char* to_string(layer_pass p) {
  return p == layer_pass::forward ? "forward" : p == layer_pass::backward_data ? "data" : "weight";
}

struct layer {
  std::string model;  // mobilenet_v2 | efficientnet_b0
  int input = 0;      // 224 | 32
  int index = 0;      // position in the network's table
  std::string block, kind, role;  // kind: dw | pw
  int cin = 0, cout = 0, k = 0, stride = 0, pad = 0, h_in = 0, h_out = 0;
  dsconv::activation act = dsconv::activation::none;
  bool residual = false;

  bool depthwise() const { return kind == "dw"; }
  bool squeeze_excitation() const { return role == "se_reduce" || role == "se_expand"; }
  // A short name: model/input/index:role, e.g. mobilenet_v2/224/3:depthwise.
  std::string name() const { return model + "/" + std::to_string(input) + "/" + std::to_string(index) + ":" + role; }

  dsconv::depthwise_params depthwise_params(int batch, dsconv::layout l) const {
    dsconv::depthwise_params p;
    p.n = batch, p.c = cin, p.h = p.w = h_in;
    p.kernel_h = p.kernel_w = k;
    p.stride_h = p.stride_w = stride;
    p.pad_h = p.pad_w = pad;
    p.multiplier = cout / cin;
    p.data_layout = l;
    p.act = act;
    return p;
  }

  dsconv::pointwise_params pointwise_params(int batch, dsconv::layout l) const {
    dsconv::pointwise_params p;
    p.n = batch, p.c_in = cin, p.c_out = cout, p.h = p.w = h_in;
    p.data_layout = l;
    p.act = act;
    return p;
  }
};

inline dsconv::activation parse_activation(const std::string& s) {
  if (s == "none") return dsconv::activation::none;
  if (s == "relu") return dsconv::activation::relu;
  if (s == "relu6") return dsconv::activation::relu6;
  if (s == "silu") return dsconv::activation::silu;
  if (s == "sigmoid") return dsconv::activation::sigmoid;
  if (s == "hardswish") return dsconv::activation::hardswish;
  throw std::runtime_error("unknown activation in layer table: " + s);
}

inline std::vector<layer> parse_table(const char* csv) {
  std::vector<layer> out;
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);  // header
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string v; std::getline(fields, v, ',');) f.push_back(v);
    if (f.size() != 15) throw std::runtime_error("layer table: expected 15 fields in: " + line);
    layer l;
    l.model = f[0];
    l.input = std::stoi(f[1]);
    l.index = std::stoi(f[2]);
    l.block = f[3];
    l.kind = f[4];
    l.role = f[5];
    l.cin = std::stoi(f[6]);
    l.cout = std::stoi(f[7]);
    l.k = std::stoi(f[8]);
    l.stride = std::stoi(f[9]);
    l.pad = std::stoi(f[10]);
    l.h_in = std::stoi(f[11]);
    l.h_out = std::stoi(f[12]);
    l.act = parse_activation(f[13]);
    l.residual = f[14] == "1";
    out.push_back(l);
  }
  return out;
}

// Every layer of every embedded table, in table order.
inline const std::vector<layer>& all_layers() {
  static const std::vector<layer> layers = [] {
    std::vector<layer> all;
    for (const auto& t : dsconv_layers_data::tables) {
      auto part = parse_table(t.csv);
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  }();
  return layers;
}

// The shape that makes two layers the same problem (activation and residual aside), for
// benchmarks that measure each distinct shape once.
inline auto shape_key(const layer& l) { return std::make_tuple(l.kind, l.cin, l.cout, l.k, l.stride, l.pad, l.h_in); }

// The first layer of each distinct shape among `layers`, in order; squeeze-excitation
// layers are excluded unless asked for.
inline std::vector<layer> unique_shapes(const std::vector<layer>& layers, bool include_se = false) {
  std::vector<layer> out;
  for (const auto& l : layers) {
    if (l.squeeze_excitation() && !include_se) continue;
    const bool seen = std::any_of(out.begin(), out.end(), [&](const layer& o) { return shape_key(o) == shape_key(l); });
    if (!seen) out.push_back(l);
  }
  return out;
}

}  // namespace dsconv_bench
