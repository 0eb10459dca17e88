// dsconv::half and dsconv::bfloat16: exact decoding of every bit pattern, round trips, and
// float -> 16-bit rounding (round to nearest, ties to even) against oracles that share no
// code with the library: a rounding written in double arithmetic, and GCC's _Float16.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "support/test_data.hpp"

namespace {

using dsconv::bfloat16;
using dsconv::half;

float float_from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// A 16-bit binary floating-point format: `precision` significant bits (implicit bit
// included), normal exponents from `min_exp` to `max_exp`.
struct format {
  int precision, min_exp, max_exp;
};
constexpr format binary16{11, -14, 15};
constexpr format bfloat16_format{8, -126, 127};

// The value of a bit pattern of `f` (1 sign, exponent, precision-1 mantissa bits), decoded
// with ldexp.
double decode(unsigned bits, format f) {
  const int mantissa_bits = f.precision - 1;
  const int exponent_bits = 15 - mantissa_bits;
  const unsigned m = bits & ((1u << mantissa_bits) - 1), e = (bits >> mantissa_bits) & ((1u << exponent_bits) - 1);
  const double sign = (bits >> 15) ? -1.0 : 1.0;
  const int bias = f.max_exp;
  if (e == (1u << exponent_bits) - 1) return m ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), f.min_exp - mantissa_bits);
  return sign * std::ldexp(static_cast<double>(m + (1u << mantissa_bits)), static_cast<int>(e) - bias - mantissa_bits);
}

// Round to nearest, ties to even, of a finite x to format `f`, in double arithmetic: the two
// neighbours of |x| on the format's grid, the nearer one (the even one on a tie), infinity
// past the largest finite value.
double round_to(double x, format f) {
  const double mag = std::fabs(x);
  if (mag == 0) return x;
  int e;
  std::frexp(mag, &e);  // mag = q * 2^e, q in [0.5, 1): the leading bit has weight 2^(e-1)
  const int lead = std::max(e - 1, f.min_exp);
  const double ulp = std::ldexp(1.0, lead - (f.precision - 1));
  const double lo = std::floor(mag / ulp) * ulp, hi = lo + ulp;
  double r;
  if (mag - lo < hi - mag)
    r = lo;
  else if (hi - mag < mag - lo)
    r = hi;
  else
    r = std::fmod(lo / ulp, 2.0) == 0 ? lo : hi;
  const double max_finite = std::ldexp(2.0 - std::ldexp(1.0, 1 - f.precision), f.max_exp);
  if (r > max_finite) r = INFINITY;
  return std::copysign(r, x);
}

// Whether `got` is exactly `expected`, sign of zero and infinity included.
bool same_value(float got, double expected) {
  return static_cast<double>(got) == expected && std::signbit(got) == std::signbit(expected);
}

#if defined(__FLT16_MAX__)
// GCC's own float -> binary16 conversion (libgcc's soft float on x86-64): an oracle that
// shares nothing with dsconv.
unsigned short gcc_half_bits(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  unsigned short b;
  std::memcpy(&b, &h, sizeof b);
  return b;
}
float gcc_half_to_float(unsigned short b) {
  _Float16 h;
  std::memcpy(&h, &b, sizeof h);
  return static_cast<float>(h);
}
#endif

// Random floats: uniform bit patterns (every exponent, NaN and infinity included), and
// patterns whose exponent lies in or near the 16-bit formats' ranges, where rounding happens.
std::vector<float> random_floats(std::size_t count, int min_biased_exp, int max_biased_exp) {
  std::uniform_int_distribution<std::uint32_t> any;
  std::uniform_int_distribution<std::uint32_t> exponent(static_cast<std::uint32_t>(min_biased_exp),
                                                        static_cast<std::uint32_t>(max_biased_exp));
  std::vector<float> v;
  v.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t r = any(dsconv_test::rng());
    if (i % 2 == 0)
      v.push_back(float_from_bits(r));
    else
      v.push_back(float_from_bits((r & 0x807fffffu) | (exponent(dsconv_test::rng()) << 23)));
  }
  return v;
}

struct edge_case {
  float value;
  unsigned short bits;
};

// Bulk checks over millions of values report the first few failures and a count, rather
// than one Catch assertion (and message) per value.
class failures {
 public:
  template <class Describe>
  void expect(bool ok, Describe&& describe) {
    if (!ok && ++count_ <= 10) FAIL_CHECK(describe());
  }
  std::size_t count() const { return count_; }

 private:
  std::size_t count_ = 0;
};

std::string hex(unsigned v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

}  // namespace

TEST_CASE("types: half decodes every bit pattern exactly and round-trips it", "[types][half]") {
  failures f;
  for (unsigned b = 0; b < 65536; ++b) {
    const auto bits = static_cast<unsigned short>(b);
    const float value = static_cast<float>(half::from_bits(bits));
    const double expected = decode(b, binary16);
    const auto what = [&] { return "half bits " + hex(b) + " -> float " + std::to_string(value); };
    f.expect(bits_of(dsconv::detail::half_bits_to_float_soft(bits)) == bits_of(value), what);
    if (std::isnan(expected)) {
      f.expect(std::isnan(value) && std::signbit(value) == static_cast<bool>(b & 0x8000u), what);
      f.expect(std::isnan(static_cast<float>(half(value))), what);  // NaN stays NaN
      continue;
    }
    f.expect(same_value(value, expected), what);
    f.expect(half(value).bits == bits, what);
    f.expect(dsconv::detail::float_to_half_bits_soft(value) == bits, what);
#if defined(__FLT16_MAX__)
    f.expect(gcc_half_to_float(bits) == value, what);
#endif
  }
  CHECK(f.count() == 0);
}

TEST_CASE("types: float -> half rounds to nearest even at the edge cases", "[types][half]") {
  const float tiny = std::ldexp(1.0f, -24);  // the smallest half subnormal
  const edge_case cases[] = {
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {1.0f + std::ldexp(1.0f, -11), 0x3c00},      // halfway between 1 and 1+2^-10: even is 1
      {1.0f + 3 * std::ldexp(1.0f, -11), 0x3c02},  // halfway between 0x3c01 and 0x3c02: even is 0x3c02
      {1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -23), 0x3c01},  // just above halfway
      {1.0f + std::ldexp(1.0f, -11) - std::ldexp(1.0f, -23), 0x3c00},  // just below halfway
      {-(1.0f + 3 * std::ldexp(1.0f, -11)), 0xbc02},
      {2049.0f, 0x6800},  // halfway between 2048 and 2050: 2048
      {2051.0f, 0x6802},  // halfway between 2050 and 2052: 2052
      {tiny, 0x0001},
      {tiny / 2, 0x0000},  // halfway between 0 and 2^-24: 0
      {-tiny / 2, 0x8000},
      {tiny / 2 * 1.0000001f, 0x0001},                     // just above that halfway point
      {3 * tiny / 2, 0x0002},                              // halfway between 1 and 2 units: 2
      {5 * tiny / 2, 0x0002},                              // halfway between 2 and 3 units: 2
      {1023 * tiny, 0x03ff},                               // the largest subnormal
      {1023.5f * tiny, 0x0400},                            // halfway to the smallest normal: even is 0x0400
      {std::ldexp(1.0f, -14), 0x0400},                     // the smallest normal
      {std::ldexp(1.0f, -30), 0x0000},                     // far below the subnormals
      {std::numeric_limits<float>::denorm_min(), 0x0000},  // a float subnormal
      {-std::numeric_limits<float>::denorm_min(), 0x8000},
      {65504.0f, 0x7bff},   // the largest half
      {65519.99f, 0x7bff},  // just below halfway to 65536
      {65520.0f, 0x7c00},   // halfway: rounds to infinity (0x7bff is odd)
      {-65520.0f, 0xfc00},
      {65536.0f, 0x7c00},
      {1e10f, 0x7c00},
      {std::numeric_limits<float>::max(), 0x7c00},
      {INFINITY, 0x7c00},
      {-INFINITY, 0xfc00},
  };
  for (const edge_case& c : cases) {
    INFO("float " << c.value << " (bits 0x" << std::hex << bits_of(c.value) << "), expected half 0x" << c.bits);
    CHECK(half(c.value).bits == c.bits);
    CHECK(dsconv::detail::float_to_half_bits_soft(c.value) == c.bits);
    // The expectation itself agrees with the double-arithmetic rounding.
    CHECK(same_value(static_cast<float>(half::from_bits(c.bits)), round_to(c.value, binary16)));
#if defined(__FLT16_MAX__)
    CHECK(gcc_half_bits(c.value) == c.bits);  // the expectations above agree with GCC's conversion
#endif
  }
  for (const float nan :
       {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
        std::numeric_limits<float>::signaling_NaN(), float_from_bits(0x7f800001u), float_from_bits(0xffffffffu)}) {
    INFO("NaN bits 0x" << std::hex << bits_of(nan));
    CHECK(std::isnan(static_cast<float>(half(nan))));
    CHECK(std::isnan(dsconv::detail::half_bits_to_float_soft(dsconv::detail::float_to_half_bits_soft(nan))));
  }
}

TEST_CASE("types: float -> half rounds every tie of the half grid to even", "[types][half]") {
  // For each pair of adjacent halves (above 0x7bff, rounding sees 65536) the float midpoint
  // goes to the even pattern, one float ulp either side to the nearer one.
  failures f;
  for (unsigned b = 0; b < 0x7c00; ++b) {
    const double lo = decode(b, binary16), hi = b + 1 == 0x7c00 ? 65536.0 : decode(b + 1, binary16);
    const float mid = static_cast<float>((lo + hi) / 2);  // 12 significant bits: exact
    const unsigned even = b % 2 == 0 ? b : b + 1;
    for (const float sign : {1.0f, -1.0f}) {
      const unsigned s = sign < 0 ? 0x8000u : 0u;
      const auto what = [&] { return "tie between half " + hex(b | s) + " and " + hex((b + 1) | s); };
      f.expect(static_cast<double>(mid) == (lo + hi) / 2, what);
      f.expect(half(sign * mid).bits == (even | s), what);
      f.expect(half(sign * std::nextafter(mid, 0.0f)).bits == (b | s), what);
      f.expect(half(sign * std::nextafter(mid, INFINITY)).bits == ((b + 1) | s), what);
    }
  }
  CHECK(f.count() == 0);
}

TEST_CASE("types: float -> half matches a double-arithmetic rounding and GCC's _Float16 on random floats",
          "[types][half]") {
  failures f;
  // Rounding to half is interesting from 2^-25 (biased float exponent 102) to 2^16 (143).
  for (const float x : random_floats(1 << 21, 96, 146)) {
    const unsigned short bits = half(x).bits;
    const float got = static_cast<float>(half(x));
    const auto what = [&] { return "float " + hex(bits_of(x)) + " -> half " + hex(bits); };
    f.expect(dsconv::detail::float_to_half_bits_soft(x) == bits, what);
    if (std::isnan(x)) {
      f.expect(std::isnan(got), what);
      continue;
    }
    f.expect(same_value(got, round_to(x, binary16)), what);
#if defined(__FLT16_MAX__)
    f.expect(gcc_half_bits(x) == bits, what);
#endif
  }
  CHECK(f.count() == 0);
}

TEST_CASE("types: bfloat16 decodes every bit pattern exactly and round-trips it", "[types][bfloat16]") {
  failures f;
  for (unsigned b = 0; b < 65536; ++b) {
    const auto bits = static_cast<unsigned short>(b);
    const float value = static_cast<float>(bfloat16::from_bits(bits));
    const double expected = decode(b, bfloat16_format);
    const auto what = [&] { return "bfloat16 bits " + hex(b) + " -> float " + std::to_string(value); };
    if (std::isnan(expected)) {
      f.expect(std::isnan(value), what);
      f.expect(std::isnan(static_cast<float>(bfloat16(value))), what);  // NaN stays NaN
      continue;
    }
    f.expect(same_value(value, expected), what);
    f.expect(bfloat16(value).bits == bits, what);
  }
  CHECK(f.count() == 0);
}

TEST_CASE("types: float -> bfloat16 rounds to nearest even at the edge cases", "[types][bfloat16]") {
  const float max_bf16 = std::ldexp(2.0f - std::ldexp(1.0f, -7), 127);
  const float min_normal = std::numeric_limits<float>::min();  // 2^-126, also bfloat16's
  const edge_case cases[] = {
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f, 0x3f80},
      {1.0f + std::ldexp(1.0f, -8), 0x3f80},                          // halfway to 0x3f81: even is 1
      {1.0f + 3 * std::ldexp(1.0f, -8), 0x3f82},                      // halfway between 0x3f81 and 0x3f82
      {1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -23), 0x3f81},  // just above halfway
      {-(1.0f + 3 * std::ldexp(1.0f, -8)), 0xbf82},
      {max_bf16, 0x7f7f},
      {std::nextafter(max_bf16 + std::ldexp(1.0f, 119), 0.0f), 0x7f7f},  // just below halfway to 2^128
      {max_bf16 + std::ldexp(1.0f, 119), 0x7f80},                        // halfway: infinity (0x7f7f is odd)
      {std::numeric_limits<float>::max(), 0x7f80},
      {INFINITY, 0x7f80},
      {-INFINITY, 0xff80},
      {min_normal, 0x0080},
      {std::ldexp(1.0f, -133), 0x0001},      // the smallest bfloat16 subnormal
      {std::ldexp(1.0f, -134), 0x0000},      // halfway between 0 and it: 0
      {3 * std::ldexp(1.0f, -134), 0x0002},  // halfway between 1 and 2 units: 2
      {std::numeric_limits<float>::denorm_min(), 0x0000},
      {-std::numeric_limits<float>::denorm_min(), 0x8000},
  };
  for (const edge_case& c : cases) {
    INFO("float " << c.value << " (bits 0x" << std::hex << bits_of(c.value) << "), expected bfloat16 0x" << c.bits);
    CHECK(bfloat16(c.value).bits == c.bits);
    // The expectation itself agrees with the double-arithmetic rounding.
    CHECK(same_value(static_cast<float>(bfloat16::from_bits(c.bits)), round_to(c.value, bfloat16_format)));
  }
  for (const float nan : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::signaling_NaN(), float_from_bits(0x7f800001u),
                          float_from_bits(0x7fffffffu), float_from_bits(0xff800001u)}) {
    // Low-payload NaNs must not truncate to infinity, all-ones ones must not carry into the sign.
    INFO("NaN bits 0x" << std::hex << bits_of(nan));
    CHECK(std::isnan(static_cast<float>(bfloat16(nan))));
    CHECK(std::signbit(static_cast<float>(bfloat16(nan))) == std::signbit(nan));
  }
}

TEST_CASE("types: float -> bfloat16 matches a double-arithmetic rounding on random floats", "[types][bfloat16]") {
  failures f;
  // Uniform patterns, and patterns concentrated around bfloat16's subnormal range.
  for (const std::vector<float>& values : {random_floats(1 << 20, 0, 254), random_floats(1 << 19, 0, 12)}) {
    for (const float x : values) {
      const float got = static_cast<float>(bfloat16(x));
      const auto what = [&] { return "float " + hex(bits_of(x)) + " -> bfloat16 " + hex(bfloat16(x).bits); };
      if (std::isnan(x))
        f.expect(std::isnan(got), what);
      else
        f.expect(same_value(got, round_to(x, bfloat16_format)), what);
    }
  }
  CHECK(f.count() == 0);
}

TEST_CASE("types: construction from float and static_cast<float>", "[types]") {
  const half h(1.5f);
  const half h_implicit = -0.25f;  // the converting constructor is implicit, like CUDA's __half
  const bfloat16 b(3.0f);
  const bfloat16 b_implicit = -1024.0f;
  CHECK(static_cast<float>(h) == 1.5f);
  CHECK(static_cast<float>(h_implicit) == -0.25f);
  CHECK(static_cast<float>(b) == 3.0f);
  CHECK(static_cast<float>(b_implicit) == -1024.0f);
  CHECK(h.bits == 0x3e00);
  CHECK(h_implicit.bits == 0xb400);
  CHECK(b.bits == 0x4040);
  CHECK(b_implicit.bits == 0xc480);
  CHECK(static_cast<float>(half(0.1f)) == 0.0999755859375f);    // 0x2e66
  CHECK(static_cast<float>(bfloat16(0.1f)) == 0.10009765625f);  // 0x3dcd
  CHECK(dsconv::to_float(h) == 1.5f);
  CHECK(dsconv::to_float(b) == 3.0f);
  CHECK(dsconv::to_float(2.5f) == 2.5f);
  CHECK(dsconv::from_float<half>(1.5f).bits == 0x3e00);
  CHECK(dsconv::from_float<bfloat16>(3.0f).bits == 0x4040);
  CHECK(dsconv::from_float<float>(2.5f) == 2.5f);
  CHECK(half::from_bits(0x3c00).bits == 0x3c00);
  CHECK(static_cast<float>(bfloat16::from_bits(0x3f80)) == 1.0f);
  CHECK(sizeof(half) == 2);
  CHECK(sizeof(bfloat16) == 2);
  CHECK(alignof(half) == 2);
  CHECK(alignof(bfloat16) == 2);
}
