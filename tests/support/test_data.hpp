#pragma once
// Test data: random tensors (fresh for every check, never zeros), poisoned output buffers
// with guard zones, and the error norms a result is judged by.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <dsconv/dsconv.hpp>

namespace dsconv_test {

// One generator for the whole run, seeded from Catch's --rng-seed so a failure reproduces.
std::mt19937_64& rng();

// Uniform values in [-1, -0.05] U [0.05, 1], rounded to T: no zeros, which would hide
// unwritten or skipped terms.
template <class T>
std::vector<T> random_tensor(std::size_t count) {
  std::uniform_real_distribution<float> mag(0.05f, 1.0f);
  std::bernoulli_distribution sign(0.5);
  std::vector<T> v(count);
  for (auto& x : v) x = T(sign(rng()) ? mag(rng()) : -mag(rng()));
  return v;
}

// A quiet NaN bit pattern in every element type: a slot a kernel never wrote stays NaN.
template <class T>
T poison_value() {
  return T(std::nanf(""));
}

// Device memory for an output tensor with guard zones before and after it, all poisoned.
// check() downloads it and verifies that the guards are intact.
template <class T>
class guarded_output {
 public:
  static constexpr std::size_t guard = 64;  // elements on each side

  explicit guarded_output(std::size_t count, std::size_t misalign_elements = 0)
      : count_(count), offset_(guard + misalign_elements) {
    host_.assign(count_ + offset_ + guard, poison_value<T>());
    REQUIRE(buffer_.upload(host_) == dsconv::status::success);
  }
  T* data() { return buffer_.data() + offset_; }

  // The output part, after checking that nothing outside it was written.
  std::vector<T> download_checked() {
    std::vector<T> all;
    REQUIRE(buffer_.download(all) == dsconv::status::success);
    std::size_t touched = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (i >= offset_ && i < offset_ + count_) continue;
      if (std::memcmp(&all[i], &host_[i], sizeof(T)) != 0) ++touched;
    }
    CHECK(touched == 0);
    return std::vector<T>(all.begin() + offset_, all.begin() + offset_ + count_);
  }

  // Whether the whole buffer (output and guards) is still exactly as poisoned.
  bool untouched() {
    std::vector<T> all;
    REQUIRE(buffer_.download(all) == dsconv::status::success);
    return std::memcmp(all.data(), host_.data(), all.size() * sizeof(T)) == 0;
  }

 private:
  std::size_t count_, offset_;
  std::vector<T> host_;
  dsconv::device_buffer<T> buffer_;
};

// Input data on the device at an optional element offset (to test misaligned pointers).
template <class T>
class device_input {
 public:
  explicit device_input(const std::vector<T>& values, std::size_t misalign_elements = 0) : offset_(misalign_elements) {
    std::vector<T> padded(values.size() + offset_ + 1, T(0.5f));
    std::copy(values.begin(), values.end(), padded.begin() + static_cast<std::ptrdiff_t>(offset_));
    REQUIRE(buffer_.upload(padded) == dsconv::status::success);
  }
  const T* data() const { return buffer_.data() + offset_; }

 private:
  std::size_t offset_;
  dsconv::device_buffer<T> buffer_;
};

struct error_report {
  double relative = 0;  // ||out - ref||_2 / ||ref||_2
  double max_abs = 0;
  std::size_t non_finite = 0;  // NaN or inf in the result where the reference is finite
};

template <class T>
error_report compare(const std::vector<T>& out, const std::vector<double>& ref) {
  error_report r;
  double diff2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double o = static_cast<double>(dsconv::to_float(out[i]));
    if (!std::isfinite(o)) {
      ++r.non_finite;
      continue;
    }
    const double d = o - ref[i];
    diff2 += d * d;
    ref2 += ref[i] * ref[i];
    r.max_abs = std::max(r.max_abs, std::fabs(d));
  }
  r.relative = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  return r;
}

// Relative-error bound per element type (fp32 near 1e-6 in practice).
template <class T>
double tolerance();
template <>
inline double tolerance<float>() { return 1e-5; }
template <>
inline double tolerance<dsconv::half>() { return 3e-3; }
template <>
inline double tolerance<dsconv::bfloat16>() { return 2e-2; }

template <class T>
const char* type_name();
template <>
inline const char* type_name<float>() { return "float"; }
template <>
inline const char* type_name<dsconv::half>() { return "half"; }
template <>
inline const char* type_name<dsconv::bfloat16>() { return "bfloat16"; }

}  // namespace dsconv_test
