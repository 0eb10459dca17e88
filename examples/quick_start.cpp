// Quick start: one depthwise 3x3 convolution on device buffers, with error handling.
// Builds on every platform: g++ -std=c++17 -pthread -I include examples/quick_start.cpp
// runs it on the CPU host platform; nvcc / hipcc run it on a GPU.
#include <cmath>
#include <cstdio>
#include <vector>

#include <dsconv/dsconv.hpp>

// Exits with the library's own description of what went wrong.
#define CHECK_DSCONV(call)                                                                          \
  do {                                                                                              \
    const dsconv::status s_ = (call);                                                               \
    if (s_ != dsconv::status::success) {                                                            \
      std::fprintf(stderr, "%s failed: %s (%s)\n", #call, dsconv::to_string(s_), dsconv::last_error_detail()); \
      return 1;                                                                                     \
    }                                                                                               \
  } while (0)

int main() {
  // MobileNetV2's first depthwise layer at batch 1: 32 channels, 112x112, 3x3, stride 1, pad 1.
  dsconv::depthwise_params p;
  p.n = 1, p.c = 32, p.h = 112, p.w = 112;
  p.pad_h = p.pad_w = 1;
  p.act = dsconv::activation::relu6;

  std::vector<float> input(static_cast<std::size_t>(p.n) * p.c * p.h * p.w), weight(p.c * 9), bias(p.c);
  for (std::size_t i = 0; i < input.size(); ++i) input[i] = std::sin(0.01f * static_cast<float>(i));
  for (std::size_t i = 0; i < weight.size(); ++i) weight[i] = 0.1f * std::cos(static_cast<float>(i));
  for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = 0.01f * static_cast<float>(i);

  dsconv::device_buffer<float> d_input, d_weight, d_bias, d_output;
  CHECK_DSCONV(d_input.upload(input));
  CHECK_DSCONV(d_weight.upload(weight));
  CHECK_DSCONV(d_bias.upload(bias));
  CHECK_DSCONV(d_output.allocate(static_cast<std::size_t>(p.n) * p.c * p.out_h() * p.out_w()));

  CHECK_DSCONV(dsconv::depthwise_forward(p, d_input.data(), d_weight.data(), d_bias.data(), d_output.data()));
  CHECK_DSCONV(dsconv::synchronize());

  // Bad input is refused with a precise status, and nothing is written.
  dsconv::depthwise_params bad = p;
  bad.stride_h = 0;
  const dsconv::status refused = dsconv::depthwise_forward(bad, d_input.data(), d_weight.data(), d_bias.data(), d_output.data());
  std::printf("stride 0 -> %s\n", dsconv::to_string(refused));
  if (refused != dsconv::status::invalid_stride) return 1;

  // Check against the double-precision reference.
  std::vector<float> output, expected(d_output.size());
  CHECK_DSCONV(d_output.download(output));
  CHECK_DSCONV(dsconv::reference::depthwise_forward(p, input.data(), weight.data(), bias.data(), expected.data()));
  double worst = 0;
  for (std::size_t i = 0; i < output.size(); ++i) worst = std::fmax(worst, std::fabs(output[i] - expected[i]));
  std::printf("depthwise 3x3 on %dx%dx%d: max |error| vs reference = %.3g\n", p.c, p.h, p.w, worst);
  return worst < 1e-5 ? 0 : 1;
}
