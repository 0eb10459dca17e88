#pragma once
// What every pointwise GEMM kernel does around its main loop: find its GEMM of the batch and
// its K range, and store what it accumulated: through the fused epilogue
// C[m][n] = act(acc + bias + residual) (cuDNN's conv-bias-add-activation order), or as a
// split-K partial sum.

#include <cstdint>

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../common/activation.hpp"
#include "gemm_operands.hpp"

namespace dsconv {
namespace kernels {

// Where this block works: its GEMM of the batch (an image in the NCHW form; the only GEMM
// otherwise) and its range of K (all of it, unless split_k divides K over several blocks).
struct gemm_block {
  index_t batch, slice, k_begin, k_end;
};

// Reads the block's place from grid.z and moves the operand pointers to its GEMM.
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE gemm_block select_block(const detail::gemm_operands& g, const T* __restrict__& a,
                                                         const T* __restrict__& b) {
  const index_t z = platform::block_idx().z;
  gemm_block blk;
  blk.batch = z / g.slices, blk.slice = z % g.slices;
  blk.k_begin = blk.slice * g.k_slice;
  blk.k_end = blk.k_begin + g.k_slice < g.k ? blk.k_begin + g.k_slice : g.k;
  a += blk.batch * g.a_batch;
  b += blk.batch * g.b_batch;
  return blk;
}

template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void gemm_store(const detail::gemm_operands& g, index_t m, index_t n, float acc,
                                                 const T* __restrict__ bias, const T* __restrict__ residual,
                                                 T* __restrict__ c) {
  if (bias) acc += to_float(platform::load(bias + (g.bias_along_m ? m : n)));
  const index_t off = m * g.c_m + n * g.c_n;
  if (residual) acc += to_float(platform::load(residual + off));
  platform::store(c + off, from_float<T>(detail::activate(acc, g.act)));
}

// Stores acc[0 .. V) as C[m][n .. n + V) through out.store, each column inside C.
template <int V, class Out>
DSCONV_DEVICE DSCONV_FORCEINLINE void store_each(const Out& out, const detail::gemm_operands& g, const gemm_block& blk,
                                                 index_t m, index_t n, const float* acc) {
  DSCONV_UNROLL
  for (int e = 0; e < V; ++e)
    if (n + e < g.n) out.store(g, blk, m, n + e, acc[e]);
}

// What a tiled GEMM kernel does with what it accumulated: store(m, n, value) one element,
// store_run<V>(m, n, values) the V consecutive columns C[m][n .. n + V) of a row (n a multiple
// of V), as one vector access where the buffers allow it (vector_elems, which the dispatcher
// sets), else one by one.
// fused_output: the epilogue above, into the output tensor.
template <class T>
struct fused_output {
  const T* bias;
  const T* residual;
  T* c;
  int vector_elems;  // widest run that starts aligned in c, residual and a bias along n (fused_vector_elems)

  DSCONV_DEVICE DSCONV_FORCEINLINE void store(const detail::gemm_operands& g, const gemm_block& blk, index_t m,
                                              index_t n, float acc) const {
    gemm_store(g, m, n, acc, bias, residual ? residual + blk.batch * g.c_batch : nullptr, c + blk.batch * g.c_batch);
  }

  template <int V>
  DSCONV_DEVICE DSCONV_FORCEINLINE void store_run(const detail::gemm_operands& g, const gemm_block& blk, index_t m,
                                                  index_t n, const float* acc) const {
    if constexpr (V == 1) {
      return store_each<V>(*this, g, blk, m, n, acc);
    } else {
      if (V > vector_elems || n + V > g.n) return store_each<V>(*this, g, blk, m, n, acc);
      store_vector<V>(g, blk, m, n, acc);
    }
  }

  // store_run for V > 1 where the run is aligned and inside C.
  template <int V>
  DSCONV_DEVICE DSCONV_FORCEINLINE void store_vector(const detail::gemm_operands& g, const gemm_block& blk, index_t m,
                                                     index_t n, const float* acc) const {
    const index_t off = blk.batch * g.c_batch + m * g.c_m + n;
    float v[V];
    DSCONV_UNROLL
    for (int e = 0; e < V; ++e) v[e] = acc[e];
    if (bias && g.bias_along_m) {
      const float b = to_float(platform::load(bias + m));
      DSCONV_UNROLL
      for (int e = 0; e < V; ++e) v[e] += b;
    } else if (bias) {
      const platform::vec<T, V> b = platform::load_vec<V>(bias + n);
      DSCONV_UNROLL
      for (int e = 0; e < V; ++e) v[e] += to_float(b[e]);
    }
    if (residual) {
      const platform::vec<T, V> r = platform::load_vec<V>(residual + off);
      DSCONV_UNROLL
      for (int e = 0; e < V; ++e) v[e] += to_float(r[e]);
    }
    platform::vec<T, V> y;
    DSCONV_UNROLL
    for (int e = 0; e < V; ++e) y[e] = from_float<T>(detail::activate(v[e], g.act));
    platform::store_vec<V>(c + off, y);
  }
};

// The widest run (8, 4, 2 or 1 elements) of consecutive columns that starts aligned to its
// size in every row of C, of the residual and of a bias indexed along n, for runs starting
// at a multiple of it: the pointers and the row and image strides must all allow it.
template <class T>
inline int fused_vector_elems(const detail::gemm_operands& g, const T* bias, const T* residual, const T* c) {
  for (int v = 8; v > 1; v /= 2) {
    const auto aligned = [v](const void* p) {
      return !p || reinterpret_cast<std::uintptr_t>(p) % (static_cast<std::uintptr_t>(v) * sizeof(T)) == 0;
    };
    if (g.c_m % v == 0 && g.c_batch % v == 0 && aligned(c) && aligned(residual) && (g.bias_along_m || aligned(bias)))
      return v;
  }
  return 1;
}

// partial_output (split_k): the raw fp32 sum of the block's K range, into the workspace laid
// out as [slice][batch][m][n]; pointwise_split_k_reduce adds the slices and applies the epilogue.
struct partial_output {
  float* workspace;
  int vector_elems;  // widest aligned run: partial_vector_elems

  DSCONV_DEVICE DSCONV_FORCEINLINE index_t offset(const detail::gemm_operands& g, const gemm_block& blk, index_t m,
                                                  index_t n) const {
    return ((blk.slice * g.batches + blk.batch) * g.m + m) * g.n + n;
  }
  DSCONV_DEVICE DSCONV_FORCEINLINE void store(const detail::gemm_operands& g, const gemm_block& blk, index_t m,
                                              index_t n, float acc) const {
    platform::store(workspace + offset(g, blk, m, n), acc);
  }
  template <int V>
  DSCONV_DEVICE DSCONV_FORCEINLINE void store_run(const detail::gemm_operands& g, const gemm_block& blk, index_t m,
                                                  index_t n, const float* acc) const {
    if constexpr (V == 1) {
      return store_each<V>(*this, g, blk, m, n, acc);
    } else {
      if (V > vector_elems || n + V > g.n) return store_each<V>(*this, g, blk, m, n, acc);
      platform::vec<float, V> y;
      DSCONV_UNROLL
      for (int e = 0; e < V; ++e) y[e] = acc[e];
      platform::store_vec<V>(workspace + offset(g, blk, m, n), y);
    }
  }
};

inline int partial_vector_elems(const detail::gemm_operands& g, const float* workspace) {
  for (int v = 8; v > 1; v /= 2)
    if (g.n % v == 0 && reinterpret_cast<std::uintptr_t>(workspace) % (static_cast<std::uintptr_t>(v) * sizeof(float)) == 0)
      return v;
  return 1;
}

}  // namespace kernels
}  // namespace dsconv
