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

}  // namespace host_detail

// Lane (i, q) computes D[4q + r][i] for r = 0..3: it needs column i of B, which lanes
// i + 16p hold (k = 4p..4p+3), and rows 4q + r of A, which lanes 4q + r + 16p hold.
template <class T>
DSCONV_NOINLINE inline void mfma_16x16x16(float (&d)[4], const unsigned (&a)[2], const unsigned (&b)[2]) {
  static_assert(std::is_same<T, half>::value || std::is_same<T, bfloat16>::value,
                "mfma_16x16x16 takes half or bfloat16 operands");
  const host_detail::fragment_exchange<matrix_unit::mfma, 2, 2> x(a, b);
  const int i = x.lane() % 16, q = x.lane() / 16;
  const T* type = nullptr;
  // The four 16-bit elements k = 4p..4p+3 that a lane's two registers hold.
  const auto unpack = [type](const unsigned (&regs)[2], float* k4) {
    for (int h = 0; h < 2; ++h) {
      k4[h] = host_detail::mfma_operand(host_detail::element_of(regs[0], h, type), type);
      k4[2 + h] = host_detail::mfma_operand(host_detail::element_of(regs[1], h, type), type);
    }
  };
  float b_col[16], a_rows[4][16];
  for (int p = 0; p < 4; ++p) {
    unpack(x.of(i + 16 * p).b, b_col + 4 * p);
    for (int r = 0; r < 4; ++r) unpack(x.of(4 * q + r + 16 * p).a, a_rows[r] + 4 * p);
  }
  host_detail::mfma_accumulate(d, a_rows, b_col);
}

// The same with K = 4 and one fp32 operand a lane: lanes i + 16p hold A[i][p] and B[p][i].
DSCONV_NOINLINE inline void mfma_16x16x4_f32(float (&d)[4], float a, float b) {
  const unsigned a_reg[1] = {detail::float_bits(a)}, b_reg[1] = {detail::float_bits(b)};
  const host_detail::fragment_exchange<matrix_unit::mfma, 1, 1> x(a_reg, b_reg);
  const int i = x.lane() % 16, q = x.lane() / 16;
  float b_col[4], a_rows[4][4];
  for (int p = 0; p < 4; ++p) {
    b_col[p] = detail::bits_float(x.of(i + 16 * p).b[0]);
    for (int r = 0; r < 4; ++r) a_rows[r][p] = detail::bits_float(x.of(4 * q + r + 16 * p).a[0]);
  }
  host_detail::mfma_accumulate(d, a_rows, b_col);
}

}  // namespace platform
}  // namespace dsconv
