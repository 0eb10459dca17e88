// dsconv::depthwise_forward against the double reference: every variant (forced through the
// options overload) and automatic, for float, half and bfloat16, on every depthwise layer of
// MobileNetV2 and EfficientNet-B0 and on odd shapes, with both layouts and every epilogue.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <dsconv/dsconv.hpp>
#include <dsconv_layer_tables.hpp>

#include "support/shapes.hpp"
#include "support/test_data.hpp"

namespace {

using dsconv::activation;
using dsconv::layout;
using dsconv::status;
using namespace dsconv_test;

// Whether `variant` must run `p` with elements of type T on the current device, by the
// variants' documented contract (independent of the planner, so a planner that wrongly refused a
// problem fails the tests): the tiled variants take their layout with multiplier 1 (every test
// shape's band fits shared memory); the register variants their layout with multiplier 1, square
// 3x3 and 5x5 filters of stride 1 or 2 without dilation, NHWC's with channels in whole 16-byte
// vectors, NCHW's with padding kernel / 2; nhwc_matrix nhwc_register's problems of half and
// bfloat16 on NVIDIA tensor cores that multiply the type (half: sm_75+, bfloat16: sm_80+), and
// nchw_matrix nchw_register's on them with input and output rows of an even number of elements
// or output planes of at most 8 x 8 (at stride 2 of even input rows); direct everything.
// Whether nchw_matrix takes `p` in its plane form: output planes of at most 8 x 8, at stride 2
// of an even input width.
bool nchw_plane(const dsconv::depthwise_params& p) {
  return p.out_h() <= 8 && p.out_w() <= 8 && (p.stride_w == 1 || p.w % 2 == 0);
}

template <class T>
bool supports(dsconv::depthwise_variant variant, const dsconv::depthwise_params& p) {
  const bool register_nhwc = p.data_layout == layout::nhwc && p.multiplier == 1 && p.kernel_h == p.kernel_w &&
                             (p.kernel_h == 3 || p.kernel_h == 5) && p.stride_h == p.stride_w &&
                             (p.stride_h == 1 || p.stride_h == 2) && p.dilation_h == 1 && p.dilation_w == 1 &&
                             p.c % static_cast<int>(16 / sizeof(T)) == 0;
  const dsconv::platform::matrix_unit unit = current_device().matrix;
  const bool tensor_cores = sizeof(T) == 2 && (unit == dsconv::platform::matrix_unit::mma_sync ||
                                               (unit == dsconv::platform::matrix_unit::mma_sync_f16 &&
                                                std::is_same<T, dsconv::half>::value));
  switch (variant) {
    case dsconv::depthwise_variant::nchw_tiled: return p.data_layout == layout::nchw && p.multiplier == 1;
    case dsconv::depthwise_variant::nhwc_tiled: return p.data_layout == layout::nhwc && p.multiplier == 1;
    case dsconv::depthwise_variant::nhwc_register: return register_nhwc;
    case dsconv::depthwise_variant::nchw_register:
      return p.data_layout == layout::nchw && p.multiplier == 1 && p.kernel_h == p.kernel_w &&
             (p.kernel_h == 3 || p.kernel_h == 5) && p.stride_h == p.stride_w && (p.stride_h == 1 || p.stride_h == 2) &&
             p.dilation_h == 1 && p.dilation_w == 1 && p.pad_h == p.kernel_h / 2 && p.pad_w == p.kernel_w / 2;
    case dsconv::depthwise_variant::nhwc_matrix: return register_nhwc && tensor_cores;
    case dsconv::depthwise_variant::nchw_matrix:
      return supports<T>(dsconv::depthwise_variant::nchw_register, p) && tensor_cores &&
             ((p.w % 2 == 0 && p.out_w() % 2 == 0) || nchw_plane(p)) &&
             (!nchw_plane(p) || static_cast<long long>(p.h) * p.w * p.c * 2 < (1LL << 31));
    default: return true;
  }
}

// The share of nhwc_matrix's tiles' outputs that `p`'s output fills: tiles of 8 x 8 outputs
// (for the channels in whole blocks of four 16-byte vectors, the others on tiles of 16 x 16)
// where those are the better used, else of 16 x 16; automatic prefers the kernel where it is at
// least half (its documented rule).
double tiles_use(const dsconv::depthwise_params& p, int side) {
  const int ty = (p.out_h() + side - 1) / side, tx = (p.out_w() + side - 1) / side;
  return static_cast<double>(p.out_h()) * p.out_w() / (static_cast<double>(side) * side * ty * tx);
}
double matrix_tile_use(const dsconv::depthwise_params& p, int side) {
  const int whole = p.c / 32 * 32;  // (side 8: the channels in whole blocks)
  return side == 16 ? tiles_use(p, 16) : (whole * tiles_use(p, 8) + (p.c - whole) * tiles_use(p, 16)) / p.c;
}
int matrix_side(const dsconv::depthwise_params& p) { return matrix_tile_use(p, 8) > matrix_tile_use(p, 16) ? 8 : 16; }
double matrix_tile_use(const dsconv::depthwise_params& p) { return matrix_tile_use(p, matrix_side(p)); }

// The share of nchw_matrix's warp tiles (16 x 16 outputs of a plane; in the plane form 8 x 8)
// that `p`'s output fills; automatic prefers the kernel for 5x5 filters where it is at least half
// (its documented rule).
double nchw_matrix_tile_use(const dsconv::depthwise_params& p) { return tiles_use(p, nchw_plane(p) ? 8 : 16); }

// The variant automatic chooses for `p` where nothing was measured: the layout's tensor-core
// kernel where its contract covers the layer and its tiles are at least half used (NCHW: of 5x5
// filters only), else the
// layout's register kernel wherever its contract covers the layer, else the layout's tiled one.
template <class T>
dsconv::depthwise_variant rule_choice(const dsconv::depthwise_params& p) {
  using dsconv::depthwise_variant;
  const bool nchw = p.data_layout == layout::nchw;
  const depthwise_variant matrix = nchw ? depthwise_variant::nchw_matrix : depthwise_variant::nhwc_matrix;
  const depthwise_variant registers = nchw ? depthwise_variant::nchw_register : depthwise_variant::nhwc_register;
  if (supports<T>(matrix, p) && (nchw ? p.kernel_h == 5 && nchw_matrix_tile_use(p) >= 0.5 : matrix_tile_use(p) >= 0.5))
    return matrix;
  if (supports<T>(registers, p)) return registers;
  return nchw ? depthwise_variant::nchw_tiled : depthwise_variant::nhwc_tiled;
}

// Runs `p` with random data through automatic and each variant and checks each result (and
// the tensor it saves for the backward, saved_form); a variant outside its contract must
// refuse before launching or writing anything.
template <class T>
void check_depthwise(const dsconv::depthwise_params& p, bool with_bias, std::size_t misalign = 0) {
  INFO(type_name<T>() << ", " << describe(p) << (with_bias ? ", bias" : ", no bias") << ", misaligned by " << misalign
                      << ", device " << current_device().name);
  const auto out_c = static_cast<std::size_t>(p.out_c());
  const std::size_t in_count = static_cast<std::size_t>(p.n) * p.c * p.h * p.w;
  const std::size_t out_count = static_cast<std::size_t>(p.n) * out_c * p.out_h() * p.out_w();
  const std::vector<T> input = random_tensor<T>(in_count);
  const std::vector<T> weight = random_tensor<T>(out_c * p.kernel_h * p.kernel_w);
  const std::vector<T> bias = random_tensor<T>(out_c);
  const T* bias_or_null = with_bias ? bias.data() : nullptr;

  dsconv::depthwise_params linear = p;
  linear.act = activation::none;
  std::vector<double> ref_z(out_count);
  REQUIRE(dsconv::reference::depthwise_forward(linear, input.data(), weight.data(), bias_or_null, ref_z.data()) ==
          status::success);
  const std::vector<double> ref = activated(ref_z, p.act);
  const error_bound bound = depthwise_bound(p, input, weight, bias_or_null);

  const device_input<T> d_input(input, misalign), d_weight(weight, misalign), d_bias(bias, misalign);
  int place = saved_form_turn();
  for (const dsconv::depthwise_variant variant : variants_with_automatic(dsconv::all_depthwise_variants)) {
    const saved_form form = static_cast<saved_form>(place++ % 3);
    INFO("variant " << dsconv::to_string(variant) << ", saving "
                    << (form == saved_form::nothing ? "nothing" : form == saved_form::derivative ? "act'(z)" : "z"));
    guarded_output<T> out(out_count, misalign), saved(out_count, misalign);
    const bool expected = supports<T>(variant, p);
    CHECK(dsconv::can_implement<T>(variant, p) == (expected ? status::success : status::unsupported_variant));
    dsconv::depthwise_options options{variant};
    if (form == saved_form::pre_activation) options.pre_activation = saved.data();
    if (form == saved_form::derivative) options.activation_derivative = saved.data();
    const unsigned long long launches = launches_so_far();
    const status s = dsconv::depthwise_forward(p, options, d_input.data(), d_weight.data(),
                                               with_bias ? d_bias.data() : nullptr, out.data());
    if (!expected) {
      check_refused_cleanly(s, launches, out);
      CHECK(saved.untouched());
      continue;
    }
    REQUIRE(s == status::success);
    REQUIRE(dsconv::synchronize() == status::success);
    check_close(out.download_checked(), ref, bound);
    if (form == saved_form::pre_activation) check_close(saved.download_checked(), ref_z, bound);
    if (form == saved_form::derivative) check_derivative(saved.download_checked(), ref_z, bound, p.act);
    if (form == saved_form::nothing) CHECK(saved.untouched());
  }
}

// Shapes the network layers do not have: odd extents and channel counts, tiny maps, every
// geometry parameter off its usual value.
// clang-format off
const depthwise_shape_case odd_shapes[] = {
    // name                                     n    c    h    w   kh   kw   sh   sw   ph   pw   dh   dw    m
    {"7x5 map, 3 channels",                     2,   3,   7,   5,   3,   3,   1,   1,   1,   1,   1,   1,   1},
    {"5 channels, 9x11 map",                    1,   5,   9,  11,   3,   3,   1,   1,   1,   1,   1,   1,   1},
    {"37 channels, 6x13 map",                   2,  37,   6,  13,   3,   3,   1,   1,   1,   1,   1,   1,   1},
    {"53 channels, stride 2, 11x9 map",         1,  53,  11,   9,   3,   3,   2,   2,   1,   1,   1,   1,   1},
    {"1 channel, 1x1 map, 1x1 kernel",          3,   1,   1,   1,   1,   1,   1,   1,   0,   0,   1,   1,   1},
    {"1x1 map, 3x3 kernel, pad 1",              2,   7,   1,   1,   3,   3,   1,   1,   1,   1,   1,   1,   1},
    {"2x2 map, 3x3 kernel, pad 1",              2,   6,   2,   2,   3,   3,   1,   1,   1,   1,   1,   1,   1},
    {"2x2 map, stride 2",                       1,   9,   2,   2,   3,   3,   2,   2,   1,   1,   1,   1,   1},
    {"stride 2, odd 9x7 map",                   2,   5,   9,   7,   3,   3,   2,   2,   1,   1,   1,   1,   1},
    {"stride 2, odd 15x13 map, kernel 5",       1,   6,  15,  13,   5,   5,   2,   2,   2,   2,   1,   1,   1},
    {"stride 2, no padding, 8x7",               1,   4,   8,   7,   3,   3,   2,   2,   0,   0,   1,   1,   1},
    {"stride 3, 10x11",                         1,   5,  10,  11,   3,   3,   3,   3,   1,   1,   1,   1,   1},
    {"stride 2x1",                              1,   5,   9,   8,   3,   3,   2,   1,   1,   1,   1,   1,   1},
    {"pad 3 with a 3x3 kernel",                 2,   5,   5,   4,   3,   3,   1,   1,   3,   3,   1,   1,   1},
    {"pad 2x4 with a 3x3 kernel, stride 2",     1,   3,   6,   5,   3,   3,   2,   2,   2,   4,   1,   1,   1},
    {"dilation 2, pad 2",                       2,   5,   9,   8,   3,   3,   1,   1,   2,   2,   2,   2,   1},
    {"dilation 2x3, stride 2",                  1,   4,  13,  12,   3,   3,   2,   2,   1,   3,   2,   3,   1},
    {"multiplier 2",                            2,   5,   7,   6,   3,   3,   1,   1,   1,   1,   1,   1,   2},
    {"multiplier 3, stride 2",                  1,   3,   9,   9,   3,   3,   2,   2,   1,   1,   1,   1,   3},
    {"multiplier 2, 1 channel, dilation 2",     2,   1,   7,   7,   3,   3,   1,   1,   2,   2,   2,   2,   2},
    {"kernel 5, pad 2",                         1,   7,  10,   9,   5,   5,   1,   1,   2,   2,   1,   1,   1},
    {"kernel 7, pad 3",                         1,   5,  11,  12,   7,   7,   1,   1,   3,   3,   1,   1,   1},
    {"kernel 7, 3x3 map, pad 3",                2,   3,   3,   3,   7,   7,   1,   1,   3,   3,   1,   1,   1},
    {"kernel 7, stride 2, odd 15x13 map",       1,   6,  15,  13,   7,   7,   2,   2,   3,   3,   1,   1,   1},
    {"kernel 7, stride 2, 4x5 map, pad 3",      2,   9,   4,   5,   7,   7,   2,   2,   3,   3,   1,   1,   1},
    {"kernel 3x5, pad 1x2",                     1,   6,   8,   9,   3,   5,   1,   1,   1,   2,   1,   1,   1},
    {"kernel 5x3, pad 0x1, stride 2",           1,   5,  11,   7,   5,   3,   2,   2,   0,   1,   1,   1,   1},
    {"kernel 1x7",                              1,   4,   5,  10,   1,   7,   1,   1,   0,   3,   1,   1,   1},
    {"kernel 2x2, even",                        2,   5,   6,   7,   2,   2,   1,   1,   0,   0,   1,   1,   1},
    {"kernel as large as the input",            2,   4,   5,   6,   5,   6,   1,   1,   0,   0,   1,   1,   1},
    {"many channels, small map",                1, 130,   3,   4,   3,   3,   1,   1,   1,   1,   1,   1,   1},
};
// clang-format on

}  // namespace

TEST_CASE("layer table: the rows the tests carry are data/layers/*.csv with repeats merged", "[layers]") {
  // The tables as the build embedded them (cmake/embed_layers.cmake: the CSV files' text at
  // build time), so that the check holds wherever the program runs, the source tree at hand or not.
  std::vector<std::pair<std::string, int>> from_csv;  // row text, number of layers
  for (const char* table : {"mobilenet_v2_224", "efficientnet_b0_224", "mobilenet_v2_32", "efficientnet_b0_32"}) {
    const char* csv = nullptr;
    for (const auto& t : dsconv_layers_data::tables)
      if (std::string(t.name) == table) csv = t.csv;
    INFO("table " << table);
    REQUIRE(csv != nullptr);
    std::istringstream file(csv);
    std::string line;
    const auto next_line = [&] {
      if (!std::getline(file, line)) return false;
      if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF files
      return true;
    };
    next_line();
    REQUIRE(line == "model,input,layer,block,kind,role,cin,cout,k,stride,pad,h_in,h_out,act,residual");
    const std::size_t first_of_table = from_csv.size();
    while (next_line()) {
      if (line.empty()) continue;
      // Drop the layer and block columns (the 3rd and 4th).
      std::vector<std::string> cells;
      std::istringstream cells_in(line);
      for (std::string cell; std::getline(cells_in, cell, ',');) cells.push_back(cell);
      REQUIRE(cells.size() == 15);
      std::string text = cells[0] + "," + cells[1];
      for (std::size_t i = 4; i < cells.size(); ++i) text += "," + cells[i];
      auto it = std::find_if(from_csv.begin() + static_cast<std::ptrdiff_t>(first_of_table), from_csv.end(),
                             [&](const auto& row) { return row.first == text; });
      if (it == from_csv.end())
        from_csv.emplace_back(text, 1);
      else
        ++it->second;
    }
  }
  REQUIRE(from_csv.size() == std::size(network_layers));
  for (std::size_t i = 0; i < from_csv.size(); ++i) {
    INFO("row " << i);
    CHECK(csv_text(network_layers[i]) == from_csv[i].first);
    CHECK(network_layers[i].layers == from_csv[i].second);
  }
}

TEMPLATE_TEST_CASE("depthwise: every variant accepts every network layer its contract covers, at batch 1 to 128",
                   "[depthwise][layers]", float, dsconv::half, dsconv::bfloat16) {
  for (const int batch : {1, 8, 32, 128})
    for (const layer_row& r : network_layers) {
      if (r.kind != layer_kind::dw) continue;
      for (const layout data_layout : all_layouts) {
        dsconv::depthwise_params p =
            make_params(batch, r.cin, r.h_in, r.h_in, r.k, r.k, r.stride, r.stride, r.pad, r.pad, 1, 1, r.cout / r.cin);
        p.data_layout = data_layout;
        p.act = r.act;
        for (const dsconv::depthwise_variant variant : dsconv::all_depthwise_variants) {
          INFO(describe(p) << ", variant " << dsconv::to_string(variant));
          CHECK(dsconv::can_implement<TestType>(variant, p) ==
                (supports<TestType>(variant, p) ? status::success : status::unsupported_variant));
        }
        // The heuristic chooses a concrete variant that runs the problem (rule_choice).
        CHECK(dsconv::select_variant<TestType>(p) == rule_choice<TestType>(p));
      }
    }
}

TEMPLATE_TEST_CASE("depthwise: every variant matches the reference on every MobileNetV2 and EfficientNet-B0 layer",
                   "[depthwise][layers][network]", float, dsconv::half, dsconv::bfloat16) {
  // Every 224x224 depthwise shape (at most 4.7M multiply-adds) at batch 1 and 2, the 32x32
  // ones at batch 4, each in both layouts (on the warp-64 sweep, a lower cap:
  // network_sweep_cap; layer_cases). bfloat16 runs the same kernels as half but
  // for its conversions: it takes the 32x32 tables only (every channel count of the networks),
  // and every variant in this file's tests of odd shapes, epilogues and misaligned buffers.
  const long long cap = std::is_same<TestType, dsconv::bfloat16>::value ? 0 : network_sweep_cap(5'000'000);
  const std::vector<layer_case> cases = layer_cases(layer_kind::dw, cap, {1, 2}, 4);
  for (const layer_case& lc : cases) {
    INFO(lc.name());
    const layer_row& r = *lc.row;
    dsconv::depthwise_params p =
        make_params(lc.batch, r.cin, r.h_in, r.h_in, r.k, r.k, r.stride, r.stride, r.pad, r.pad, 1, 1, r.cout / r.cin);
    p.data_layout = lc.data_layout;
    p.act = r.act;
    CHECK(p.out_h() == r.h_out);  // the table's output size is the convolution's
    CHECK(p.out_c() == r.cout);
    check_depthwise<TestType>(p, lc.bias);
  }
}

TEMPLATE_TEST_CASE("depthwise: both layouts, every activation, with and without bias", "[depthwise][epilogue]", float,
                   dsconv::half, dsconv::bfloat16) {
  const layout data_layout = GENERATE(layout::nchw, layout::nhwc);
  const activation act = GENERATE(activation::none, activation::relu, activation::relu6, activation::silu,
                                  activation::sigmoid, activation::hardswish);
  const bool with_bias = GENERATE(false, true);
  // A plain 3x3 layer and one with every geometry parameter off its default.
  for (dsconv::depthwise_params p :
       {make_params(2, 5, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1), make_params(1, 3, 9, 8, 3, 5, 2, 1, 2, 1, 2, 1, 2)}) {
    p.data_layout = data_layout;
    p.act = act;
    check_depthwise<TestType>(p, with_bias);
  }
}

TEMPLATE_TEST_CASE("depthwise: odd shapes, tiny maps, strides, padding, dilation, multipliers, kernels",
                   "[depthwise][shapes]", float, dsconv::half, dsconv::bfloat16) {
  const layout data_layout = GENERATE(layout::nchw, layout::nhwc);
  std::size_t i = 0;
  for (const depthwise_shape_case& sc : odd_shapes) {
    INFO(sc.name);
    dsconv::depthwise_params p = sc.params();
    p.data_layout = data_layout;
    p.act = all_activations[i % 6];
    check_depthwise<TestType>(p, i % 3 != 2);
    ++i;
  }
}

TEMPLATE_TEST_CASE("depthwise: input, weight, bias and output misaligned by one element", "[depthwise][misaligned]",
                   float, dsconv::half, dsconv::bfloat16) {
  const layout data_layout = GENERATE(layout::nchw, layout::nhwc);
  // Channel counts and widths that are multiples of 4 and 8, where a vectorised path would be
  // chosen for aligned pointers, and odd ones.
  for (dsconv::depthwise_params p :
       {make_params(2, 32, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1), make_params(1, 16, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1),
        make_params(1, 24, 7, 7, 5, 5, 1, 1, 2, 2, 1, 1, 1), make_params(2, 5, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 2)}) {
    p.data_layout = data_layout;
    p.act = activation::relu6;
    check_depthwise<TestType>(p, true, 1);
  }
}

#if defined(DSCONV_PLATFORM_HOST)
TEMPLATE_TEST_CASE("depthwise: the heuristic's kernels read shared memory without bank conflicts on every network layer",
                   "[depthwise][banks][network]", float, dsconv::half) {
  // Every depthwise shape of both networks (channels capped at 64: the threads' mapping does
  // not depend on them beyond that) at batch 1 and 4 on the device profile, both layouts (batch
  // 4, where the planners choose larger tiles, only at warp 32: sweeping_at_warp_64).
  for (const int batch : {1, 4})
    for (const layer_row& r : network_layers) {
      if (batch > 1 && sweeping_at_warp_64()) break;
      if (r.kind != layer_kind::dw) continue;
      for (const layout data_layout : all_layouts) {
        dsconv::depthwise_params p = make_params(batch, r.cin < 64 ? r.cin : 64, r.h_in, r.h_in, r.k, r.k, r.stride,
                                                 r.stride, r.pad, r.pad, 1, 1, 1);
        p.data_layout = data_layout;
        INFO(describe(p) << ", device " << current_device().name);
        const std::size_t outputs = static_cast<std::size_t>(p.n) * p.c * p.out_h() * p.out_w();
        const device_input<TestType> x(random_tensor<TestType>(static_cast<std::size_t>(p.n) * p.c * p.h * p.w));
        const device_input<TestType> w(random_tensor<TestType>(static_cast<std::size_t>(p.c) * p.kernel_h * p.kernel_w));
        guarded_output<TestType> y(outputs);
        dsconv::host::traffic_recorder recorder;
        REQUIRE(dsconv::depthwise_forward(p, x.data(), w.data(), static_cast<const TestType*>(nullptr), y.data()) ==
                status::success);
        REQUIRE(recorder.launches().size() == 1);
        const auto& launch = recorder.launches().front();
        INFO(launch.kernel);
        CHECK(launch.traffic.shared_loads.conflict_factor() <= 1.1);
      }
    }
}
#endif

TEMPLATE_TEST_CASE("depthwise NHWC: bands of partial rows where a band of full rows would be short", "[depthwise][shapes]",
                   float, dsconv::half) {
  // Rows of about 1000 pixels: three padded rows of 32 bytes of channels fill more shared
  // memory than any device profile gives a block, so the planner tiles the rows
  // (dispatch/depthwise_plan.hpp). The specialised and the generic kernel, both strides,
  // dilation, several images and channel groups, last tiles narrower than the others.
  for (dsconv::depthwise_params p : {make_params(1, 20, 9, 1000, 3, 3, 1, 1, 1, 1, 1, 1, 1),
                                     make_params(2, 8, 11, 999, 5, 5, 2, 2, 2, 2, 1, 1, 1),
                                     make_params(1, 40, 10, 1001, 3, 5, 1, 2, 2, 3, 2, 2, 1)}) {
    p.data_layout = layout::nhwc;
    INFO(describe(p) << ", device " << current_device().name);
    dsconv::detail::depthwise_plan plan;
    REQUIRE(dsconv::detail::plan_nhwc_tiled(p, current_device(), static_cast<const TestType*>(nullptr), plan));
    CHECK(plan.tile.cols < p.out_w());
    check_depthwise<TestType>(p, true);
  }
}

TEMPLATE_TEST_CASE("depthwise NHWC register kernel: every filter and stride it specialises, strips cut by the map's edge",
                   "[depthwise][shapes]", float, dsconv::half, dsconv::bfloat16) {
  // Each specialisation (3x3 and 5x5, stride 1 and 2) on maps whose widths leave a last strip
  // shorter than the others, with channel groups of 1, 3 and 5 vectors and several images:
  // outside the network sweeps (which the sanitizer build leaves out) nothing else reaches all four.
  for (const int k : {3, 5})
    for (const int s : {1, 2})
      for (const int vectors : {1, 3, 5}) {
        const int c = vectors * static_cast<int>(16 / sizeof(TestType));
        dsconv::depthwise_params p = make_params(2, c, 9 + vectors, 13 - vectors, k, k, s, s, k / 2, k / 2, 1, 1, 1);
        p.data_layout = layout::nhwc;
        p.act = all_activations[(k + s + vectors) % 6];
        // (automatic takes nhwc_register for float; for 16-bit types nhwc_matrix where its tiles
        // are used at least half: every variant runs below)
        REQUIRE(dsconv::select_variant<TestType>(p) == rule_choice<TestType>(p));
        check_depthwise<TestType>(p, vectors != 3);
      }
}

TEMPLATE_TEST_CASE("depthwise small-map kernel: every filter, stride and side, both layouts, channel groups, misaligned tensors",
                   "[depthwise][shapes]", float, dsconv::half, dsconv::bfloat16) {
  // The register variants' kernel for maps of 1, 2 and 4 outputs a side: 3x3 and 5x5 filters at
  // stride 1 onto each side, and at stride 2 from inputs of 2, 4 and 8 pixels a side onto 1, 2 and
  // 4 (the last streamed a row at a time; and of 1, 3 and 7, which the register kernels take), in
  // both layouts, with 1, 3 and 5 of its channel vectors (NHWC: of 16 bytes, as nhwc_register
  // takes them; NCHW: of the kernel's own width, down to 2 channels), with and without bias,
  // and with every tensor misaligned by one element (element accesses). Each runs through
  // automatic and every variant. The networks' layers (which the sanitizer build leaves out)
  // reach only some of these.
  for (const layout data_layout : {layout::nhwc, layout::nchw})
    for (const int k : {3, 5})
      for (const auto& stride_side : {std::pair<int, int>{1, 1}, std::pair<int, int>{1, 2}, std::pair<int, int>{1, 4},
                                      std::pair<int, int>{2, 1}, std::pair<int, int>{2, 2}, std::pair<int, int>{2, 3},
                                      std::pair<int, int>{2, 4}, std::pair<int, int>{2, 7}, std::pair<int, int>{2, 8}})
        for (const int vectors : {1, 3, 5}) {
          const int s = stride_side.first, h = stride_side.second, out_side = s == 1 ? h : (h + 1) / 2;
          const int vector = data_layout == layout::nhwc ? static_cast<int>(16 / sizeof(TestType))
                                                         : dsconv::detail::small_map_vector(sizeof(TestType), s, out_side);
          dsconv::depthwise_params p = make_params(3, vectors * vector, h, h, k, k, s, s, k / 2, k / 2, 1, 1, 1);
          p.data_layout = data_layout;
          p.act = all_activations[(k + s + h + vectors) % 6];
          // (stride 2: even inputs only; the register kernels take the others)
          REQUIRE(dsconv::detail::small_map_side<TestType>(p) == (s == 1 || h % 2 == 0 ? out_side : 0));
          for (const std::size_t misalign : {std::size_t{0}, std::size_t{1}})
            if (!misalign || vectors == 3) check_depthwise<TestType>(p, vectors != 5, misalign);
        }
}

TEMPLATE_TEST_CASE("depthwise NHWC matrix kernel: every filter and stride, tiles cut by the map's edge, misaligned tensors",
                   "[depthwise][shapes]", dsconv::half, dsconv::bfloat16) {
  // Each specialisation (3x3 and 5x5, stride 1 and 2) and tile side on outputs whose tiles the
  // map's edge cuts, which automatic takes the kernel for where the device's tensor cores
  // multiply the type: 30 x 28 outputs in tiles of 16 x 16 (one inside the map, three cut: 82%
  // used) for 1 and 3 channel vectors; 23 x 22 outputs in tiles of 8 x 8 (four inside, five cut:
  // 88% used, where 16 x 16 tiles would use 49%) for 4 and 12 vectors (one and three blocks of
  // four) and 6 (one block, and 2 vectors on tiles of 16 x 16: a second launch); two images,
  // every activation, and pointers misaligned by one element (run as nhwc_register, whose
  // accesses go element by element there).
  struct cut_case {
    int out_h, out_w, side, vectors;
  };
  for (const int k : {3, 5})
    for (const int s : {1, 2})
      for (const cut_case cut : {cut_case{30, 28, 16, 1}, cut_case{30, 28, 16, 3}, cut_case{23, 22, 8, 4},
                                 cut_case{23, 22, 8, 12}, cut_case{23, 22, 8, 6}})
        for (const std::size_t misalign : {std::size_t{0}, std::size_t{1}}) {
          const int vectors = cut.vectors;
          if (misalign && vectors != 1 && vectors != 4) continue;
          if (vectors == 6 && s == 2 && k == 3) continue;  // (the tail's case once a filter, stride 1 and 5x5 at 2)
          dsconv::depthwise_params p =
              make_params(2, 8 * vectors, (cut.out_h - 1) * s + 1, (cut.out_w - 1) * s + 1, k, k, s, s, k / 2, k / 2, 1, 1, 1);
          p.data_layout = layout::nhwc;
          p.act = all_activations[(k + s + vectors + static_cast<int>(misalign)) % 6];
          REQUIRE(p.out_h() == cut.out_h);
          REQUIRE(p.out_w() == cut.out_w);
          REQUIRE(matrix_side(p) == cut.side);
          REQUIRE(dsconv::detail::matrix_side(p) == cut.side);
          CHECK(dsconv::select_variant<TestType>(p) == (supports<TestType>(dsconv::depthwise_variant::nhwc_matrix, p)
                                                            ? dsconv::depthwise_variant::nhwc_matrix
                                                            : dsconv::depthwise_variant::nhwc_register));
          check_depthwise<TestType>(p, vectors != 3, misalign);
        }
}

// Runs launch(input, weight, bias, output, pre_activation) (device tensors of random data for
// `p`, multiplier 1) and checks both outputs against the reference: act(conv + bias) and
// conv + bias.
template <class T, class Launch>
void check_with_pre_activation(const dsconv::depthwise_params& p, Launch&& launch) {
  const std::size_t in_count = static_cast<std::size_t>(p.n) * p.c * p.h * p.w;
  const std::size_t out_count = static_cast<std::size_t>(p.n) * p.c * p.out_h() * p.out_w();
  const std::vector<T> input = random_tensor<T>(in_count);
  const std::vector<T> weight = random_tensor<T>(static_cast<std::size_t>(p.c) * p.kernel_h * p.kernel_w);
  const std::vector<T> bias = random_tensor<T>(static_cast<std::size_t>(p.c));
  dsconv::depthwise_params linear = p;
  linear.act = activation::none;
  std::vector<double> ref_pre(out_count);
  REQUIRE(dsconv::reference::depthwise_forward(linear, input.data(), weight.data(), bias.data(), ref_pre.data()) ==
          status::success);
  const std::vector<double> ref = activated(ref_pre, p.act);
  const device_input<T> d_input(input), d_weight(weight), d_bias(bias);
  guarded_output<T> out(out_count), pre(out_count);
  REQUIRE(launch(d_input.data(), d_weight.data(), d_bias.data(), out.data(), pre.data()) == status::success);
  REQUIRE(dsconv::synchronize() == status::success);
  const error_bound bound = depthwise_bound(p, input, weight, bias.data());
  check_close(out.download_checked(), ref, bound);
  check_close(pre.download_checked(), ref_pre, bound);
}

TEMPLATE_TEST_CASE("depthwise NHWC matrix kernel: a block's run of tiles across images, and the activation's input kept",
                   "[depthwise][shapes]", dsconv::half, dsconv::bfloat16) {
  // The plan gives a block a run of several tiles only where the grid would fill the device 8
  // times over: planned here for a one-multiprocessor device (7 images of 2 x 2 tiles of 16 x
  // 16, 2 channel vectors; or of 1 x 2 tiles of 8 x 8, 4 blocks of four vectors: runs of 3, the
  // last block's shorter, runs that cross from one image to the next), launched directly with
  // the pre-activation tensor, both outputs checked against the reference.
  using dsconv::depthwise_variant;
  dsconv::platform::device_properties dev = current_device();
  dev.multiprocessor_count = 1;
  struct run_case {
    int c, h, w, side;
  };
  for (const int k : {3, 5})
    for (const run_case run : {run_case{16, 20, 18, 16}, run_case{128, 8, 16, 8}}) {
      dsconv::depthwise_params p = make_params(7, run.c, run.h, run.w, k, k, 1, 1, k / 2, k / 2, 1, 1, 1);
      p.data_layout = layout::nhwc;
      p.act = activation::silu;
      INFO(describe(p) << ", device " << dev.name);
      if (!supports<TestType>(depthwise_variant::nhwc_matrix, p)) {  // (no tensor cores for the type here)
        CHECK(dsconv::can_implement<TestType>(depthwise_variant::nhwc_matrix, p) == status::unsupported_variant);
        continue;
      }
      check_with_pre_activation<TestType>(p, [&](const TestType* input, const TestType* weight, const TestType* bias,
                                                  TestType* out, TestType* pre) {
        dsconv::detail::matrix_plan plan;
        REQUIRE(dsconv::detail::plan_nhwc_matrix<TestType>(p, dev, plan));
        REQUIRE(plan.side == run.side);
        REQUIRE(plan.tile.tiles_per_block == 3);
        REQUIRE(plan.tile.tiles % plan.tile.tiles_per_block != 0);  // the last block's run shorter
        return dsconv::platform::launch(dsconv::detail::matrix_kernel<TestType>(p, plan.side), plan.launch({}),
                                        dsconv::detail::make_shape(p), plan.tile, input,
                                        dsconv::detail::register_gate{nullptr, 0.f, 0u}, weight, bias, out, pre);
      });
    }
}

TEMPLATE_TEST_CASE("depthwise NCHW register kernel: every filter, stride and access width, bands and strips cut by the map's edge",
                   "[depthwise][shapes]", float, dsconv::half, dsconv::bfloat16) {
  // Each specialisation (3x3 and 5x5, stride 1 and 2) on maps whose output width (32, 20, 18
  // and 9 elements) makes the plan move chunks of 16, 8, 4 bytes and single elements (16-bit) or
  // 16, 16, 8 and 4 bytes (float), heights that leave a last band shorter than the others, and
  // pointers misaligned by one element, which take the narrowest chunks where the widths would
  // allow 16 bytes.
  for (const int k : {3, 5})
    for (const int s : {1, 2})
      for (const int width : {32, 20, 18, 9})
        for (const std::size_t misalign : {std::size_t{0}, std::size_t{1}}) {
          if (misalign && width != 32) continue;
          const int w = s == 1 ? width : 2 * width;
          dsconv::depthwise_params p = make_params(3, 5, 11 + 2 * k, w, k, k, s, s, k / 2, k / 2, 1, 1, 1);
          p.data_layout = layout::nchw;
          p.act = all_activations[(k + s + width) % 6];
          dsconv::detail::nchw_register_plan plan;
          REQUIRE(dsconv::detail::plan_nchw_register<TestType>(p, current_device(), nullptr, nullptr, nullptr, plan));
          REQUIRE(dsconv::select_variant<TestType>(p) == rule_choice<TestType>(p));
          check_depthwise<TestType>(p, width != 20, misalign);
        }
}

TEMPLATE_TEST_CASE("depthwise NCHW matrix kernel: every filter, stride and load width, tiles cut by the map's edge, odd batches",
                   "[depthwise][shapes]", dsconv::half, dsconv::bfloat16) {
  // Each specialisation (3x3 and 5x5, stride 1 and 2) on 3 images (at stride 1 the last tile of
  // two images has one) of maps whose rows make the plan load 16, 8 or 4 bytes at a time (input
  // widths 32, 20 and 18 at stride 1; 64 and 40 at stride 2, whose even output widths leave
  // rows of whole 8 bytes), heights that cut the second row of tiles, pointers misaligned by two
  // elements (4-byte loads where the rows would allow 16) and by one (run as nchw_register).
  for (const int k : {3, 5})
    for (const int s : {1, 2})
      for (const int width : {32, 20, 18})
        for (const std::size_t misalign : {std::size_t{0}, std::size_t{2}, std::size_t{1}}) {
          if ((misalign && width != 32) || (s == 2 && width == 18)) continue;
          const int w = s * width;
          dsconv::depthwise_params p = make_params(3, 5, 11 + 2 * k, w, k, k, s, s, k / 2, k / 2, 1, 1, 1);
          p.data_layout = layout::nchw;
          p.act = all_activations[(k + s + width + static_cast<int>(misalign)) % 6];
          const int granule = misalign == 2 ? 4 : (w * 2) % 16 == 0 ? 16 : (w * 2) % 8 == 0 ? 8 : 4;
          const std::vector<TestType> probe(8);  // (an aligned pointer, and one misaligned as the test's)
          REQUIRE(dsconv::detail::nchw_matrix_granule(p, {probe.data() + misalign}) == (misalign == 1 ? 4 : granule));
          REQUIRE(dsconv::select_variant<TestType>(p) == rule_choice<TestType>(p));
          check_depthwise<TestType>(p, width != 20, misalign);
        }
}

// Plans nchw_matrix for `p` on `dev` (check_plan asserts what the plan must be) and launches it
// directly with the pre-activation tensor, both outputs checked against the reference; where the
// device has no tensor cores for the type, the variant must refuse.
template <class T, class CheckPlan>
void check_nchw_matrix_launch(const dsconv::depthwise_params& p, const dsconv::platform::device_properties& dev,
                              CheckPlan&& check_plan) {
  INFO(describe(p) << ", device " << dev.name);
  if (!supports<T>(dsconv::depthwise_variant::nchw_matrix, p)) {  // (no tensor cores for the type here)
    CHECK(dsconv::can_implement<T>(dsconv::depthwise_variant::nchw_matrix, p) == status::unsupported_variant);
    return;
  }
  check_with_pre_activation<T>(p, [&](const T* input, const T* weight, const T* bias, T* out, T* pre) {
    dsconv::detail::nchw_matrix_plan plan;
    REQUIRE(dsconv::detail::plan_nchw_matrix<T>(p, dev, input, nullptr, plan));
    check_plan(plan);
    return dsconv::platform::launch(dsconv::detail::nchw_matrix_kernel<T>(p, plan.plane), plan.launch({}),
                                    dsconv::detail::make_shape(p), plan.tile, input,
                                    dsconv::detail::register_gate{nullptr, 0.f, 0u}, weight, bias, out, pre);
  });
}

TEMPLATE_TEST_CASE("depthwise NCHW matrix kernel: a warp's run of tiles across images and channels, and the activation's input kept",
                   "[depthwise][shapes]", dsconv::half, dsconv::bfloat16) {
  // The plan gives a warp a run of several tiles only where the grid would fill the device 8
  // times over: planned here for a one-multiprocessor device (27 channels of 5 images, maps of 2
  // x 3 tiles: 18 tiles a channel at stride 1, the last of each with one image; runs of 5 that
  // cross channels; in the last block a whole run, a run of one and two warps without a tile;
  // at stride 2, maps of 2 x 3 tiles of one image, runs of 8, and in the last block a whole run,
  // a run of two and two warps without a tile), launched directly with the pre-activation tensor,
  // both outputs checked against the reference. The forward's ring of stages wraps in each run
  // of 5 and 8, and a run of one or two leaves stages unused.
  using dsconv::depthwise_variant;
  dsconv::platform::device_properties dev = current_device();
  dev.multiprocessor_count = 1;
  struct run_case {
    int s, h, w, tiles, run, last_run;  // stride, input map, the plan's tiles, run and the last block's second run
    activation act;
  };
  for (const int k : {3, 5})
    for (const run_case& rc : {run_case{1, 20, 36, 27 * 3 * 6, 5, 1, activation::hardswish},
                               run_case{2, 40, 72, 27 * 5 * 6, 8, 2, activation::relu6}}) {
      dsconv::depthwise_params p = make_params(5, 27, rc.h, rc.w, k, k, rc.s, rc.s, k / 2, k / 2, 1, 1, 1);
      p.data_layout = layout::nchw;
      p.act = rc.act;
      check_nchw_matrix_launch<TestType>(p, dev, [&](const dsconv::detail::nchw_matrix_plan& plan) {
        REQUIRE(plan.tile.tiles == rc.tiles);
        REQUIRE(plan.tile.tiles_per_warp == rc.run);
        REQUIRE(plan.tile.tiles % (4 * plan.tile.tiles_per_warp) == plan.tile.tiles_per_warp + rc.last_run);
      });
    }
}

TEMPLATE_TEST_CASE("depthwise NCHW matrix kernel's plane form: every filter, stride and plane, image groups cut by the batch, "
                   "runs across channels, the activation's input kept",
                   "[depthwise][shapes]", dsconv::half, dsconv::bfloat16) {
  // Output planes of at most 8 x 8 take the plane form (eight images' planes of a channel a warp
  // tile at stride 1, four at stride 2): at stride 1 the planes' words copied through the ring
  // and staged as words (even widths) or elements (odd; planes that start at odd elements where
  // the channels are odd, the tensor's last word copied in part where its elements are), at
  // stride 2 words held in registers, two tiles ahead; odd output widths store elements. Batches that leave the
  // last group of a channel short (1 to 7 images missing), and a one-multiprocessor device whose
  // plan gives warps runs of several tiles that cross channels (of 4, which wrap the ring of 4
  // stages); launched directly with the pre-activation tensor, both outputs checked against the
  // reference, and through automatic and every variant (check_depthwise).
  using dsconv::depthwise_variant;
  dsconv::platform::device_properties dev = current_device();
  dev.multiprocessor_count = 1;
  struct plane_case {
    int n, c, h, w, k, s, granule, run;
  };
  // clang-format off
  const plane_case cases[] = {
      //  n    c   h   w  k  s granule run
      {  17,180,  7,  7, 5, 1,  2,  4},  // 7x7 elements; 3 groups a channel, the last of one image; the ring wraps
      {  17, 90,  7,  7, 3, 1,  2,  2},
      {  17,  9,  7,  7, 3, 1,  2,  1},  // odd channels: planes start at alternate parities; the last word in part
      {   3, 12,  8,  8, 5, 1,  4,  1},  // 8x8 words; 5 images missing
      {  10,  9,  8,  6, 3, 1,  4,  1},  // 8 rows of 6
      {   2,  5,  3,  5, 5, 1,  2,  1},  // the filter wider than the plane
      {   5,  3,  1,  1, 3, 1,  2,  1},  // one pixel
      {  13, 50, 14, 14, 5, 2,  4,  2},  // 14x14 -> 7x7: word loads, element stores
      {   1,290, 14, 14, 5, 2,  4,  3},  // runs of 3: a register buffer refilled, an odd tile last; the last block's warps 2 and 0
      {   6,  7, 16, 16, 3, 2,  4,  1},  // 16x16 -> 8x8
      {   5,  6, 10,  4, 5, 2,  4,  1},  // 10x4 -> 5x2
      {   3,  4,  2,  2, 3, 2,  4,  1},  // 2x2 -> 1x1
  };
  // clang-format on
  for (const plane_case& pc : cases) {
    dsconv::depthwise_params p = make_params(pc.n, pc.c, pc.h, pc.w, pc.k, pc.k, pc.s, pc.s, pc.k / 2, pc.k / 2, 1, 1, 1);
    p.data_layout = layout::nchw;
    p.act = all_activations[(pc.n + pc.c) % 6];
    REQUIRE(nchw_plane(p));
    check_nchw_matrix_launch<TestType>(p, dev, [&](const dsconv::detail::nchw_matrix_plan& plan) {
      REQUIRE(plan.plane);
      const int images = pc.s == 1 ? 8 : 4;
      REQUIRE(plan.tile.tiles == pc.c * ((pc.n + images - 1) / images));
      REQUIRE(plan.tile.granule == pc.granule);
      REQUIRE(plan.tile.tiles_per_warp == pc.run);
    });
    REQUIRE(dsconv::select_variant<TestType>(p) == rule_choice<TestType>(p));
    check_depthwise<TestType>(p, pc.n % 2 == 1);
  }
  // Odd input rows at stride 2 are the plane form's to refuse (nchw_register takes them).
  dsconv::depthwise_params odd = make_params(2, 4, 7, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1);
  odd.data_layout = layout::nchw;
  CHECK_FALSE(nchw_plane(odd));
  CHECK(dsconv::can_implement<TestType>(depthwise_variant::nchw_matrix, odd) == status::unsupported_variant);
  // Images of 2^31 bytes or more are the plane form's to refuse too (it steps from an image's
  // plane to the next 32 bits wide): 7x7 planes of 2^31 / 98 channels and one more. (A profile
  // without tensor cores for the type refuses both, for that reason.)
  const int most = static_cast<int>(((1LL << 31) - 1) / 98);
  dsconv::depthwise_params small = make_params(1, 8, 7, 7, 5, 5, 1, 1, 2, 2, 1, 1, 1);
  small.data_layout = layout::nchw;
  const bool multiplies = supports<TestType>(depthwise_variant::nchw_matrix, small);
  CHECK(dsconv::detail::nchw_matrix_limits<TestType>(small, dev).empty() == multiplies);
  for (const int c : {most, most + 1}) {
    dsconv::depthwise_params wide = small;
    wide.c = c;
    const std::string limit = dsconv::detail::nchw_matrix_limits<TestType>(wide, dev);
    INFO("channels " << c << ": " << limit);
    CHECK(limit.empty() == (multiplies && c == most));
    CHECK((limit.find("2^31 bytes") != std::string::npos) == (multiplies && c == most + 1));
    CHECK(supports<TestType>(depthwise_variant::nchw_matrix, wide) == (multiplies && c == most));
  }
}

TEMPLATE_TEST_CASE("depthwise NCHW register kernel: threads that walk down several bands", "[depthwise][shapes]", float,
                   dsconv::half) {
  // The plan gives a thread several bands only where the grid would fill the device 8 times
  // over, which no test-sized problem does on a real profile: planned here for a one-multiprocessor
  // device, launched directly, and checked against the reference.
  dsconv::platform::device_properties dev = current_device();
  dev.multiprocessor_count = 1;
  // Stride 1 and 2: the rows a band shares with the next (K - S) stay in registers.
  for (const int k : {3, 5})
    for (const int stride : {1, 2}) {
      dsconv::depthwise_params p = make_params(64, 16, 34, 16, k, k, stride, stride, k / 2, k / 2, 1, 1, 1);
      p.data_layout = layout::nchw;
      p.act = activation::silu;
      INFO(describe(p) << ", device " << dev.name);
      const std::size_t in_count = static_cast<std::size_t>(p.n) * p.c * p.h * p.w;
      const std::size_t out_count = static_cast<std::size_t>(p.n) * p.c * p.out_h() * p.out_w();
      const std::vector<TestType> input = random_tensor<TestType>(in_count);
      const std::vector<TestType> weight = random_tensor<TestType>(static_cast<std::size_t>(p.c) * k * k);
      const std::vector<TestType> bias = random_tensor<TestType>(static_cast<std::size_t>(p.c));
      std::vector<double> ref(out_count);
      REQUIRE(dsconv::reference::depthwise_forward(p, input.data(), weight.data(), bias.data(), ref.data()) ==
              status::success);
      const device_input<TestType> d_input(input), d_weight(weight), d_bias(bias);
      guarded_output<TestType> out(out_count);
      dsconv::detail::nchw_register_plan plan;
      REQUIRE(dsconv::detail::plan_nchw_register<TestType>(p, dev, d_input.data(), out.data(), nullptr, plan));
      REQUIRE(plan.tile.bands_per_thread > 1);
      REQUIRE(plan.tile.bands % plan.tile.bands_per_thread != 0);  // a thread's last band past the map's
      REQUIRE(dsconv::platform::launch(dsconv::detail::nchw_register_kernel<TestType>(p), plan.launch({}),
                                       dsconv::detail::make_shape(p), plan.tile, d_input.data(),
                                       dsconv::detail::register_gate{nullptr, 0.f, 0u}, d_weight.data(),
                                       d_bias.data(), out.data(), static_cast<TestType*>(nullptr)) == status::success);
      REQUIRE(dsconv::synchronize() == status::success);
      check_close(out.download_checked(), ref, depthwise_bound(p, input, weight, bias.data()));
    }
}

TEST_CASE("depthwise: automatic runs the variant its architecture measured fastest, where that variant runs the call",
          "[depthwise][tuning]") {
  namespace t = dsconv::detail::tuning;
  using dsconv::depthwise_variant;
  const dsconv::platform::device_properties dev = current_device();
  INFO("device " << dev.name << ", architecture " << dev.arch);
  // 32 channels at 112x112, 3x3, stride 1, NHWC float: nhwc_tiled fastest at batch 8, direct at
  // 128; and a 30-channel layer (no whole 16-byte vectors) whose winner is nhwc_register.
  const t::variant_row rows[] = {{'d', 32, 32, 3, 1, 112, 8, 'f', 'h', "nhwc_tiled", 10.0},
                                 {'d', 32, 32, 3, 1, 112, 128, 'f', 'h', "direct", 90.0},
                                 {'d', 30, 30, 3, 1, 112, 8, 'f', 'h', "nhwc_register", 10.0}};
  const t::variant_table tables[] = {{dev.arch, "a test GPU", "today", t::variant_kernels_revision, rows, 3},
                                     {"sm_none", "another GPU", "today", t::variant_kernels_revision, rows, 3}};
  const t::variant_table stale[] = {{dev.arch, "a test GPU", "before", t::variant_kernels_revision - 1, rows, 3}};
  dsconv::depthwise_params p = make_params(8, 32, 112, 112, 3, 3, 1, 1, 1, 1, 1, 1, 1);
  p.data_layout = layout::nhwc;
  const auto chosen = [&](const t::variant_table* with, std::size_t count) {
    return dsconv::detail::select_depthwise<float>(p, with, count);
  };
  // The rule where nothing was measured: the register kernel for this layer.
  REQUIRE(chosen(tables + 1, 1) == depthwise_variant::nhwc_register);
  CHECK(chosen(stale, 1) == depthwise_variant::nhwc_register);  // measured on other kernels
  CHECK(chosen(tables, 2) == depthwise_variant::nhwc_tiled);
  for (const int n : {1, 16, 32}) {  // nearest to 8 (32: as near to 8 as to 128, the smaller)
    p.n = n;
    CHECK(chosen(tables, 2) == depthwise_variant::nhwc_tiled);
  }
  p.n = 64;
  CHECK(chosen(tables, 2) == depthwise_variant::direct);
  CHECK(dsconv::detail::select_depthwise<dsconv::half>(p, tables, 2) ==  // not measured: the rule's
        (supports<dsconv::half>(depthwise_variant::nhwc_matrix, p) ? depthwise_variant::nhwc_matrix
                                                                   : depthwise_variant::nhwc_register));
  p.dilation_h = p.dilation_w = 2, p.pad_h = p.pad_w = 2;  // not a layer of the tables
  CHECK(chosen(tables, 2) == depthwise_variant::nhwc_tiled);
  p = make_params(8, 32, 112, 112, 3, 3, 1, 1, 1, 1, 1, 1, 1);  // NCHW: not measured
  CHECK(chosen(tables, 2) == depthwise_variant::nchw_register);
  p = make_params(8, 30, 112, 112, 3, 3, 1, 1, 1, 1, 1, 1, 1);
  p.data_layout = layout::nhwc;  // the winner cannot run 30 channels of float: the rule's next
  CHECK(chosen(tables, 2) == depthwise_variant::nhwc_tiled);
  // With no table of the architecture's (the generated tables have none for the host's profiles
  // until a GPU of that architecture measures), automatic is the rule's choice.
  if (t::table_of(dev.arch, t::variant_kernels_revision, t::variant_tables, t::variant_table_count) == nullptr)
    CHECK(dsconv::select_variant<float>(p) == depthwise_variant::nhwc_tiled);
}

#if defined(DSCONV_PLATFORM_HOST)
TEMPLATE_TEST_CASE("depthwise: the tiled plans keep a multiprocessor busy on every layer and device profile",
                   "[depthwise][occupancy]", float, dsconv::half) {
  // The target: a multiprocessor holds 4 of a plan's blocks at once by its shared memory, or
  // blocks of half the threads it can hold, or as many as the grid has per multiprocessor.
  // (Registers do not bind here: the kernels' launch bounds ask for 4 blocks.)
  for (const dsconv::platform::device_properties& dev : dsconv::host::device_profiles())
    for (const int batch : {1, 8, 32, 128})
      for (const layer_row& r : network_layers) {
        if (r.kind != layer_kind::dw || r.cout != r.cin) continue;
        for (const layout data_layout : all_layouts) {
          dsconv::depthwise_params p =
              make_params(batch, r.cin, r.h_in, r.h_in, r.k, r.k, r.stride, r.stride, r.pad, r.pad, 1, 1, 1);
          p.data_layout = data_layout;
          dsconv::detail::depthwise_plan plan;
          const TestType* x = nullptr;
          REQUIRE((data_layout == layout::nchw ? dsconv::detail::plan_nchw_tiled(p, dev, x, plan)
                                               : dsconv::detail::plan_nhwc_tiled(p, dev, x, plan)));
          const long long blocks = static_cast<long long>(plan.grid.x) * plan.grid.y;
          const long long per_multiprocessor = (blocks + dev.multiprocessor_count - 1) / dev.multiprocessor_count;
          const long long resident =
              static_cast<long long>(dev.shared_memory_per_multiprocessor / (plan.shared_bytes + dev.shared_memory_reserved_per_block));
          const long long threads = resident * dsconv::detail::depthwise_block_threads;
          INFO(describe(p) << ", device " << dev.name << ": " << resident << " resident of " << blocks << " blocks");
          CHECK((resident >= 4 || 2 * threads >= dev.max_threads_per_multiprocessor || resident >= per_multiprocessor));
        }
      }
}
#endif

#if defined(DSCONV_PLATFORM_HOST)
TEMPLATE_TEST_CASE("depthwise NCHW: vector loads are staged in distinct banks", "[depthwise][banks]", float,
                   dsconv::half) {
  // Each thread's V stores start at its own element (staging_rotation), or threads a bank
  // period apart would meet in a bank:
  // - no padding (every staged word comes from a vector load; zero padding has stores of its
  //   own), rows of whole vectors staged at a pitch of the row (output rows of whole sectors);
  // - the networks' largest strided maps, padded (column phases): a group of threads that
  //   straddled two rows would meet in a bank where they join (1.8-2.0 before the planner's
  //   stage_slots started rows at slot boundaries).
  for (const dsconv::depthwise_params& p :
       {make_params(2, 8, 16, 64, 1, 1, 1, 1, 0, 0, 1, 1, 1), make_params(1, 2, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1, 1),
        make_params(1, 2, 56, 56, 3, 3, 2, 2, 1, 1, 1, 1, 1)}) {
    INFO(describe(p) << ", device " << current_device().name);
    const device_input<TestType> x(random_tensor<TestType>(static_cast<std::size_t>(p.n) * p.c * p.h * p.w));
    const device_input<TestType> w(random_tensor<TestType>(static_cast<std::size_t>(p.c) * p.kernel_h * p.kernel_w));
    guarded_output<TestType> y(static_cast<std::size_t>(p.n) * p.c * p.out_h() * p.out_w());
    dsconv::host::traffic_recorder recorder;
    REQUIRE(dsconv::depthwise_forward(p, dsconv::depthwise_options{dsconv::depthwise_variant::nchw_tiled}, x.data(),
                                      w.data(), static_cast<const TestType*>(nullptr), y.data()) == status::success);
    REQUIRE(recorder.launches().size() == 1);
    CHECK(recorder.launches().front().traffic.shared_stores.conflict_factor() <= 1.1);
  }
}
#endif

TEST_CASE("planning: a remembered plan is computed once per key and host thread", "[plan]") {
  int calls = 0;
  auto doubled = [&](long long v) {
    return dsconv::detail::remembered(dsconv::detail::plan_key<2>{7, v}, [&] { return ++calls, 2 * v; });
  };
  REQUIRE(doubled(1) == 2);
  REQUIRE(doubled(1) == 2);
  CHECK(calls == 1);
  REQUIRE(doubled(2) == 4);
  CHECK(calls == 2);
  std::thread other([&] { doubled(1); });  // (its own table)
  other.join();
  CHECK(calls == 3);
}

#if defined(DSCONV_PLATFORM_HOST)
TEMPLATE_TEST_CASE("planning: the remembered NCHW staging order is the model's on every layer and device profile",
                   "[depthwise][plan]", float, dsconv::half) {
  // (a key missing a value the model reads would hand one layer another's order)
  for (const dsconv::platform::device_properties& dev : dsconv::host::device_profiles())
    for (const int batch : {1, 8, 128})
      for (const layer_row& r : network_layers) {
        if (r.kind != layer_kind::dw || r.cout != r.cin) continue;
        const dsconv::depthwise_params p =
            make_params(batch, r.cin, r.h_in, r.h_in, r.k, r.k, r.stride, r.stride, r.pad, r.pad, 1, 1, 1);
        dsconv::detail::depthwise_plan plan;
        const TestType* x = nullptr;
        REQUIRE(dsconv::detail::plan_nchw_tiled(p, dev, x, plan));
        INFO(describe(p) << ", device " << dev.name);
        CHECK(plan.tile.stage_slots == dsconv::detail::nchw_stage_slots_modelled(plan.tile, p.h, p.w, p.pad_w,
                                                                                 dsconv::detail::staged_phases(p),
                                                                                 sizeof(TestType)));
      }
}
#endif
