// dsconv::depthwise_backward_data / depthwise_backward_weight against the double reference:
// every variant (forced through the options overload) and automatic, for float, half and
// bfloat16, both layouts, with and without a fused activation's gradient and the bias
// gradient, the weight gradient with and without a workspace (sums spread over more blocks),
// on odd shapes (stride 2 with odd sizes, dilation, multipliers, 1x1 maps, one channel) and on
// every depthwise layer of both networks; results identical from run to run.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "support/backward.hpp"
#include "support/shapes.hpp"
#include "support/test_data.hpp"

namespace {

using dsconv::activation;
using dsconv::depthwise_variant;
using dsconv::layout;
using dsconv::status;
using namespace dsconv_test;

enum class pass { data, weight };
const char* name_of(pass ps) { return ps == pass::data ? "backward data" : "backward weight"; }

// A fused activation's gradient as a backward call is given it: the activation and whether the
// saved tensor is act'(z) (activation_derivative) or what the forward saved (activation_saved).
struct gate_case {
  activation act;
  bool derivative;
};
// The register kernels' three gates: none, clamp (relu6's, from its output) and scale (silu's
// from its derivative).
const gate_case register_gates[] = {{activation::none, false}, {activation::relu6, false}, {activation::silu, true}};
// The activation a backward call's gate applies to the saved tensor (the library's own rule).
activation gate_activation(activation act, bool derivative) {
  return derivative && act != activation::none ? dsconv::detail::saved_derivative : act;
}

// Whether `variant` must run the pass of `p` with elements of `element_bytes`, by the variants'
// documented contract: the tiled variants take their layout with multiplier 1, the data
// gradient only where pad <= (kernel - 1) * dilation in both dimensions (every test shape's
// tiles fit shared memory); the register variants take the data gradient of stride 1 of their
// layout (nhwc_register and nchw_register also of stride 2, at any such padding) with
// multiplier 1, a square 3x3 or 5x5 filter without dilation, activation none, relu or relu6
// from the saved output or any activation from its derivative, pad <= kernel - 1, and (nhwc_register) channels in whole 16-byte vectors or
// (nchw_register) padding kernel / 2; nhwc_register takes the weight gradient of the nhwc layout
// with multiplier 1, a square 3x3 or 5x5 filter of stride 1 or 2 without dilation and channels
// in whole 16-byte vectors (any padding and activation); nhwc_matrix nhwc_register's data
// gradients of half and bfloat16 on NVIDIA tensor cores that multiply the type (half: sm_75+,
// bfloat16: sm_80+), no weight gradient, and nchw_matrix nchw_register's data gradients on them
// with input and output rows of an even number of elements or planes of at most 8 x 8; direct
// takes everything.
template <class T>
bool supports(depthwise_variant variant, pass ps, const dsconv::depthwise_params& p, bool derivative) {
  constexpr std::size_t element_bytes = sizeof(T);
  const bool tiled_layout = (variant == depthwise_variant::nchw_tiled && p.data_layout == layout::nchw) ||
                            (variant == depthwise_variant::nhwc_tiled && p.data_layout == layout::nhwc);
  const bool transposable = p.pad_h <= (p.kernel_h - 1) * p.dilation_h && p.pad_w <= (p.kernel_w - 1) * p.dilation_w;
  const bool register_filter = p.multiplier == 1 && p.kernel_h == p.kernel_w && (p.kernel_h == 3 || p.kernel_h == 5) &&
                               p.stride_h == p.stride_w && (p.stride_h == 1 || p.stride_h == 2) && p.dilation_h == 1 &&
                               p.dilation_w == 1;
  const bool register_gate =
      derivative || p.act == activation::none || p.act == activation::relu || p.act == activation::relu6;
  const bool register_data = ps == pass::data && register_filter && p.stride_h == 1 && transposable && register_gate;
  const bool transposed_data = ps == pass::data && register_filter && p.stride_h == 2 && transposable && register_gate;
  const bool whole_vectors = p.c % static_cast<int>(16 / element_bytes) == 0;
  const dsconv::platform::matrix_unit unit = current_device().matrix;
  const bool tensor_cores = sizeof(T) == 2 && (unit == dsconv::platform::matrix_unit::mma_sync ||
                                               (unit == dsconv::platform::matrix_unit::mma_sync_f16 &&
                                                std::is_same<T, dsconv::half>::value));
  switch (variant) {
    case depthwise_variant::nchw_tiled:
    case depthwise_variant::nhwc_tiled: return tiled_layout && p.multiplier == 1 && (ps == pass::weight || transposable);
    case depthwise_variant::nhwc_register:
      return p.data_layout == layout::nhwc && whole_vectors &&
             (register_data || transposed_data || (ps == pass::weight && register_filter));
    case depthwise_variant::nchw_register:
      return p.data_layout == layout::nchw &&
             ((register_data && p.pad_h == p.kernel_h / 2 && p.pad_w == p.kernel_w / 2) || transposed_data);
    case depthwise_variant::nhwc_matrix: return p.data_layout == layout::nhwc && whole_vectors && register_data && tensor_cores;
    case depthwise_variant::nchw_matrix:
      return register_data && p.data_layout == layout::nchw && p.pad_h == p.kernel_h / 2 && p.pad_w == p.kernel_w / 2 &&
             tensor_cores && ((p.w % 2 == 0 && p.out_w() % 2 == 0) || (p.h <= 8 && p.w <= 8));
    default: return true;
  }
}

// The data gradient of `p` (its act: the fused activation whose gradient applies, from `saved`
// as act'(z) where `derivative`) into ref, from the double reference, and its bound from |dz|
// and the filter.
template <class T>
error_bound data_gradient_reference(const dsconv::depthwise_params& p, const std::vector<T>& dy, const std::vector<T>& w,
                                    const std::vector<T>& saved, bool derivative, std::vector<double>& ref) {
  dsconv::depthwise_params plain = p;
  plain.act = activation::none;
  const std::size_t in_count = static_cast<std::size_t>(p.n) * p.c * p.h * p.w;
  std::vector<double> t2(in_count);
  ref.resize(in_count);
  REQUIRE(dsconv::reference::depthwise_backward_data(p, dy.data(), w.data(), ref.data(), saved.data(), derivative) ==
          status::success);
  REQUIRE(dsconv::reference::depthwise_backward_data(plain,
                                                     squares(gradient_scale(dy, saved, gate_activation(p.act, derivative))).data(),
                                                     squares(w).data(), t2.data()) == status::success);
  // The NHWC tiles stage dz as T (16-bit types stay 16-bit there), and so do the register
  // kernels through the scale gate: a gated dz is rounded once, relatively and, where it is
  // subnormal, by up to the type's rounding floor times each |w|. (The clamp gate's x * 1 and
  // x * 0 are exact.)
  const bool rounds = p.act != activation::none &&
                      (p.data_layout == layout::nhwc || p.act == activation::silu || derivative) && sizeof(T) == 2;
  const int taps = p.kernel_h * p.kernel_w * p.multiplier;
  double w_max = 0;
  for (const T& v : w) w_max = std::max(w_max, std::fabs(static_cast<double>(dsconv::to_float(v))));
  return bound_from(t2, taps, rounds ? unit_roundoff<T>() : 0, rounds ? rounding_floor<T>() * taps * w_max : 0);
}

// Runs the data gradient of `p` (random grad_output, filter and saved tensor, act'(z) where
// `derivative`) as the dispatch launches a register kernel for it, launch(kind, q, shape, gate,
// grad_output, weight, grad_input) with the transposed problem q and its shape with the filter
// rotated (what the stride-1 kernels run; stride 2 runs p), the gate of p's activation and its
// kind (a std::integral_constant of gate_kind), and checks grad_input against the reference.
template <class T, class F>
void check_transposed_launch(const dsconv::depthwise_params& p, bool derivative, F&& launch) {
  const std::size_t in_count = static_cast<std::size_t>(p.n) * p.c * p.h * p.w;
  const std::size_t out_count = static_cast<std::size_t>(p.n) * p.c * p.out_h() * p.out_w();
  const std::vector<T> w = random_tensor<T>(static_cast<std::size_t>(p.c) * p.kernel_h * p.kernel_w);
  const std::vector<T> dy = random_tensor<T>(out_count), saved = saved_activation_tensor<T>(out_count);
  std::vector<double> ref;
  const error_bound bound = data_gradient_reference(p, dy, w, saved, derivative, ref);
  const device_input<T> d_dy(dy), d_w(w), d_saved(saved);
  guarded_output<T> grad(in_count);
  const dsconv::depthwise_params q = dsconv::detail::transposed_problem(p);
  dsconv::detail::depthwise_shape rotated = dsconv::detail::make_shape(q);
  rotated.rotate_filter = true;
  const activation gated = gate_activation(p.act, derivative);
  const dsconv::detail::register_gate gate = dsconv::detail::make_register_gate(
      dsconv::detail::gate_tensor<T>{p.act == activation::none ? nullptr : d_saved.data(), gated});
  const auto run = [&](auto kind) { return launch(kind, q, rotated, gate, d_dy.data(), d_w.data(), grad.data()); };
  using kind = dsconv::detail::gate_kind;
  const kind g = dsconv::detail::gate_kind_of(gated);
  REQUIRE((g == kind::scale   ? run(std::integral_constant<kind, kind::scale>{})
           : g == kind::clamp ? run(std::integral_constant<kind, kind::clamp>{})
                              : run(std::integral_constant<kind, kind::none>{})) == status::success);
  REQUIRE(dsconv::synchronize() == status::success);
  check_close(grad.download_checked(), ref, bound);
}

// Runs pass `ps` of `p` (its act: the fused activation whose gradient the call applies, given
// the saved tensor as act'(z) where `derivative`) with random data through automatic and every
// variant (the weight gradient with and without a workspace); each result against the
// reference, each refusal before anything was launched or written.
template <class T>
void check_backward(pass ps, const dsconv::depthwise_params& p, bool with_bias, std::size_t misalign = 0,
                    bool derivative = false) {
  INFO(type_name<T>() << ", " << name_of(ps) << ", " << describe(p) << (with_bias ? ", bias" : ", no bias")
                      << ", misaligned by " << misalign << (derivative ? ", from act'(z)" : "") << ", device "
                      << current_device().name);
  const std::size_t in_count = static_cast<std::size_t>(p.n) * p.c * p.h * p.w;
  const std::size_t out_count = static_cast<std::size_t>(p.n) * p.out_c() * p.out_h() * p.out_w();
  const std::size_t w_count = static_cast<std::size_t>(p.out_c()) * p.kernel_h * p.kernel_w;
  const std::vector<T> x = random_tensor<T>(in_count), w = random_tensor<T>(w_count), dy = random_tensor<T>(out_count);
  const std::vector<T> saved = saved_activation_tensor<T>(out_count);
  dsconv::depthwise_params plain = p;
  plain.act = activation::none;

  // The reference through the activation, and the bound from |dz| and the other operand.
  std::vector<double> ref, ref_bias(p.out_c()), t2, b2(p.out_c());
  error_bound bound, bias_bound;
  if (ps == pass::data) {
    bound = data_gradient_reference(p, dy, w, saved, derivative, ref);
  } else {
    ref.resize(w_count), t2.resize(w_count);
    REQUIRE(dsconv::reference::depthwise_backward_weight(p, x.data(), dy.data(), ref.data(), ref_bias.data(), saved.data(),
                                                         derivative) == status::success);
    REQUIRE(dsconv::reference::depthwise_backward_weight(
                plain, squares(x).data(), squares(gradient_scale(dy, saved, gate_activation(p.act, derivative))).data(),
                t2.data(), b2.data()) == status::success);
    const int products = static_cast<int>(out_count / p.out_c());
    bound = bound_from(t2, products, 0);
    bias_bound = bound_from(b2, products, 0);
  }

  const device_input<T> d_x(x, misalign), d_w(w, misalign), d_dy(dy, misalign), d_saved(saved, misalign);
  for (const depthwise_variant variant : variants_with_automatic(dsconv::all_depthwise_variants))
    for (const bool with_workspace : {false, true}) {
      // (each variant's own: the register and tiled kernels spread over different block counts)
      const std::size_t workspace_bytes =
          ps == pass::weight ? dsconv::depthwise_backward_weight_workspace_size<T>(p, variant) : 0;
      guarded_output<float> workspace(workspace_bytes / sizeof(float));
      if (with_workspace && workspace_bytes == 0) continue;
      INFO("variant " << dsconv::to_string(variant) << (with_workspace ? ", with workspace" : ""));
      const bool expected = supports<T>(variant, ps, p, derivative);
      dsconv::depthwise_backward_options options;
      options.variant = variant;
      (derivative ? options.activation_derivative : options.activation_saved) = d_saved.data();
      const status can = ps == pass::data ? dsconv::can_implement_backward_data<T>(variant, p, options)
                                          : dsconv::can_implement_backward_weight<T>(variant, p, options);
      CHECK(can == (expected ? status::success : status::unsupported_variant));
      if (with_workspace) options.workspace = workspace.data(), options.workspace_bytes = workspace_bytes;
      guarded_output<T> grad(ps == pass::data ? in_count : w_count, misalign), bias(p.out_c(), misalign);
      const unsigned long long launches = launches_so_far();
      const status s = ps == pass::data
                           ? dsconv::depthwise_backward_data(p, options, d_dy.data(), d_w.data(), grad.data())
                           : dsconv::depthwise_backward_weight(p, options, d_x.data(), d_dy.data(), grad.data(),
                                                               with_bias ? bias.data() : nullptr);
      if (!expected) {
        check_refused_cleanly(s, launches, grad);
        continue;
      }
      REQUIRE(s == status::success);
      REQUIRE(dsconv::synchronize() == status::success);
      check_close(grad.download_checked(), ref, bound);
      if (ps == pass::weight && with_bias)
        check_close(bias.download_checked(), ref_bias, bias_bound);
      else
        CHECK(bias.untouched());
      if (workspace_bytes) (void)workspace.download_checked();  // checks the guards around it
    }
}

// clang-format off
const depthwise_shape_case odd_shapes[] = {
    // name                                     n    c    h    w   kh   kw   sh   sw   ph   pw   dh   dw    m
    {"7x5 map, 3 channels",                     2,   3,   7,   5,   3,   3,   1,   1,   1,   1,   1,   1,   1},
    {"37 channels, 6x13 map",                   2,  37,   6,  13,   3,   3,   1,   1,   1,   1,   1,   1,   1},
    {"53 channels, stride 2, 11x9 map",         1,  53,  11,   9,   3,   3,   2,   2,   1,   1,   1,   1,   1},
    {"1 channel, 1x1 map, 1x1 kernel",          3,   1,   1,   1,   1,   1,   1,   1,   0,   0,   1,   1,   1},
    {"1x1 map, 3x3 kernel, pad 1",              2,   7,   1,   1,   3,   3,   1,   1,   1,   1,   1,   1,   1},
    {"2x2 map, stride 2",                       1,   9,   2,   2,   3,   3,   2,   2,   1,   1,   1,   1,   1},
    {"stride 2, odd 9x7 map",                   2,   5,   9,   7,   3,   3,   2,   2,   1,   1,   1,   1,   1},
    {"stride 2, odd 15x13 map, kernel 5",       1,   6,  15,  13,   5,   5,   2,   2,   2,   2,   1,   1,   1},
    {"stride 2, no padding, 8x7 (last row unused)", 1, 4, 8,   7,   3,   3,   2,   2,   0,   0,   1,   1,   1},
    {"stride 3, 10x11",                         1,   5,  10,  11,   3,   3,   3,   3,   1,   1,   1,   1,   1},
    {"stride 2x1",                              1,   5,   9,   8,   3,   3,   2,   1,   1,   1,   1,   1,   1},
    {"pad 3 with a 3x3 kernel",                 2,   5,   5,   4,   3,   3,   1,   1,   3,   3,   1,   1,   1},
    {"pad 2x4 with a 3x3 kernel, stride 2",     1,   3,   6,   5,   3,   3,   2,   2,   2,   4,   1,   1,   1},
    {"dilation 2, pad 2",                       2,   5,   9,   8,   3,   3,   1,   1,   2,   2,   2,   2,   1},
    {"dilation 2x3, stride 2",                  1,   4,  13,  12,   3,   3,   2,   2,   1,   3,   2,   3,   1},
    {"multiplier 2",                            2,   5,   7,   6,   3,   3,   1,   1,   1,   1,   1,   1,   2},
    {"multiplier 3, stride 2",                  1,   3,   9,   9,   3,   3,   2,   2,   1,   1,   1,   1,   3},
    {"kernel 5, pad 2, 6x7 map",                2,   9,   6,   7,   5,   5,   1,   1,   2,   2,   1,   1,   1},
    {"kernel 7, pad 3",                         1,   5,  11,  12,   7,   7,   1,   1,   3,   3,   1,   1,   1},
    {"kernel 7, stride 2, odd 15x13 map",       1,   6,  15,  13,   7,   7,   2,   2,   3,   3,   1,   1,   1},
    {"kernel 3x5, pad 1x2",                     1,   6,   8,   9,   3,   5,   1,   1,   1,   2,   1,   1,   1},
    {"kernel 5x3, pad 0x1, stride 2",           1,   5,  11,   7,   5,   3,   2,   2,   0,   1,   1,   1,   1},
    {"kernel 2x2, even",                        2,   5,   6,   7,   2,   2,   1,   1,   0,   0,   1,   1,   1},
    {"kernel as large as the input",            2,   4,   5,   6,   5,   6,   1,   1,   0,   0,   1,   1,   1},
    {"many channels, small map",                1, 130,   3,   4,   3,   3,   1,   1,   1,   1,   1,   1,   1},
    {"kernel 5, stride 2, 4x5 map, pad 2",      3,  17,   4,   5,   5,   5,   2,   2,   2,   2,   1,   1,   1},
    // Planes of whole 32-byte sectors in every type: NCHW weight blocks of one channel (the
    // small maps above take blocks of several channels).
    {"kernel 5, 16x16 map, pad 2",              1,   3,  16,  16,   5,   5,   1,   1,   2,   2,   1,   1,   1},
    {"kernel 5, stride 2, 16x16 map, pad 2",    1,   3,  16,  16,   5,   5,   2,   2,   2,   2,   1,   1,   1},
    {"kernel 7, 16x16 map, pad 3",              1,   3,  16,  16,   7,   7,   1,   1,   3,   3,   1,   1,   1},
    {"kernel 7, stride 2, 16x16 map, pad 3",    1,   3,  16,  16,   7,   7,   2,   2,   3,   3,   1,   1,   1},
};
// clang-format on

}  // namespace

TEMPLATE_TEST_CASE("depthwise backward: every variant matches the reference on odd shapes, both layouts",
                   "[depthwise][backward][shapes]", float, dsconv::half, dsconv::bfloat16) {
  const layout data_layout = GENERATE(layout::nchw, layout::nhwc);
  std::size_t i = 0;
  for (const depthwise_shape_case& sc : odd_shapes) {
    INFO(sc.name);
    dsconv::depthwise_params p = sc.params();
    p.data_layout = data_layout;
    p.act = all_activations[i % 6];
    check_backward<TestType>(pass::data, p, false);
    check_backward<TestType>(pass::weight, p, i % 3 != 2);
    ++i;
  }
}

TEMPLATE_TEST_CASE("depthwise backward: the gradient of every fused activation, with and without the bias gradient",
                   "[depthwise][backward][epilogue]", float, dsconv::half, dsconv::bfloat16) {
  const layout data_layout = GENERATE(layout::nchw, layout::nhwc);
  // Each shape (each reaches other kernels) with every way a gradient passes an activation:
  // none, a clamp (relu and relu6 in turn over the shapes), a smooth activation from z (silu,
  // sigmoid and hardswish in turn) and silu from its derivative (the scale gate). Each
  // activation from z then runs on 3 to 5 of the shapes, in 80 calls where all six on every
  // shape took 140 (the sanitizer build's longest test, 123 s of its 935).
  const activation clamped[] = {activation::relu, activation::relu6};
  const activation smooth[] = {activation::silu, activation::sigmoid, activation::hardswish};
  std::size_t shape = 0;
  for (dsconv::depthwise_params p :
       {make_params(2, 16, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1), make_params(2, 16, 10, 9, 5, 5, 2, 2, 2, 2, 1, 1, 1),
        make_params(1, 16, 7, 9, 5, 5, 1, 1, 2, 2, 1, 1, 1),    // (5x5 stride 1: the register data gradient)
        make_params(2, 32, 7, 7, 5, 5, 1, 1, 2, 2, 1, 1, 1),    // (and nhwc_matrix's on tiles of 8 x 8; nchw_matrix's planes)
        make_params(1, 32, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1),    // (the same for 3x3 filters)
        make_params(9, 3, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1),     // (nchw_matrix's planes: 7x7 elements, a batch of 8 + 1)
        make_params(3, 5, 6, 8, 5, 5, 1, 1, 2, 2, 1, 1, 1),     // (and 6x8 words)
        make_params(3, 4, 18, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1),   // (even rows: nchw_matrix's, an odd batch)
        make_params(3, 4, 18, 20, 5, 5, 1, 1, 2, 2, 1, 1, 1),
        make_params(2, 16, 9, 11, 3, 3, 2, 2, 1, 1, 1, 1, 1)}) {  // (3x3 stride 2: the register weight gradient)
    p.data_layout = data_layout;
    for (const activation act : {activation::none, clamped[shape % 2], smooth[shape % 3]}) {
      p.act = act;
      check_backward<TestType>(pass::data, p, false);
      check_backward<TestType>(pass::weight, p, act != activation::relu);
    }
    p.act = activation::silu;  // (from its derivative: any activation's gate is the same multiply)
    check_backward<TestType>(pass::data, p, false, 0, true);
    check_backward<TestType>(pass::weight, p, true, 0, true);
    ++shape;
  }
}

TEMPLATE_TEST_CASE("depthwise backward: tensors misaligned by one element", "[depthwise][backward][misaligned]", float,
                   dsconv::half, dsconv::bfloat16) {
  const layout data_layout = GENERATE(layout::nchw, layout::nhwc);
  // (the 5x5 stride-2 case: NHWC's 16-bit blocks then copy dz into their ring element by element)
  for (dsconv::depthwise_params p : {make_params(2, 32, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1),
                                     make_params(1, 16, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1),
                                     make_params(1, 16, 12, 12, 5, 5, 2, 2, 2, 2, 1, 1, 1)}) {
    p.data_layout = data_layout;
    p.act = activation::relu6;
    check_backward<TestType>(pass::data, p, false, 1);
    check_backward<TestType>(pass::weight, p, true, 1);
  }
}

TEMPLATE_TEST_CASE("depthwise backward: the stride-2 register data gradient on every padding and map parity",
                   "[depthwise][backward][transposed]", float, dsconv::half, dsconv::bfloat16) {
  // The register variants' transposed kernels place their blocks of 2 rows of grad_input from
  // row -(pad % 2), NHWC's columns from -(pad % 2) and NCHW's from 0 with the columns' parity a
  // compile-time constant: every padding a 3x3 and a 5x5 filter admit, odd and even rows and
  // columns, maps narrower than a block, a block over the map's edge, NCHW rows of whole 16-byte
  // vectors (16 columns) and not; NHWC channels in one and in three vectors a block. Each runs
  // through automatic and every variant.
  const layout data_layout = GENERATE(layout::nchw, layout::nhwc);
  const std::size_t vector = 16 / sizeof(TestType);
  for (const int k : {3, 5})
    for (int pad = 0; pad < k; ++pad)
      for (const auto& hw : {std::pair<int, int>{9, 10}, std::pair<int, int>{6, 16}, std::pair<int, int>{3, 2}}) {
        if (hw.first + 2 * pad < k || hw.second + 2 * pad < k) continue;
        dsconv::depthwise_params p = make_params(2, static_cast<int>((pad % 2 ? 3 : 1) * vector), hw.first, hw.second, k, k,
                                                 2, 2, pad, pad, 1, 1, 1);
        p.data_layout = data_layout;
        const gate_case gate = register_gates[pad % 3];
        p.act = gate.act;
        const depthwise_variant variant =
            data_layout == layout::nhwc ? depthwise_variant::nhwc_register : depthwise_variant::nchw_register;
        dsconv::depthwise_backward_options options;
        // (any pointer: can_implement asks which tensor the call would be given, not its data)
        (gate.derivative ? options.activation_derivative : options.activation_saved) = &p;
        REQUIRE(dsconv::can_implement_backward_data<TestType>(variant, p, options) == status::success);
        check_backward<TestType>(pass::data, p, false, 0, gate.derivative);
      }
}

TEMPLATE_TEST_CASE("depthwise backward: the stride-1 data gradient of maps of 1, 2 and 4 pixels a side, every gate",
                   "[depthwise][backward][shapes]", float, dsconv::half, dsconv::bfloat16) {
  // The small-map kernel's gated forms (the register variants' data gradient of stride 1 there):
  // 3x3 and 5x5 filters on each side, no activation, relu6 (the clamp gate) and silu from its
  // derivative (the scale gate), both
  // layouts, one and three NHWC vectors of 16 bytes (NCHW: planes of the kernel's width), and
  // tensors misaligned by one element. Each runs through automatic and every variant.
  const layout data_layout = GENERATE(layout::nchw, layout::nhwc);
  for (const int k : {3, 5})
    for (const int h : {1, 2, 4})
      for (const gate_case gate : register_gates) {
        const int vectors = h == 2 ? 3 : 1;
        const int vector = data_layout == layout::nhwc ? static_cast<int>(16 / sizeof(TestType))
                                                       : dsconv::detail::small_map_vector(sizeof(TestType), 1, h);
        dsconv::depthwise_params p = make_params(2, vectors * vector, h, h, k, k, 1, 1, k / 2, k / 2, 1, 1, 1);
        p.data_layout = data_layout;
        p.act = gate.act;
        REQUIRE(dsconv::detail::small_map_side<TestType>(p) == h);
        check_backward<TestType>(pass::data, p, false, gate.derivative && h == 2 ? 1 : 0, gate.derivative);
      }
}

TEMPLATE_TEST_CASE("depthwise backward: the NHWC tensor-core data gradient on 8 x 8 tiles with a tail of 16 x 16 tiles",
                   "[depthwise][backward][shapes]", dsconv::half, dsconv::bfloat16) {
  // nhwc_matrix's tiles of 8 x 8 outputs take four channel vectors a block; the channels past
  // the last whole block go on tiles of 16 x 16 in a second launch: 48 channels on 7x7 maps
  // (32 and 16), 3x3 and 5x5 filters, every gate, and the 144 channels of the 32x32 networks'
  // 8x8 maps (128 and 16).
  for (const int k : {3, 5})
    for (const gate_case gate : register_gates) {
      dsconv::depthwise_params p = make_params(2, 48, 7, 7, k, k, 1, 1, k / 2, k / 2, 1, 1, 1);
      p.data_layout = layout::nhwc;
      p.act = gate.act;
      REQUIRE(dsconv::detail::matrix_side(p) == 8);
      REQUIRE(dsconv::detail::matrix_preferred(p));
      check_backward<TestType>(pass::data, p, false, 0, gate.derivative);
    }
  dsconv::depthwise_params p = make_params(1, 144, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1);
  p.data_layout = layout::nhwc;
  p.act = activation::silu;
  REQUIRE(dsconv::detail::matrix_side(p) == 8);
  REQUIRE(dsconv::detail::matrix_preferred(p));
  check_backward<TestType>(pass::data, p, false, 0, true);
}

TEMPLATE_TEST_CASE("depthwise backward: the NCHW register data gradient where threads walk down several bands or blocks",
                   "[depthwise][backward][shapes]", float, dsconv::half, dsconv::bfloat16) {
  // Stride 1: a thread's bands (the forward kernel on grad_output, the filter rotated, gated by
  // the saved tensor) keep the input rows they share with the next, gated once
  // (nchw_register_rolls). Stride 2: a thread of nchw_register_transposed walks down consecutive
  // blocks of 4 grad_input rows, or of 8 where 16-bit 5x5 windows load as words (planned with
  // grad_output; without it, element by element); 16-bit 5x5 blocks through a gate keep the dz
  // rows they share with the next (nchw_transposed_rolls), the walk's first block loading them
  // before it. The plans give a thread several bands or blocks only where the grid would fill
  // the device 8 times over, which no test-sized problem does on a real profile: planned here for
  // a one-multiprocessor device (stride 2: walks of 2, 5 or 8 blocks down the 11 of a 41-row map;
  // of 3 down the 7 blocks of 8 rows of a 49-row map), each walk set's last cut short by the map's
  // end, launched as the dispatch launches them, against the reference; 3x3 (padding 1) and 5x5
  // (padding 2), every gate; the word form on NVIDIA's profiles (AMD's builds have none).
  // bfloat16: the word form only, whose kernels through no gate and the clamp no other test
  // launches (its other walks run as half's).
  dsconv::platform::device_properties dev = current_device();
  dev.multiprocessor_count = 1;
  constexpr bool words_only = std::is_same_v<TestType, dsconv::bfloat16>;
  for (const int s : {1, 2})
    for (const int k : {3, 5})
      for (const bool words : {false, true}) {
        if (words && (s == 1 || !dsconv::detail::nchw_transposed_words(sizeof(TestType), k) || dev.warp_size != 32)) continue;
        if (words_only && !words) continue;
        for (const gate_case gate : register_gates) {
          dsconv::depthwise_params p = s == 1 ? make_params(64, 16, 34, 16, k, k, 1, 1, k / 2, k / 2, 1, 1, 1)
                                              : make_params(32, 16, words ? 49 : 41, 32, k, k, 2, 2, k / 2, k / 2, 1, 1, 1);
          p.data_layout = layout::nchw;
          const activation act = p.act = gate.act;
          INFO(type_name<TestType>() << ", " << describe(p) << ", device " << dev.name);
          check_transposed_launch<TestType>(p, gate.derivative, [&](auto kind, const auto& q, const auto& rotated, const auto& gate,
                                                   const TestType* dy, const TestType* w, TestType* grad) {
            constexpr dsconv::detail::gate_kind G = decltype(kind)::value;
            dsconv::detail::nchw_register_plan plan;
            const TestType* dz_for_plan = words ? dy : nullptr;  // (none: a plan of element loads)
            REQUIRE((s == 1 ? dsconv::detail::plan_nchw_register<TestType>(q, dev, dy, grad, nullptr, plan, act != activation::none)
                            : dsconv::detail::plan_nchw_register_transposed<TestType>(p, dev, dz_for_plan, gate.saved, grad, plan)));
            REQUIRE(plan.word_windows == words);
            REQUIRE(plan.tile.bands_per_thread > 1);
            REQUIRE(plan.tile.bands % plan.tile.bands_per_thread != 0);  // a thread's last band past the map's
            if (s == 2)
              return dsconv::platform::launch(dsconv::detail::nchw_register_transposed_kernel<TestType, G>(p, words),
                                              plan.launch({}), dsconv::detail::make_shape(p), plan.tile, dy, gate, w, grad);
            return dsconv::platform::launch(dsconv::detail::nchw_register_kernel<TestType, G>(q), plan.launch({}), rotated,
                                            plan.tile, dy, gate, w, static_cast<const TestType*>(nullptr), grad,
                                            static_cast<TestType*>(nullptr));
          });
        }
      }
}

TEMPLATE_TEST_CASE("depthwise backward: the NHWC stride-2 data gradient where threads walk down a column of blocks",
                   "[depthwise][backward][shapes]", float, dsconv::half) {
  // nhwc_register_transposed: a thread walks down walk_blocks blocks of 2 grad_input rows of a
  // column, advancing its addresses a block at a time; 16-bit 5x5 blocks keep the 2 dz rows they
  // share with the next (transposed_keeps_rows), the walk's first block loading them before it.
  // The plan gives a walk several blocks only where the grid would fill the device 8 times
  // over, which no test-sized problem does on a real profile: planned here for a
  // one-multiprocessor device (walks of 2 or 5 blocks down the 21 of a 41-row map, each column's
  // last walk cut short by the map's end), launched as the dispatch launches it, against the
  // reference; 3x3 and 5x5 filters at both paddings' parities, every gate.
  dsconv::platform::device_properties dev = current_device();
  dev.multiprocessor_count = 1;
  for (const int k : {3, 5})
    for (const int pad : {k / 2, k - 1})
      for (const gate_case gate : register_gates) {
        dsconv::depthwise_params p = make_params(16, 32, 41, 32, k, k, 2, 2, pad, pad, 1, 1, 1);
        p.data_layout = layout::nhwc;
        p.act = gate.act;
        INFO(type_name<TestType>() << ", " << describe(p) << ", device " << dev.name);
        check_transposed_launch<TestType>(p, gate.derivative, [&](auto kind, const auto&, const auto&, const auto& gate,
                                                 const TestType* dy, const TestType* w, TestType* grad) {
          constexpr dsconv::detail::gate_kind G = decltype(kind)::value;
          dsconv::detail::register_plan plan;
          REQUIRE(dsconv::detail::plan_nhwc_register_transposed<TestType>(p, dev, dy, gate.saved, grad, plan));
          const int block_rows = dsconv::detail::transposed_block_rows(p.h, p.pad_h);
          REQUIRE(plan.tile.walk_blocks > 1);
          REQUIRE(block_rows % plan.tile.walk_blocks != 0);  // a column's last walk past the map's end
          return dsconv::platform::launch(dsconv::detail::register_transposed_kernel<TestType, G>(p), plan.launch({}),
                                          dsconv::detail::make_shape(p), plan.tile, dy, gate, w, grad);
        });
      }
}

TEMPLATE_TEST_CASE("depthwise backward: the NHWC stride-2 data gradient refuses rows of 2^30 elements or more",
                   "[depthwise][backward][validation]", float, dsconv::half) {
  // nhwc_register_transposed steps from a block's two grad_input rows to the next 32 bits wide
  // (and at 16-bit 5x5 filters by a row of dz): 2 x w x c under 2^31. Channels 2^15, width 2^15
  // - 1 and 2^15 (nothing is allocated: the refusal reads the shape only).
  const dsconv::platform::device_properties dev = current_device();
  for (const int w : {(1 << 15) - 1, 1 << 15}) {
    dsconv::depthwise_params p = make_params(1, 1 << 15, 4, w, 5, 5, 2, 2, 2, 2, 1, 1, 1);
    p.data_layout = layout::nhwc;
    const std::string refusal =
        dsconv::detail::register_data_refusal<TestType>(depthwise_variant::nhwc_register, p, activation::none, dev);
    INFO("width " << w << ": " << refusal);
    CHECK((refusal.find("2^30") != std::string::npos) == (w == 1 << 15));
  }
}

TEST_CASE("depthwise backward: the float NHWC data gradient through a gate on threads that walk down many rows",
          "[depthwise][backward][shapes]") {
  // nhwc_register runs the float data gradient of stride 1 through a gate on the column kernel
  // (kernels/depthwise/nhwc_register_column.hpp): a thread's walk keeps the K - 1 rows the next
  // output row shares in registers, on NVIDIA in a ring unrolled K rows at a time. Its plan gives
  // a thread many rows only where the grid fills the device twice over, which no test-sized
  // problem does on a real profile: planned here for a one-multiprocessor device (walks of 12 and
  // 11 rows: the ring wraps, and a walk ends inside an unrolled iteration), launched as the
  // dispatch launches it, against the reference; 7 channels (one a thread; a warp's threads span
  // pixels) and 14 (two a thread for 3x3 filters: column_vector), 19 columns (strips over both
  // edges and a strip of 3), every padding a filter's transposed problem admits at its ends and
  // middle.
  dsconv::platform::device_properties dev = current_device();
  dev.multiprocessor_count = 1;
  for (const int k : {3, 5})
    for (const int pad : {0, k / 2, k - 1})
      for (const int channels : {7, 14})
        for (const gate_case gate : {register_gates[2], register_gates[1]}) {
          // (threads enough for walks of 12 and 11 rows either way: 32 images of 7 vectors in 3
          // strips a row, 19 of 7 two-channel vectors in 5 strips of 4, 16 of 14 in 3)
          const int images = channels == 7 ? 32 : k == 3 ? 19 : 16;
          dsconv::depthwise_params p = make_params(images, channels, 23, 19, k, k, 1, 1, pad, pad, 1, 1, 1);
          p.data_layout = layout::nhwc;
          p.act = gate.act;
          INFO(describe(p) << ", device " << dev.name);
          check_transposed_launch<float>(p, gate.derivative, [&](auto kind, const auto& q, const auto& rotated, const auto& gate, const float* dy,
                                                const float* w, float* grad) {
            constexpr dsconv::detail::gate_kind G = decltype(kind)::value;
            if constexpr (G == dsconv::detail::gate_kind::none) {  // (the kernel is compiled for the gates only)
              FAIL("no gate");
              return status::unsupported_variant;
            } else {
              dsconv::detail::register_column_plan plan;
              REQUIRE(dsconv::detail::plan_nhwc_register_column(q, dev, dy, gate.saved, grad, plan));
              CHECK(plan.tile.vector == (k == 3 && channels % 2 == 0 ? 2 : 1));
              CHECK(plan.tile.rows_per_thread == 12);
              CHECK(plan.tile.row_groups == 2);
              return dsconv::platform::launch(dsconv::detail::register_column_kernel<G>(q, plan.tile), plan.launch({}), rotated,
                                              plan.tile, dy, gate, w, grad);
            }
          });
        }
}

TEMPLATE_TEST_CASE("depthwise backward: every variant matches the reference on every depthwise layer of both networks",
                   "[depthwise][backward][layers][network]", float, dsconv::half) {
  // Every 224x224 depthwise shape of at most 2M multiply-adds at batch 1, the 32x32 ones at
  // batch 2, with the layer's activation's gradient. (bfloat16 runs the same kernels as half
  // but for its conversions, here on the odd shapes and activations above; the sweeps are
  // most of the suite's time.)
  for (const layer_case& lc : layer_cases(layer_kind::dw, network_sweep_cap(2'000'000), {1}, 2)) {
    INFO(lc.name());
    const layer_row& r = *lc.row;
    dsconv::depthwise_params p =
        make_params(lc.batch, r.cin, r.h_in, r.h_in, r.k, r.k, r.stride, r.stride, r.pad, r.pad, 1, 1, r.cout / r.cin);
    p.data_layout = lc.data_layout;
    p.act = r.act;
    // (the data gradient of silu from its derivative, as the PyTorch package saves it)
    check_backward<TestType>(pass::data, p, false, 0, r.act == activation::silu);
    check_backward<TestType>(pass::weight, p, lc.bias);
  }
}

TEMPLATE_TEST_CASE("depthwise backward: the weight gradient's workspace size is the asked variant's", "[depthwise][backward]",
                   float, dsconv::half) {
  // A layer whose channels take one block group without a workspace (8 x 56 x 56 pixels, 32
  // channels): both spreading variants want one, and the variant that cannot run it none.
  dsconv::depthwise_params p = make_params(8, 32, 56, 56, 3, 3, 1, 1, 1, 1, 1, 1, 1);
  p.data_layout = layout::nhwc;
  const std::size_t automatic = dsconv::depthwise_backward_weight_workspace_size<TestType>(p);
  const std::size_t reg = dsconv::depthwise_backward_weight_workspace_size<TestType>(p, depthwise_variant::nhwc_register);
  const std::size_t tiled = dsconv::depthwise_backward_weight_workspace_size<TestType>(p, depthwise_variant::nhwc_tiled);
  REQUIRE(dsconv::select_backward_weight_variant<TestType>(p) == depthwise_variant::nhwc_register);
  CHECK(reg > 0);
  CHECK(tiled > 0);
  CHECK(automatic == reg);
  CHECK(dsconv::depthwise_backward_weight_workspace_size<TestType>(p, depthwise_variant::direct) == 0);
  CHECK(dsconv::depthwise_backward_weight_workspace_size<TestType>(p, depthwise_variant::nchw_tiled) == 0);  // (layout)
  CHECK(dsconv::depthwise_backward_weight_workspace_size<TestType>(p, depthwise_variant::nchw_register) == 0);
  CHECK(dsconv::depthwise_backward_weight_workspace_size<TestType>(p, static_cast<depthwise_variant>(99)) == 0);
}

TEMPLATE_TEST_CASE("depthwise backward: the weight gradient is the same bits on every run", "[depthwise][backward]", float,
                   dsconv::half) {
  const layout data_layout = GENERATE(layout::nchw, layout::nhwc);
  dsconv::depthwise_params p = make_params(3, 24, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1);
  p.data_layout = data_layout;
  p.act = activation::silu;
  const std::size_t outputs = static_cast<std::size_t>(p.n) * p.c * p.out_h() * p.out_w();
  const device_input<TestType> x(random_tensor<TestType>(static_cast<std::size_t>(p.n) * p.c * p.h * p.w)),
      dy(random_tensor<TestType>(outputs)), saved(saved_activation_tensor<TestType>(outputs));
  for (const depthwise_variant variant : variants_with_automatic(dsconv::all_depthwise_variants)) {
    if (dsconv::can_implement_backward_weight<TestType>(variant, p) != status::success) continue;
    INFO("variant " << dsconv::to_string(variant));
    const std::size_t bytes = dsconv::depthwise_backward_weight_workspace_size<TestType>(p, variant);
    dsconv::device_buffer<float> workspace;
    REQUIRE(workspace.allocate(bytes / sizeof(float) + 1) == status::success);
    dsconv::depthwise_backward_options options;
    options.variant = variant, options.workspace = workspace.data(), options.workspace_bytes = bytes;
    options.activation_saved = saved.data();
    std::vector<TestType> first_w, first_b;
    for (int run = 0; run < 3; ++run) {
      dsconv::device_buffer<TestType> gw, gb;
      REQUIRE(gw.allocate(static_cast<std::size_t>(p.c) * 9) == status::success);
      REQUIRE(gb.allocate(p.c) == status::success);
      REQUIRE(dsconv::depthwise_backward_weight(p, options, x.data(), dy.data(), gw.data(), gb.data()) == status::success);
      REQUIRE(dsconv::synchronize() == status::success);
      std::vector<TestType> w, b;
      REQUIRE(gw.download(w) == status::success);
      REQUIRE(gb.download(b) == status::success);
      if (run == 0) {
        first_w = w, first_b = b;
        continue;
      }
      CHECK(std::memcmp(w.data(), first_w.data(), w.size() * sizeof(TestType)) == 0);
      CHECK(std::memcmp(b.data(), first_b.data(), b.size() * sizeof(TestType)) == 0);
    }
  }
}

TEMPLATE_TEST_CASE("depthwise backward: a layer with a fused activation needs the tensor its forward saved",
                   "[depthwise][backward][validation]", float, dsconv::half) {
  dsconv::depthwise_params p = make_params(2, 8, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1);
  p.act = activation::relu6;
  const std::size_t count = 2 * 8 * 25;
  const device_input<TestType> x(random_tensor<TestType>(count)), w(random_tensor<TestType>(72)),
      dy(random_tensor<TestType>(count));
  guarded_output<TestType> gx(count), gw(72), gb(8);
  const unsigned long long launches = launches_so_far();
  CHECK(dsconv::depthwise_backward_data(p, dy.data(), w.data(), gx.data()) == status::missing_activation_tensor);
  CHECK(dsconv::depthwise_backward_weight(p, x.data(), dy.data(), gw.data(), gb.data()) == status::missing_activation_tensor);
  // Both the saved tensor and the derivative: which one the gate reads would be a guess.
  const device_input<TestType> saved(random_tensor<TestType>(count)), derivative(random_tensor<TestType>(count));
  dsconv::depthwise_backward_options both;
  both.activation_saved = saved.data(), both.activation_derivative = derivative.data();
  CHECK(dsconv::depthwise_backward_data(p, both, dy.data(), w.data(), gx.data()) == status::conflicting_activation_tensors);
  CHECK(dsconv::depthwise_backward_weight(p, both, x.data(), dy.data(), gw.data(), gb.data()) ==
        status::conflicting_activation_tensors);
  CHECK(launches_so_far() == launches);
  CHECK(gx.untouched());
  CHECK(gw.untouched());
  CHECK(gb.untouched());
}
