// The CPU reference implementations, which every kernel test trusts, against small problems
// whose results are worked out by hand here (small integers: exact in every element type).
#include <catch2/catch.hpp>

#include <cstddef>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "support/shapes.hpp"
#include "support/test_data.hpp"

namespace {

using dsconv::activation;
using dsconv::layout;
using dsconv::status;

template <class T>
std::vector<T> as(const std::vector<float>& v) {
  return std::vector<T>(v.begin(), v.end());
}

// The reference depthwise result (double output) of float data converted to T.
template <class T>
std::vector<double> depthwise(const dsconv::depthwise_params& p, const std::vector<float>& input,
                              const std::vector<float>& weight, const std::vector<float>& bias = {}) {
  const std::vector<T> in = as<T>(input), w = as<T>(weight), b = as<T>(bias);
  REQUIRE(in.size() == static_cast<std::size_t>(p.n) * p.c * p.h * p.w);
  REQUIRE(w.size() == static_cast<std::size_t>(p.out_c()) * p.kernel_h * p.kernel_w);
  std::vector<double> out(static_cast<std::size_t>(p.n) * p.out_c() * p.out_h() * p.out_w());
  REQUIRE(dsconv::reference::depthwise_forward(p, in.data(), w.data(), b.empty() ? nullptr : b.data(), out.data()) ==
          status::success);
  return out;
}

template <class T>
std::vector<double> pointwise(const dsconv::pointwise_params& p, const std::vector<float>& input,
                              const std::vector<float>& weight, const std::vector<float>& bias = {},
                              const std::vector<float>& residual = {}) {
  const std::vector<T> in = as<T>(input), w = as<T>(weight), b = as<T>(bias), r = as<T>(residual);
  REQUIRE(in.size() == static_cast<std::size_t>(p.n) * p.c_in * p.h * p.w);
  REQUIRE(w.size() == static_cast<std::size_t>(p.c_out) * p.c_in);
  std::vector<double> out(static_cast<std::size_t>(p.n) * p.c_out * p.h * p.w);
  REQUIRE(dsconv::reference::pointwise_forward(p, in.data(), w.data(), b.empty() ? nullptr : b.data(),
                                               r.empty() ? nullptr : r.data(), out.data()) == status::success);
  return out;
}

void check_equal(const std::vector<double>& got, const std::vector<double>& expected) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == Approx(expected[i]).margin(1e-12));
  }
}

dsconv::depthwise_params depthwise_problem(int n, int c, int h, int w, int kernel, int pad) {
  dsconv::depthwise_params p;
  p.n = n, p.c = c, p.h = h, p.w = w;
  p.kernel_h = p.kernel_w = kernel;
  p.pad_h = p.pad_w = pad;
  return p;
}

// 1 channel, 3x3 map holding 1..9 in row-major order.
const std::vector<float> one_to_nine = {1, 2, 3, 4, 5, 6, 7, 8, 9};
const std::vector<float> ones_3x3(9, 1.0f);
// Each output is the sum of the 3x3 neighbourhood of one_to_nine inside the zero padding:
// corners 1+2+4+5 = 12, 2+3+5+6 = 16, 4+5+7+8 = 24, 5+6+8+9 = 28; edges 1+..+6 = 21,
// 1+2+4+5+7+8 = 27, 2+3+5+6+8+9 = 33, 4+..+9 = 39; centre 45.
const std::vector<double> neighbourhood_sums = {12, 21, 16, 27, 45, 33, 24, 39, 28};

// The depthwise/pointwise activation points: x and each activation's value at x
// (silu and sigmoid from their definitions, worked out to 16 digits).
const std::vector<float> activation_points = {-4, -3, -1, 0, 0.5f, 2, 3, 7};
struct activation_values {
  activation act;
  std::vector<double> values;
};
const activation_values expected_activations[] = {
    {activation::none, {-4, -3, -1, 0, 0.5, 2, 3, 7}},
    {activation::relu, {0, 0, 0, 0, 0.5, 2, 3, 7}},
    {activation::relu6, {0, 0, 0, 0, 0.5, 2, 3, 6}},
    {activation::silu,
     {-0.07194483984836623, -0.14227761953270035, -0.2689414213699951, 0.0, 0.3112296656009273, 1.7615941559557646,
      2.8577223804672998, 6.993622641639196}},
    {activation::sigmoid,
     {0.01798620996209156, 0.04742587317756678, 0.2689414213699951, 0.5, 0.6224593312018546, 0.8807970779778823,
      0.9525741268224334, 0.9990889488055994}},
    // x * relu6(x + 3) / 6: -1 * 2 / 6, 0.5 * 3.5 / 6, 2 * 5 / 6, 3 * 6 / 6, 7 * 6 / 6.
    {activation::hardswish, {0, 0, -1.0 / 3, 0, 0.5 * 3.5 / 6, 10.0 / 6, 3, 7}},
};

}  // namespace

TEMPLATE_TEST_CASE("reference: depthwise 3x3 all-ones kernel with pad 1 sums each neighbourhood", "[reference]", float,
                   dsconv::half, dsconv::bfloat16) {
  SECTION("stride 1") {
    check_equal(depthwise<TestType>(depthwise_problem(1, 1, 3, 3, 3, 1), one_to_nine, ones_3x3), neighbourhood_sums);
  }
  SECTION("stride 2 keeps the even positions") {
    dsconv::depthwise_params p = depthwise_problem(1, 1, 3, 3, 3, 1);
    p.stride_h = p.stride_w = 2;
    REQUIRE(p.out_h() == 2);
    check_equal(depthwise<TestType>(p, one_to_nine, ones_3x3), {12, 16, 24, 28});
  }
  SECTION("bias is added to every output") {
    check_equal(depthwise<TestType>(depthwise_problem(1, 1, 3, 3, 3, 1), one_to_nine, ones_3x3, {0.5f}),
                {12.5, 21.5, 16.5, 27.5, 45.5, 33.5, 24.5, 39.5, 28.5});
  }
  SECTION("relu6 applies after the bias and clamps at both ends") {
    dsconv::depthwise_params p = depthwise_problem(1, 1, 3, 3, 3, 1);
    p.act = activation::relu6;
    // sums - 20 = -8, 1, -4, 7, 25, 13, 4, 19, 8
    check_equal(depthwise<TestType>(p, one_to_nine, ones_3x3, {-20.0f}), {0, 1, 0, 6, 6, 6, 4, 6, 6});
  }
  SECTION("the second image of a batch uses its own data") {
    std::vector<float> two_images = one_to_nine;
    for (float v : one_to_nine) two_images.push_back(2 * v);
    check_equal(depthwise<TestType>(depthwise_problem(2, 1, 3, 3, 3, 1), two_images, ones_3x3),
                {12, 21, 16, 27, 45, 33, 24, 39, 28, 24, 42, 32, 54, 90, 66, 48, 78, 56});
  }
  SECTION("a float output is the double result rounded") {
    const std::vector<TestType> in = as<TestType>(one_to_nine), w = as<TestType>(ones_3x3);
    std::vector<float> out(9);
    REQUIRE(dsconv::reference::depthwise_forward(depthwise_problem(1, 1, 3, 3, 3, 1), in.data(), w.data(),
                                                 static_cast<const TestType*>(nullptr), out.data()) == status::success);
    CHECK(out == std::vector<float>{12, 21, 16, 27, 45, 33, 24, 39, 28});
  }
}

TEMPLATE_TEST_CASE("reference: depthwise dilation 2 skips every other input", "[reference]", float, dsconv::half,
                   dsconv::bfloat16) {
  // 5x5 map holding 1..25, kernel weights 1..9: tap (ky, kx) reads input (2ky, 2kx) + offset.
  std::vector<float> input, weight;
  for (int i = 1; i <= 25; ++i) input.push_back(static_cast<float>(i));
  for (int i = 1; i <= 9; ++i) weight.push_back(static_cast<float>(i));
  dsconv::depthwise_params p = depthwise_problem(1, 1, 5, 5, 3, 0);
  p.dilation_h = p.dilation_w = 2;
  SECTION("no padding: one output") {
    REQUIRE(p.out_h() == 1);
    REQUIRE(p.out_w() == 1);
    // 1*1 + 2*3 + 3*5 + 4*11 + 5*13 + 6*15 + 7*21 + 8*23 + 9*25 = 22 + 199 + 556
    check_equal(depthwise<TestType>(p, input, weight), {777});
  }
  SECTION("pad 2: same size, the centre as above") {
    p.pad_h = p.pad_w = 2;
    const std::vector<double> out = depthwise<TestType>(p, input, weight);
    REQUIRE(out.size() == 25);
    CHECK(out[0] == 228);  // taps (1,1),(1,2),(2,1),(2,2) on inputs 1,3,11,13: 5+18+88+117
    CHECK(out[2] == 365);  // rows 1-2 of the kernel on inputs 1,3,5 / 11,13,15: 49 + 316
    CHECK(out[2 * 5 + 2] == 777);
  }
}

TEMPLATE_TEST_CASE("reference: depthwise asymmetric kernel and stride act on the right axes", "[reference]", float,
                   dsconv::half, dsconv::bfloat16) {
  // 2x5 map: rows 1..5 and 6..10; kernel 1x3 = [1, 10, 100], pad 0x1, stride 1x2.
  dsconv::depthwise_params p = depthwise_problem(1, 1, 2, 5, 1, 0);
  p.kernel_w = 3;
  p.pad_w = 1;
  p.stride_w = 2;
  REQUIRE(p.out_h() == 2);
  REQUIRE(p.out_w() == 3);
  // Row 0: (pad,1,2) -> 10+200, (2,3,4) -> 2+30+400, (4,5,pad) -> 4+50; row 1 likewise.
  check_equal(depthwise<TestType>(p, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {1, 10, 100}), {210, 432, 54, 760, 987, 109});
}

TEMPLATE_TEST_CASE("reference: depthwise multiplier 2 maps output channel oc to input channel oc / 2", "[reference]",
                   float, dsconv::half, dsconv::bfloat16) {
  // 2 channels of 2x2, kernel 2x2 without padding: one output per channel. Each output
  // channel's weights pick one input position or sum them all.
  dsconv::depthwise_params p = depthwise_problem(1, 2, 2, 2, 2, 0);
  p.multiplier = 2;
  REQUIRE(p.out_c() == 4);
  const std::vector<float> weight = {1, 0, 0, 0,   // oc 0 <- channel 0, position 0: 1
                                     0, 0, 0, 1,   // oc 1 <- channel 0, position 3: 4
                                     1, 1, 1, 1,   // oc 2 <- channel 1, sum: 100
                                     0, 1, 0, 0};  // oc 3 <- channel 1, position 1: 20
  SECTION("nchw") { check_equal(depthwise<TestType>(p, {1, 2, 3, 4, 10, 20, 30, 40}, weight), {1, 4, 100, 20}); }
  SECTION("nhwc") {
    p.data_layout = layout::nhwc;
    check_equal(depthwise<TestType>(p, {1, 10, 2, 20, 3, 30, 4, 40}, weight), {1, 4, 100, 20});
  }
}

TEST_CASE("reference: depthwise nhwc gives the nchw numbers transposed", "[reference]") {
  const int n = 2, c = 3, h = 4, w = 5;
  dsconv::depthwise_params p = depthwise_problem(n, c, h, w, 3, 1);
  p.multiplier = 2;
  p.stride_w = 2;
  const int oc = 6, oh = p.out_h(), ow = p.out_w();
  std::vector<float> nchw(static_cast<std::size_t>(n) * c * h * w), weight(static_cast<std::size_t>(oc) * 9),
      bias(static_cast<std::size_t>(oc));
  for (std::size_t i = 0; i < nchw.size(); ++i) nchw[i] = static_cast<float>(i % 17) - 8;
  for (std::size_t i = 0; i < weight.size(); ++i) weight[i] = static_cast<float>(i % 7) - 3;
  for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i);
  std::vector<float> nhwc(nchw.size());
  for (int b = 0; b < n; ++b)
    for (int ch = 0; ch < c; ++ch)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) nhwc[((b * h + y) * w + x) * c + ch] = nchw[((b * c + ch) * h + y) * w + x];

  const std::vector<double> out_nchw = depthwise<float>(p, nchw, weight, bias);
  p.data_layout = layout::nhwc;
  const std::vector<double> out_nhwc = depthwise<float>(p, nhwc, weight, bias);
  for (int b = 0; b < n; ++b)
    for (int ch = 0; ch < oc; ++ch)
      for (int y = 0; y < oh; ++y)
        for (int x = 0; x < ow; ++x) {
          INFO("b " << b << " channel " << ch << " y " << y << " x " << x);
          CHECK(out_nhwc[((b * oh + y) * ow + x) * oc + ch] == out_nchw[((b * oc + ch) * oh + y) * ow + x]);
        }
  // One value by hand: image 0, output channel 0 (input channel 0), position (0,0): the 2x2
  // corner -8,-7 / -3,-2 times weights taps (1,1),(1,2),(2,1),(2,2) = 1,2 / -3,-2.
  CHECK(out_nchw[0] == -8 * 1 + -7 * 2 + -3 * -3 + -2 * -2 + 0.0);
}

TEMPLATE_TEST_CASE("reference: activations at chosen points", "[reference]", float, dsconv::half, dsconv::bfloat16) {
  for (const activation_values& a : expected_activations) {
    INFO("activation " << dsconv::to_string(a.act));
    // A 1 -> 1 channel 1x1 convolution with weight 1 passes x straight to the activation.
    dsconv::pointwise_params pw;
    pw.n = 1, pw.c_in = 1, pw.c_out = 1, pw.h = 1, pw.w = 8;
    pw.act = a.act;
    check_equal(pointwise<TestType>(pw, activation_points, {1}), a.values);
    // The same through a 1x1 depthwise kernel.
    dsconv::depthwise_params dw = depthwise_problem(1, 1, 2, 4, 1, 0);
    dw.act = a.act;
    check_equal(depthwise<TestType>(dw, activation_points, {1}), a.values);
  }
}

TEMPLATE_TEST_CASE("reference: pointwise sums weight times input over channels, bias and residual first", "[reference]",
                   float, dsconv::half, dsconv::bfloat16) {
  // c_in 2 -> c_out 3 on a 1x2 map. Input channel 0 = (1, 2), channel 1 = (3, 4); weights
  // [c_out][c_in] = (1, 10), (2, 20), (-1, 1). Output channel 0 = (1+30, 2+40), channel 1 =
  // (2+60, 4+80), channel 2 = (-1+3, -2+4).
  dsconv::pointwise_params p;
  p.n = 1, p.c_in = 2, p.c_out = 3, p.h = 1, p.w = 2;
  const std::vector<float> input = {1, 2, 3, 4}, weight = {1, 10, 2, 20, -1, 1}, bias = {0.5f, -100, 1};
  const std::vector<float> residual = {1, 2, 3, 20, 5, 6};
  SECTION("conv") { check_equal(pointwise<TestType>(p, input, weight), {31, 42, 62, 84, 2, 2}); }
  SECTION("conv + bias") { check_equal(pointwise<TestType>(p, input, weight, bias), {31.5, 42.5, -38, -16, 3, 3}); }
  SECTION("conv + residual") {
    check_equal(pointwise<TestType>(p, input, weight, {}, residual), {32, 44, 65, 104, 7, 8});
  }
  SECTION("act(conv + bias + residual), not act(conv + bias) + residual") {
    // conv + bias + residual = 32.5, 44.5, -35, 4, 8, 9; relu(-16) + 20 would give 20.
    check_equal(pointwise<TestType>(p, input, weight, bias, residual), {32.5, 44.5, -35, 4, 8, 9});
    p.act = activation::relu;
    check_equal(pointwise<TestType>(p, input, weight, bias, residual), {32.5, 44.5, 0, 4, 8, 9});
    p.act = activation::relu6;
    check_equal(pointwise<TestType>(p, input, weight, bias, residual), {6, 6, 0, 4, 6, 6});
  }
  SECTION("nhwc: the same numbers, pixel-major") {
    p.data_layout = layout::nhwc;
    p.act = activation::relu;
    check_equal(pointwise<TestType>(p, {1, 3, 2, 4}, weight, bias, {1, 3, 5, 2, 20, 6}), {32.5, 0, 8, 44.5, 4, 9});
  }
  SECTION("batch 2: the second image uses its own data") {
    p.n = 2;
    // Image 1: channel 0 = (0, 1), channel 1 = (1, 0) -> (10, 1), (20, 2), (1, -1).
    check_equal(pointwise<TestType>(p, {1, 2, 3, 4, 0, 1, 1, 0}, weight), {31, 42, 62, 84, 2, 2, 10, 1, 20, 2, 1, -1});
    p.data_layout = layout::nhwc;
    check_equal(pointwise<TestType>(p, {1, 3, 2, 4, 0, 1, 1, 0}, weight), {31, 62, 2, 42, 84, 2, 10, 20, 1, 1, 2, -1});
  }
}

TEST_CASE("reference: invalid problems are rejected like the kernels reject them", "[reference]") {
  const std::vector<float> data(64, 1.0f);
  std::vector<double> out(64);
  dsconv::depthwise_params dw = depthwise_problem(1, 1, 3, 3, 3, 1);
  dw.n = 0;
  CHECK(dsconv::reference::depthwise_forward(dw, data.data(), data.data(), static_cast<const float*>(nullptr),
                                             out.data()) == status::invalid_size);
  dw.n = 1;
  CHECK(dsconv::reference::depthwise_forward(dw, static_cast<const float*>(nullptr), data.data(),
                                             static_cast<const float*>(nullptr), out.data()) == status::null_pointer);
  dsconv::pointwise_params pw;
  pw.n = 1, pw.c_in = 2, pw.c_out = 0, pw.h = 1, pw.w = 1;
  CHECK(dsconv::reference::pointwise_forward(pw, data.data(), data.data(), static_cast<const float*>(nullptr),
                                             static_cast<const float*>(nullptr), out.data()) == status::invalid_size);
}
