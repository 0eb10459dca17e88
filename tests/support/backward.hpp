#pragma once
// Shared by the backward tests: tensors a backward call reads, the gradient of the fused
// activation as the references compute it, and the error bounds of the gradients (the
// forward's bound, accuracy.hpp, over each gradient's own sum).

#include <cmath>
#include <cstddef>
#include <vector>

#include <catch2/catch.hpp>
#include <dsconv/dsconv.hpp>

#include "accuracy.hpp"
#include "test_data.hpp"

namespace dsconv_test {

// The tensor a forward with activation `act` saved (its output for relu and relu6, its input
// otherwise): values spread over [-8, 8] so that every piece of every activation's derivative
// (relu6's cap at 6, hardswish's at -3 and 3) is reached.
template <class T>
std::vector<T> saved_activation_tensor(std::size_t count) {
  std::vector<T> v = random_tensor<T>(count);
  for (T& x : v) x = T(dsconv::to_float(x) * 8.f);
  return v;
}

// dz = dL/dy * act'(saved) in double (dL/dy where act is none).
template <class T>
std::vector<double> gated_gradient(const std::vector<T>& dy, const std::vector<T>& saved, dsconv::activation act) {
  std::vector<double> dz(dy.size());
  for (std::size_t i = 0; i < dy.size(); ++i) {
    dz[i] = dsconv::to_float(dy[i]);
    if (act != dsconv::activation::none)
      dz[i] *= dsconv::detail::activation_gradient(static_cast<double>(dsconv::to_float(saved[i])), act);
  }
  return dz;
}

// |dz| as the error bounds see it: |dL/dy| times the size of the pieces act' is computed from,
// where they cancel (silu' = s (1 + z (1 - s)) near z = -1.28, hardswish' = z / 3 + 1/2 near
// z = -1.5): the float derivative errs by a few units of roundoff of those pieces, not of
// their small difference.
template <class T>
std::vector<double> gradient_scale(const std::vector<T>& dy, const std::vector<T>& saved, dsconv::activation act) {
  std::vector<double> scale(dy.size());
  for (std::size_t i = 0; i < dy.size(); ++i) {
    const double z = dsconv::to_float(saved[i]), s = 1 / (1 + std::exp(-z)), t = 1 / (1 + std::exp(z));
    double g = 1;
    if (act == dsconv::activation::silu)
      g = s * (1 + std::fabs(z) * t);
    else if (act == dsconv::activation::hardswish && z >= -3 && z <= 3)
      g = std::fabs(z) / 3 + 0.5;
    else if (act != dsconv::activation::none)
      g = std::fabs(dsconv::detail::activation_gradient(z, act));
    scale[i] = std::fabs(dsconv::to_float(dy[i])) * g;
  }
  return scale;
}

// dz rounded to T (what a matrix unit multiplies, where the gate's product passes through
// shared memory as T), and where the unit reads 16-bit subnormals as zero, flushed.
template <class T>
std::vector<T> rounded(const std::vector<double>& dz, bool flush) {
  std::vector<T> r(dz.size());
  for (std::size_t i = 0; i < dz.size(); ++i) r[i] = T(static_cast<float>(dz[i]));
  return flush ? flush_subnormals(r) : r;
}

inline std::vector<float> squares(const std::vector<double>& v) {
  std::vector<float> s(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) s[i] = static_cast<float>(v[i] * v[i]);
  return s;
}

// The bound of each element of a gradient whose sums have `products` terms, with ||t||_2 the
// square roots of `term_squares` (a reference run on the squared operands).
inline error_bound bound_from(std::vector<double> term_squares, int products, double operand_unit,
                              double operand_floor = 0) {
  for (double& v : term_squares) v = std::sqrt(v);
  return error_bound{std::move(term_squares), products, operand_unit, operand_floor};
}

}  // namespace dsconv_test
