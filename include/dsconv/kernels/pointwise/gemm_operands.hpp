#pragma once
// A 1x1 convolution as a GEMM C[m][n] = sum_k A[m][k] B[k][n], with the operands described by
// strides so one kernel serves both layouts:
//   NCHW, per image b: A = weight [c_out][c_in], B = input_b [c_in][pixels],
//                      C = output_b [c_out][pixels]      (M = c_out, N = pixels, K = c_in)
//   NHWC, all images:  A = input [n*pixels][c_in], B = weight^T (B[k][n] = weight[n][k]),
//                      C = output [n*pixels][c_out]     (M = n*pixels, N = c_out, K = c_in)
//   NCHW with 1x1 maps is laid out exactly like NHWC and uses the NHWC form.

#include <cstddef>
#include <cstdint>

#include "../../config.hpp"
#include "../../problem.hpp"

namespace dsconv {
namespace detail {

struct gemm_operands {
  index_t m, n, k;
  index_t a_m, a_k;             // strides of A
  index_t b_k, b_n;             // strides of B
  index_t c_m, c_n;             // strides of C and of the residual
  index_t batches;                    // GEMMs (NCHW: images; NHWC: 1)
  index_t slices, k_slice;            // K split into `slices` ranges of k_slice (split_k; else 1, k);
                                      // grid.z = batches * slices
  index_t a_batch, b_batch, c_batch;  // offsets between consecutive GEMMs
  bool weight_is_a;             // A is the weight and B the input (NCHW form), or the other way round
                                // (then B is contiguous along k: kernels take that as a template argument)
  bool bias_along_m;            // bias is indexed by m (NCHW: c_out) or by n (NHWC)
  activation act;
  int a_align, b_align;         // bytes (1 to 16) that every row of A (B) starts aligned to, along its
                                // contiguous dimension: set by align_operands once the pointers are known
};

// The largest power of two up to 16 that divides the address and, in bytes, the row stride
// and the offset between GEMMs: rows of the operand then start aligned to it.
inline int operand_alignment(const void* p, index_t stride, index_t batch_offset, std::size_t element_bytes) {
  const std::uintptr_t bits = reinterpret_cast<std::uintptr_t>(p) | static_cast<std::uintptr_t>(stride) * element_bytes |
                              static_cast<std::uintptr_t>(batch_offset) * element_bytes | 16u;
  return static_cast<int>(bits & (~bits + 1));
}

// Records how A and B are aligned: the dispatcher runs a tile's vector form only on operands
// aligned for its runs (gemm_staging.hpp).
template <class T>
void align_operands(gemm_operands& g, const T* a, const T* b) {
  g.a_align = operand_alignment(a, g.a_m, g.a_batch, sizeof(T));
  g.b_align = operand_alignment(b, g.weight_is_a ? g.b_k : g.b_n, g.b_batch, sizeof(T));
}

inline gemm_operands make_gemm(const pointwise_shape& s) {
  const index_t pixels = s.pixels();
  gemm_operands g{};
  g.k = s.c_in;
  g.act = s.act;
  g.slices = 1, g.k_slice = g.k;
  g.a_align = g.b_align = 1;  // until align_operands: element loads only
  // With 1x1 maps (squeeze-excitation) NCHW and NHWC are the same bytes; the NHWC form is
  // one GEMM over all images, which reads the weights once instead of once per image.
  if (s.data_layout == layout::nchw && pixels > 1) {
    g.m = s.c_out, g.n = pixels;
    g.a_m = s.c_in, g.a_k = 1;
    g.b_k = pixels, g.b_n = 1;
    g.c_m = pixels, g.c_n = 1;
    g.batches = s.n;
    g.a_batch = 0, g.b_batch = s.c_in * pixels, g.c_batch = s.c_out * pixels;
    g.weight_is_a = g.bias_along_m = true;
  } else {
    g.m = s.n * pixels, g.n = s.c_out;
    g.a_m = s.c_in, g.a_k = 1;
    g.b_k = 1, g.b_n = s.c_in;
    g.c_m = s.c_out, g.c_n = 1;
    g.batches = 1;
    g.a_batch = g.b_batch = g.c_batch = 0;
    g.weight_is_a = g.bias_along_m = false;
  }
  return g;
}

}  // namespace detail
}  // namespace dsconv
