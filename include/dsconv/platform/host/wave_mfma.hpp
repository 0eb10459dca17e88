#pragma once
// The wave matrix multiply-accumulate of ../wave_mfma.hpp on the host platform, a
// wave-collective operation (fragment_exchange.hpp).

#include <type_traits>

#include "../../config.hpp"
#include "../float16.hpp"
#include "fragment_exchange.hpp"

namespace dsconv {
namespace platform {

// Lane (i, q) computes D[4q + r][i] for r = 0..3: it needs column i of B, which lanes
// i + 16p hold (k = 4p..4p+3), and rows 4q + r of A, which lanes 4q + r + 16p hold.
template <class T>
inline void mfma_16x16x16(float (&d)[4], const unsigned (&a)[2], const unsigned (&b)[2]) {
  static_assert(std::is_same<T, half>::value || std::is_same<T, bfloat16>::value,
                "mfma_16x16x16 takes half or bfloat16 operands");
  const host_detail::fragment_exchange<mfma_wave_lanes, 2, 2> x(a, b);
  const int i = x.lane() % 16, q = x.lane() / 16;
  const T* type = nullptr;
  // The four 16-bit elements k = 4p..4p+3 that a lane's two registers hold.
  const auto unpack = [type](const unsigned (&regs)[2], float* k4) {
    for (int h = 0; h < 2; ++h) {
      k4[h] = host_detail::element_of(regs[0], h, type);
      k4[2 + h] = host_detail::element_of(regs[1], h, type);
    }
  };
  float b_col[16];
  for (int p = 0; p < 4; ++p) unpack(x.of(i + 16 * p).b, b_col + 4 * p);
  for (int r = 0; r < 4; ++r) {
    float a_row[16];
    for (int p = 0; p < 4; ++p) unpack(x.of(4 * q + r + 16 * p).a, a_row + 4 * p);
    float acc = d[r];
    for (int k = 0; k < 16; ++k) acc += a_row[k] * b_col[k];
    d[r] = acc;
  }
}

}  // namespace platform
}  // namespace dsconv
