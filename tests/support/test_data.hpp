#pragma once
// Test data: random tensors (fresh for every check), poisoned output buffers with guard
// zones, and the host platform's launch count.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>
#include <dsconv/dsconv.hpp>

namespace dsconv_test {

// Launches since the program started: on the host platform, the emulator's count; GPU
// runtimes count none (the untouched outputs still show that nothing ran there).
inline unsigned long long launches_so_far() {
#if defined(DSCONV_PLATFORM_HOST)
  return dsconv::host::launch_count();
#else
  return 0;
#endif
}

// The device the operations plan for (on the host platform, the emulated profile).
inline dsconv::platform::device_properties current_device() {
  dsconv::platform::device_properties d;
  REQUIRE(dsconv::platform::get_device_properties(d) == dsconv::status::success);
  return d;
}

// One generator for the whole run, seeded from Catch's --rng-seed so a failure reproduces.
std::mt19937_64& rng();

// Values of random sign and magnitude uniform in [0.05, 1), rounded to T. For the 16-bit
// types, one in 16 is an exact zero and one in 16 a subnormal (which converts exactly, and
// which gfx90a's matrix cores read as zero): the paths that handle them run in every test,
// while almost every product still counts, so a skipped one shows.
// Each element from one draw of the generator, its bits split: kind (4), sign (1), subnormal
// steps (10), magnitude (24). (A distribution each, four draws an element had been 5% of the
// emulated 16-bit depthwise layer sweep's time.)
template <class T>
std::vector<T> random_tensor(std::size_t count) {
  constexpr bool wide = sizeof(T) == sizeof(float);
  // Subnormals are multiples of the smallest one, up to the smallest normal.
  const float smallest = std::is_same<T, dsconv::half>::value ? 0x1p-24f : 0x1p-133f;
  const unsigned steps = std::is_same<T, dsconv::half>::value ? 1023 : 127;
  std::vector<T> v(count);
  for (auto& x : v) {
    const std::uint64_t bits = rng()();
    const unsigned k = wide ? 15 : bits & 15;
    const bool negative = (bits >> 4) & 1;
    const float m = k == 0   ? 0.f
                    : k == 1 ? static_cast<float>(1 + ((bits >> 5) & 1023) % steps) * smallest
                             : 0.05f + 0.95f * static_cast<float>(bits >> 40) * 0x1p-24f;  // [0.05, 1)
    x = T(negative ? -m : m);
  }
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

// Input data on the device at an optional element offset (to test misaligned pointers),
// between guard zones of NaN: a kernel that reads past either end computes NaN.
template <class T>
class device_input {
 public:
  static constexpr std::size_t guard = 64;  // elements on each side

  explicit device_input(const std::vector<T>& values, std::size_t misalign_elements = 0)
      : offset_(guard + misalign_elements) {
    std::vector<T> padded(values.size() + offset_ + guard, poison_value<T>());
    std::copy(values.begin(), values.end(), padded.begin() + static_cast<std::ptrdiff_t>(offset_));
    REQUIRE(buffer_.upload(padded) == dsconv::status::success);
  }
  const T* data() const { return buffer_.data() + offset_; }

 private:
  std::size_t offset_;
  dsconv::device_buffer<T> buffer_;
};

template <class T>
const char* type_name();
template <>
inline const char* type_name<float>() { return "float"; }
template <>
inline const char* type_name<dsconv::half>() { return "half"; }
template <>
inline const char* type_name<dsconv::bfloat16>() { return "bfloat16"; }

// A variant that cannot run the problem it was given: its call returned unsupported_variant,
// launched nothing since `launches` and left `out` (with its guard zones) untouched.
template <class T>
void check_refused_cleanly(dsconv::status s, unsigned long long launches, guarded_output<T>& out) {
  CHECK(s == dsconv::status::unsupported_variant);
  CHECK(launches_so_far() == launches);
  CHECK(out.untouched());
}

}  // namespace dsconv_test
