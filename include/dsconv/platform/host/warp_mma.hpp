#pragma once
// The warp matrix multiply-accumulate of ../warp_mma.hpp on the host platform, a
// warp-collective operation (fragment_exchange.hpp).
// The instructions are not inlined: a kernel issues dozens per K step, and inlining each
// emulation made the matrix-unit kernels' code, and their compile time, several times larger.

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "../../config.hpp"
#include "../float16.hpp"
#include "../memory_access.hpp"
#include "fragment_exchange.hpp"

namespace dsconv {
namespace platform {

inline float round_to_tf32(float x) { return detail::round_to_tf32_soft(x); }

namespace host_detail {

using mma_exchange = fragment_exchange<matrix_unit::mma_sync, 4, 2>;

inline float tf32_bits_of(float x) { return detail::bits_float(detail::float_bits(x) & 0xffffe000u); }

// d[i] += sum_k A[row_i][k] * B[k][col_i] for this lane's four outputs (rows g, g, g+8, g+8;
// columns 2t, 2t+1, 2t, 2t+1), given this lane's two rows of A and two columns of B.
template <int K>
inline void accumulate(float (&d)[4], const float (&a_rows)[2][K], const float (&b_cols)[2][K]) {
  dot_accumulate<K>(d, {a_rows[0], a_rows[0], a_rows[1], a_rows[1]}, {b_cols[0], b_cols[1], b_cols[0], b_cols[1]});
}

}  // namespace host_detail

// Each lane rebuilds only what its outputs need: rows g and g+8 of A, which lanes 4g..4g+3
// hold, and columns 2t and 2t+1 of B, which lanes 4 * column + 0..3 hold.
DSCONV_NOINLINE inline void mma_16x8x8_f16(float (&d)[4], const unsigned (&a)[2], const unsigned (&b)[1]) {
  const host_detail::fragment_exchange<matrix_unit::mma_sync_f16, 2, 1> x(a, b);
  const int g = x.lane() / 4, t = x.lane() % 4;
  const half* type = nullptr;
  float a_rows[2][8], b_cols[2][8];
  for (int q = 0; q < 4; ++q)
    for (int h = 0; h < 2; ++h) {
      const auto fa = x.of(4 * g + q);
      a_rows[0][2 * q + h] = host_detail::element_of(fa.a[0], h, type);
      a_rows[1][2 * q + h] = host_detail::element_of(fa.a[1], h, type);
      for (int col = 0; col < 2; ++col) b_cols[col][2 * q + h] = host_detail::element_of(x.of(4 * (2 * t + col) + q).b[0], h, type);
    }
  host_detail::accumulate(d, a_rows, b_cols);
}

template <class T>
DSCONV_NOINLINE inline void mma_16x8x16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  static_assert(std::is_same<T, half>::value || std::is_same<T, bfloat16>::value,
                "mma_16x8x16 takes half or bfloat16 operands");
  if (std::is_same<T, half>::value && host_detail::current_runner()->launch().matrix == matrix_unit::mma_sync_f16) {
    // What code compiled for sm_75 executes: k = 0..7, then k = 8..15.
    mma_16x8x8_f16(d, {a[0], a[1]}, {b[0]});
    mma_16x8x8_f16(d, {a[2], a[3]}, {b[1]});
    return;
  }
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

DSCONV_NOINLINE inline void mma_16x8x8_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
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

// Each lane loads the 16-byte row its address names (lanes 8i .. 8i + 7: rows 0..7 of matrix
// i; one request of four 8-lane phases in the bank model, as on the GPU); after the warp
// barrier each takes its elements from the rows the others loaded.
template <bool Trans>
DSCONV_NOINLINE inline void ldmatrix_x4(unsigned (&r)[4], const void* row) {
  host_detail::block_runner* runner = host_detail::matrix_warp<matrix_unit::mma_sync_f16>();
  if (reinterpret_cast<std::uintptr_t>(row) % 16) throw std::logic_error("ldmatrix: a row address not 16-byte aligned");
  const auto mine = shared_load(static_cast<const vec<unsigned, 4>*>(row));
  const unsigned char* rows = runner->warp_gather(&mine, sizeof mine);
  const unsigned lane = runner->current().lane, g = lane / 4, t = lane % 4;
  // 16-bit element `column` of row `row` of matrix i
  const auto element = [rows](unsigned i, unsigned row_of, unsigned column) {
    unsigned short e;
    std::memcpy(&e, rows + (8 * i + row_of) * host_detail::warp_gather_stride + 2 * column, sizeof e);
    return static_cast<unsigned>(e);
  };
  for (unsigned i = 0; i < 4; ++i)
    r[i] = Trans ? element(i, 2 * t, g) | element(i, 2 * t + 1, g) << 16 : element(i, g, 2 * t) | element(i, g, 2 * t + 1) << 16;
}

// Each lane publishes its register (row g of the 8x8 matrix, columns 2t and 2t + 1); after the
// warp barrier each takes its elements of the transpose from the two lanes that hold them.
DSCONV_NOINLINE inline unsigned movmatrix_trans(unsigned r) {
  host_detail::block_runner* runner = host_detail::matrix_warp<matrix_unit::mma_sync_f16>();
  const unsigned char* regs = runner->warp_gather(&r, sizeof r);
  const unsigned lane = runner->current().lane, g = lane / 4, t = lane % 4;
  // 16-bit element (row, column) of the matrix: lane 4 row + column / 2's register, its half
  const auto element = [regs](unsigned row, unsigned column) {
    unsigned w;
    std::memcpy(&w, regs + (4 * row + column / 2) * host_detail::warp_gather_stride, sizeof w);
    return column % 2 ? w >> 16 : w & 0xffffu;
  };
  return element(2 * t, g) | element(2 * t + 1, g) << 16;
}

}  // namespace platform
}  // namespace dsconv
