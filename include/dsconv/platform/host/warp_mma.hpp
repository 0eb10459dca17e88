#pragma once
// The warp matrix multiply-accumulate of ../warp_mma.hpp on the host platform, a
// warp-collective operation (fragment_exchange.hpp).

#include <type_traits>

#include "../../config.hpp"
#include "../float16.hpp"
#include "fragment_exchange.hpp"

namespace dsconv {
namespace platform {

inline float round_to_tf32(float x) { return detail::round_to_tf32_soft(x); }

namespace host_detail {

using mma_exchange = fragment_exchange<mma_warp_lanes, 4, 2>;

inline float tf32_bits_of(float x) { return detail::bits_float(detail::float_bits(x) & 0xffffe000u); }

// d[i] += sum_k A[row_i][k] * B[k][col_i] for this lane's four outputs (rows g, g, g+8, g+8;
// columns 2t, 2t+1, 2t, 2t+1), given this lane's two rows of A and two columns of B.
template <int K>
inline void accumulate(float (&d)[4], const float (&a_rows)[2][K], const float (&b_cols)[2][K]) {
  for (int i = 0; i < 4; ++i) d[i] = dot_accumulate(d[i], a_rows[i >> 1], b_cols[i & 1], K);
}

}  // namespace host_detail

// Each lane rebuilds only what its outputs need: rows g and g+8 of A, which lanes 4g..4g+3
// hold, and columns 2t and 2t+1 of B, which lanes 4 * column + 0..3 hold.
template <class T>
inline void mma_16x8x16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  static_assert(std::is_same<T, half>::value || std::is_same<T, bfloat16>::value,
                "mma_16x8x16 takes half or bfloat16 operands");
  const host_detail::mma_exchange x(a, b);
  const int g = x.lane() / 4, t = x.lane() % 4;
  const T* type = nullptr;
  float a_rows[2][16], b_cols[2][16];
  for (int q = 0; q < 4; ++q) {  // the four lanes of a group, each holding two k pairs
    const auto fa = x.of(4 * g + q);
    for (int h = 0; h < 2; ++h) {
      a_rows[0][2 * q + h] = host_detail::element_of(fa.a[0], h, type);
      a_rows[1][2 * q + h] = host_detail::element_of(fa.a[1], h, type);
      a_rows[0][2 * q + 8 + h] = host_detail::element_of(fa.a[2], h, type);
      a_rows[1][2 * q + 8 + h] = host_detail::element_of(fa.a[3], h, type);
    }
    for (int col = 0; col < 2; ++col) {
      const auto fb = x.of(4 * (2 * t + col) + q);
      for (int h = 0; h < 2; ++h) {
        b_cols[col][2 * q + h] = host_detail::element_of(fb.b[0], h, type);
        b_cols[col][2 * q + 8 + h] = host_detail::element_of(fb.b[1], h, type);
      }
    }
  }
  host_detail::accumulate(d, a_rows, b_cols);
}

inline void mma_16x8x8_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  const host_detail::mma_exchange x(a, b);
  const int g = x.lane() / 4, t = x.lane() % 4;
  // The hardware reads only the tf32 bits of each operand (it truncates the rest).
  const auto tf32 = [](unsigned reg) { return host_detail::tf32_bits_of(detail::bits_float(reg)); };
  float a_rows[2][8], b_cols[2][8];
  for (int q = 0; q < 4; ++q) {
    const auto fa = x.of(4 * g + q);
    a_rows[0][q] = tf32(fa.a[0]), a_rows[1][q] = tf32(fa.a[1]);
    a_rows[0][q + 4] = tf32(fa.a[2]), a_rows[1][q + 4] = tf32(fa.a[3]);
    for (int col = 0; col < 2; ++col) {
      const auto fb = x.of(4 * (2 * t + col) + q);
      b_cols[col][q] = tf32(fb.b[0]), b_cols[col][q + 4] = tf32(fb.b[1]);
    }
  }
  host_detail::accumulate(d, a_rows, b_cols);
}

}  // namespace platform
}  // namespace dsconv
