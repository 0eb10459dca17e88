#include "test_data.hpp"

#include <catch2/catch.hpp>

namespace dsconv_test {

std::mt19937_64& rng() {
  static std::mt19937_64 generator(Catch::rngSeed());
  return generator;
}

}  // namespace dsconv_test
