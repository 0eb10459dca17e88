#pragma once
// A 1x1 convolution and its gradients as a GEMM C[m][n] = sum_k A[m][k] B[k][n], with the
// operands described by strides so one kernel serves every layout and pass:
//   forward, NCHW, per image b: A = weight [c_out][c_in], B = input_b [c_in][pixels],
//                               C = output_b [c_out][pixels]     (M = c_out, N = pixels, K = c_in)
//   forward, NHWC, all images:  A = input [n*pixels][c_in], B = weight^T (B[k][n] = weight[n][k]),
//                               C = output [n*pixels][c_out]    (M = n*pixels, N = c_out, K = c_in)
//   backward data (grad_input = W^T dz, dz = dL/d(conv + bias)):
//     NCHW, per image: A = weight^T [c_in][c_out] (contiguous along m), B = dz_b [c_out][pixels],
//                      C = grad_input_b [c_in][pixels]
//     NHWC:            A = dz [n*pixels][c_out], B = weight [c_out][c_in], C = grad_input [n*pixels][c_in]
//   backward weight (grad_weight = dz x^T over every image and pixel, a long K):
//     NCHW: the images' GEMMs summed along K: A = dz_b [c_out][pixels], B = input_b^T
//           (B[k][n] = input_b[n][k]), C = grad_weight [c_out][c_in]
//     NHWC: A = dz^T (A[m][k] = dz[k][m], contiguous along m), B = input [n*pixels][c_in],
//           C = grad_weight; the bias gradient is the row sums of A.
//   NCHW with 1x1 maps is laid out exactly like NHWC and uses the NHWC form.
// A is contiguous along k or along m, B along k or along n (the kernels take both as template
// arguments); A along m never meets B along k.

#include <cstddef>
#include <cstdint>

#include "../../config.hpp"
#include "../../problem.hpp"

namespace dsconv {
namespace detail {

// K positions where a split of K may fall: a multiple of every kernel's K step, so that no step
// straddles a slice or (when images are summed along K) two images.
inline constexpr long long split_k_granule = 32;

struct gemm_operands {
  index_t m, n, k;
  index_t a_m, a_k;             // strides of A
  index_t b_k, b_n;             // strides of B
  index_t c_m, c_n;             // strides of C and of the residual
  index_t batches;              // output GEMMs (forward and backward data, NCHW: images; else 1)
  index_t k_batches;            // GEMMs summed into each output along K (backward weight, NCHW: the
                                // images), else 1
  index_t k_padded;             // K of each of them in the summed K: k, rounded up to split_k_granule
                                // when k_batches > 1 (so that slices of the summed K fall on step
                                // boundaries of one image; kernels skip the padding)
  index_t slices, k_slice;      // the summed K (k_batches * k_padded) split into `slices` ranges of
                                // k_slice, a multiple of split_k_granule (split_k; else 1 range);
                                // grid.z = batches * slices
  index_t a_batch, b_batch, c_batch;  // offsets between consecutive GEMMs (output or summed ones)
  bool weight_is_a;             // A is the weight (forward NCHW, backward data NCHW)
  bool a_m_contiguous;          // A contiguous along m (else along k)
  bool b_k_contiguous;          // B contiguous along k (else along n)
  bool bias_along_m;            // bias is indexed by m (NCHW: c_out) or by n (NHWC)
  activation act;
  // Backward passes of a layer with a fused activation: the operand that is dz (A or B) is read
  // as dL/dy * act'(gate), gate the tensor the forward saved, laid out as that operand.
  const void* gate;             // nullptr: no activation gradient
  activation gate_act;
  bool gate_on_a;
  int a_align, b_align;         // bytes (1 to 16) that every row of A (B) starts aligned to, along its
                                // contiguous dimension: set by align_operands once the pointers are known
  bool single_tf32;             // float on NVIDIA's tensor cores: operands rounded to TF32, one product
                                // (the caller's allow_tf32), else split into two TF32 parts, three
                                // products (matrix_units.hpp); nothing else reads it
};

// The largest power of two up to 16 that divides, in bytes, the address, the row stride, the
// offset between GEMMs and the rows' extent along them: rows of the operand then start aligned
// to it and hold whole runs of it, so that a run of a tile's vector form lies wholly inside the
// matrix or wholly outside (gemm_staging.hpp's k_cursor counts on it).
inline int operand_alignment(const void* p, index_t stride, index_t batch_offset, index_t extent, std::size_t element_bytes) {
  const std::uintptr_t bits = reinterpret_cast<std::uintptr_t>(p) | static_cast<std::uintptr_t>(stride) * element_bytes |
                              static_cast<std::uintptr_t>(batch_offset) * element_bytes |
                              static_cast<std::uintptr_t>(extent) * element_bytes | 16u;
  return static_cast<int>(bits & (~bits + 1));
}

// Records how A and B (and a gate tensor, which is read like the operand it gates) are
// aligned: the dispatcher runs a tile's vector form only on operands aligned for its runs
// (gemm_staging.hpp).
template <class T>
void align_operands(gemm_operands& g, const T* a, const T* b) {
  const index_t a_rows = g.a_m_contiguous ? g.a_k : g.a_m, b_rows = g.b_k_contiguous ? g.b_n : g.b_k;
  const index_t a_along = g.a_m_contiguous ? g.m : g.k, b_along = g.b_k_contiguous ? g.k : g.n;
  g.a_align = operand_alignment(a, a_rows, g.a_batch, a_along, sizeof(T));
  g.b_align = operand_alignment(b, b_rows, g.b_batch, b_along, sizeof(T));
  if (g.gate) {
    int& gated = g.gate_on_a ? g.a_align : g.b_align;
    const int gate_align = operand_alignment(g.gate, g.gate_on_a ? a_rows : b_rows, g.gate_on_a ? g.a_batch : g.b_batch,
                                             g.gate_on_a ? a_along : b_along, sizeof(T));
    gated = gate_align < gated ? gate_align : gated;
  }
}

// Fields every form shares: one output GEMM per batch, K whole, no gate.
inline gemm_operands gemm_base(index_t m, index_t n, index_t k, activation act) {
  gemm_operands g{};
  g.m = m, g.n = n, g.k = k;
  g.act = act;
  g.batches = g.k_batches = 1;
  g.k_padded = k;
  g.slices = 1, g.k_slice = k;
  g.gate_act = activation::none;
  g.a_align = g.b_align = 1;  // until align_operands: element loads only
  g.single_tf32 = false;      // until the dispatcher reads allow_tf32: float at its accuracy
  return g;
}

// With 1x1 maps (squeeze-excitation) NCHW and NHWC are the same bytes; the NHWC forms treat
// all images as one GEMM, which reads the weights once instead of once per image.
inline bool per_image_gemm(const pointwise_shape& s) { return s.data_layout == layout::nchw && s.pixels() > 1; }

inline gemm_operands make_gemm(const pointwise_shape& s) {
  const index_t pixels = s.pixels();
  if (per_image_gemm(s)) {
    gemm_operands g = gemm_base(s.c_out, pixels, s.c_in, s.act);
    g.a_m = s.c_in, g.a_k = 1;
    g.b_k = pixels, g.b_n = 1;
    g.c_m = pixels, g.c_n = 1;
    g.batches = s.n;
    g.a_batch = 0, g.b_batch = s.c_in * pixels, g.c_batch = s.c_out * pixels;
    g.weight_is_a = g.bias_along_m = true;
    return g;
  }
  gemm_operands g = gemm_base(s.n * pixels, s.c_out, s.c_in, s.act);
  g.a_m = s.c_in, g.a_k = 1;
  g.b_k = 1, g.b_n = s.c_in;
  g.c_m = s.c_out, g.c_n = 1;
  g.b_k_contiguous = true;
  return g;
}

// grad_input = W^T dz (A or B is dz: the gate goes with it). No bias, residual or activation.
inline gemm_operands make_backward_data_gemm(const pointwise_shape& s) {
  const index_t pixels = s.pixels();
  if (per_image_gemm(s)) {
    gemm_operands g = gemm_base(s.c_in, pixels, s.c_out, activation::none);
    g.a_m = 1, g.a_k = s.c_in;
    g.b_k = pixels, g.b_n = 1;
    g.c_m = pixels, g.c_n = 1;
    g.batches = s.n;
    g.a_batch = 0, g.b_batch = s.c_out * pixels, g.c_batch = s.c_in * pixels;
    g.weight_is_a = g.a_m_contiguous = true;
    g.gate_on_a = false;
    return g;
  }
  gemm_operands g = gemm_base(s.n * pixels, s.c_in, s.c_out, activation::none);
  g.a_m = s.c_out, g.a_k = 1;
  g.b_k = s.c_in, g.b_n = 1;
  g.c_m = s.c_in, g.c_n = 1;
  g.gate_on_a = true;
  return g;
}

// grad_weight = dz x^T over every image and pixel (A is dz, and the gate goes with it; the
// bias gradient is A's row sums). No bias, residual or activation.
inline gemm_operands make_backward_weight_gemm(const pointwise_shape& s) {
  const index_t pixels = s.pixels();
  gemm_operands g = gemm_base(s.c_out, s.c_in, per_image_gemm(s) ? pixels : s.n * pixels, activation::none);
  g.c_m = s.c_in, g.c_n = 1;
  g.gate_on_a = true;
  if (per_image_gemm(s)) {
    g.a_m = pixels, g.a_k = 1;
    g.b_k = 1, g.b_n = pixels;
    g.b_k_contiguous = true;
    g.k_batches = s.n;
    g.k_padded = (g.k + split_k_granule - 1) / split_k_granule * split_k_granule;
    g.a_batch = s.c_out * pixels, g.b_batch = s.c_in * pixels;
  } else {
    g.a_m = 1, g.a_k = s.c_out;
    g.b_k = s.c_in, g.b_n = 1;
    g.a_m_contiguous = true;
  }
  g.k_slice = g.k_batches * g.k_padded;
  return g;
}

}  // namespace detail
}  // namespace dsconv
