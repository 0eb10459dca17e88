// A MobileNetV2 inverted-residual block on device buffers:
//   1x1 expand (24 -> 144) + ReLU6,  3x3 depthwise (stride 1) + ReLU6,  1x1 project (144 -> 24) + input
// as an inference engine runs it: each convolution's batch norm folded into its weights and
// bias, so that every layer is one dsconv call with bias, activation (and residual) fused.
// The result is checked against the unfolded computation (reference convolutions, then batch
// norm, activation and residual applied by hand); the program exits non-zero on a mismatch.
// Builds on every platform: g++ -std=c++17 -pthread -I include examples/mobilenet_v2_block.cpp
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <dsconv/dsconv.hpp>

// Exits with the library's own description of what went wrong (77: no GPU, a skipped test).
#define CHECK_DSCONV(call)                                                                                     \
  do {                                                                                                         \
    const dsconv::status s_ = (call);                                                                          \
    if (s_ != dsconv::status::success) {                                                                       \
      std::fprintf(stderr, "%s failed: %s (%s)\n", #call, dsconv::to_string(s_), dsconv::last_error_detail()); \
      return s_ == dsconv::status::no_device ? 77 : 1;                                                         \
    }                                                                                                          \
  } while (0)

namespace {

// Batch-norm parameters of one convolution's output channels (inference statistics).
struct batch_norm {
  std::vector<float> gamma, beta, mean, var;
  float eps = 1e-5f;
};

// Folds y = gamma * (conv(x) - mean) / sqrt(var + eps) + beta into the convolution:
//   scale[c] = gamma[c] / sqrt(var[c] + eps)
//   w'[c][...] = w[c][...] * scale[c]        (every weight of output channel c)
//   b'[c]      = beta[c] - mean[c] * scale[c]
// `weights` holds out_channels rows of weights_per_channel weights.
void fold_batch_norm(const batch_norm& bn, std::vector<float>& weights, std::vector<float>& bias) {
  const std::size_t channels = bn.gamma.size(), per_channel = weights.size() / channels;
  bias.resize(channels);
  for (std::size_t c = 0; c < channels; ++c) {
    const float scale = bn.gamma[c] / std::sqrt(bn.var[c] + bn.eps);
    for (std::size_t i = 0; i < per_channel; ++i) weights[c * per_channel + i] *= scale;
    bias[c] = bn.beta[c] - bn.mean[c] * scale;
  }
}

std::vector<float> random_vector(std::size_t n, float lo, float hi, std::mt19937& gen) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

batch_norm random_batch_norm(std::size_t channels, std::mt19937& gen) {
  return {random_vector(channels, 0.5f, 1.5f, gen), random_vector(channels, -0.2f, 0.2f, gen),
          random_vector(channels, -0.3f, 0.3f, gen), random_vector(channels, 0.5f, 2.0f, gen)};
}

// Batch norm, then optionally the residual, then optionally ReLU6, in NCHW (channel-major per
// image), in double: the unfolded path that the folded block must reproduce.
std::vector<float> finish(const std::vector<double>& conv, const batch_norm& bn, int n, int pixels,
                          const std::vector<float>* residual, bool relu6) {
  const int channels = static_cast<int>(bn.gamma.size());
  std::vector<float> out(conv.size());
  for (int b = 0; b < n; ++b)
    for (int c = 0; c < channels; ++c)
      for (int p = 0; p < pixels; ++p) {
        const std::size_t i = (static_cast<std::size_t>(b) * channels + c) * pixels + p;
        double v = bn.gamma[c] * (conv[i] - bn.mean[c]) / std::sqrt(double(bn.var[c]) + bn.eps) + bn.beta[c];
        if (residual) v += (*residual)[i];
        if (relu6) v = std::min(std::max(v, 0.0), 6.0);
        out[i] = static_cast<float>(v);
      }
  return out;
}

}  // namespace

int main() {
  // MobileNetV2's second block on a 56x56 map (t = 6, c = 24, stride 1: it has a residual).
  constexpr int n = 2, c = 24, expanded = 6 * c, h = 56, w = 56, pixels = h * w;
  std::mt19937 gen(7);

  dsconv::pointwise_params expand;
  expand.n = n, expand.c_in = c, expand.c_out = expanded, expand.h = h, expand.w = w;
  expand.act = dsconv::activation::relu6;
  dsconv::depthwise_params depthwise;
  depthwise.n = n, depthwise.c = expanded, depthwise.h = h, depthwise.w = w;
  depthwise.pad_h = depthwise.pad_w = 1;
  depthwise.act = dsconv::activation::relu6;
  dsconv::pointwise_params project;
  project.n = n, project.c_in = expanded, project.c_out = c, project.h = h, project.w = w;
  project.act = dsconv::activation::none;  // linear bottleneck; the residual is added instead

  // Trained parameters: convolution weights without bias, each followed by a batch norm.
  const std::vector<float> x = random_vector(static_cast<std::size_t>(n) * c * pixels, -1.f, 1.f, gen);
  const std::vector<float> w_expand = random_vector(static_cast<std::size_t>(expanded) * c, -0.3f, 0.3f, gen);
  const std::vector<float> w_depthwise = random_vector(static_cast<std::size_t>(expanded) * 9, -0.4f, 0.4f, gen);
  const std::vector<float> w_project = random_vector(static_cast<std::size_t>(c) * expanded, -0.15f, 0.15f, gen);
  const batch_norm bn_expand = random_batch_norm(expanded, gen), bn_depthwise = random_batch_norm(expanded, gen),
                   bn_project = random_batch_norm(c, gen);

  // Inference: fold each batch norm into its convolution's weights and bias.
  std::vector<float> fw_expand = w_expand, fw_depthwise = w_depthwise, fw_project = w_project;
  std::vector<float> b_expand, b_depthwise, b_project;
  fold_batch_norm(bn_expand, fw_expand, b_expand);
  fold_batch_norm(bn_depthwise, fw_depthwise, b_depthwise);
  fold_batch_norm(bn_project, fw_project, b_project);

  dsconv::device_buffer<float> d_x, d_expanded, d_filtered, d_y;
  dsconv::device_buffer<float> d_w_expand, d_b_expand, d_w_depthwise, d_b_depthwise, d_w_project, d_b_project;
  CHECK_DSCONV(d_x.upload(x));
  CHECK_DSCONV(d_w_expand.upload(fw_expand));
  CHECK_DSCONV(d_b_expand.upload(b_expand));
  CHECK_DSCONV(d_w_depthwise.upload(fw_depthwise));
  CHECK_DSCONV(d_b_depthwise.upload(b_depthwise));
  CHECK_DSCONV(d_w_project.upload(fw_project));
  CHECK_DSCONV(d_b_project.upload(b_project));
  CHECK_DSCONV(d_expanded.allocate(static_cast<std::size_t>(n) * expanded * pixels));
  CHECK_DSCONV(d_filtered.allocate(static_cast<std::size_t>(n) * expanded * pixels));
  CHECK_DSCONV(d_y.allocate(x.size()));

  // The block: three calls queued on the default stream, one synchronisation.
  CHECK_DSCONV(dsconv::pointwise_forward<float>(expand, d_x.data(), d_w_expand.data(), d_b_expand.data(),
                                                /*residual=*/nullptr, d_expanded.data()));
  CHECK_DSCONV(dsconv::depthwise_forward(depthwise, d_expanded.data(), d_w_depthwise.data(), d_b_depthwise.data(),
                                         d_filtered.data()));
  CHECK_DSCONV(dsconv::pointwise_forward(project, d_filtered.data(), d_w_project.data(), d_b_project.data(), d_x.data(),
                                         d_y.data()));
  CHECK_DSCONV(dsconv::synchronize());
  std::vector<float> y;
  CHECK_DSCONV(d_y.download(y));

  // The unfolded block on the CPU: reference convolutions without bias or activation, then
  // batch norm, activation and residual by hand.
  dsconv::pointwise_params plain_expand = expand, plain_project = project;
  dsconv::depthwise_params plain_depthwise = depthwise;
  plain_expand.act = plain_depthwise.act = plain_project.act = dsconv::activation::none;
  std::vector<double> conv(static_cast<std::size_t>(n) * expanded * pixels);
  CHECK_DSCONV(dsconv::reference::pointwise_forward(plain_expand, x.data(), w_expand.data(),
                                                    static_cast<const float*>(nullptr),
                                                    static_cast<const float*>(nullptr), conv.data()));
  const std::vector<float> expanded_ref = finish(conv, bn_expand, n, pixels, nullptr, true);
  CHECK_DSCONV(dsconv::reference::depthwise_forward(plain_depthwise, expanded_ref.data(), w_depthwise.data(),
                                                    static_cast<const float*>(nullptr), conv.data()));
  const std::vector<float> filtered_ref = finish(conv, bn_depthwise, n, pixels, nullptr, true);
  std::vector<double> projected(x.size());
  CHECK_DSCONV(dsconv::reference::pointwise_forward(plain_project, filtered_ref.data(), w_project.data(),
                                                    static_cast<const float*>(nullptr),
                                                    static_cast<const float*>(nullptr), projected.data()));
  const std::vector<float> y_ref = finish(projected, bn_project, n, pixels, &x, false);

  double d2 = 0, r2 = 0, worst = 0;
  std::size_t non_finite = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i])) {
      ++non_finite;
      continue;
    }
    const double d = double(y[i]) - y_ref[i];
    d2 += d * d;
    r2 += double(y_ref[i]) * y_ref[i];
    worst = std::max(worst, std::fabs(d));
  }
  const double rel = std::sqrt(d2 / r2);
  // Folding changes the rounding of each layer, and ReLU6 can round either side of its clip:
  // float agreement, not bit equality, is what a correct block shows.
  const bool ok = non_finite == 0 && rel < 1e-5 && worst < 1e-3;
  std::printf(
      "MobileNetV2 block %dx%dx%d (expand x6, batch %d) with folded batch norm vs unfolded reference: "
      "relative error %.2e, max |error| %.2e, %zu non-finite -> %s\n",
      c, h, w, n, rel, worst, non_finite, ok ? "ok" : "MISMATCH");
  return ok ? 0 : 1;
}
