#pragma once
// What every pointwise GEMM kernel does around its main loop: find its GEMM of the batch and
// its range of the (summed) K, walk that range in steps, and store what it accumulated:
// through the fused epilogue C[m][n] = act(acc + bias + residual) (cuDNN's
// conv-bias-add-activation order), or as a split-K partial sum; and, for the backward weight
// pass, A's row sums (the bias gradient).

#include <cstdint>

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../common/activation.hpp"
#include "../common/words.hpp"
#include "gemm_operands.hpp"
#include "gemm_staging.hpp"

namespace dsconv {
namespace kernels {

// Where this block works: its output GEMM of the batch (an image in the NCHW forms; the only
// GEMM otherwise) and its range [k_begin, k_end) of the summed K (all of it, unless split_k
// divides it over several blocks).
struct gemm_block {
  index_t batch, slice, k_begin, k_end;
};

// Reads the block's place from grid.z and moves the operand pointers to its output GEMM.
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE gemm_block select_block(const detail::gemm_operands& g, const T* __restrict__& a,
                                                         const T* __restrict__& b) {
  const index_t z = platform::block_idx().z;
  gemm_block blk;
  // (a 64-bit division is a call of about 40 instructions on NVIDIA: only where K is split)
  blk.batch = g.slices == 1 ? z : z / g.slices, blk.slice = g.slices == 1 ? 0 : z % g.slices;
  blk.k_begin = blk.slice * g.k_slice;
  const index_t summed = g.k_batches * g.k_padded;
  blk.k_end = blk.k_begin + g.k_slice < summed ? blk.k_begin + g.k_slice : summed;
  a += blk.batch * g.a_batch;
  b += blk.batch * g.b_batch;
  return blk;
}

// The K steps of BK of a block's range, in order, each inside one of the GEMMs summed along K
// (k_batches; one unless the images of the NCHW weight gradient are summed): the step's first
// k, where that GEMM's K ends for the block, and the operands (and the gate) of that GEMM.
// Divides only where it starts; each step moves on with additions. Steps never cover the
// padding between the summed GEMMs (k_padded).
template <class T, int BK>
struct k_steps {
  static constexpr int bk = BK;
  const T* a;
  const T* b;
  const T* gate;
  index_t k0, limit;  // this step's first k; the end of the block's range in this GEMM (<= k)
  index_t count;      // steps in the block's range

  DSCONV_DEVICE DSCONV_FORCEINLINE k_steps(const detail::gemm_operands& g, const gemm_block& blk, const T* a_,
                                           const T* b_, const T* gate_)
      : a(a_), b(b_), gate(gate_) {
    // (once per block; divisions only where GEMMs are summed along K)
    const index_t first = g.k_batches == 1 ? 0 : blk.k_begin / g.k_padded;
    const index_t last = g.k_batches == 1 ? 0 : (blk.k_end - 1) / g.k_padded;
    const index_t start = blk.k_begin - first * g.k_padded, end = blk.k_end - last * g.k_padded;
    const auto steps = [](index_t from, index_t to) { return to > from ? (to - from + BK - 1) / BK : 0; };
    const index_t k_last = end < g.k ? end : g.k;
    count = first == last ? steps(start, k_last) : steps(start, g.k) + (last - first - 1) * steps(0, g.k) + steps(0, k_last);
    last_ = last;
    end_ = k_last;
    batch_ = first;
    k0 = start;
    limit = first == last ? k_last : g.k;
    move(g, first);
    if (k0 >= limit && count > 0) next_gemm(g);  // (a range that starts in the padding)
  }

  // The K of this step inside the matrix: BK but in a range's last step.
  DSCONV_DEVICE DSCONV_FORCEINLINE int inside() const {
    const index_t left = limit - k0;
    return left < BK ? static_cast<int>(left) : BK;
  }

  // Steps from this one on whose K lies wholly inside this GEMM's part of the block's range
  // (they need no bounds along K).
  DSCONV_DEVICE DSCONV_FORCEINLINE index_t whole_steps() const { return k0 < limit ? (limit - k0) / BK : 0; }

  // The next step's position; whether it starts the next of the GEMMs summed along K (its
  // operands elsewhere).
  DSCONV_DEVICE DSCONV_FORCEINLINE bool advance(const detail::gemm_operands& g) {
    k0 += BK;
    if (k0 < limit || batch_ >= last_) return false;
    next_gemm(g);
    return true;
  }

 private:
  index_t batch_, last_, end_;

  DSCONV_DEVICE DSCONV_FORCEINLINE void move(const detail::gemm_operands& g, index_t batches) {
    a += batches * g.a_batch;
    b += batches * g.b_batch;
    if (gate) gate += batches * (g.gate_on_a ? g.a_batch : g.b_batch);
  }
  DSCONV_DEVICE DSCONV_FORCEINLINE void next_gemm(const detail::gemm_operands& g) {
    ++batch_;
    move(g, 1);
    k0 = 0;
    limit = batch_ == last_ ? end_ : g.k;
  }
};

// The cursors (gemm_staging.hpp's k_cursor) of this thread's runs of a block's A and B tiles
// at the step k_steps is at, and their move with it to the next step: placed again where that
// step starts the next of the GEMMs summed along K. (m0, n0): the block's corner of C.
template <class ATile, class BTile>
struct tile_cursors {
  typename ATile::template k_cursor<false> a;
  typename BTile::template k_cursor<true> b;

  template <class Steps>
  DSCONV_DEVICE DSCONV_FORCEINLINE tile_cursors(const Steps& at, const detail::gemm_operands& g, index_t m0, index_t n0,
                                                index_t a_stride, index_t b_stride, int tid)
      : a(m0, at.k0, g.m, a_stride, tid), b(at.k0, n0, g.n, b_stride, tid) {}

  template <class Steps>
  DSCONV_DEVICE DSCONV_FORCEINLINE void advance(Steps& at, const detail::gemm_operands& g, index_t m0, index_t n0,
                                                index_t a_stride, index_t b_stride, int tid) {
    if (at.advance(g)) {
      *this = tile_cursors(at, g, m0, n0, a_stride, b_stride, tid);
    } else {
      a.next(Steps::bk, a_stride);
      b.next(Steps::bk, b_stride);
    }
  }

  // On `steps` >= 1 steps at once, all but the last of them whole steps of the GEMM the
  // cursors are in (k_steps::whole_steps).
  template <class Steps>
  DSCONV_DEVICE DSCONV_FORCEINLINE void skip(Steps& at, const detail::gemm_operands& g, index_t m0, index_t n0,
                                             index_t a_stride, index_t b_stride, int tid, index_t steps) {
    at.k0 += (steps - 1) * Steps::bk;
    a.next(Steps::bk, a_stride, steps - 1);
    b.next(Steps::bk, b_stride, steps - 1);
    advance(at, g, m0, n0, a_stride, b_stride, tid);
  }
};

// The gate tensor of a block's output GEMM, or nullptr.
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE const T* block_gate(const detail::gemm_operands& g, const gemm_block& blk) {
  if (!g.gate) return nullptr;
  return static_cast<const T*>(g.gate) + blk.batch * (g.gate_on_a ? g.a_batch : g.b_batch);
}

// Act: the activation, g.act or a compile-time constant of it (detail::with_activation).
template <class T, class Act>
DSCONV_DEVICE DSCONV_FORCEINLINE void gemm_store(const detail::gemm_operands& g, index_t m, index_t n, float acc,
                                                 const T* __restrict__ bias, const T* __restrict__ residual,
                                                 T* __restrict__ c, T* __restrict__ pre, Act act) {
  if (bias) acc += to_float(platform::load(bias + (g.bias_along_m ? m : n)));
  const index_t off = m * g.c_m + n * g.c_n;
  if (residual) acc += to_float(platform::load(residual + off));
  if (pre) platform::store(pre + off, from_float<T>(acc));
  platform::store(c + off, from_float<T>(detail::activate(acc, act)));
}

// Stores acc[0 .. V) as C[m][n .. n + V) through out.store, each column inside C.
template <int V, class Out, class Act>
DSCONV_DEVICE DSCONV_FORCEINLINE void store_each(const Out& out, const detail::gemm_operands& g, const gemm_block& blk,
                                                 index_t m, index_t n, const platform::vec<float, V>& acc, Act act) {
  DSCONV_UNROLL
  for (int e = 0; e < V; ++e)
    if (n + e < g.n) out.store(g, blk, m, n + e, acc[e], act);
}

// What a tiled GEMM kernel does with what it accumulated: store(m, n, value) one element,
// store_run<V>(m, n, values, act) the V consecutive columns C[m][n .. n + V) of a row (n a
// multiple of V), as one vector access where the buffers allow it (vector_elems, which the
// dispatcher sets), else one by one (act: g.act or a compile-time constant of it); and, where
// sums_rows(), store_row_sum(m, value) the sum of row m of A over the block's range of K (the
// blocks of the first column of tiles compute them).
// fused_output: the epilogue above, into the output tensor (and the activation's input into
// `pre` where the forward saves it); the row sums into `row_sums` (the bias gradient).
template <class T>
struct fused_output {
  using value_type = T;  // of the stored elements
  const T* bias;
  const T* residual;
  T* c;
  int vector_elems;      // widest run that starts aligned in c, residual, pre and a bias along n (fused_vector_elems)
  T* pre = nullptr;      // forward: z = acc + bias + residual, before the activation, or nullptr
  T* row_sums = nullptr; // backward weight: the bias gradient [m], or nullptr

  DSCONV_HOST_DEVICE DSCONV_FORCEINLINE bool sums_rows() const { return row_sums != nullptr; }
  DSCONV_DEVICE DSCONV_FORCEINLINE void store_row_sum(const detail::gemm_operands&, const gemm_block&, index_t m,
                                                      float sum) const {
    platform::store(row_sums + m, from_float<T>(sum));
  }

  DSCONV_DEVICE DSCONV_FORCEINLINE void store(const detail::gemm_operands& g, const gemm_block& blk, index_t m,
                                              index_t n, float acc) const {
    store(g, blk, m, n, acc, g.act);
  }
  template <class Act>
  DSCONV_DEVICE DSCONV_FORCEINLINE void store(const detail::gemm_operands& g, const gemm_block& blk, index_t m,
                                              index_t n, float acc, Act act) const {
    gemm_store(g, m, n, acc, bias, residual ? residual + blk.batch * g.c_batch : nullptr, c + blk.batch * g.c_batch,
               pre ? pre + blk.batch * g.c_batch : nullptr, act);
  }

  template <int V, class Act>
  DSCONV_DEVICE DSCONV_FORCEINLINE void store_run(const detail::gemm_operands& g, const gemm_block& blk, index_t m,
                                                  index_t n, const platform::vec<float, V>& acc, Act act) const {
    if constexpr (V == 1) {
      return store_each<V>(*this, g, blk, m, n, acc, act);
    } else {
      if (V > vector_elems || n + V > g.n) return store_each<V>(*this, g, blk, m, n, acc, act);
      store_vector<V>(g, blk, m, n, acc, act);
    }
  }

  // store_run for V > 1 where the run is aligned and inside C.
  template <int V, class Act>
  DSCONV_DEVICE DSCONV_FORCEINLINE void store_vector(const detail::gemm_operands& g, const gemm_block& blk, index_t m,
                                                     index_t n, const platform::vec<float, V>& acc, Act act) const {
    // Loads and stores as 32-bit words (words.hpp): vectors of eight 16-bit elements, built
    // element by element, stayed in scratch memory on AMD (32 to 192 bytes a lane). The stores
    // as one vector instruction each (platform::store_vec_exact: nvcc had split them here).
    constexpr int E = detail::elements_per_word<T>(), W = V / E;
    static_assert(V % E == 0, "a run is whole words");
    const index_t off = blk.batch * g.c_batch + m * g.c_m + n;
    float v[V], t[V];
    DSCONV_UNROLL
    for (int e = 0; e < V; ++e) v[e] = acc[e];
    if (bias && g.bias_along_m) {
      const float b = to_float(platform::load(bias + m));
      DSCONV_UNROLL
      for (int e = 0; e < V; ++e) v[e] += b;
    } else if (bias) {
      detail::widen_words<T>(detail::load_words<W>(bias + n, true), t);
      DSCONV_UNROLL
      for (int e = 0; e < V; ++e) v[e] += t[e];
    }
    if (residual) {
      detail::widen_words<T>(detail::load_words<W>(residual + off, true), t);
      DSCONV_UNROLL
      for (int e = 0; e < V; ++e) v[e] += t[e];
    }
    platform::vec<unsigned, W> w;
    if (pre) {
      DSCONV_UNROLL
      for (int k = 0; k < W; ++k) w[k] = detail::narrow<T>(v + k * E);
      platform::store_vec_exact<W>(reinterpret_cast<unsigned*>(pre + off), w);
    }
    DSCONV_UNROLL
    for (int e = 0; e < V; ++e) t[e] = detail::activate(v[e], act);
    DSCONV_UNROLL
    for (int k = 0; k < W; ++k) w[k] = detail::narrow<T>(t + k * E);
    platform::store_vec_exact<W>(reinterpret_cast<unsigned*>(c + off), w);
  }
};

// The widest run (8, 4, 2 or 1 elements) of consecutive columns that starts aligned to its
// size in every row of C, of the residual, of `pre` and of a bias indexed along n, for runs
// starting at a multiple of it: the pointers and the row and image strides must all allow it.
template <class T>
inline int fused_vector_elems(const detail::gemm_operands& g, const T* bias, const T* residual, const T* c,
                              const T* pre = nullptr) {
  for (int v = 8; v > 1; v /= 2) {
    const auto aligned = [v](const void* p) {
      return !p || reinterpret_cast<std::uintptr_t>(p) % (static_cast<std::uintptr_t>(v) * sizeof(T)) == 0;
    };
    if (g.c_m % v == 0 && g.c_batch % v == 0 && aligned(c) && aligned(residual) && aligned(pre) &&
        (g.bias_along_m || aligned(bias)))
      return v;
  }
  return 1;
}

// partial_output (split_k): the raw fp32 sum of the block's K range, into the workspace laid
// out as [slice][batch][m][n], and A's row sums, where wanted, into row_sums [slice][m];
// pointwise_split_k_reduce adds the slices and applies the epilogue.
struct partial_output {
  using value_type = float;  // of the stored elements
  float* workspace;
  int vector_elems;             // widest aligned run: partial_vector_elems
  float* row_sums = nullptr;    // backward weight: [slice][m], or nullptr

  DSCONV_HOST_DEVICE DSCONV_FORCEINLINE bool sums_rows() const { return row_sums != nullptr; }
  DSCONV_DEVICE DSCONV_FORCEINLINE void store_row_sum(const detail::gemm_operands& g, const gemm_block& blk, index_t m,
                                                      float sum) const {
    platform::store(row_sums + blk.slice * g.m + m, sum);
  }

  DSCONV_DEVICE DSCONV_FORCEINLINE index_t offset(const detail::gemm_operands& g, const gemm_block& blk, index_t m,
                                                  index_t n) const {
    return ((blk.slice * g.batches + blk.batch) * g.m + m) * g.n + n;
  }
  // (the sums go out raw: the reduction applies the epilogue, and the activation)
  DSCONV_DEVICE DSCONV_FORCEINLINE void store(const detail::gemm_operands& g, const gemm_block& blk, index_t m,
                                              index_t n, float acc) const {
    platform::store(workspace + offset(g, blk, m, n), acc);
  }
  template <class Act>
  DSCONV_DEVICE DSCONV_FORCEINLINE void store(const detail::gemm_operands& g, const gemm_block& blk, index_t m,
                                              index_t n, float acc, Act) const {
    store(g, blk, m, n, acc);
  }
  template <int V, class Act>
  DSCONV_DEVICE DSCONV_FORCEINLINE void store_run(const detail::gemm_operands& g, const gemm_block& blk, index_t m,
                                                  index_t n, const platform::vec<float, V>& acc, Act act) const {
    if constexpr (V == 1) {
      return store_each<V>(*this, g, blk, m, n, acc, act);
    } else {
      if (V > vector_elems || n + V > g.n) return store_each<V>(*this, g, blk, m, n, acc, act);
      platform::vec<float, V> y;
      DSCONV_UNROLL
      for (int e = 0; e < V; ++e) y[e] = acc[e];
      platform::store_vec_exact<V>(workspace + offset(g, blk, m, n), y);
    }
  }
};

inline int partial_vector_elems(const detail::gemm_operands& g, const float* workspace) {
  for (int v = 8; v > 1; v /= 2)
    if (g.n % v == 0 && reinterpret_cast<std::uintptr_t>(workspace) % (static_cast<std::uintptr_t>(v) * sizeof(float)) == 0)
      return v;
  return 1;
}

// A's row sums over the block's range of K (the backward weight's bias gradient), by the
// blocks of the first column of tiles: each thread adds up, across the K steps, the A elements
// it stages (at the same places of the tile every step), and at the end the block adds those
// up per row in a fixed order (the same bits on every run) through `scratch`, shared memory
// of at least scratch_floats that the main loop no longer uses (column-major: each row's sum
// reads consecutive words across threads).
template <class ATile>
struct row_sums {
  static constexpr int pitch = ATile::rows;
  static constexpr int scratch_floats = ATile::cols * pitch;
  float part[ATile::per_thread];

  DSCONV_DEVICE DSCONV_FORCEINLINE row_sums() {
    DSCONV_UNROLL
    for (int i = 0; i < ATile::per_thread; ++i) part[i] = 0.f;
  }
  // Adds the thread's staged elements of one step (its runs in order).
  template <class Value>
  DSCONV_DEVICE DSCONV_FORCEINLINE void add(const Value (&staged)[ATile::per_thread]) {
    DSCONV_UNROLL
    for (int i = 0; i < ATile::per_thread; ++i) part[i] += to_float(staged[i]);
  }
  // After a barrier past the main loop: the sum of every row of the tile, stored through out.
  template <class Out>
  DSCONV_DEVICE DSCONV_FORCEINLINE void finish(float* scratch, int tid, int threads, const Out& out,
                                               const detail::gemm_operands& g, const gemm_block& blk, index_t m0) const {
    DSCONV_UNROLL
    for (int i = 0; i < ATile::per_thread; ++i) {
      const tile_position t = ATile::position(ATile::run_start(tid, i / ATile::run_elements) + i % ATile::run_elements);
      platform::shared_store(scratch + t.c * pitch + t.r, part[i]);
    }
    platform::sync_threads();
    for (int r = tid; r < ATile::rows; r += threads) {
      float sum = 0.f;
      for (int c = 0; c < ATile::cols; ++c) sum += platform::shared_load(scratch + c * pitch + r);
      if (m0 + r < g.m) out.store_row_sum(g, blk, m0 + r, sum);
    }
  }
};

}  // namespace kernels
}  // namespace dsconv
