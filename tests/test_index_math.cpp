// The kernels' division-free index math against plain integer division: small_divmod (a
// block's thread ids split by extents), fast_divmod (run-time strides in the transposed data
// gradient) and index_walk (a strided loop's coordinates, stepped with carries).
#include <catch2/catch.hpp>

#include <climits>
#include <cstdint>
#include <random>

#include <dsconv/kernels/common/fast_divmod.hpp>
#include <dsconv/kernels/common/index_walk.hpp>

namespace {

const int divisors[] = {1,    2,    3,     5,     7,     13,    31,          32,          33,      100, 255,
                        256,  257,  1000,  4095,  4096,  65537, (1 << 21) - 1, (1 << 22) - 1, 1 << 22, 1 << 30,
                        INT_MAX};

}  // namespace

TEST_CASE("index math: small_divmod is exact for every dividend below 2^22", "[index]") {
  for (const int b : divisors) {
    INFO("divisor " << b);
    std::size_t wrong = 0;
    for (int a = 0; a < (1 << 22); ++a) {
      int q, r;
      dsconv::detail::small_divmod(a, b, q, r);
      wrong += q != a / b || r != a % b;
    }
    CHECK(wrong == 0);
  }
  std::mt19937 gen(7);
  std::uniform_int_distribution<int> dividend(0, (1 << 22) - 1), divisor(1, INT_MAX), small(1, 1 << 12);
  std::size_t wrong = 0;
  for (int i = 0; i < 4'000'000; ++i) {
    const int a = dividend(gen), b = i % 2 ? divisor(gen) : small(gen);
    int q, r;
    dsconv::detail::small_divmod(a, b, q, r);
    wrong += q != a / b || r != a % b;
  }
  CHECK(wrong == 0);
}

TEST_CASE("index math: fast_divmod is exact below 2^31", "[index]") {
  std::mt19937 gen(11);
  std::uniform_int_distribution<unsigned> dividend(0, (1u << 31) - 1);
  for (const int b : divisors) {
    INFO("divisor " << b);
    const dsconv::detail::fast_divmod d(static_cast<unsigned>(b));
    std::size_t wrong = 0;
    for (unsigned a = 0; a < (1u << 16); ++a) wrong += d.div(a) != a / b || d.mod(a) != a % b;
    for (int i = 0; i < 200'000; ++i) {
      const unsigned a = i == 0 ? (1u << 31) - 1 : dividend(gen);
      wrong += d.div(a) != a / b || d.mod(a) != a % b;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("index math: a strided walk visits the coordinates of every index it reaches", "[index]") {
  std::mt19937 gen(13);
  std::uniform_int_distribution<int> extent(1, 40), start(0, 300), stride(1, 300);
  for (int trial = 0; trial < 2000; ++trial) {
    const int inner[3] = {extent(gen), extent(gen), extent(gen)};
    const int count = inner[0] * inner[1] * inner[2] * 3, first = start(gen), step = stride(gen);
    int visited = 0, expected = 0, wrong = 0;
    for (int i = first; i < count; i += step) ++expected;
    dsconv::detail::for_each_strided<4>(count, inner, first, step, [&](const auto& at) {
      const int i = at.index();
      wrong += at[2] != i % inner[2] || at[1] != i / inner[2] % inner[1] || at[0] != i / inner[2] / inner[1] % inner[0] ||
               at.outer() != i / inner[2] / inner[1] / inner[0] || i != first + visited * step;
      ++visited;
    });
    INFO("extents " << inner[0] << " x " << inner[1] << " x " << inner[2] << ", from " << first << " by " << step);
    CHECK(visited == expected);
    CHECK(wrong == 0);
  }
}
