#pragma once
// Shared by the operation tests: the MobileNetV2 / EfficientNet-B0 layer tables, the runs
// that cover them within the time budget, and printable problem descriptions (the check of
// a result against the reference is in accuracy.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>
#include <dsconv/dsconv.hpp>

#include "accuracy.hpp"
#include "test_data.hpp"

namespace Catch {
// Failed status comparisons then print "null pointer: ..." instead of a bare number.
template <>
struct StringMaker<dsconv::status> {
  static std::string convert(dsconv::status s) { return dsconv::to_string(s); }
};
}  // namespace Catch

namespace dsconv_test {

inline constexpr dsconv::layout all_layouts[] = {dsconv::layout::nchw, dsconv::layout::nhwc};
inline constexpr dsconv::activation all_activations[] = {dsconv::activation::none,    dsconv::activation::relu,
                                                         dsconv::activation::relu6,   dsconv::activation::silu,
                                                         dsconv::activation::sigmoid, dsconv::activation::hardswish};

// automatic first, then every concrete variant of the operation.
template <class Variant, std::size_t N>
std::vector<Variant> variants_with_automatic(const Variant (&concrete)[N]) {
  std::vector<Variant> v{Variant::automatic};
  v.insert(v.end(), concrete, concrete + N);
  return v;
}

// A depthwise problem from its extents (NCHW, no activation).
inline dsconv::depthwise_params make_params(int n, int c, int h, int w, int kernel_h, int kernel_w, int stride_h,
                                            int stride_w, int pad_h, int pad_w, int dilation_h, int dilation_w,
                                            int multiplier) {
  dsconv::depthwise_params p;
  p.n = n, p.c = c, p.h = h, p.w = w;
  p.kernel_h = kernel_h, p.kernel_w = kernel_w;
  p.stride_h = stride_h, p.stride_w = stride_w;
  p.pad_h = pad_h, p.pad_w = pad_w;
  p.dilation_h = dilation_h, p.dilation_w = dilation_w;
  p.multiplier = multiplier;
  return p;
}

// The small valid problems the validation tests break one way each: depthwise 2 images of 3
// channels, 5x4, 3x3 kernel, pad 1 (output 2x3x5x4: 120 input and output elements, 27
// weights); pointwise 2 images of 3x2 pixels, 3 -> 4 channels (36 inputs, 48 outputs).
inline dsconv::depthwise_params small_depthwise(dsconv::activation act) {
  dsconv::depthwise_params p = make_params(2, 3, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1);
  p.act = act;
  return p;
}
inline dsconv::pointwise_params small_pointwise(dsconv::activation act) {
  dsconv::pointwise_params p;
  p.n = 2, p.c_in = 3, p.c_out = 4, p.h = 3, p.w = 2;
  p.act = act;
  return p;
}

// A pointwise problem from its extents.
inline dsconv::pointwise_params make_params(int n, int c_in, int c_out, int h, int w,
                                            dsconv::layout l = dsconv::layout::nchw,
                                            dsconv::activation act = dsconv::activation::none) {
  dsconv::pointwise_params p;
  p.n = n, p.c_in = c_in, p.c_out = c_out, p.h = h, p.w = w;
  p.data_layout = l, p.act = act;
  return p;
}

// A named pointwise problem of the tests' odd-shape tables.
struct pointwise_shape_case {
  const char* name;
  int n, c_in, c_out, h, w;
};

// A named depthwise problem of the tests' odd-shape tables.
struct depthwise_shape_case {
  const char* name;
  int n, c, h, w, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, multiplier;
  dsconv::depthwise_params params() const {
    return make_params(n, c, h, w, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w,
                       multiplier);
  }
};

inline std::string describe(const dsconv::depthwise_params& p) {
  std::ostringstream s;
  s << "n=" << p.n << " c=" << p.c << " h=" << p.h << " w=" << p.w << " kernel " << p.kernel_h << "x" << p.kernel_w
    << " stride " << p.stride_h << "x" << p.stride_w << " pad " << p.pad_h << "x" << p.pad_w << " dilation "
    << p.dilation_h << "x" << p.dilation_w << " multiplier " << p.multiplier << " " << dsconv::to_string(p.data_layout)
    << " " << dsconv::to_string(p.act);
  return s.str();
}

inline std::string describe(const dsconv::pointwise_params& p) {
  std::ostringstream s;
  s << "n=" << p.n << " c_in=" << p.c_in << " c_out=" << p.c_out << " h=" << p.h << " w=" << p.w << " "
    << dsconv::to_string(p.data_layout) << " " << dsconv::to_string(p.act);
  return s.str();
}

// One row of data/layers/*.csv; rows that repeat within a table are listed once, with the
// number of layers that share them.
enum class layer_kind { dw, pw };
struct layer_row {
  const char* model;
  int input;  // 224 or 32
  layer_kind kind;
  const char* role;  // depthwise, expand, project, head, se_reduce, se_expand
  int cin, cout, k, stride, pad, h_in, h_out;
  dsconv::activation act;
  bool residual;
  int layers;
};

// Generated from data/layers/{mobilenet_v2,efficientnet_b0}_{224,32}.csv (columns model,
// input, kind, role, cin, cout, k, stride, pad, h_in, h_out, act, residual; repeats merged,
// first appearance kept), as compile-time rows the test cases generate from; a test checks
// it against the tables the build embedded (<dsconv_layer_tables.hpp>).
namespace layer_table_detail {
using act = dsconv::activation;
constexpr layer_kind dw = layer_kind::dw, pw = layer_kind::pw;
// clang-format off
inline constexpr layer_row rows[] = {
    {"mobilenet_v2", 224, dw, "depthwise", 32, 32, 3, 1, 1, 112, 112, act::relu6, false, 1},
    {"mobilenet_v2", 224, pw, "project", 32, 16, 1, 1, 0, 112, 112, act::none, false, 1},
    {"mobilenet_v2", 224, pw, "expand", 16, 96, 1, 1, 0, 112, 112, act::relu6, false, 1},
    {"mobilenet_v2", 224, dw, "depthwise", 96, 96, 3, 2, 1, 112, 56, act::relu6, false, 1},
    {"mobilenet_v2", 224, pw, "project", 96, 24, 1, 1, 0, 56, 56, act::none, false, 1},
    {"mobilenet_v2", 224, pw, "expand", 24, 144, 1, 1, 0, 56, 56, act::relu6, false, 2},
    {"mobilenet_v2", 224, dw, "depthwise", 144, 144, 3, 1, 1, 56, 56, act::relu6, false, 1},
    {"mobilenet_v2", 224, pw, "project", 144, 24, 1, 1, 0, 56, 56, act::none, true, 1},
    {"mobilenet_v2", 224, dw, "depthwise", 144, 144, 3, 2, 1, 56, 28, act::relu6, false, 1},
    {"mobilenet_v2", 224, pw, "project", 144, 32, 1, 1, 0, 28, 28, act::none, false, 1},
    {"mobilenet_v2", 224, pw, "expand", 32, 192, 1, 1, 0, 28, 28, act::relu6, false, 3},
    {"mobilenet_v2", 224, dw, "depthwise", 192, 192, 3, 1, 1, 28, 28, act::relu6, false, 2},
    {"mobilenet_v2", 224, pw, "project", 192, 32, 1, 1, 0, 28, 28, act::none, true, 2},
    {"mobilenet_v2", 224, dw, "depthwise", 192, 192, 3, 2, 1, 28, 14, act::relu6, false, 1},
    {"mobilenet_v2", 224, pw, "project", 192, 64, 1, 1, 0, 14, 14, act::none, false, 1},
    {"mobilenet_v2", 224, pw, "expand", 64, 384, 1, 1, 0, 14, 14, act::relu6, false, 4},
    {"mobilenet_v2", 224, dw, "depthwise", 384, 384, 3, 1, 1, 14, 14, act::relu6, false, 4},
    {"mobilenet_v2", 224, pw, "project", 384, 64, 1, 1, 0, 14, 14, act::none, true, 3},
    {"mobilenet_v2", 224, pw, "project", 384, 96, 1, 1, 0, 14, 14, act::none, false, 1},
    {"mobilenet_v2", 224, pw, "expand", 96, 576, 1, 1, 0, 14, 14, act::relu6, false, 3},
    {"mobilenet_v2", 224, dw, "depthwise", 576, 576, 3, 1, 1, 14, 14, act::relu6, false, 2},
    {"mobilenet_v2", 224, pw, "project", 576, 96, 1, 1, 0, 14, 14, act::none, true, 2},
    {"mobilenet_v2", 224, dw, "depthwise", 576, 576, 3, 2, 1, 14, 7, act::relu6, false, 1},
    {"mobilenet_v2", 224, pw, "project", 576, 160, 1, 1, 0, 7, 7, act::none, false, 1},
    {"mobilenet_v2", 224, pw, "expand", 160, 960, 1, 1, 0, 7, 7, act::relu6, false, 3},
    {"mobilenet_v2", 224, dw, "depthwise", 960, 960, 3, 1, 1, 7, 7, act::relu6, false, 3},
    {"mobilenet_v2", 224, pw, "project", 960, 160, 1, 1, 0, 7, 7, act::none, true, 2},
    {"mobilenet_v2", 224, pw, "project", 960, 320, 1, 1, 0, 7, 7, act::none, false, 1},
    {"mobilenet_v2", 224, pw, "head", 320, 1280, 1, 1, 0, 7, 7, act::relu6, false, 1},
    {"efficientnet_b0", 224, dw, "depthwise", 32, 32, 3, 1, 1, 112, 112, act::silu, false, 1},
    {"efficientnet_b0", 224, pw, "se_reduce", 32, 8, 1, 1, 0, 1, 1, act::silu, false, 1},
    {"efficientnet_b0", 224, pw, "se_expand", 8, 32, 1, 1, 0, 1, 1, act::sigmoid, false, 1},
    {"efficientnet_b0", 224, pw, "project", 32, 16, 1, 1, 0, 112, 112, act::none, false, 1},
    {"efficientnet_b0", 224, pw, "expand", 16, 96, 1, 1, 0, 112, 112, act::silu, false, 1},
    {"efficientnet_b0", 224, dw, "depthwise", 96, 96, 3, 2, 1, 112, 56, act::silu, false, 1},
    {"efficientnet_b0", 224, pw, "se_reduce", 96, 4, 1, 1, 0, 1, 1, act::silu, false, 1},
    {"efficientnet_b0", 224, pw, "se_expand", 4, 96, 1, 1, 0, 1, 1, act::sigmoid, false, 1},
    {"efficientnet_b0", 224, pw, "project", 96, 24, 1, 1, 0, 56, 56, act::none, false, 1},
    {"efficientnet_b0", 224, pw, "expand", 24, 144, 1, 1, 0, 56, 56, act::silu, false, 2},
    {"efficientnet_b0", 224, dw, "depthwise", 144, 144, 3, 1, 1, 56, 56, act::silu, false, 1},
    {"efficientnet_b0", 224, pw, "se_reduce", 144, 6, 1, 1, 0, 1, 1, act::silu, false, 2},
    {"efficientnet_b0", 224, pw, "se_expand", 6, 144, 1, 1, 0, 1, 1, act::sigmoid, false, 2},
    {"efficientnet_b0", 224, pw, "project", 144, 24, 1, 1, 0, 56, 56, act::none, true, 1},
    {"efficientnet_b0", 224, dw, "depthwise", 144, 144, 5, 2, 2, 56, 28, act::silu, false, 1},
    {"efficientnet_b0", 224, pw, "project", 144, 40, 1, 1, 0, 28, 28, act::none, false, 1},
    {"efficientnet_b0", 224, pw, "expand", 40, 240, 1, 1, 0, 28, 28, act::silu, false, 2},
    {"efficientnet_b0", 224, dw, "depthwise", 240, 240, 5, 1, 2, 28, 28, act::silu, false, 1},
    {"efficientnet_b0", 224, pw, "se_reduce", 240, 10, 1, 1, 0, 1, 1, act::silu, false, 2},
    {"efficientnet_b0", 224, pw, "se_expand", 10, 240, 1, 1, 0, 1, 1, act::sigmoid, false, 2},
    {"efficientnet_b0", 224, pw, "project", 240, 40, 1, 1, 0, 28, 28, act::none, true, 1},
    {"efficientnet_b0", 224, dw, "depthwise", 240, 240, 3, 2, 1, 28, 14, act::silu, false, 1},
    {"efficientnet_b0", 224, pw, "project", 240, 80, 1, 1, 0, 14, 14, act::none, false, 1},
    {"efficientnet_b0", 224, pw, "expand", 80, 480, 1, 1, 0, 14, 14, act::silu, false, 3},
    {"efficientnet_b0", 224, dw, "depthwise", 480, 480, 3, 1, 1, 14, 14, act::silu, false, 2},
    {"efficientnet_b0", 224, pw, "se_reduce", 480, 20, 1, 1, 0, 1, 1, act::silu, false, 3},
    {"efficientnet_b0", 224, pw, "se_expand", 20, 480, 1, 1, 0, 1, 1, act::sigmoid, false, 3},
    {"efficientnet_b0", 224, pw, "project", 480, 80, 1, 1, 0, 14, 14, act::none, true, 2},
    {"efficientnet_b0", 224, dw, "depthwise", 480, 480, 5, 1, 2, 14, 14, act::silu, false, 1},
    {"efficientnet_b0", 224, pw, "project", 480, 112, 1, 1, 0, 14, 14, act::none, false, 1},
    {"efficientnet_b0", 224, pw, "expand", 112, 672, 1, 1, 0, 14, 14, act::silu, false, 3},
    {"efficientnet_b0", 224, dw, "depthwise", 672, 672, 5, 1, 2, 14, 14, act::silu, false, 2},
    {"efficientnet_b0", 224, pw, "se_reduce", 672, 28, 1, 1, 0, 1, 1, act::silu, false, 3},
    {"efficientnet_b0", 224, pw, "se_expand", 28, 672, 1, 1, 0, 1, 1, act::sigmoid, false, 3},
    {"efficientnet_b0", 224, pw, "project", 672, 112, 1, 1, 0, 14, 14, act::none, true, 2},
    {"efficientnet_b0", 224, dw, "depthwise", 672, 672, 5, 2, 2, 14, 7, act::silu, false, 1},
    {"efficientnet_b0", 224, pw, "project", 672, 192, 1, 1, 0, 7, 7, act::none, false, 1},
    {"efficientnet_b0", 224, pw, "expand", 192, 1152, 1, 1, 0, 7, 7, act::silu, false, 4},
    {"efficientnet_b0", 224, dw, "depthwise", 1152, 1152, 5, 1, 2, 7, 7, act::silu, false, 3},
    {"efficientnet_b0", 224, pw, "se_reduce", 1152, 48, 1, 1, 0, 1, 1, act::silu, false, 4},
    {"efficientnet_b0", 224, pw, "se_expand", 48, 1152, 1, 1, 0, 1, 1, act::sigmoid, false, 4},
    {"efficientnet_b0", 224, pw, "project", 1152, 192, 1, 1, 0, 7, 7, act::none, true, 3},
    {"efficientnet_b0", 224, dw, "depthwise", 1152, 1152, 3, 1, 1, 7, 7, act::silu, false, 1},
    {"efficientnet_b0", 224, pw, "project", 1152, 320, 1, 1, 0, 7, 7, act::none, false, 1},
    {"efficientnet_b0", 224, pw, "head", 320, 1280, 1, 1, 0, 7, 7, act::silu, false, 1},
    {"mobilenet_v2", 32, dw, "depthwise", 32, 32, 3, 1, 1, 16, 16, act::relu6, false, 1},
    {"mobilenet_v2", 32, pw, "project", 32, 16, 1, 1, 0, 16, 16, act::none, false, 1},
    {"mobilenet_v2", 32, pw, "expand", 16, 96, 1, 1, 0, 16, 16, act::relu6, false, 1},
    {"mobilenet_v2", 32, dw, "depthwise", 96, 96, 3, 2, 1, 16, 8, act::relu6, false, 1},
    {"mobilenet_v2", 32, pw, "project", 96, 24, 1, 1, 0, 8, 8, act::none, false, 1},
    {"mobilenet_v2", 32, pw, "expand", 24, 144, 1, 1, 0, 8, 8, act::relu6, false, 2},
    {"mobilenet_v2", 32, dw, "depthwise", 144, 144, 3, 1, 1, 8, 8, act::relu6, false, 1},
    {"mobilenet_v2", 32, pw, "project", 144, 24, 1, 1, 0, 8, 8, act::none, true, 1},
    {"mobilenet_v2", 32, dw, "depthwise", 144, 144, 3, 2, 1, 8, 4, act::relu6, false, 1},
    {"mobilenet_v2", 32, pw, "project", 144, 32, 1, 1, 0, 4, 4, act::none, false, 1},
    {"mobilenet_v2", 32, pw, "expand", 32, 192, 1, 1, 0, 4, 4, act::relu6, false, 3},
    {"mobilenet_v2", 32, dw, "depthwise", 192, 192, 3, 1, 1, 4, 4, act::relu6, false, 2},
    {"mobilenet_v2", 32, pw, "project", 192, 32, 1, 1, 0, 4, 4, act::none, true, 2},
    {"mobilenet_v2", 32, dw, "depthwise", 192, 192, 3, 2, 1, 4, 2, act::relu6, false, 1},
    {"mobilenet_v2", 32, pw, "project", 192, 64, 1, 1, 0, 2, 2, act::none, false, 1},
    {"mobilenet_v2", 32, pw, "expand", 64, 384, 1, 1, 0, 2, 2, act::relu6, false, 4},
    {"mobilenet_v2", 32, dw, "depthwise", 384, 384, 3, 1, 1, 2, 2, act::relu6, false, 4},
    {"mobilenet_v2", 32, pw, "project", 384, 64, 1, 1, 0, 2, 2, act::none, true, 3},
    {"mobilenet_v2", 32, pw, "project", 384, 96, 1, 1, 0, 2, 2, act::none, false, 1},
    {"mobilenet_v2", 32, pw, "expand", 96, 576, 1, 1, 0, 2, 2, act::relu6, false, 3},
    {"mobilenet_v2", 32, dw, "depthwise", 576, 576, 3, 1, 1, 2, 2, act::relu6, false, 2},
    {"mobilenet_v2", 32, pw, "project", 576, 96, 1, 1, 0, 2, 2, act::none, true, 2},
    {"mobilenet_v2", 32, dw, "depthwise", 576, 576, 3, 2, 1, 2, 1, act::relu6, false, 1},
    {"mobilenet_v2", 32, pw, "project", 576, 160, 1, 1, 0, 1, 1, act::none, false, 1},
    {"mobilenet_v2", 32, pw, "expand", 160, 960, 1, 1, 0, 1, 1, act::relu6, false, 3},
    {"mobilenet_v2", 32, dw, "depthwise", 960, 960, 3, 1, 1, 1, 1, act::relu6, false, 3},
    {"mobilenet_v2", 32, pw, "project", 960, 160, 1, 1, 0, 1, 1, act::none, true, 2},
    {"mobilenet_v2", 32, pw, "project", 960, 320, 1, 1, 0, 1, 1, act::none, false, 1},
    {"mobilenet_v2", 32, pw, "head", 320, 1280, 1, 1, 0, 1, 1, act::relu6, false, 1},
    {"efficientnet_b0", 32, dw, "depthwise", 32, 32, 3, 1, 1, 16, 16, act::silu, false, 1},
    {"efficientnet_b0", 32, pw, "se_reduce", 32, 8, 1, 1, 0, 1, 1, act::silu, false, 1},
    {"efficientnet_b0", 32, pw, "se_expand", 8, 32, 1, 1, 0, 1, 1, act::sigmoid, false, 1},
    {"efficientnet_b0", 32, pw, "project", 32, 16, 1, 1, 0, 16, 16, act::none, false, 1},
    {"efficientnet_b0", 32, pw, "expand", 16, 96, 1, 1, 0, 16, 16, act::silu, false, 1},
    {"efficientnet_b0", 32, dw, "depthwise", 96, 96, 3, 2, 1, 16, 8, act::silu, false, 1},
    {"efficientnet_b0", 32, pw, "se_reduce", 96, 4, 1, 1, 0, 1, 1, act::silu, false, 1},
    {"efficientnet_b0", 32, pw, "se_expand", 4, 96, 1, 1, 0, 1, 1, act::sigmoid, false, 1},
    {"efficientnet_b0", 32, pw, "project", 96, 24, 1, 1, 0, 8, 8, act::none, false, 1},
    {"efficientnet_b0", 32, pw, "expand", 24, 144, 1, 1, 0, 8, 8, act::silu, false, 2},
    {"efficientnet_b0", 32, dw, "depthwise", 144, 144, 3, 1, 1, 8, 8, act::silu, false, 1},
    {"efficientnet_b0", 32, pw, "se_reduce", 144, 6, 1, 1, 0, 1, 1, act::silu, false, 2},
    {"efficientnet_b0", 32, pw, "se_expand", 6, 144, 1, 1, 0, 1, 1, act::sigmoid, false, 2},
    {"efficientnet_b0", 32, pw, "project", 144, 24, 1, 1, 0, 8, 8, act::none, true, 1},
    {"efficientnet_b0", 32, dw, "depthwise", 144, 144, 5, 2, 2, 8, 4, act::silu, false, 1},
    {"efficientnet_b0", 32, pw, "project", 144, 40, 1, 1, 0, 4, 4, act::none, false, 1},
    {"efficientnet_b0", 32, pw, "expand", 40, 240, 1, 1, 0, 4, 4, act::silu, false, 2},
    {"efficientnet_b0", 32, dw, "depthwise", 240, 240, 5, 1, 2, 4, 4, act::silu, false, 1},
    {"efficientnet_b0", 32, pw, "se_reduce", 240, 10, 1, 1, 0, 1, 1, act::silu, false, 2},
    {"efficientnet_b0", 32, pw, "se_expand", 10, 240, 1, 1, 0, 1, 1, act::sigmoid, false, 2},
    {"efficientnet_b0", 32, pw, "project", 240, 40, 1, 1, 0, 4, 4, act::none, true, 1},
    {"efficientnet_b0", 32, dw, "depthwise", 240, 240, 3, 2, 1, 4, 2, act::silu, false, 1},
    {"efficientnet_b0", 32, pw, "project", 240, 80, 1, 1, 0, 2, 2, act::none, false, 1},
    {"efficientnet_b0", 32, pw, "expand", 80, 480, 1, 1, 0, 2, 2, act::silu, false, 3},
    {"efficientnet_b0", 32, dw, "depthwise", 480, 480, 3, 1, 1, 2, 2, act::silu, false, 2},
    {"efficientnet_b0", 32, pw, "se_reduce", 480, 20, 1, 1, 0, 1, 1, act::silu, false, 3},
    {"efficientnet_b0", 32, pw, "se_expand", 20, 480, 1, 1, 0, 1, 1, act::sigmoid, false, 3},
    {"efficientnet_b0", 32, pw, "project", 480, 80, 1, 1, 0, 2, 2, act::none, true, 2},
    {"efficientnet_b0", 32, dw, "depthwise", 480, 480, 5, 1, 2, 2, 2, act::silu, false, 1},
    {"efficientnet_b0", 32, pw, "project", 480, 112, 1, 1, 0, 2, 2, act::none, false, 1},
    {"efficientnet_b0", 32, pw, "expand", 112, 672, 1, 1, 0, 2, 2, act::silu, false, 3},
    {"efficientnet_b0", 32, dw, "depthwise", 672, 672, 5, 1, 2, 2, 2, act::silu, false, 2},
    {"efficientnet_b0", 32, pw, "se_reduce", 672, 28, 1, 1, 0, 1, 1, act::silu, false, 3},
    {"efficientnet_b0", 32, pw, "se_expand", 28, 672, 1, 1, 0, 1, 1, act::sigmoid, false, 3},
    {"efficientnet_b0", 32, pw, "project", 672, 112, 1, 1, 0, 2, 2, act::none, true, 2},
    {"efficientnet_b0", 32, dw, "depthwise", 672, 672, 5, 2, 2, 2, 1, act::silu, false, 1},
    {"efficientnet_b0", 32, pw, "project", 672, 192, 1, 1, 0, 1, 1, act::none, false, 1},
    {"efficientnet_b0", 32, pw, "expand", 192, 1152, 1, 1, 0, 1, 1, act::silu, false, 4},
    {"efficientnet_b0", 32, dw, "depthwise", 1152, 1152, 5, 1, 2, 1, 1, act::silu, false, 3},
    {"efficientnet_b0", 32, pw, "se_reduce", 1152, 48, 1, 1, 0, 1, 1, act::silu, false, 4},
    {"efficientnet_b0", 32, pw, "se_expand", 48, 1152, 1, 1, 0, 1, 1, act::sigmoid, false, 4},
    {"efficientnet_b0", 32, pw, "project", 1152, 192, 1, 1, 0, 1, 1, act::none, true, 3},
    {"efficientnet_b0", 32, dw, "depthwise", 1152, 1152, 3, 1, 1, 1, 1, act::silu, false, 1},
    {"efficientnet_b0", 32, pw, "project", 1152, 320, 1, 1, 0, 1, 1, act::none, false, 1},
    {"efficientnet_b0", 32, pw, "head", 320, 1280, 1, 1, 0, 1, 1, act::silu, false, 1},
};
// clang-format on
}  // namespace layer_table_detail
inline constexpr auto& network_layers = layer_table_detail::rows;

// A layer of the tables as one test run: batch size, layout and epilogue options chosen so
// that the runs together exercise both layouts and bias and residual on and off.
struct layer_case {
  const layer_row* row;
  int batch;
  dsconv::layout data_layout;
  bool bias, residual;

  std::string name() const {
    std::ostringstream s;
    s << row->model << " " << row->input << "x" << row->input << " " << row->role << " " << row->cin << "->"
      << row->cout << " k" << row->k << " s" << row->stride << " on " << row->h_in << "x" << row->h_in << ", batch "
      << batch << (bias ? ", bias" : ", no bias") << (residual ? ", residual" : "");
    return s.str();
  }
};

// The row as the CSV spells it (without the layer and block columns), e.g.
// "mobilenet_v2,224,dw,depthwise,32,32,3,1,1,112,112,relu6,0".
inline std::string csv_text(const layer_row& r) {
  std::ostringstream s;
  s << r.model << "," << r.input << "," << (r.kind == layer_kind::dw ? "dw" : "pw") << "," << r.role << "," << r.cin
    << "," << r.cout << "," << r.k << "," << r.stride << "," << r.pad << "," << r.h_in << "," << r.h_out << ","
    << dsconv::to_string(r.act) << "," << (r.residual ? 1 : 0);
  return s.str();
}

inline long long layer_work(const layer_row& r) {  // multiply-adds at batch 1
  const long long taps = r.kind == layer_kind::dw ? static_cast<long long>(r.k) * r.k : r.cin;
  return static_cast<long long>(r.cout) * r.h_out * r.h_out * taps;
}

// Whether the current device is the host platform's warp-64 profile (the gfx90a sweep), whose
// network sweeps repeat the sm80 sweep's layers at the other warp width with AMD's plans and
// take three times as long to emulate.
inline bool sweeping_at_warp_64() {
#if defined(DSCONV_PLATFORM_HOST)
  return current_device().warp_size == 64;
#else
  return false;
#endif
}

// The 224x224 work cap of a network sweep on the current device: `cap`, except on the host
// platform's warp-64 profile (the gfx90a sweep), which repeats the sm80 sweep's layers at the
// other warp width with AMD's plans: there the 224x224 layers above 0.6M multiply-adds (whose
// channel counts run from the 32x32 tables all the same) are left to the sm80 sweep. They take
// three times as long to emulate at warp 64, and the README's test command has a 10-minute
// budget (it measured 602 s with a 2.5M cap on the forward sweeps, 631 s once the register and
// stream kernels joined the sweeps; the backward sweeps take the cap too).
inline long long network_sweep_cap(long long cap) { return sweeping_at_warp_64() ? std::min(cap, 600'000LL) : cap; }

// The runs covering every unique shape of `kind` in both layouts: the 32x32 tables at
// `batch_32`, the squeeze-excitation 1x1s (1x1 maps) at batch 5, and the 224x224 shapes at
// each of `batches_224` where their work is at most `max_work_224` multiply-adds (larger
// ones also have the channel counts of a 32x32 run). Bias and residual alternate. On the
// warp-64 sweep the 32x32 tables run at batch 1 (most of a sweep's time is theirs; several
// images per launch run at warp 64 in the odd-shape tests): the README's test command has a
// 10-minute budget, and it measured 631 s once the register and stream kernels joined the sweeps.
inline std::vector<layer_case> layer_cases(layer_kind kind, long long max_work_224,
                                           std::initializer_list<int> batches_224 = {1}, int batch_32 = 4) {
  if (sweeping_at_warp_64()) batch_32 = 1;
  std::vector<layer_case> cases;
  std::set<std::tuple<int, int, int, int, int, int, int, bool>> seen;
  int shape = 0;
  for (const layer_row& r : network_layers) {
    if (r.kind != kind) continue;
    const bool se = std::string(r.role).rfind("se_", 0) == 0;
    if (!se && r.input == 224 && layer_work(r) > max_work_224) continue;
    // One shape and epilogue once: the two networks share several layers.
    if (!seen.insert({r.cin, r.cout, r.k, r.stride, r.h_in, static_cast<int>(r.act), r.pad, r.residual}).second)
      continue;
    const std::vector<int> batches = se ? std::vector<int>{5} : r.input == 224 ? std::vector<int>(batches_224) : std::vector<int>{batch_32};
    for (const int batch : batches)
      for (const dsconv::layout data_layout : all_layouts)
        cases.push_back(layer_case{&r, batch, data_layout, shape % 4 < 2, r.residual || shape % 3 == 0});
    ++shape;
  }
  return cases;
}

}  // namespace dsconv_test
