// dsconv::pointwise_forward against the double reference: every variant (forced through the
// options overload) and automatic, for float, half and bfloat16, on every 1x1 layer of
// MobileNetV2 and EfficientNet-B0 (squeeze-excitation included) and on odd shapes, with both
// layouts and every epilogue (bias, residual, activation).
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstring>
#include <algorithm>
#include <atomic>
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

using dsconv::pointwise_variant;

// Whether `variant` must run `p` with elements of type T on `dev`, by the variants' documented
// contract (independent of the planner, so a planner that wrongly refused a problem fails the
// tests): warp_dot takes GEMMs with a side of at most 8 (NCHW with maps larger than 1x1 is a
// c_out x pixels GEMM per image, everything else one (n * pixels) x c_out GEMM); the matrix-unit
// variants need a matrix unit (float on NVIDIA's in TF32 parts, or rounded to TF32 with
// allow_tf32); Turing's multiplies half only; split_k needs more than
// one 32-channel slice of K; mma_stream takes NHWC 16-bit problems with c_in and c_out multiples
// of 8 (c_in at most 3072: one slice's weights in 48 KB) on NVIDIA's tensor cores that multiply
// the type; the rest take everything.
template <class T>
bool supports(pointwise_variant variant, const dsconv::pointwise_params& p, const dsconv::platform::device_properties& dev) {
  const long long pixels = static_cast<long long>(p.h) * p.w;
  const bool per_image = p.data_layout == layout::nchw && pixels > 1;
  switch (variant) {
    case pointwise_variant::warp_dot:
      return std::min<long long>(per_image ? p.c_out : p.n * pixels, per_image ? pixels : p.c_out) <= 8;
    case pointwise_variant::mma_large:
    case pointwise_variant::mma_small:
      if (dev.matrix == dsconv::platform::matrix_unit::mma_sync_f16) return std::is_same<T, dsconv::half>::value;
      return dev.matrix != dsconv::platform::matrix_unit::none;
    case pointwise_variant::split_k: return p.c_in > 32;
    case pointwise_variant::mma_stream:
      return p.data_layout == layout::nhwc && sizeof(T) == 2 && p.c_in % 8 == 0 && p.c_out % 8 == 0 && p.c_in <= 3072 &&
             (dev.matrix == dsconv::platform::matrix_unit::mma_sync ||
              (dev.matrix == dsconv::platform::matrix_unit::mma_sync_f16 && std::is_same<T, dsconv::half>::value));
    default: return true;
  }
}

// Whether `variant` (automatic: the variant it chooses) multiplies on the matrix unit: the
// matrix-unit variants, and split_k wherever mma_small could run.
template <class T>
bool on_matrix_unit(pointwise_variant variant, const dsconv::pointwise_params& p, const dsconv::pointwise_options& options,
                    const dsconv::platform::device_properties& dev) {
  if (variant == pointwise_variant::automatic) variant = dsconv::select_variant<T>(p, options);
  return variant == pointwise_variant::mma_large || variant == pointwise_variant::mma_small ||
         variant == pointwise_variant::mma_stream ||
         (variant == pointwise_variant::split_k && supports<T>(pointwise_variant::mma_small, p, dev));
}

// Random tensors of a forward problem: input, weight, bias and a residual of the output's size.
template <class T>
struct pointwise_tensors {
  explicit pointwise_tensors(const dsconv::pointwise_params& p)
      : pixels(static_cast<std::size_t>(p.n) * p.h * p.w),
        input(random_tensor<T>(pixels * p.c_in)),
        weight(random_tensor<T>(static_cast<std::size_t>(p.c_out) * p.c_in)),
        bias(random_tensor<T>(static_cast<std::size_t>(p.c_out))),
        residual(random_tensor<T>(pixels * p.c_out)) {}
  std::size_t pixels;
  std::vector<T> input, weight, bias, residual;
};

// Runs `p` with random data through `variants` (default: automatic and each variant) and
// checks each result; a variant outside its contract must refuse before launching or writing
// anything. On a matrix unit, float operands are rounded to TF32 or split into two TF32 parts
// on NVIDIA's (allowed error from it), and 16-bit subnormal operands read as zero on AMD's
// (compared with the reference of the flushed operands).
template <class T>
void check_pointwise(const dsconv::pointwise_params& p, bool with_bias, bool with_residual, std::size_t misalign = 0,
                     const std::vector<pointwise_variant>& variants = variants_with_automatic(dsconv::all_pointwise_variants)) {
  const dsconv::platform::device_properties dev = current_device();
  INFO(type_name<T>() << ", " << describe(p) << (with_bias ? ", bias" : ", no bias")
                      << (with_residual ? ", residual" : ", no residual") << ", misaligned by " << misalign
                      << (p.allow_tf32 ? ", TF32 allowed" : "") << ", device " << dev.name);
  const pointwise_tensors<T> data(p);
  const std::size_t pixels = data.pixels;
  const std::vector<T>& input = data.input;
  const std::vector<T>& weight = data.weight;
  const std::vector<T>& bias = data.bias;
  const std::vector<T>& residual = data.residual;
  const T* bias_or_null = with_bias ? bias.data() : nullptr;
  const std::vector<T>* residual_or_null = with_residual ? &residual : nullptr;

  // z = conv + bias (+ residual) of the given operands, without the activation
  dsconv::pointwise_params linear = p;
  linear.act = activation::none;
  const auto reference_z = [&](const std::vector<T>& x, const std::vector<T>& w) {
    std::vector<double> z(pixels * p.c_out);
    REQUIRE(dsconv::reference::pointwise_forward(linear, x.data(), w.data(), bias_or_null,
                                                 with_residual ? residual.data() : nullptr, z.data()) == status::success);
    return z;
  };
  const std::vector<double> ref_z = reference_z(input, weight);
  const std::vector<double> ref = activated(ref_z, p.act);
  std::vector<double> ref_flushed;  // made when a variant needs it
  const error_bound exact = pointwise_bound(p, input, weight, bias_or_null, residual_or_null);
  const error_bound on_tensor_cores = pointwise_bound(p, input, weight, bias_or_null, residual_or_null,
                                                      float_matrix_operand_unit(dev.matrix, p.allow_tf32));

  const device_input<T> d_input(input, misalign), d_weight(weight, misalign), d_bias(bias, misalign),
      d_residual(residual, misalign);
  // split_k's workspace, guarded like an output: nothing past it may be written. Every
  // variant gets it, so automatic may choose split_k too.
  const std::size_t workspace_bytes = dsconv::pointwise_workspace_size<T>(p);
  CHECK((workspace_bytes > 0) == supports<T>(pointwise_variant::split_k, p, dev));
  guarded_output<float> workspace(workspace_bytes / sizeof(float));
  int place = saved_form_turn();
  for (const pointwise_variant variant : variants) {
    const saved_form form = static_cast<saved_form>(place++ % 3);
    INFO("variant " << dsconv::to_string(variant) << ", saving "
                    << (form == saved_form::nothing ? "nothing" : form == saved_form::derivative ? "act'(z)" : "z"));
    guarded_output<T> out(ref.size(), misalign), saved(ref.size(), misalign);
    const bool expected = supports<T>(variant, p, dev);
    CHECK(dsconv::can_implement<T>(variant, p) == (expected ? status::success : status::unsupported_variant));
    dsconv::pointwise_options options;
    options.variant = variant;
    options.workspace = workspace_bytes ? workspace.data() : nullptr;
    options.workspace_bytes = workspace_bytes;
    if (form == saved_form::pre_activation) options.pre_activation = saved.data();
    if (form == saved_form::derivative) options.activation_derivative = saved.data();
    const unsigned long long launches = launches_so_far();
    const status s = dsconv::pointwise_forward(p, options, d_input.data(), d_weight.data(),
                                               with_bias ? d_bias.data() : nullptr,
                                               with_residual ? d_residual.data() : nullptr, out.data());
    if (!expected) {
      check_refused_cleanly(s, launches, out);
      CHECK(saved.untouched());
      continue;
    }
    REQUIRE(s == status::success);
    REQUIRE(dsconv::synchronize() == status::success);
    const bool matrix = on_matrix_unit<T>(variant, p, options, dev);
    const bool as_tf32 = matrix && std::is_same<T, float>::value && dev.matrix == dsconv::platform::matrix_unit::mma_sync;
    const bool flushes = matrix && !std::is_same<T, float>::value && dev.matrix == dsconv::platform::matrix_unit::mfma;
    if (flushes && ref_flushed.empty()) ref_flushed = activated(reference_z(flush_subnormals(input), flush_subnormals(weight)), p.act);
    const error_bound& bound = as_tf32 ? on_tensor_cores : exact;
    check_close(out.download_checked(), flushes ? ref_flushed : ref, bound);
    if (form == saved_form::nothing) {
      CHECK(saved.untouched());
    } else {
      // (against z's reference where no operand was flushed: it is of the unflushed operands)
      const std::vector<T> got = saved.download_checked();
      if (form == saved_form::pre_activation && !flushes) check_close(got, ref_z, bound);
      if (form == saved_form::derivative && !flushes) check_derivative(got, ref_z, bound, p.act);
    }
    if (workspace_bytes) (void)workspace.download_checked();  // checks the guards around it
  }
}

// Shapes the network layers do not have: one input or output channel, odd channel counts and
// extents, 1x1 and 2x2 maps, long dot products.
// clang-format off
const pointwise_shape_case odd_shapes[] = {
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
    {"4x4 map, 96 -> 24 (aligned rows)",      2,   96,   24,   4,   4},
};
// clang-format on

}  // namespace

bool is_tensor_core(pointwise_variant v) {
  return v == pointwise_variant::mma_large || v == pointwise_variant::mma_small || v == pointwise_variant::mma_stream;
}

TEMPLATE_TEST_CASE("pointwise: every variant accepts every network layer its contract covers, at batch 1 to 128",
                   "[pointwise][layers]", float, dsconv::half, dsconv::bfloat16) {
  const dsconv::platform::device_properties dev = current_device();
  for (const bool tf32 : {false, true})
    for (const int batch : {1, 8, 32, 128})
      for (const layer_row& r : network_layers) {
        if (r.kind != layer_kind::pw) continue;
        for (const layout data_layout : all_layouts) {
          dsconv::pointwise_params p = make_params(batch, r.cin, r.cout, r.h_in, r.h_in);
          p.data_layout = data_layout;
          p.act = r.act;
          p.allow_tf32 = tf32;
          for (const pointwise_variant variant : dsconv::all_pointwise_variants) {
            INFO(describe(p) << (tf32 ? ", TF32 allowed" : "") << ", variant " << dsconv::to_string(variant)
                             << ", device " << dev.name);
            CHECK(dsconv::can_implement<TestType>(variant, p) ==
                  (supports<TestType>(variant, p, dev) ? status::success : status::unsupported_variant));
          }
          // The heuristic chooses only what the device can run.
          CHECK(supports<TestType>(dsconv::select_variant<TestType>(p), p, dev));
        }
      }
}

#if defined(DSCONV_PLATFORM_HOST)
TEST_CASE("pointwise: a build without matrix-unit code never chooses the matrix-unit variants, even on a device with "
          "a matrix unit",
          "[pointwise]") {
  // As a CUDA build for sm_75 alone runs on an A100: its matrix-unit kernels would trap there.
  struct restore_matrix_code {
    ~restore_matrix_code() { dsconv::host::set_matrix_code(true); }
  } restore;
  const bool device_has_unit = current_device().matrix != dsconv::platform::matrix_unit::none;
  dsconv::host::set_matrix_code(false);
  CHECK(current_device().matrix == dsconv::platform::matrix_unit::none);
  // (95 input channels: rows too short for vectors, the tiles' element form; on NVIDIA
  // profiles only this test reaches the SIMT split_k kernels for half.)
  for (const auto& [data_layout, c_in] : {std::pair{layout::nchw, 96}, std::pair{layout::nhwc, 96},
                                          std::pair{layout::nchw, 95}, std::pair{layout::nhwc, 95}}) {
    dsconv::pointwise_params p = make_params(2, c_in, 64, 8, 8);
    p.data_layout = data_layout;
    p.allow_tf32 = true;
    for (const pointwise_variant v :
         {pointwise_variant::mma_large, pointwise_variant::mma_small, pointwise_variant::mma_stream}) {
      CHECK(dsconv::can_implement<dsconv::half>(v, p) == status::unsupported_variant);
      CHECK(dsconv::can_implement<float>(v, p) == status::unsupported_variant);
    }
    CHECK_FALSE(is_tensor_core(dsconv::select_variant<dsconv::half>(p)));
    // Every variant, automatic and split_k included, runs without the matrix unit.
    check_pointwise<dsconv::half>(p, true, false);
  }
  dsconv::host::set_matrix_code(true);
  CHECK((current_device().matrix != dsconv::platform::matrix_unit::none) == device_has_unit);
}
#endif

TEST_CASE("pointwise: float takes NVIDIA's tensor cores (sm_80+) with or without allow_tf32, AMD's matrix cores, not "
          "Turing's",
          "[pointwise][tf32]") {
  dsconv::platform::device_properties dev;
  REQUIRE(dsconv::platform::get_device_properties(dev) == status::success);
  const bool takes = dev.matrix == dsconv::platform::matrix_unit::mfma || dev.matrix == dsconv::platform::matrix_unit::mma_sync;
  dsconv::pointwise_params p = make_params(2, 32, 48, 8, 8);
  for (const bool tf32 : {false, true}) {
    p.allow_tf32 = tf32;
    for (const dsconv::pointwise_variant v : {dsconv::pointwise_variant::mma_large, dsconv::pointwise_variant::mma_small}) {
      INFO(dsconv::to_string(v) << (tf32 ? ", TF32 allowed" : ""));
      CHECK(dsconv::can_implement<float>(v, p) == (takes ? status::success : status::unsupported_variant));
    }
    CHECK(is_tensor_core(dsconv::select_variant<float>(p)) == takes);
  }
}

// Without allow_tf32, float keeps about its own accuracy on every device: on NVIDIA's tensor
// cores by two TF32 parts and three products, nearer the reference than TF32 rounding can be
// (with K = 512 the error of one TF32 product each exceeds the split's bound: the test fails
// where the split is lost), on AMD's in fp32, elsewhere on the SIMT cores (where the
// matrix-unit variants refuse it cleanly).
TEST_CASE("pointwise: float without allow_tf32 keeps about fp32's accuracy on every device's matrix unit",
          "[pointwise][tf32]") {
  dsconv::pointwise_params p = make_params(2, 512, 64, 4, 4);
  for (const layout data_layout : all_layouts) {
    p.data_layout = data_layout;
    check_pointwise<float>(p, true, false, 0,
                           {pointwise_variant::automatic, pointwise_variant::mma_large, pointwise_variant::mma_small});
  }
}

// With TF32 allowed, float through every variant that may take the matrix unit (automatic and
// split_k among them), both layouts: within TF32 accuracy on NVIDIA's, exact fp32 elsewhere.
void check_tf32(std::vector<dsconv::pointwise_params> problems) {
  for (dsconv::pointwise_params p : problems) {
    p.allow_tf32 = true;
    check_pointwise<float>(p, true, true, 0,
                           {pointwise_variant::automatic, pointwise_variant::mma_large, pointwise_variant::mma_small,
                            pointwise_variant::split_k});
  }
}

TEST_CASE("pointwise: with TF32 allowed, float matches the reference within TF32 accuracy on odd shapes",
          "[pointwise][tf32]") {
  std::vector<dsconv::pointwise_params> problems;
  std::size_t i = 0;
  for (const pointwise_shape_case& sc : odd_shapes)
    for (const layout data_layout : all_layouts) {
      dsconv::pointwise_params p = make_params(sc.n, sc.c_in, sc.c_out, sc.h, sc.w);
      p.data_layout = data_layout;
      p.act = all_activations[i++ % 6];
      problems.push_back(p);
    }
  check_tf32(problems);
}

TEST_CASE("pointwise: with TF32 allowed, float matches the reference within TF32 accuracy on the network layers",
          "[pointwise][tf32][network]") {
  // Every 1x1 layer of the 32x32 tables at batch 4 (squeeze-excitation at batch 5).
  std::vector<dsconv::pointwise_params> problems;
  for (const layer_case& lc : layer_cases(layer_kind::pw, 0, {}, 4)) {
    const layer_row& r = *lc.row;
    dsconv::pointwise_params p = make_params(lc.batch, r.cin, r.cout, r.h_in, r.h_in);
    p.data_layout = lc.data_layout;
    p.act = r.act;
    problems.push_back(p);
  }
  check_tf32(problems);
}

TEMPLATE_TEST_CASE("pointwise: every variant matches the reference on every MobileNetV2 and EfficientNet-B0 1x1 layer",
                   "[pointwise][layers][network]", float, dsconv::half, dsconv::bfloat16) {
  // Every 224x224 shape of at most 5M multiply-adds at batch 1; the larger ones (slow to emulate
  // on the matrix units, which float's variants use too, as three tf32 products) run only from
  // the 32x32 tables (batch 4), which have the same channel counts. (Uncapped, float's 26 larger
  // shapes were 300M of the sweep's 366M multiply-adds a layout, and the sweep 57 s, the suite's
  // longest test.) Squeeze-excitation layers at batch 5. Both layouts. (On the warp-64 sweep,
  // a lower cap: network_sweep_cap.) bfloat16 runs the same kernels as half but for its
  // conversions and matrix instructions: the 32x32 tables and squeeze-excitation layers only,
  // and every variant in this file's tests of odd shapes, epilogues and misaligned buffers.
  const long long cap = std::is_same<TestType, dsconv::bfloat16>::value ? 0 : 5'000'000;
  const std::vector<layer_case> cases = layer_cases(layer_kind::pw, network_sweep_cap(cap), {1}, 4);
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
  for (const pointwise_shape_case& sc : odd_shapes) {
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

// mma_stream's two forms (kernels/pointwise/nhwc_stream.hpp) on what the network layers may
// not reach: tiles cut by the last pixel, warps that walk several tiles (planned for a device of
// one multiprocessor: with the next tile's loads in flight, at most two chunks, and without),
// the held form's blocks of fewer slices than the layer has (grid rows), K of one to seven
// chunks with a partial last one, one to four blocks of 8 outputs a slice, every activation,
// with bias and residual or without either, and the activation's input kept (pre_activation) or
// its derivative;
// both outputs against the reference, and the plan's form as its rule says.
TEMPLATE_TEST_CASE("pointwise: mma_stream's held and streaming forms on cut tiles, walks, blocks of slices and every "
                   "epilogue",
                   "[pointwise][stream]", dsconv::half, dsconv::bfloat16) {
  using T = TestType;
  struct stream_case {
    int n, c_in, c_out, h, w;
    bool held;
    int slice_tiles, block_slices, grid_rows;
  };
  // clang-format off
  const stream_case cases[] = {
      // n c_in c_out  h   w   held  NB block rows
      {2,  40,   32,  33, 33, true,   4,  1,    1},  // two chunks (the second partial); 69 tiles, 32 warps
      {1,  24,   96,   9,  9, true,   4,  3,    1},  // one partial chunk; 81 pixels
      {1,  64, 1024,   3,  5, true,   4,  8,    4},  // 32 slices of 5120 bytes: blocks of 8
      {3,  16,   16,   4,  4, true,   2,  1,    1},  // half a chunk, one slice
      {1,  24,   48,   6,  6, true,   3,  2,    1},  // 3 blocks a slice
      {2,  32,    8,   7,  9, true,   1,  1,    1},  // one block
      {2,  72,   48,   5,  5, true,   3,  2,    1},  // three chunks, 3 blocks a slice
      {1,  96,   16,  40, 40, true,   2,  1,    1},  // three chunks; 50 tiles, 32 warps
      {2, 112,   64,   5,  7, true,   4,  2,    1},  // four chunks
      {1,  96,   40,   7,  7, true,   1,  5,    1},  // one block a slice
      {1, 160,   24,   5,  5, false,  3,  1,    1},  // streaming: five chunks, 3 blocks
      {2, 200,   40,   3,  5, false,  1,  1,    5},  // streaming: seven chunks, the last partial
      {1, 136,   64,   3,  3, false,  4,  1,    2},  // streaming: 4 blocks a slice
      {1, 144,   80,   3,  4, false,  2,  1,    5},  // streaming: 2 blocks a slice, five slices
      {2, 256,   16,   5,  3, false,  2,  1,    1},  // streaming: 2 blocks, eight whole chunks
  };
  // clang-format on
  dsconv::platform::device_properties dev = current_device();
  dev.multiprocessor_count = 1;
  int i = 0;
  for (const stream_case& c : cases)
    for (const bool with_residual : {true, false}) {
      dsconv::pointwise_params p = make_params(c.n, c.c_in, c.c_out, c.h, c.w);
      p.data_layout = layout::nhwc;
      p.act = all_activations[i++ % 6];
      INFO(describe(p) << (with_residual ? ", residual" : ", no residual") << ", device " << dev.name);
      if (!supports<T>(pointwise_variant::mma_stream, p, dev)) {  // (no tensor cores for the type here)
        CHECK(dsconv::can_implement<T>(pointwise_variant::mma_stream, p) == status::unsupported_variant);
        continue;
      }
      dsconv::detail::stream_plan plan;
      REQUIRE(dsconv::detail::plan_stream(p, dev, nullptr, nullptr, nullptr, nullptr, nullptr, plan));
      CHECK(plan.held == c.held);
      CHECK(plan.tile.slice_tiles == c.slice_tiles);
      CHECK(plan.tile.block_slices == c.block_slices);
      CHECK(static_cast<int>(plan.grid.y) == c.grid_rows);
      const pointwise_tensors<T> data(p);
      const std::size_t pixels = data.pixels;
      const T* residual_host = with_residual ? data.residual.data() : nullptr;
      const T* bias_host = with_residual ? data.bias.data() : nullptr;
      dsconv::pointwise_params linear = p;
      linear.act = activation::none;
      std::vector<double> ref_pre(pixels * p.c_out);
      REQUIRE(dsconv::reference::pointwise_forward(linear, data.input.data(), data.weight.data(), bias_host,
                                                   residual_host, ref_pre.data()) == status::success);
      const std::vector<double> ref = activated(ref_pre, p.act);
      const device_input<T> d_input(data.input), d_weight(data.weight), d_bias(data.bias),
          d_residual(data.residual);
      guarded_output<T> out(ref.size()), pre(ref.size());
      const bool derivative = i % 4 >= 2;  // (act'(z) saved on half the cases, z on the others)
      REQUIRE(dsconv::detail::launch_stream<T>(p, dev, dsconv::stream_t{}, d_input.data(), d_weight.data(),
                                               with_residual ? d_bias.data() : nullptr,
                                               with_residual ? d_residual.data() : nullptr, out.data(), pre.data(),
                                               derivative) == status::success);
      REQUIRE(dsconv::synchronize() == status::success);
      const std::vector<T>* residual_or_null = with_residual ? &data.residual : nullptr;
      const error_bound bound = pointwise_bound(p, data.input, data.weight, bias_host, residual_or_null);
      check_close(out.download_checked(), ref, bound);
      if (derivative)
        check_derivative(pre.download_checked(), ref_pre, bound, p.act);
      else
        check_close(pre.download_checked(), ref_pre, bound);
    }
}

// The GEMM kernels' vector forms take a run as wholly inside the matrix or wholly outside
// (gemm_staging.hpp's k_cursor): an operand's alignment must count its rows' extent along
// them, not only their stride and start.
TEST_CASE("pointwise: an operand is aligned for a run only where its rows hold whole runs", "[pointwise][misaligned]") {
  alignas(16) static const dsconv::half buffer[64] = {};
  using dsconv::detail::operand_alignment;
  // 16-byte rows that start aligned: 16-byte runs ...
  CHECK(operand_alignment(buffer, 8, 0, 8, sizeof(dsconv::half)) == 16);
  // ... but not where a row holds 6 elements of its 8 (12 bytes: 4-byte runs at most).
  CHECK(operand_alignment(buffer, 8, 0, 6, sizeof(dsconv::half)) == 4);
  // The start, the stride and the offset between GEMMs count as before.
  CHECK(operand_alignment(buffer + 1, 8, 0, 8, sizeof(dsconv::half)) == 2);
  CHECK(operand_alignment(buffer, 12, 0, 12, sizeof(dsconv::half)) == 8);
  CHECK(operand_alignment(buffer, 8, 4, 8, sizeof(dsconv::half)) == 8);
}

TEMPLATE_TEST_CASE("pointwise: split_k needs its own workspace, and automatic takes it only when given",
                   "[pointwise][split_k]", float, dsconv::half) {
  using T = TestType;
  dsconv::pointwise_params p = make_params(1, 576, 40, 7, 7);  // a long K over a small map
  p.act = activation::relu6;
  const std::size_t pixels = static_cast<std::size_t>(p.n) * p.h * p.w, outputs = pixels * p.c_out;
  const std::size_t bytes = dsconv::pointwise_workspace_size<T>(p);
  REQUIRE(bytes > 0);
  REQUIRE(bytes % sizeof(float) == 0);
  // The input and the weight inside one poisoned allocation, so a workspace can overlap them.
  guarded_output<T> inputs(pixels * p.c_in + static_cast<std::size_t>(p.c_out) * p.c_in);
  const T* input = inputs.data();
  const T* weight = inputs.data() + pixels * p.c_in;
  guarded_output<float> workspace(bytes / sizeof(float));
  dsconv::pointwise_options options;
  options.variant = dsconv::pointwise_variant::split_k;
  // Refused before anything is launched or written: not the output, not the workspace.
  const auto expect_refused = [&](status expected, T* output) {
    guarded_output<T> out(outputs);
    const unsigned long long launches = launches_so_far();
    CHECK(dsconv::pointwise_forward(p, options, input, weight, static_cast<const T*>(nullptr),
                                    static_cast<const T*>(nullptr), output ? output : out.data()) == expected);
    CHECK(launches_so_far() == launches);
    CHECK(out.untouched());
    CHECK(workspace.untouched());
    CHECK(inputs.untouched());
  };

  SECTION("without enough workspace it fails before writing anything") {
    for (const std::size_t given : {std::size_t{0}, bytes - sizeof(float)}) {
      options.workspace = given ? workspace.data() : nullptr;
      options.workspace_bytes = given;
      expect_refused(status::insufficient_workspace, nullptr);
    }
  }
  SECTION("a workspace overlapping the output, the input or the weight is refused") {
    guarded_output<T> out(outputs);
    options.workspace_bytes = bytes;
    options.workspace = out.data() + 1;
    expect_refused(status::overlapping_buffers, out.data());
    CHECK(out.untouched());
    options.workspace = inputs.data();
    expect_refused(status::overlapping_buffers, nullptr);
    options.workspace = inputs.data() + pixels * p.c_in - 1;
    expect_refused(status::overlapping_buffers, nullptr);
  }
  SECTION("automatic picks split_k only when the workspace is there and the tiles leave the device idle") {
    const dsconv::platform::device_properties dev = current_device();
    options.variant = dsconv::pointwise_variant::automatic;
    CHECK(dsconv::select_variant<T>(p, options) != dsconv::pointwise_variant::split_k);
    options.workspace = workspace.data();
    options.workspace_bytes = bytes;
    // One 64x64 tile: split_k wherever the device has more than one multiprocessor.
    CHECK((dsconv::select_variant<T>(p, options) == dsconv::pointwise_variant::split_k) ==
          (dev.multiprocessor_count > 1));
  }
}

TEST_CASE("pointwise: automatic runs the forward variant its architecture measured fastest, where that variant runs "
          "the call", "[pointwise][tuning]") {
  namespace t = dsconv::detail::tuning;
  namespace d = dsconv::detail;
  using dsconv::pointwise_variant;
  const dsconv::platform::device_properties dev = current_device();
  INFO("device " << dev.name << ", architecture " << dev.arch);
  // 32 -> 16 at 112x112, NHWC half: gemm_large (which the rule never takes) fastest at batch 8;
  // 576 -> 40 at 7x7 (a long K over a small map): split_k at batch 1.
  const t::variant_row rows[] = {{'p', 32, 16, 1, 1, 112, 8, 'h', 'h', "gemm_large", 10.0},
                                 {'p', 576, 40, 1, 1, 7, 1, 'h', 'h', "split_k", 5.0}};
  const t::variant_table tables[] = {{dev.arch, "a test GPU", "today", t::variant_kernels_revision, rows, 2}};
  const t::variant_table none[] = {{"sm_none", "another GPU", "today", t::variant_kernels_revision, rows, 2}};
  dsconv::pointwise_params p = make_params(8, 32, 16, 112, 112);
  p.data_layout = layout::nhwc;
  const auto chosen = [&](d::gemm_pass pass, std::size_t workspace, const t::variant_table* with) {
    return d::choose_pointwise<dsconv::half>(pass, p, dev, workspace, with, 1);
  };
  CHECK(chosen(d::gemm_pass::forward, 0, tables) == pointwise_variant::gemm_large);
  CHECK(chosen(d::gemm_pass::forward, 0, none) != pointwise_variant::gemm_large);
  // The backward passes were not measured: the rule.
  CHECK(chosen(d::gemm_pass::backward_data, 0, tables) == chosen(d::gemm_pass::backward_data, 0, none));
  CHECK(d::choose_pointwise<float>(d::gemm_pass::forward, p, dev, 0, tables, 1) ==
        d::choose_pointwise<float>(d::gemm_pass::forward, p, dev, 0, none, 1));  // float not measured
  p = make_params(1, 576, 40, 7, 7);
  p.data_layout = layout::nhwc;
  const std::size_t bytes = dsconv::pointwise_workspace_size<dsconv::half>(p);
  REQUIRE(bytes > 0);
  CHECK(chosen(d::gemm_pass::forward, bytes, tables) == pointwise_variant::split_k);
  // Without its workspace the winner cannot run: the rule's choice.
  CHECK(chosen(d::gemm_pass::forward, bytes - 4, tables) == chosen(d::gemm_pass::forward, bytes - 4, none));
  CHECK(chosen(d::gemm_pass::forward, bytes - 4, tables) != pointwise_variant::split_k);
}

#if defined(DSCONV_PLATFORM_HOST)
TEMPLATE_TEST_CASE("pointwise: the GEMM kernels' shared-memory stores and loads are free of bank conflicts",
                   "[pointwise][banks]", float, dsconv::half, dsconv::bfloat16) {
  // Every tiled variant in both layouts, on operands aligned for the vector forms and
  // misaligned (the element forms), float also on TF32; the device's matrix unit (or the SIMT
  // kernels where it has none).
  const bool tf32_device = current_device().matrix == dsconv::platform::matrix_unit::mma_sync;
  for (const bool tf32 : {false, true}) {
    if (tf32 && !(std::is_same<TestType, float>::value && tf32_device)) continue;
    for (const layout data_layout : all_layouts)
      for (const std::size_t misalign : {std::size_t{0}, std::size_t{1}}) {
        dsconv::pointwise_params p = make_params(2, 96, 80, 12, 12);
        p.data_layout = data_layout;
        p.allow_tf32 = tf32;
        const std::size_t pixels = static_cast<std::size_t>(p.n) * p.h * p.w;
        const device_input<TestType> x(random_tensor<TestType>(pixels * p.c_in), misalign);
        const device_input<TestType> w(random_tensor<TestType>(static_cast<std::size_t>(p.c_out) * p.c_in), misalign);
        guarded_output<TestType> y(pixels * p.c_out, misalign);
        dsconv::device_buffer<float> workspace;
        REQUIRE(workspace.allocate(dsconv::pointwise_workspace_size<TestType>(p) / sizeof(float)) == status::success);
        for (const pointwise_variant v : {pointwise_variant::gemm_large, pointwise_variant::gemm_small,
                                          pointwise_variant::mma_large, pointwise_variant::mma_small,
                                          pointwise_variant::split_k}) {
          if (!supports<TestType>(v, p, current_device())) continue;
          INFO(describe(p) << (tf32 ? ", TF32" : "") << ", misaligned by " << misalign << ", variant "
                           << dsconv::to_string(v));
          dsconv::pointwise_options options;
          options.variant = v;
          options.workspace = workspace.data();
          options.workspace_bytes = dsconv::pointwise_workspace_size<TestType>(p);
          dsconv::host::traffic_recorder recorder;
          REQUIRE(dsconv::pointwise_forward(p, options, x.data(), w.data(), static_cast<const TestType*>(nullptr),
                                            static_cast<const TestType*>(nullptr), y.data()) == status::success);
          for (const auto& launch : recorder.launches()) {
            INFO(launch.kernel);
            if (launch.traffic.shared_loads.requests == 0) continue;  // split_k's reduction
            CHECK(launch.traffic.shared_loads.conflict_factor() <= 1.1);
            CHECK(launch.traffic.shared_stores.conflict_factor() <= 1.1);
          }
        }
      }
  }
}
#endif

namespace {

// Runs `launch` (which fills `out`) several times, on the host platform once per combination
// of worker count, block order and thread schedule; true when every run gave the bits of the
// first.
template <class T, class Launch>
bool same_bits_under_every_order(std::size_t outputs, Launch launch) {
  std::vector<T> first;
  bool same = true;
  const auto run = [&] {
    guarded_output<T> out(outputs);
    launch(out.data());
    REQUIRE(dsconv::synchronize() == status::success);
    const std::vector<T> bits = out.download_checked();
    if (first.empty())
      first = bits;
    else
      same = same && std::memcmp(first.data(), bits.data(), outputs * sizeof(T)) == 0;
  };
#if defined(DSCONV_PLATFORM_HOST)
  const int workers = dsconv::host::worker_count();
  const dsconv::host::block_order blocks = dsconv::host::current_block_order();
  const dsconv::host::schedule threads = dsconv::host::current_schedule();
  for (const int w : {1, 3})
    for (const auto order : {dsconv::host::block_order::ascending, dsconv::host::block_order::descending,
                             dsconv::host::block_order::shuffle})
      for (const auto schedule : {dsconv::host::schedule::rotate, dsconv::host::schedule::shuffle}) {
        REQUIRE(dsconv::host::set_worker_count(w) == status::success);
        dsconv::host::set_block_order(order);
        dsconv::host::set_schedule(schedule);
        run();
      }
  dsconv::host::set_worker_count(workers);
  dsconv::host::set_block_order(blocks);
  dsconv::host::set_schedule(threads);
#else
  for (int i = 0; i < 4; ++i) run();
#endif
  return same;
}

// The multiprocessor counts split_k is tested at: on the host platform several (they set the
// slice count), on a GPU its own.
std::vector<int> multiprocessor_counts() {
#if defined(DSCONV_PLATFORM_HOST)
  return {1, 4, 8, 108};
#else
  return {current_device().multiprocessor_count};
#endif
}

void use_multiprocessors(const dsconv::platform::device_properties& device, int count) {
#if defined(DSCONV_PLATFORM_HOST)
  dsconv::platform::device_properties d = device;
  d.multiprocessor_count = count;
  REQUIRE(dsconv::host::set_device(d) == status::success);
#else
  (void)device, (void)count;
#endif
}

#if defined(DSCONV_PLATFORM_HOST)
// A sum whose order depends on the order blocks run in: each block adds its value to out[0]
// (with a compare-and-swap, as a float atomicAdd would), the reduction that split_k's fixed
// slice order avoids.
DSCONV_KERNEL void add_in_block_order(const float* values, std::atomic<float>* out) {
  if (dsconv::platform::thread_idx().x != 0) return;
  const float v = values[dsconv::platform::block_idx().x];
  float old = out->load();
  while (!out->compare_exchange_weak(old, old + v)) {
  }
}
#endif

}  // namespace

#if defined(DSCONV_PLATFORM_HOST)
TEST_CASE("pointwise: the determinism check fails for a sum in block order", "[pointwise][split_k]") {
  // Values whose float sum depends on the order: 1e8 + 1 + ... loses the ones, ... + 1e8 keeps some.
  std::vector<float> values(64, 1.0f);
  values[0] = 1e8f;
  values[63] = -1e8f;
  dsconv::device_buffer<float> d_values;
  REQUIRE(d_values.upload(values) == status::success);
  dsconv::platform::launch_config cfg;
  cfg.grid = dsconv::platform::dims{64, 1, 1};
  cfg.block = dsconv::platform::dims{32, 1, 1};
  CHECK_FALSE(same_bits_under_every_order<float>(1, [&](float* out) {
    std::atomic<float> sum{0.f};
    REQUIRE(dsconv::platform::launch(add_in_block_order, cfg, d_values.data(), &sum) == status::success);
    const float result = sum.load();
    REQUIRE(dsconv::platform::copy_to_device(out, &result, sizeof result) == status::success);
  }));
}
#endif

TEMPLATE_TEST_CASE("pointwise: split_k gives the same bits whatever the workers, block order and thread schedule, "
                   "for every slice count",
                   "[pointwise][split_k]", float, dsconv::half, dsconv::bfloat16) {
  using T = TestType;
  const dsconv::platform::device_properties device = current_device();
  dsconv::pointwise_params p = make_params(1, 576, 40, 7, 7);  // a long K over a small map: 1 tile of 64x64
  p.act = activation::relu6;
  for (const layout data_layout : all_layouts) {
    p.data_layout = data_layout;
    const std::size_t pixels = static_cast<std::size_t>(p.n) * p.h * p.w, outputs = pixels * p.c_out;
    const device_input<T> d_input(random_tensor<T>(pixels * p.c_in));
    const device_input<T> d_weight(random_tensor<T>(static_cast<std::size_t>(p.c_out) * p.c_in));
    std::vector<std::size_t> workspace_sizes;
    // The multiprocessor count sets the slice count: enough 64x64 blocks for two on each, at
    // most 18 slices of 32 channels here.
    for (const int multiprocessors : multiprocessor_counts()) {
      use_multiprocessors(device, multiprocessors);
      INFO(type_name<T>() << ", " << describe(p) << ", " << multiprocessors << " multiprocessors");
      const std::size_t bytes = dsconv::pointwise_workspace_size<T>(p);
      workspace_sizes.push_back(bytes);
      dsconv::device_buffer<float> workspace;
      REQUIRE(workspace.allocate(bytes / sizeof(float)) == status::success);
      dsconv::pointwise_options options;
      options.variant = pointwise_variant::split_k;
      options.workspace = workspace.data();
      options.workspace_bytes = bytes;
      CHECK(same_bits_under_every_order<T>(outputs, [&](T* out) {
        REQUIRE(dsconv::pointwise_forward(p, options, d_input.data(), d_weight.data(), static_cast<const T*>(nullptr),
                                          static_cast<const T*>(nullptr), out) == status::success);
      }));
    }
    use_multiprocessors(device, device.multiprocessor_count);
    // Each multiprocessor count gave another slice count (workspace = slices x outputs).
    std::sort(workspace_sizes.begin(), workspace_sizes.end());
    CHECK(std::adjacent_find(workspace_sizes.begin(), workspace_sizes.end()) == workspace_sizes.end());
  }
}
