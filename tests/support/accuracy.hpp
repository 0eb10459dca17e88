#pragma once
// How close a kernel's output must be to the double-precision reference, element by element.
// Inputs are already of type T, so a correct kernel errs only by (1) its fp32 accumulation,
// (2) operand rounding where a matrix unit rounds operands (TF32), (3) the fp32 evaluation of
// the activation and (4) the final rounding to T. For each output element, whose sum has K
// products plus bias and residual with terms t_k:
//   |out - ref| <= L * lambda * (sqrt(K + 34) * u_f32 + 2 * u_operand) * ||t||_2     (1, 2)
//                  + (u_T + 8 * u_f32) * |ref| + floor_T                              (3, 4)
// u is each format's unit roundoff (half 2^-11, bfloat16 2^-8, float 2^-24); ||t||_2 comes
// from the reference run on the squared inputs; K + 34 counts bias, residual and up to 32
// split-K slice sums; lambda = 8 makes (1, 2) a probabilistic bound for rounding errors of
// random sign (Higham and Mary, 2019) that a correct kernel exceeds with negligible
// probability; L = 1.5 is the steepest slope of any activation (hardswish); floor_T is half
// the smallest subnormal of T. One wrong tap, one dropped product or a missing bias moves an
// element far past this bound in every type.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>
#include <dsconv/dsconv.hpp>

#include "test_data.hpp"

namespace dsconv_test {

template <class T>
constexpr double unit_roundoff() {
  return std::is_same<T, float>::value ? 0x1p-24 : std::is_same<T, dsconv::half>::value ? 0x1p-11 : 0x1p-8;
}
// Half the smallest subnormal of T: the largest rounding error among the subnormals.
template <class T>
constexpr double rounding_floor() {
  return std::is_same<T, float>::value ? 0x1p-150 : std::is_same<T, dsconv::half>::value ? 0x1p-25 : 0x1p-134;
}
inline constexpr double tf32_unit_roundoff = 0x1p-11;
// float on NVIDIA's tensor cores in two TF32 parts and three products (matrix_units.hpp): each
// operand within 2^-21 of itself as the parts sum (big rounded, small cut to tf32) and the
// small x small term, below 2^-22 of the product, left out: each product within 5 * 2^-22 of
// itself, as if each operand were rounded to 1.25 * 2^-21.
inline constexpr double split_tf32_unit_roundoff = 0x1.4p-21;
// The operand rounding of float products on the matrix unit `unit`: on NVIDIA's tensor cores
// TF32 where the caller allows it, else the two parts'; fp32 on AMD's (0).
inline double float_matrix_operand_unit(dsconv::platform::matrix_unit unit, bool allow_tf32) {
  if (unit != dsconv::platform::matrix_unit::mma_sync) return 0;
  return allow_tf32 ? tf32_unit_roundoff : split_tf32_unit_roundoff;
}

struct error_bound {
  std::vector<double> term_norms;  // ||t||_2 of each output element
  int products;                    // K
  double operand_unit = 0;         // TF32 rounding of the operands, else 0
  double operand_floor = 0;        // where operands are rounded to a 16-bit type: the absolute error
                                   // of their subnormal rounding, summed over one element's terms
};

// The values as floats, squared (exact for 16-bit types).
template <class T>
std::vector<float> squares(const std::vector<T>& v) {
  std::vector<float> s(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) s[i] = dsconv::to_float(v[i]) * dsconv::to_float(v[i]);
  return s;
}

template <class T>
error_bound depthwise_bound(dsconv::depthwise_params p, const std::vector<T>& input, const std::vector<T>& weight,
                            const T* bias) {
  p.act = dsconv::activation::none;
  const std::vector<float> x2 = squares(input), w2 = squares(weight);
  const std::vector<float> b2 = bias ? squares(std::vector<T>(bias, bias + p.out_c())) : std::vector<float>();
  error_bound b{std::vector<double>(static_cast<std::size_t>(p.n) * p.out_c() * p.out_h() * p.out_w()),
                p.kernel_h * p.kernel_w};
  REQUIRE(dsconv::reference::depthwise_forward(p, x2.data(), w2.data(), bias ? b2.data() : nullptr,
                                               b.term_norms.data()) == dsconv::status::success);
  for (double& v : b.term_norms) v = std::sqrt(v);
  return b;
}

template <class T>
error_bound pointwise_bound(dsconv::pointwise_params p, const std::vector<T>& input, const std::vector<T>& weight,
                            const T* bias, const std::vector<T>* residual, double operand_unit = 0) {
  p.act = dsconv::activation::none;
  const std::vector<float> x2 = squares(input), w2 = squares(weight);
  const std::vector<float> b2 = bias ? squares(std::vector<T>(bias, bias + p.c_out)) : std::vector<float>();
  const std::vector<float> r2 = residual ? squares(*residual) : std::vector<float>();
  error_bound b{std::vector<double>(static_cast<std::size_t>(p.n) * p.h * p.w * p.c_out), p.c_in, operand_unit};
  REQUIRE(dsconv::reference::pointwise_forward(p, x2.data(), w2.data(), bias ? b2.data() : nullptr,
                                               residual ? r2.data() : nullptr, b.term_norms.data()) ==
          dsconv::status::success);
  for (double& v : b.term_norms) v = std::sqrt(v);
  return b;
}

// The largest error a correct kernel may make on an element with reference value `ref` and
// term norm `norm`.
template <class T>
double allowed_error(double ref, double norm, const error_bound& b) {
  constexpr double u32 = 0x1p-24, lambda = 8, slope = 1.5;
  const double accumulation = slope * lambda * (std::sqrt(b.products + 34.0) * u32 + 2 * b.operand_unit) * norm;
  return accumulation * (1 + unit_roundoff<T>()) + (unit_roundoff<T>() + 8 * u32) * std::fabs(ref) + rounding_floor<T>() +
         b.operand_floor;
}

// Judges a kernel's output against the double reference: no unwritten (NaN-poisoned) or
// non-finite element, and every element within its allowed error.
template <class T>
void check_close(const std::vector<T>& out, const std::vector<double>& ref, const error_bound& bound) {
  REQUIRE(out.size() == ref.size());
  REQUIRE(bound.term_norms.size() == ref.size());
  std::size_t non_finite = 0, outside = 0, worst = 0;
  double worst_ratio = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double o = static_cast<double>(dsconv::to_float(out[i]));
    if (!std::isfinite(o)) {
      ++non_finite;
      continue;
    }
    const double ratio = std::fabs(o - ref[i]) / allowed_error<T>(ref[i], bound.term_norms[i], bound);
    outside += ratio > 1;
    if (ratio > worst_ratio) worst_ratio = ratio, worst = i;
  }
  INFO(type_name<T>() << ": " << non_finite << " non-finite and " << outside << " of " << out.size()
                      << " elements outside their bound; worst: element " << worst << ", "
                      << dsconv::to_float(out[worst]) << " against " << ref[worst] << ", "
                      << worst_ratio << " times its allowed error");
  CHECK(non_finite == 0);
  CHECK(outside == 0);
}

// 16-bit values whose magnitude is below the smallest normal, set to zero (what gfx90a's
// matrix cores read them as).
template <class T>
std::vector<T> flush_subnormals(std::vector<T> v) {
  const float smallest_normal = std::is_same<T, dsconv::half>::value ? 0x1p-14f : 0x1p-126f;
  for (T& x : v)
    if (std::fabs(dsconv::to_float(x)) < smallest_normal) x = T(0.f);
  return v;
}

// The reference's output act(z) from its z = conv + bias (+ residual), the activation applied
// to z in double exactly as the reference applies it: the same bits as a second reference pass
// with the activation, which on the 1x1 layers costs as much as the first.
inline std::vector<double> activated(std::vector<double> z, dsconv::activation act) {
  for (double& v : z) v = dsconv::detail::activate(v, act);
  return z;
}

// What a forward call of a test's variant sweep saves for the backward: nothing, z
// (pre_activation) or act'(z) (activation_derivative). Each sweep turns the variants' forms by
// one (saved_form_turn, plus the variant's place), so that every variant saves each on some of
// the cases.
enum class saved_form { nothing, pre_activation, derivative };
inline int saved_form_turn() {
  static int sweeps = 0;
  return sweeps++;
}

// Judges the derivative act'(z) a forward saved (its activation_derivative option) against the
// reference's z = conv + bias (ref_z) and its bound: each element lies within the derivative's
// range over z's allowed error, [z - e, z + e] (sampled at both ends and the middle, which also
// takes in the jumps of relu, relu6 and hardswish there, widened by the smooth derivatives'
// steepest slope, silu's 1/2, times e), give or take T's rounding and 2^-18 (the GPU's
// approximate exponential and reciprocal). A z stored for the derivative, or the derivative of
// another activation, lies outside it on random data.
template <class T>
void check_derivative(const std::vector<T>& out, const std::vector<double>& ref_z, const error_bound& bound,
                      dsconv::activation act) {
  REQUIRE(out.size() == ref_z.size());
  std::size_t outside = 0, worst = 0;
  double worst_excess = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double z = ref_z[i], e = allowed_error<T>(z, bound.term_norms[i], bound);
    double lo = 1e300, hi = -1e300;
    for (const double at : {z - e, z, z + e}) {
      const double d = dsconv::detail::activation_gradient(at, act);
      lo = std::min(lo, d), hi = std::max(hi, d);
    }
    const double slack = 0.5 * e + unit_roundoff<T>() * std::max(std::fabs(lo), std::fabs(hi)) + rounding_floor<T>() + 0x1p-18;
    const double o = static_cast<double>(dsconv::to_float(out[i]));
    const double excess = !std::isfinite(o) ? 1e300 : std::max(lo - slack - o, o - hi - slack);
    outside += excess > 0;
    if (excess > worst_excess) worst_excess = excess, worst = i;
  }
  INFO(type_name<T>() << ": " << outside << " of " << out.size() << " derivatives outside their range; worst: element "
                      << worst << ", " << dsconv::to_float(out[worst]) << " at z = " << ref_z[worst]);
  CHECK(outside == 0);
}

}  // namespace dsconv_test
