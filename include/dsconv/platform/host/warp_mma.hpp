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

inline float tf32_bits_of(float x) { return detail::bits_float(detail::float_bits(x) & 0xffffe000u); }

// d[i] += sum_k A[row_i][k] * B[k][col_i] for this lane's four outputs (rows g, g, g+8, g+8;
// columns 2t, 2t+1, 2t, 2t+1), given this lane's two rows of A and two columns of B.
template <int K>
inline void accumulate(float (&d)[4], const float (&a_rows)[2][K], const float (&b_cols)[2][K]) {
  dot_accumulate<K>(d, {a_rows[0], a_rows[0], a_rows[1], a_rows[1]}, {b_cols[0], b_cols[1], b_cols[0], b_cols[1]});
}

// Rows g and g + 8 of A and columns 2t and 2t + 1 of B, k in order, that lane (g, t) of an
// m16n8k8 (E = 1: tf32, a float a register) or m16n8k16 / m16n8k8 (E = 2: 16-bit pairs)
// product needs, R registers of A a lane, for each of Parts operand pairs the lanes published
// one after another (lane_operands: part p's A at p E R, its B at p E R / 2). Lanes 4g..4g+3
// hold those rows (lane 4g + q: k = E q .. E q + E - 1, and 4E on for the second k half where
// R = 4), lanes 4 * column + q the columns (the same k).
template <int E, int R, int Parts>
struct lane_rows {
  static constexpr int K = 2 * E * R;
  float a[Parts][2][K], b[Parts][2][K];
};
template <int E, int R, int Parts = 1, matrix_unit NEEDS>
inline lane_rows<E, R, Parts> rows_of(const operand_exchange<NEEDS, Parts * E * R, Parts * E * R / 2>& x) {
  constexpr int NA = E * R, NB = E * R / 2;
  const int g = x.lane() / 4, t = x.lane() % 4;
  lane_rows<E, R, Parts> m;
  for (int q = 0; q < 4; ++q) {
    float fa[Parts * NA], fb[Parts * NB];
    x.a_of(4 * g + q, fa);
    for (int p = 0; p < Parts; ++p)
      for (int half_k = 0; half_k < R / 2; ++half_k)
        for (int e = 0; e < E; ++e) {
          const int k = 4 * E * half_k + E * q + e;
          m.a[p][0][k] = fa[p * NA + E * (2 * half_k) + e];
          m.a[p][1][k] = fa[p * NA + E * (2 * half_k + 1) + e];
        }
    for (int col = 0; col < 2; ++col) {
      x.b_of(4 * (2 * t + col) + q, fb);
      for (int p = 0; p < Parts; ++p)
        for (int half_k = 0; half_k < R / 2; ++half_k)
          for (int e = 0; e < E; ++e) m.b[p][col][4 * E * half_k + E * q + e] = fb[p * NB + E * half_k + e];
    }
  }
  return m;
}

inline void tf32_operands(const unsigned* regs, int count, float* out) {
  for (int r = 0; r < count; ++r) out[r] = tf32_bits_of(detail::bits_float(regs[r]));
}

}  // namespace host_detail

DSCONV_NOINLINE inline void mma_16x8x8_f16(float (&d)[4], const unsigned (&a)[2], const unsigned (&b)[1]) {
  host_detail::lane_operands<4, 2> mine;
  host_detail::unpack_pairs<half>(a, mine.a);
  host_detail::unpack_pairs<half>(b, mine.b);
  const auto m = host_detail::rows_of<2, 2>(host_detail::operand_exchange<matrix_unit::mma_sync_f16, 4, 2>(mine));
  host_detail::accumulate(d, m.a[0], m.b[0]);
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
  host_detail::lane_operands<8, 4> mine;
  host_detail::unpack_pairs<T>(a, mine.a);
  host_detail::unpack_pairs<T>(b, mine.b);
  const auto m = host_detail::rows_of<2, 4>(host_detail::operand_exchange<matrix_unit::mma_sync, 8, 4>(mine));
  host_detail::accumulate(d, m.a[0], m.b[0]);
}

// The hardware reads only the tf32 bits of each operand (it truncates the rest).
DSCONV_NOINLINE inline void mma_16x8x8_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  host_detail::lane_operands<4, 2> mine;
  host_detail::tf32_operands(a, 4, mine.a);
  host_detail::tf32_operands(b, 2, mine.b);
  const auto m = host_detail::rows_of<1, 4>(host_detail::operand_exchange<matrix_unit::mma_sync, 4, 2>(mine));
  host_detail::accumulate(d, m.a[0], m.b[0]);
}

// The three products of ../warp_mma.hpp's split form, in its order, from one exchange of both
// parts (three had taken a warp barrier each: most of the float 1x1 layer sweep's time).
DSCONV_NOINLINE inline void mma_16x8x8_tf32_split(float (&d)[4], const unsigned (&a)[4], const unsigned (&a_small)[4],
                                                  const unsigned (&b)[2], const unsigned (&b_small)[2]) {
  host_detail::lane_operands<8, 4> mine;
  host_detail::tf32_operands(a, 4, mine.a), host_detail::tf32_operands(a_small, 4, mine.a + 4);
  host_detail::tf32_operands(b, 2, mine.b), host_detail::tf32_operands(b_small, 2, mine.b + 2);
  const auto m = host_detail::rows_of<1, 4, 2>(host_detail::operand_exchange<matrix_unit::mma_sync, 8, 4>(mine));
  host_detail::accumulate(d, m.a[1], m.b[0]);
  host_detail::accumulate(d, m.a[0], m.b[1]);
  host_detail::accumulate(d, m.a[0], m.b[0]);
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
