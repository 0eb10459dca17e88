// dsconv::pointwise_forward against the double reference: every variant (forced through the
// options overload) and automatic, for float, half and bfloat16, on every 1x1 layer of
// MobileNetV2 and EfficientNet-B0 (squeeze-excitation included) and on odd shapes, with both
// layouts and every epilogue (bias, residual, activation).
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "support/shapes.hpp"
#include "support/test_data.hpp"

namespace {

using dsconv::activation;
using dsconv::layout;
using dsconv::status;
using namespace dsconv_test;

// Runs `p` with random data through `variants` (default: automatic and each variant) and
// checks each result within `tol`.
template <class T>
void check_pointwise(const dsconv::pointwise_params& p, bool with_bias, bool with_residual, std::size_t misalign = 0,
                     double tol = tolerance<T>(),
                     const std::vector<dsconv::pointwise_variant>& variants =
                         variants_with_automatic(dsconv::all_pointwise_variants)) {
  INFO(type_name<T>() << ", " << describe(p) << (with_bias ? ", bias" : ", no bias")
                      << (with_residual ? ", residual" : ", no residual") << ", misaligned by " << misalign);
  const std::size_t pixels = static_cast<std::size_t>(p.n) * p.h * p.w;
  const std::vector<T> input = random_tensor<T>(pixels * p.c_in);
  const std::vector<T> weight = random_tensor<T>(static_cast<std::size_t>(p.c_out) * p.c_in);
  const std::vector<T> bias = random_tensor<T>(static_cast<std::size_t>(p.c_out));
  const std::vector<T> residual = random_tensor<T>(pixels * p.c_out);

  std::vector<double> ref(pixels * p.c_out);
  REQUIRE(dsconv::reference::pointwise_forward(p, input.data(), weight.data(), with_bias ? bias.data() : nullptr,
                                               with_residual ? residual.data() : nullptr,
                                               ref.data()) == status::success);

  const device_input<T> d_input(input, misalign), d_weight(weight, misalign), d_bias(bias, misalign),
      d_residual(residual, misalign);
  // split_k's workspace, guarded like an output: nothing past it may be written. Every
  // variant gets it, so automatic may choose split_k too.
  const std::size_t workspace_bytes = dsconv::pointwise_workspace_size<T>(p);
  guarded_output<float> workspace(workspace_bytes / sizeof(float));
  for (const dsconv::pointwise_variant variant : variants) {
    INFO("variant " << dsconv::to_string(variant));
    guarded_output<T> out(ref.size(), misalign);
    const status can = dsconv::can_implement<T>(variant, p);
    dsconv::pointwise_options options;
    options.variant = variant;
    options.workspace = workspace_bytes ? workspace.data() : nullptr;
    options.workspace_bytes = workspace_bytes;
    const status s = dsconv::pointwise_forward(p, options, d_input.data(), d_weight.data(),
                                               with_bias ? d_bias.data() : nullptr,
                                               with_residual ? d_residual.data() : nullptr, out.data());
    if (variant != dsconv::pointwise_variant::automatic && can == status::unsupported_variant) {
      // A specialised variant may decline a shape, but must say so before writing anything.
      CHECK(s == status::unsupported_variant);
      CHECK(out.untouched());
      continue;
    }
    REQUIRE(can == status::success);
    REQUIRE(s == status::success);
    REQUIRE(dsconv::synchronize() == status::success);
    check_close(out.download_checked(), ref, tol);
    if (workspace_bytes) (void)workspace.download_checked();  // checks the guards around it
  }
}

dsconv::pointwise_params make_params(int n, int c_in, int c_out, int h, int w) {
  dsconv::pointwise_params p;
  p.n = n, p.c_in = c_in, p.c_out = c_out, p.h = h, p.w = w;
  return p;
}

struct shape_case {
  const char* name;
  int n, c_in, c_out, h, w;
};

// Shapes the network layers do not have: one input or output channel, odd channel counts and
// extents, 1x1 and 2x2 maps, long dot products.
// clang-format off
const shape_case odd_shapes[] = {
    // name                                   n  c_in c_out   h    w
    {"c_in = 1",                              2,    1,    8,   5,   3},
    {"c_out = 1",                             2,    9,    1,   4,   4},
    {"1 -> 1 channel, 1x1 map",               3,    1,    1,   1,   1},
    {"3 -> 5 channels, 7x5 map",              2,    3,    5,   7,   5},
    {"37 -> 53 channels, 3x3 map",            1,   37,   53,   3,   3},
    {"53 -> 37 channels, 5x7 map",            2,   53,   37,   5,   7},
    {"1x1 map, 64 -> 24",                     4,   64,   24,   1,   1},
    {"2x2 map, 33 -> 17",                     3,   33,   17,   2,   2},
    {"13x1 map, 5 -> 3",                      1,    5,    3,  13,   1},
    {"1x11 map, 7 -> 9",                      2,    7,    9,   1,  11},
    {"long dot product, 1000 -> 7",           1, 1000,    7,   2,   3},
    {"257 output channels",                   1,   12,  257,   3,   2},
};
// clang-format on

}  // namespace

bool is_tensor_core(dsconv::pointwise_variant v) {
  return v == dsconv::pointwise_variant::mma_large || v == dsconv::pointwise_variant::mma_small;
}

TEST_CASE("pointwise: every variant can run some of the network layers", "[pointwise][layers]") {
  // A variant that declined every layer would never be compared with the reference. The
  // matrix-unit variants are asked about half (they take float only with allow_tf32), and run
  // exactly where the device has a matrix unit: on the host, mma.sync at warp width 32 and
  // MFMA at 64.
  dsconv::platform::device_properties dev;
  REQUIRE(dsconv::platform::get_device_properties(dev) == status::success);
  for (const dsconv::pointwise_variant variant : dsconv::all_pointwise_variants) {
    INFO("variant " << dsconv::to_string(variant));
    int runs = 0;
    for (const layer_case& lc : layer_cases(layer_kind::pw, std::numeric_limits<long long>::max()))
      for (const layout data_layout : all_layouts) {
        const layer_row& r = *lc.row;
        dsconv::pointwise_params p = make_params(lc.batch, r.cin, r.cout, r.h_in, r.h_in);
        p.data_layout = data_layout;
        p.act = r.act;
        runs += (is_tensor_core(variant) ? dsconv::can_implement<dsconv::half>(variant, p)
                                         : dsconv::can_implement(variant, p)) == status::success;
      }
    if (is_tensor_core(variant) && dev.matrix == dsconv::platform::matrix_unit::none)
      CHECK(runs == 0);
    else
      CHECK(runs > 0);
  }
}

TEST_CASE("pointwise: float takes NVIDIA's tensor cores only with allow_tf32, AMD's matrix cores in fp32",
          "[pointwise][tf32]") {
  dsconv::platform::device_properties dev;
  REQUIRE(dsconv::platform::get_device_properties(dev) == status::success);
  const bool fp32 = dev.matrix == dsconv::platform::matrix_unit::mfma;
  const bool allowed = fp32 || dev.matrix == dsconv::platform::matrix_unit::mma_sync;
  dsconv::pointwise_params p = make_params(2, 32, 48, 8, 8);
  for (const dsconv::pointwise_variant v : {dsconv::pointwise_variant::mma_large, dsconv::pointwise_variant::mma_small}) {
    INFO(dsconv::to_string(v));
    p.allow_tf32 = false;
    CHECK(dsconv::can_implement<float>(v, p) == (fp32 ? status::success : status::unsupported_variant));
    p.allow_tf32 = true;
    CHECK(dsconv::can_implement<float>(v, p) == (allowed ? status::success : status::unsupported_variant));
  }
  p.allow_tf32 = false;
  CHECK(is_tensor_core(dsconv::select_variant<float>(p)) == fp32);
  p.allow_tf32 = true;
  CHECK(is_tensor_core(dsconv::select_variant<float>(p)) == allowed);
}

TEST_CASE("pointwise: TF32 tensor-core variants match the reference within TF32 accuracy", "[pointwise][tf32]") {
  // Every 1x1 layer of the 32x32 tables at batch 4 (squeeze-excitation at batch 5) and the odd
  // shapes, both layouts; the other variants keep their exact-fp32 tolerance.
  constexpr double tf32_tolerance = 2e-3;
  std::vector<dsconv::pointwise_params> problems;
  for (const layer_case& lc : layer_cases(layer_kind::pw, 0, {}, 4)) {
    const layer_row& r = *lc.row;
    dsconv::pointwise_params p = make_params(lc.batch, r.cin, r.cout, r.h_in, r.h_in);
    p.data_layout = lc.data_layout;
    p.act = r.act;
    problems.push_back(p);
  }
  std::size_t i = 0;
  for (const shape_case& sc : odd_shapes)
    for (const layout data_layout : all_layouts) {
      dsconv::pointwise_params p = make_params(sc.n, sc.c_in, sc.c_out, sc.h, sc.w);
      p.data_layout = data_layout;
      p.act = all_activations[i++ % 6];
      problems.push_back(p);
    }
  for (dsconv::pointwise_params p : problems) {
    p.allow_tf32 = true;
    check_pointwise<float>(p, true, true, 0, tf32_tolerance,
                           {dsconv::pointwise_variant::mma_large, dsconv::pointwise_variant::mma_small});
  }
}

TEMPLATE_TEST_CASE("pointwise: every variant matches the reference on every MobileNetV2 and EfficientNet-B0 1x1 layer",
                   "[pointwise][layers]", float, dsconv::half, dsconv::bfloat16) {
  // Every 224x224 shape at batch 1 in fp32; in half and bfloat16 the 6 largest (up to 20M
  // multiply-adds, slow to emulate) run only from the 32x32 tables (batch 4), which have the
  // same channel counts. Squeeze-excitation layers at batch 5. Both layouts.
  const long long cap = std::is_same<TestType, float>::value ? std::numeric_limits<long long>::max() : 11'000'000;
  const std::vector<layer_case> cases = layer_cases(layer_kind::pw, cap, {1}, 4);
  for (const layer_case& lc : cases) {
    INFO(lc.name());
    const layer_row& r = *lc.row;
    dsconv::pointwise_params p = make_params(lc.batch, r.cin, r.cout, r.h_in, r.h_in);
    p.data_layout = lc.data_layout;
    p.act = r.act;
    CHECK(r.h_out == r.h_in);
    check_pointwise<TestType>(p, lc.bias, lc.residual);
  }
}

TEMPLATE_TEST_CASE("pointwise: both layouts, every activation, with and without bias and residual",
                   "[pointwise][epilogue]", float, dsconv::half, dsconv::bfloat16) {
  const layout data_layout = GENERATE(layout::nchw, layout::nhwc);
  const activation act = GENERATE(activation::none, activation::relu, activation::relu6, activation::silu,
                                  activation::sigmoid, activation::hardswish);
  const bool with_bias = GENERATE(false, true);
  const bool with_residual = GENERATE(false, true);
  dsconv::pointwise_params p = make_params(2, 13, 7, 5, 3);
  p.data_layout = data_layout;
  p.act = act;
  check_pointwise<TestType>(p, with_bias, with_residual);
}

TEMPLATE_TEST_CASE("pointwise: odd channel counts, tiny maps, long dot products", "[pointwise][shapes]", float,
                   dsconv::half, dsconv::bfloat16) {
  const layout data_layout = GENERATE(layout::nchw, layout::nhwc);
  std::size_t i = 0;
  for (const shape_case& sc : odd_shapes) {
    INFO(sc.name);
    dsconv::pointwise_params p = make_params(sc.n, sc.c_in, sc.c_out, sc.h, sc.w);
    p.data_layout = data_layout;
    p.act = all_activations[i % 6];
    check_pointwise<TestType>(p, i % 3 != 2, i % 2 == 0);
    ++i;
  }
}

TEMPLATE_TEST_CASE("pointwise: input, weight, bias, residual and output misaligned by one element",
                   "[pointwise][misaligned]", float, dsconv::half, dsconv::bfloat16) {
  const layout data_layout = GENERATE(layout::nchw, layout::nhwc);
  // Channel counts and maps that are multiples of 4 and 8, where a vectorised path would be
  // chosen for aligned pointers, and odd ones.
  for (dsconv::pointwise_params p : {make_params(2, 32, 16, 8, 8), make_params(1, 64, 24, 4, 4),
                                     make_params(2, 24, 96, 2, 4), make_params(1, 5, 3, 7, 5)}) {
    p.data_layout = data_layout;
    p.act = activation::silu;
    check_pointwise<TestType>(p, true, true, 1);
  }
}

TEMPLATE_TEST_CASE("pointwise: split_k needs its workspace, gives the same bits every run, and checks the workspace",
                   "[pointwise][split_k]", float, dsconv::half) {
  using T = TestType;
  dsconv::pointwise_params p = make_params(1, 576, 40, 7, 7);  // a long K over a small map
  p.act = activation::relu6;
  const std::size_t pixels = static_cast<std::size_t>(p.n) * p.h * p.w, outputs = pixels * p.c_out;
  const device_input<T> input(random_tensor<T>(pixels * p.c_in));
  const device_input<T> weight(random_tensor<T>(static_cast<std::size_t>(p.c_out) * p.c_in));
  const std::size_t bytes = dsconv::pointwise_workspace_size<T>(p);
  REQUIRE(bytes > 0);
  REQUIRE(bytes % sizeof(float) == 0);
  dsconv::device_buffer<float> workspace;
  REQUIRE(workspace.allocate(bytes / sizeof(float)) == status::success);
  dsconv::pointwise_options options;
  options.variant = dsconv::pointwise_variant::split_k;

  SECTION("without enough workspace it fails before writing anything") {
    for (const std::size_t given : {std::size_t{0}, bytes - sizeof(float)}) {
      options.workspace = given ? workspace.data() : nullptr;
      options.workspace_bytes = given;
      guarded_output<T> out(outputs);
      CHECK(dsconv::pointwise_forward(p, options, input.data(), weight.data(), static_cast<const T*>(nullptr),
                                        static_cast<const T*>(nullptr), out.data()) ==
            status::insufficient_workspace);
      CHECK(out.untouched());
    }
  }
  SECTION("a workspace overlapping a tensor is refused") {
    guarded_output<T> out(outputs);
    options.workspace = out.data();
    options.workspace_bytes = bytes;
    CHECK(dsconv::pointwise_forward(p, options, input.data(), weight.data(), static_cast<const T*>(nullptr),
                                        static_cast<const T*>(nullptr), out.data()) ==
          status::overlapping_buffers);
    CHECK(out.untouched());
  }
  SECTION("two runs give identical bits (the slices are summed in a fixed order)") {
    options.workspace = workspace.data();
    options.workspace_bytes = bytes;
    std::vector<std::vector<T>> runs;
    for (int run = 0; run < 2; ++run) {
      guarded_output<T> out(outputs);
      REQUIRE(dsconv::pointwise_forward(p, options, input.data(), weight.data(), static_cast<const T*>(nullptr),
                                        static_cast<const T*>(nullptr), out.data()) ==
              status::success);
      REQUIRE(dsconv::synchronize() == status::success);
      runs.push_back(out.download_checked());
    }
    CHECK(std::memcmp(runs[0].data(), runs[1].data(), outputs * sizeof(T)) == 0);
  }
  SECTION("automatic picks split_k only when the workspace is there and the tiles leave the device idle") {
    dsconv::platform::device_properties dev;
    REQUIRE(dsconv::platform::get_device_properties(dev) == status::success);
    options.variant = dsconv::pointwise_variant::automatic;
    CHECK(dsconv::select_variant<T>(p, options) != dsconv::pointwise_variant::split_k);
    options.workspace = workspace.data();
    options.workspace_bytes = bytes;
    // One 64x64 tile: split_k wherever the device has more than one multiprocessor.
    CHECK((dsconv::select_variant<T>(p, options) == dsconv::pointwise_variant::split_k) ==
          (dev.multiprocessor_count > 1));
  }
}
