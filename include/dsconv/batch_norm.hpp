#pragma once
// Folding an inference-mode batch norm into the convolution before it: BN(conv(x) + b) =
// conv'(x) + b' with, per output channel o, s = gamma / sqrt(var + eps), conv' = s * conv
// (every weight of channel o scaled) and b' = s * (b - mean) + beta. The layer calls and the
// fused block take weights and biases already folded. Host memory.

#include <cmath>
#include <cstddef>

#include "platform/float16.hpp"
#include "status.hpp"

namespace dsconv {

// weight: [out_channels][per_channel] (a 1x1 layer's c_in, a depthwise layer's taps); bias:
// [out_channels] or null (zero); gamma, beta, mean, var: [out_channels]. Writes the folded
// weight and bias (each may be its input array itself), computed in double and rounded to float,
// then to T. Errors (nothing written): invalid_size for a count below 1, null_pointer for a
// missing array, invalid_batch_norm where var + eps is not positive and finite.
template <class T>
status fold_batch_norm(int out_channels, int per_channel, const T* weight, const T* bias, const float* gamma,
                       const float* beta, const float* mean, const float* var, float eps, T* folded_weight,
                       T* folded_bias) {
  if (out_channels < 1 || per_channel < 1) return status::invalid_size;
  if (!weight || !gamma || !beta || !mean || !var || !folded_weight || !folded_bias) return status::null_pointer;
  for (int o = 0; o < out_channels; ++o) {
    const double d = static_cast<double>(var[o]) + eps;
    if (!(d > 0) || !std::isfinite(d)) return status::invalid_batch_norm;
  }
  for (int o = 0; o < out_channels; ++o) {
    const double s = gamma[o] / std::sqrt(static_cast<double>(var[o]) + eps);
    const double b = bias ? static_cast<double>(to_float(bias[o])) : 0.0;
    for (int k = 0; k < per_channel; ++k) {
      const std::size_t i = static_cast<std::size_t>(o) * per_channel + k;
      folded_weight[i] = from_float<T>(static_cast<float>(s * to_float(weight[i])));
    }
    folded_bias[o] = from_float<T>(static_cast<float>(s * (b - mean[o]) + beta[o]));
  }
  return status::success;
}

}  // namespace dsconv
