// dsconv::pointwise_backward_data / pointwise_backward_weight against the double reference:
// every variant (forced through the options overload) and automatic, for float, half and
// bfloat16, both layouts, with and without a fused activation's gradient and the bias
// gradient, on odd shapes and on every 1x1 layer of both networks; results identical from run
// to run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "support/backward.hpp"
#include "support/shapes.hpp"
#include "support/test_data.hpp"

namespace {

using dsconv::activation;
using dsconv::layout;
using dsconv::pointwise_variant;
using dsconv::status;
using namespace dsconv_test;

enum class pass { data, weight };
const char* name_of(pass ps) { return ps == pass::data ? "backward data" : "backward weight"; }

// Whether `variant` must run the pass of `p` with elements of type T on `dev`, by the variants'
// documented contract: as the forward's (test_pointwise.cpp), over each pass's GEMM
// (backward data: c_in x pixels per image in NCHW with maps larger than 1x1, else
// (n * pixels) x c_in, K = c_out; backward weight: c_out x c_in, K = every image's pixels),
// with warp_dot never running the weight pass, and split_k needing more than one 32-wide slice
// of the summed K (each image's pixels rounded up to 32 where NCHW sums images).
template <class T>
bool supports(pointwise_variant variant, pass ps, const dsconv::pointwise_params& p,
              const dsconv::platform::device_properties& dev) {
  const long long pixels = static_cast<long long>(p.h) * p.w;
  const bool per_image = p.data_layout == layout::nchw && pixels > 1;
  switch (variant) {
    case pointwise_variant::warp_dot:
      return ps == pass::data && std::min<long long>(per_image ? p.c_in : p.n * pixels, per_image ? pixels : p.c_in) <= 8;
    case pointwise_variant::mma_large:
    case pointwise_variant::mma_small:
      if (dev.matrix == dsconv::platform::matrix_unit::mma_sync_f16) return std::is_same<T, dsconv::half>::value;
      return dev.matrix != dsconv::platform::matrix_unit::none;
    case pointwise_variant::split_k:
      if (ps == pass::data) return p.c_out > 32;
      return (per_image ? p.n * ((pixels + 31) / 32 * 32) : p.n * pixels) > 32;
    case pointwise_variant::mma_stream: return false;  // (the forward pass only)
    default: return true;
  }
}

template <class T>
pointwise_variant chosen(pointwise_variant variant, pass ps, const dsconv::pointwise_params& p,
                         const dsconv::pointwise_backward_options& options) {
  if (variant != pointwise_variant::automatic) return variant;
  return ps == pass::data ? dsconv::select_backward_data_variant<T>(p, options)
                          : dsconv::select_backward_weight_variant<T>(p, options);
}

template <class T>
std::vector<T> download(const dsconv::device_buffer<T>& b) {
  std::vector<T> v;
  REQUIRE(b.download(v) == status::success);
  return v;
}

// Runs pass `ps` of `p` (its act is the fused activation whose gradient the call applies, given
// the saved tensor as act'(z) where `derivative`) with random data through automatic and every
// variant; each result against the reference, each
// refusal before anything was launched or written. On a matrix unit 16-bit dz that the gate
// produced is rounded to T (allowed as an operand rounding), float operands to TF32 on NVIDIA's
// where allowed, and 16-bit subnormal operands read as zero on AMD's (compared with the
// reference of the flushed operands).
template <class T>
void check_backward(pass ps, const dsconv::pointwise_params& p, bool with_bias, std::size_t misalign = 0,
                    const std::vector<pointwise_variant>& variants = variants_with_automatic(dsconv::all_pointwise_variants),
                    bool derivative = false) {
  const dsconv::platform::device_properties dev = current_device();
  INFO(type_name<T>() << ", " << name_of(ps) << ", " << describe(p) << (with_bias ? ", bias" : ", no bias")
                      << ", misaligned by " << misalign << (derivative ? ", from act'(z)" : "") << ", device " << dev.name);
  // (the gate's activation, by the library's rule: the saved value itself where it is act'(z))
  const activation gate_act = derivative && p.act != activation::none ? dsconv::detail::saved_derivative : p.act;
  const std::size_t pixels = static_cast<std::size_t>(p.n) * p.h * p.w;
  const std::size_t in_count = pixels * p.c_in, out_count = pixels * p.c_out;
  const std::size_t w_count = static_cast<std::size_t>(p.c_out) * p.c_in;
  const std::vector<T> x = random_tensor<T>(in_count), w = random_tensor<T>(w_count), dy = random_tensor<T>(out_count);
  const std::vector<T> saved = saved_activation_tensor<T>(out_count);
  const bool gated = p.act != activation::none;
  const std::vector<double> dz = gated_gradient(dy, saved, gate_act);
  dsconv::pointwise_params plain = p;
  plain.act = activation::none;

  // The reference gradients of operands (dz as T, flushed or not; x; w), and their bounds.
  struct expected {
    std::vector<double> grad, bias;
    error_bound bound, bias_bound;
  };
  const auto reference = [&](const std::vector<T>& dz_t, const std::vector<T>& xs, const std::vector<T>& ws,
                             double operand_unit) {
    expected e;
    const std::vector<float> dz2 = squares(gradient_scale(dy, saved, gate_act));
    if (ps == pass::data) {
      e.grad.resize(in_count);
      std::vector<double> t2(in_count);
      REQUIRE(dsconv::reference::pointwise_backward_data(plain, dz_t.data(), ws.data(), e.grad.data()) == status::success);
      REQUIRE(dsconv::reference::pointwise_backward_data(plain, dz2.data(), squares(ws).data(), t2.data()) == status::success);
      e.bound = bound_from(t2, p.c_out, operand_unit);
    } else {
      e.grad.resize(w_count), e.bias.resize(p.c_out);
      std::vector<double> t2(w_count), b2(p.c_out);
      REQUIRE(dsconv::reference::pointwise_backward_weight(plain, xs.data(), dz_t.data(), e.grad.data(), e.bias.data()) ==
              status::success);
      REQUIRE(dsconv::reference::pointwise_backward_weight(plain, squares(xs).data(), dz2.data(), t2.data(), b2.data()) ==
              status::success);
      e.bound = bound_from(t2, static_cast<int>(pixels), operand_unit);
      e.bias_bound = bound_from(b2, static_cast<int>(pixels), operand_unit);
    }
    return e;
  };
  // The reference through the call's own path (activation and saved tensor), which must agree
  // with the one from dz.
  std::vector<double> through_act(ps == pass::data ? in_count : w_count), through_act_bias(p.c_out);
  if (ps == pass::data)
    REQUIRE(dsconv::reference::pointwise_backward_data(p, dy.data(), w.data(), through_act.data(), saved.data(),
                                                       derivative) == status::success);
  else
    REQUIRE(dsconv::reference::pointwise_backward_weight(p, x.data(), dy.data(), through_act.data(),
                                                         through_act_bias.data(), saved.data(), derivative) == status::success);

  const device_input<T> d_x(x, misalign), d_w(w, misalign), d_dy(dy, misalign), d_saved(saved, misalign);
  const std::size_t workspace_bytes = ps == pass::data ? dsconv::pointwise_backward_data_workspace_size<T>(p)
                                                       : dsconv::pointwise_backward_weight_workspace_size<T>(p);
  CHECK((workspace_bytes > 0) == supports<T>(pointwise_variant::split_k, ps, p, dev));
  guarded_output<float> workspace(workspace_bytes / sizeof(float));
  for (const pointwise_variant variant : variants) {
    INFO("variant " << dsconv::to_string(variant));
    const bool expected_ok = supports<T>(variant, ps, p, dev);
    const status can = ps == pass::data ? dsconv::can_implement_backward_data<T>(variant, p)
                                        : dsconv::can_implement_backward_weight<T>(variant, p);
    CHECK(can == (expected_ok ? status::success : status::unsupported_variant));
    dsconv::pointwise_backward_options options;
    options.variant = variant;
    options.workspace = workspace_bytes ? workspace.data() : nullptr;
    options.workspace_bytes = workspace_bytes;
    (derivative ? options.activation_derivative : options.activation_saved) = d_saved.data();
    guarded_output<T> grad(ps == pass::data ? in_count : w_count, misalign), bias(p.c_out, misalign);
    const unsigned long long launches = launches_so_far();
    const status s = ps == pass::data
                         ? dsconv::pointwise_backward_data(p, options, d_dy.data(), d_w.data(), grad.data())
                         : dsconv::pointwise_backward_weight(p, options, d_x.data(), d_dy.data(), grad.data(),
                                                             with_bias ? bias.data() : nullptr);
    if (!expected_ok) {
      check_refused_cleanly(s, launches, grad);
      CHECK(bias.untouched());
      continue;
    }
    REQUIRE(s == status::success);
    REQUIRE(dsconv::synchronize() == status::success);
    const pointwise_variant ran = chosen<T>(variant, ps, p, options);
    const bool matrix = ran == pointwise_variant::mma_large || ran == pointwise_variant::mma_small ||
                        (ran == pointwise_variant::split_k && supports<T>(pointwise_variant::mma_small, ps, p, dev));
    const bool tf32 = matrix && std::is_same<T, float>::value && dev.matrix == dsconv::platform::matrix_unit::mma_sync;
    const bool flushes = matrix && !std::is_same<T, float>::value && dev.matrix == dsconv::platform::matrix_unit::mfma;
    const double operand_unit =
        tf32 ? float_matrix_operand_unit(dev.matrix, p.allow_tf32) : matrix && gated ? unit_roundoff<T>() : 0;
    const expected e = flushes ? reference(rounded<T>(dz, true), flush_subnormals(x), flush_subnormals(w), operand_unit)
                               : reference(rounded<T>(dz, false), x, w, operand_unit);
    // (dz rounded to T is exact where nothing gates it; gated, the bound allows its rounding)
    check_close(grad.download_checked(), gated && !matrix ? through_act : e.grad, e.bound);
    if (ps == pass::weight && with_bias) {
      // The bias gradient sums dz as staged (gated dz rounded to T on a matrix unit), never flushed.
      const expected unflushed = reference(rounded<T>(dz, false), x, w, operand_unit);
      check_close(bias.download_checked(), gated && !matrix ? through_act_bias : unflushed.bias, unflushed.bias_bound);
    } else {
      CHECK(bias.untouched());
    }
    if (workspace_bytes) (void)workspace.download_checked();  // checks the guards around it
  }
}

// clang-format off
const pointwise_shape_case odd_shapes[] = {
    // name                                   n  c_in c_out   h    w
    {"c_in = 1",                              2,    1,    8,   5,   3},
    {"c_out = 1",                             2,    9,    1,   4,   4},
    {"1 -> 1 channel, 1x1 map",               3,    1,    1,   1,   1},
    {"37 -> 53 channels, 3x3 map",            1,   37,   53,   3,   3},
    {"53 -> 37 channels, 5x7 map",            3,   53,   37,   5,   7},
    {"1x1 map, 64 -> 24",                     4,   64,   24,   1,   1},
    {"2x2 map, 33 -> 17",                     3,   33,   17,   2,   2},
    {"13x1 map, 5 -> 3",                      1,    5,    3,  13,   1},
    {"long reduction: 9 images of 7x7",       9,   40,   36,   7,   7},
    {"257 input channels",                    1,  257,   12,   3,   2},
    {"4x4 map, 24 -> 96 (aligned rows)",      2,   24,   96,   4,   4},
    {"8x8 map, 64 -> 72 (aligned rows)",      3,   64,   72,   8,   8},
};
// clang-format on

}  // namespace

TEMPLATE_TEST_CASE("pointwise backward: every variant matches the reference on odd shapes, both layouts",
                   "[pointwise][backward][shapes]", float, dsconv::half, dsconv::bfloat16) {
  const layout data_layout = GENERATE(layout::nchw, layout::nhwc);
  std::size_t i = 0;
  for (const pointwise_shape_case& sc : odd_shapes) {
    INFO(sc.name);
    const dsconv::pointwise_params p =
        make_params(sc.n, sc.c_in, sc.c_out, sc.h, sc.w, data_layout, all_activations[i % 6]);
    check_backward<TestType>(pass::data, p, false);
    check_backward<TestType>(pass::weight, p, i % 3 != 2);
    ++i;
  }
}

TEMPLATE_TEST_CASE("pointwise backward: the NCHW weight gradient's images summed along K, where whole steps end an "
                   "image exactly and where they do not",
                   "[pointwise][backward][shapes]", float, dsconv::half, dsconv::bfloat16) {
  // The matrix-unit GEMM copies whole steps (all of their K inside one image) in groups of four
  // after its first three steps, then goes on step by step into the next image. 56, 112 and 224
  // pixels end an image with the last whole step of a group for one tile each: the 128x128
  // tile's float (8 a step), its 16-bit types and the 64x64 tile's float (16), the 64x64 tile's
  // 16-bit types (32). Without an activation: a gated operand is staged through registers.
  const layout data_layout = GENERATE(layout::nchw, layout::nhwc);
  for (const dsconv::pointwise_params& p : {make_params(3, 40, 72, 7, 8, data_layout, activation::none),
                                            make_params(2, 24, 40, 8, 14, data_layout, activation::none),
                                            make_params(2, 16, 48, 14, 16, data_layout, activation::none)}) {
    INFO(p.h << "x" << p.w);
    check_backward<TestType>(pass::weight, p, true);
    check_backward<TestType>(pass::data, p, false);
  }
}

TEMPLATE_TEST_CASE("pointwise backward: the gradient of every fused activation, with and without the bias gradient",
                   "[pointwise][backward][epilogue]", float, dsconv::half, dsconv::bfloat16) {
  const layout data_layout = GENERATE(layout::nchw, layout::nhwc);
  for (const activation act : all_activations) {
    const dsconv::pointwise_params p = make_params(2, 40, 48, 6, 6, data_layout, act);
    check_backward<TestType>(pass::data, p, false);
    check_backward<TestType>(pass::weight, p, act != activation::relu);
  }
  // silu from its derivative (every activation's gate is then the same multiply)
  const dsconv::pointwise_params p = make_params(2, 40, 48, 6, 6, data_layout, activation::silu);
  const auto every = variants_with_automatic(dsconv::all_pointwise_variants);
  check_backward<TestType>(pass::data, p, false, 0, every, true);
  check_backward<TestType>(pass::weight, p, true, 0, every, true);
}

TEMPLATE_TEST_CASE("pointwise backward: tensors misaligned by one element", "[pointwise][backward][misaligned]", float,
                   dsconv::half, dsconv::bfloat16) {
  const layout data_layout = GENERATE(layout::nchw, layout::nhwc);
  for (const dsconv::pointwise_params& p : {make_params(2, 64, 32, 8, 8, data_layout, activation::relu6),
                                            make_params(3, 24, 40, 4, 4, data_layout, activation::none)}) {
    check_backward<TestType>(pass::data, p, false, 1);
    check_backward<TestType>(pass::weight, p, true, 1);
  }
}

TEMPLATE_TEST_CASE("pointwise backward: every variant matches the reference on every 1x1 layer of both networks",
                   "[pointwise][backward][layers][network]", float, dsconv::half) {
  // (bfloat16: as in the depthwise backward sweep, on the odd shapes and activations above.)
  // Each 224x224 1x1 shape of at most 2.5M multiply-adds at batch 1, the 32x32 ones at batch
  // 2, with the layer's own activation's gradient.
  for (const layer_case& lc : layer_cases(layer_kind::pw, network_sweep_cap(2'500'000), {1}, 2)) {
    INFO(lc.name());
    const layer_row& r = *lc.row;
    const dsconv::pointwise_params p = make_params(lc.batch, r.cin, r.cout, r.h_in, r.h_in, lc.data_layout, r.act);
    check_backward<TestType>(pass::data, p, false);
    check_backward<TestType>(pass::weight, p, lc.bias);
  }
}

TEMPLATE_TEST_CASE("pointwise backward: the weight gradient is the same bits on every run", "[pointwise][backward]",
                   float, dsconv::half) {
  // Split over many blocks (split_k), summed in a fixed order; and every other variant.
  const layout data_layout = GENERATE(layout::nchw, layout::nhwc);
  const dsconv::pointwise_params p = make_params(6, 48, 40, 9, 9, data_layout, activation::silu);
  const std::size_t pixels = static_cast<std::size_t>(p.n) * p.h * p.w;
  const device_input<TestType> x(random_tensor<TestType>(pixels * p.c_in)), dy(random_tensor<TestType>(pixels * p.c_out)),
      saved(saved_activation_tensor<TestType>(pixels * p.c_out));
  const std::size_t bytes = dsconv::pointwise_backward_weight_workspace_size<TestType>(p);
  REQUIRE(bytes > 0);
  dsconv::device_buffer<float> workspace;
  REQUIRE(workspace.allocate(bytes / sizeof(float)) == status::success);
  for (const pointwise_variant variant : variants_with_automatic(dsconv::all_pointwise_variants)) {
    if (dsconv::can_implement_backward_weight<TestType>(variant, p) != status::success) continue;
    INFO("variant " << dsconv::to_string(variant));
    dsconv::pointwise_backward_options options;
    options.variant = variant, options.workspace = workspace.data(), options.workspace_bytes = bytes;
    options.activation_saved = saved.data();
    std::vector<TestType> first_w, first_b;
    for (int run = 0; run < 3; ++run) {
      dsconv::device_buffer<TestType> gw, gb;
      REQUIRE(gw.allocate(static_cast<std::size_t>(p.c_out) * p.c_in) == status::success);
      REQUIRE(gb.allocate(p.c_out) == status::success);
      REQUIRE(dsconv::pointwise_backward_weight(p, options, x.data(), dy.data(), gw.data(), gb.data()) == status::success);
      REQUIRE(dsconv::synchronize() == status::success);
      const std::vector<TestType> w = download(gw), b = download(gb);
      if (run == 0) {
        first_w = w, first_b = b;
        continue;
      }
      CHECK(std::memcmp(w.data(), first_w.data(), w.size() * sizeof(TestType)) == 0);
      CHECK(std::memcmp(b.data(), first_b.data(), b.size() * sizeof(TestType)) == 0);
    }
  }
}

TEMPLATE_TEST_CASE("pointwise backward: a layer with a fused activation needs the tensor its forward saved",
                   "[pointwise][backward][validation]", float, dsconv::half) {
  const dsconv::pointwise_params p = make_params(2, 8, 6, 3, 3, layout::nhwc, activation::silu);
  const std::size_t pixels = 18;
  const device_input<TestType> x(random_tensor<TestType>(pixels * 8)), w(random_tensor<TestType>(48)),
      dy(random_tensor<TestType>(pixels * 6));
  guarded_output<TestType> gx(pixels * 8), gw(48), gb(6);
  const unsigned long long launches = launches_so_far();
  CHECK(dsconv::pointwise_backward_data(p, dy.data(), w.data(), gx.data()) == status::missing_activation_tensor);
  CHECK(dsconv::pointwise_backward_weight(p, x.data(), dy.data(), gw.data(), gb.data()) ==
        status::missing_activation_tensor);
  CHECK(dsconv::pointwise_backward_data(p, dsconv::pointwise_backward_options{}, dy.data(), w.data(), gx.data()) ==
        status::missing_activation_tensor);
  CHECK(launches_so_far() == launches);
  CHECK(gx.untouched());
  CHECK(gw.untouched());
  CHECK(gb.untouched());
}

TEST_CASE("pointwise backward: with TF32 allowed, float on the matrix-unit variants within TF32 accuracy",
          "[pointwise][backward][tf32]") {
  // Aligned operands (the tiles' vector form) and misaligned ones (their element form), both
  // layouts: both GEMM forms of each pass.
  const layout data_layout = GENERATE(layout::nchw, layout::nhwc);
  const std::vector<pointwise_variant> variants{pointwise_variant::automatic, pointwise_variant::mma_large,
                                                pointwise_variant::mma_small, pointwise_variant::split_k};
  for (const std::size_t misalign : {0, 1}) {
    dsconv::pointwise_params p = make_params(3, 64, 72, 6, 6, data_layout, activation::hardswish);
    p.allow_tf32 = true;
    check_backward<float>(pass::data, p, false, misalign, variants);
    check_backward<float>(pass::weight, p, true, misalign, variants);
  }
}

#if defined(DSCONV_PLATFORM_HOST)
TEST_CASE("pointwise backward: a build without matrix-unit code runs both passes on the SIMT kernels",
          "[pointwise][backward]") {
  // (On NVIDIA profiles only this test reaches the SIMT split_k kernels for half.)
  struct restore_matrix_code {
    ~restore_matrix_code() { dsconv::host::set_matrix_code(true); }
  } restore;
  dsconv::host::set_matrix_code(false);
  for (const layout data_layout : all_layouts)
    for (const int channels : {96, 95}) {
      const dsconv::pointwise_params p = make_params(2, channels, 64, 8, 8, data_layout, activation::relu);
      check_backward<dsconv::half>(pass::data, p, false);
      check_backward<dsconv::half>(pass::weight, p, true);
    }
}
#endif
