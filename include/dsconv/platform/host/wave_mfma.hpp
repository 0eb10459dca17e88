#pragma once
// The wave matrix multiply-accumulate of ../wave_mfma.hpp on the host platform, a
// wave-collective operation (fragment_exchange.hpp).
// The instructions are not inlined: a kernel issues dozens per K step, and inlining each
// emulation made the matrix-unit kernels' code, and their compile time, several times larger.

#include <type_traits>

#include "../../config.hpp"
#include "../float16.hpp"
#include "fragment_exchange.hpp"

namespace dsconv {
namespace platform {

namespace host_detail {

// gfx90a reads denormal 16-bit operands as zero (../wave_mfma.hpp).
inline float flush_denormal(float x) { return x > -1.17549435e-38f && x < 1.17549435e-38f ? 0.f : x; }
inline float mfma_operand(float x, const half*) { return x > -6.103515625e-05f && x < 6.103515625e-05f ? 0.f : x; }
inline float mfma_operand(float x, const bfloat16*) { return flush_denormal(x); }

// d[r] += sum_k A[4q + r][k] B[k][i], given the four rows of A and the column of B.
template <int K>
inline void mfma_accumulate(float (&d)[4], const float (&a_rows)[4][K], const float (&b_col)[K]) {
  dot_accumulate<K>(d, {a_rows[0], a_rows[1], a_rows[2], a_rows[3]}, {b_col, b_col, b_col, b_col});
}

// Lane (i, q) computes D[4q + r][i] for r = 0..3: it needs column i of B, which lanes
// i + 16p hold (k = E p .. E p + E - 1; E elements a lane), and rows 4q + r of A, which lanes
// 4q + r + 16p hold.
template <int E>
inline void mfma_from(float (&d)[4], const operand_exchange<matrix_unit::mfma, E, E>& x) {
  const int i = x.lane() % 16, q = x.lane() / 16;
  float b_col[4 * E], a_rows[4][4 * E];
  for (int p = 0; p < 4; ++p) {
    float k_e[E];
    x.b_of(i + 16 * p, k_e);
    for (int e = 0; e < E; ++e) b_col[E * p + e] = k_e[e];
    for (int r = 0; r < 4; ++r) {
      x.a_of(4 * q + r + 16 * p, k_e);
      for (int e = 0; e < E; ++e) a_rows[r][E * p + e] = k_e[e];
    }
  }
  mfma_accumulate(d, a_rows, b_col);
}

}  // namespace host_detail

// A lane's two registers hold the four 16-bit elements k = 4p..4p+3, denormals read as zero.
template <class T>
DSCONV_NOINLINE inline void mfma_16x16x16(float (&d)[4], const unsigned (&a)[2], const unsigned (&b)[2]) {
  static_assert(std::is_same<T, half>::value || std::is_same<T, bfloat16>::value,
                "mfma_16x16x16 takes half or bfloat16 operands");
  const T* type = nullptr;
  host_detail::lane_operands<4, 4> mine;
  host_detail::unpack_pairs<T>(a, mine.a);
  host_detail::unpack_pairs<T>(b, mine.b);
  for (int e = 0; e < 4; ++e)
    mine.a[e] = host_detail::mfma_operand(mine.a[e], type), mine.b[e] = host_detail::mfma_operand(mine.b[e], type);
  host_detail::mfma_from<4>(d, host_detail::operand_exchange<matrix_unit::mfma, 4, 4>(mine));
}

// The same with K = 4 and one fp32 operand a lane: lanes i + 16p hold A[i][p] and B[p][i].
DSCONV_NOINLINE inline void mfma_16x16x4_f32(float (&d)[4], float a, float b) {
  host_detail::mfma_from<1>(d, host_detail::operand_exchange<matrix_unit::mfma, 1, 1>({{a}, {b}}));
}

}  // namespace platform
}  // namespace dsconv
