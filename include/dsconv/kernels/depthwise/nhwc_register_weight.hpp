#pragma once
// Depthwise NHWC weight gradient, register-blocked (the variant nhwc_register): grad_weight and
// grad_bias as the tiled kernel's (nhwc_backward_weight.hpp), deterministic, on the forward's
// register strips (nhwc_register.hpp). A thread takes strips of TW outputs of one output row for
// a vector of channels, one after the other: it loads the strip's dz (grad_output gated by the
// activation's derivative) once and widens it to float, then for each of the K input rows the
// strip reads it loads the row's (TW - 1) * S + K input vectors straight from global memory and
// widens them once, and adds input times dz of every output that reads it into a fp32 sum per
// tap and channel held in registers (K * K * V of them, and V for the bias), with no shared
// memory and no barrier between the loads and the arithmetic. The tiled kernel reads each tap's
// staged input from shared memory once per output and widens it there: 9 shared loads, 9
// conversions and 9 multiply-adds per output of a 3x3 filter; here it is 9 multiply-adds and
// K * ((TW - 1) * S + K) / TW conversions. After its strips the block adds the sums of the
// threads of each channel vector in a fixed order (weight_reduce.hpp: reduce_values) and
// stores them, or with several strip blocks per channel group writes them as partial sums
// that depthwise_weight_reduce adds in block order: the same bits on every run.
// The strips of a block are the forward's (the same tile and walk): strips_per_thread of them
// a thread, pixel_lanes apart. Requires what the forward's register kernel does (multiplier 1,
// a 3x3 or 5x5 filter of stride 1 or 2, channels in whole 16-byte vectors) and channel vectors
// per block a power of two (the reduction's groups of lanes).

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/activation.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/words.hpp"
#include "nhwc_register.hpp"
#include "weight_reduce.hpp"

namespace dsconv {
namespace detail {

// Channels per thread: 4 (16 bytes of float, 8 of a 16-bit type) for 3x3 filters, 2 for 5x5, so
// that the sums (K * K + 1 per channel), the strip's dz and one widened input row fit the
// 128 registers a thread of two resident blocks has.
template <class T, int K, int S>
DSCONV_HOST_DEVICE constexpr int register_weight_vector() {
  return K == 3 ? 4 : 2;
}

// Outputs per thread along a row: 4 (the 16-bit 5x5 forward's 8 spilled the sums on sm_75 and
// sm_80), 2 on AMD as the forward's (register_strip).
template <class T, int K, int S>
DSCONV_HOST_DEVICE constexpr int register_weight_strip() {
#if defined(DSCONV_PLATFORM_HIP)
  return register_strip<T, K, S>();
#else
  return 4;
#endif
}

// Values a thread sums: its channels' taps, then their biases.
template <int K, int V>
DSCONV_HOST_DEVICE constexpr int register_weight_values() {
  return (K * K + 1) * V;
}

// dz of a strip (dy[o]: the words of output o, kept[o]: the saved tensor's at its place):
// dy widened, times act'(saved) where the layer fused an activation (gate.saved): relu's and
// relu6's 0/1 factor (gated_value), the others' activation_gradient, inline (an out-of-line
// call, as the tiled kernels make, had gfx90a save the live sums to scratch memory around it).
// One branch per strip, not per word: per word, nvcc if-converted them into every element.
template <class T, int TW, int W>
DSCONV_DEVICE DSCONV_FORCEINLINE void gated_strip(const platform::vec<unsigned, W> (&dy)[TW],
                                                  const platform::vec<unsigned, W> (&kept)[TW], const gate_tensor<T>& gate,
                                                  const register_gate& clamp, float (&dz)[TW][W * elements_per_word<T>()]) {
  constexpr int E = elements_per_word<T>(), V = W * E;
DSCONV_UNROLL
  for (int o = 0; o < TW; ++o) widen_words<T>(dy[o], dz[o]);
  if (!gate.saved) return;
  float y[TW][V];
DSCONV_UNROLL
  for (int o = 0; o < TW; ++o) widen_words<T>(kept[o], y[o]);
  if (gate_kind_of(gate.act) == gate_kind::clamp) {
DSCONV_UNROLL
    for (int o = 0; o < TW; ++o)
DSCONV_UNROLL
      for (int e = 0; e < V; ++e) dz[o][e] = gated_value<gate_kind::clamp>(dz[o][e], y[o][e], clamp);
  } else {
DSCONV_UNROLL
    for (int o = 0; o < TW; ++o)
DSCONV_UNROLL
      for (int e = 0; e < V; ++e) dz[o][e] *= activation_gradient(y[o][e], gate.act);
  }
}

}  // namespace detail

namespace kernels {

// partial: [strip blocks][c][K * K + 1] floats where there are several (the bias at K * K), else nullptr and
// the sums go to grad_weight and grad_bias (null: not wanted).
template <class T, int K, int S>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::register_block_threads, detail::register_resident_blocks)
DSCONV_WAVES_PER_SIMD(detail::register_resident_blocks)
void depthwise_nhwc_register_weight(detail::depthwise_shape s, detail::nhwc_register_tile t, const T* __restrict__ input,
                                    const T* __restrict__ grad_output, detail::gate_tensor<T> gate,
                                    detail::register_gate clamp, float* __restrict__ partial, T* __restrict__ grad_weight,
                                    T* __restrict__ grad_bias) {
  namespace pf = platform;
  constexpr int V = detail::register_weight_vector<T, K, S>(), TW = detail::register_weight_strip<T, K, S>();
  constexpr int E = detail::elements_per_word<T>(), W = V / E;  // a vector's elements per word, its words
  constexpr int IW = (TW - 1) * S + K;                             // input columns a strip reads
  constexpr int N = detail::register_weight_values<K, V>();
  using words = pf::vec<unsigned, W>;
  const int tid = static_cast<int>(pf::thread_idx().x), threads = static_cast<int>(pf::block_dim().x);
  const detail::register_block_place place = detail::register_block();
  const int c0 = place.channel_group * t.group_vectors * V;
  const int cv = tid % t.group_vectors, lane = tid / t.group_vectors;  // (once per block)
  const detail::warp_position wp(tid, threads);

  // sums[tap][e], the biases' at tap K * K. (Per tap a row of V sums: a flat array of K * K * V,
  // indexed by an expression of the unrolled loops' counters, stayed in scratch memory on gfx90a,
  // which SROA did not split.)
  float sums[K * K + 1][V];
DSCONV_UNROLL
  for (int tap = 0; tap <= K * K; ++tap)
DSCONV_UNROLL
    for (int e = 0; e < V; ++e) sums[tap][e] = 0.f;
  const int c = c0 + cv * V;
  const index_t row_pitch = static_cast<index_t>(s.w) * s.c, out_pitch = static_cast<index_t>(s.out_w) * s.c;
  const unsigned first = place.strip_block * t.strips_per_thread * t.pixel_lanes + lane;
  for (int i = 0; i < t.strips_per_thread && lane < t.pixel_lanes; ++i) {
    const unsigned strip = first + static_cast<unsigned>(i * t.pixel_lanes);
    if (strip >= static_cast<unsigned>(t.strips)) break;
    const unsigned row = t.strip_row.div(strip), n = t.image_row.div(row);
    const int ox0 = static_cast<int>(strip - row * t.strip_cols) * TW, oy = static_cast<int>(row - n * s.out_h);
    const int ix0 = ox0 * S - s.pad_w, iy0 = oy * S - s.pad_h;
    const int count = s.out_w - ox0;  // the strip's outputs inside the row (TW or more: all)

    // The strip's dy and saved words (outputs past the row: zeros, which add nothing), as
    // vectors without checks for the strips inside the row.
    const index_t first_out = static_cast<index_t>(row) * out_pitch + static_cast<index_t>(ox0) * s.c + c;  // (row: n * out_h + oy)
    const T* dy_at = grad_output + first_out;
    const T* kept_at = gate.saved ? gate.saved + first_out : nullptr;
    words dy[TW], kept[TW];
    if (count >= TW && t.aligned) {
DSCONV_UNROLL
      for (int o = 0; o < TW; ++o) {
        dy[o] = pf::load_vec<W>(reinterpret_cast<const unsigned*>(dy_at + o * s.c));
        kept[o] = kept_at ? pf::load_vec<W>(reinterpret_cast<const unsigned*>(kept_at + o * s.c)) : words{};
      }
    } else {
DSCONV_UNROLL
      for (int o = 0; o < TW; ++o) {
        dy[o] = o < count ? detail::load_words<W>(dy_at + o * s.c, t.aligned) : words{};
        kept[o] = kept_at && o < count ? detail::load_words<W>(kept_at + o * s.c, t.aligned) : words{};
      }
    }
    float dz[TW][V];
    detail::gated_strip<T>(dy, kept, gate, clamp, dz);
DSCONV_UNROLL
    for (int o = 0; o < TW; ++o)
DSCONV_UNROLL
      for (int e = 0; e < V; ++e) sums[K * K][e] += dz[o][e];

    // The index of input element (n, iy0 + ky, ix0, c), stepped a row at a time (a pointer is
    // formed only inside the map; the first rows and columns may lie in the padding).
    index_t row_at = (static_cast<index_t>(n) * s.h + iy0) * row_pitch + static_cast<index_t>(ix0) * s.c + c;
    const bool columns_inside = ix0 >= 0 && ix0 + IW <= s.w;
    // (every row unrolled: a row's sums are then registers; indexed by a run-time row they lived in
    // local memory)
DSCONV_UNROLL
    for (int ky = 0; ky < K; ++ky) {
      const int iy = iy0 + ky;
      const index_t at_row = row_at;
      row_at += row_pitch;
      if (iy < 0 || iy >= s.h) continue;  // a padding row adds nothing (no shared loads keep the warp in step)
      words raw[IW];
      if (columns_inside) {  // the strips inside the map: loads without checks
        const T* at = input + at_row;
DSCONV_UNROLL
        for (int j = 0; j < IW; ++j) raw[j] = detail::load_words<W>(at + j * s.c, t.aligned);
      } else {
DSCONV_UNROLL
        for (int j = 0; j < IW; ++j) {
          const int ix = ix0 + j;
          raw[j] = ix >= 0 && ix < s.w ? detail::load_words<W>(input + (at_row + static_cast<index_t>(j) * s.c), t.aligned) : words{};
        }
      }
      float in[IW][V];
DSCONV_UNROLL
      for (int j = 0; j < IW; ++j) detail::widen_words<T>(raw[j], in[j]);
DSCONV_UNROLL
      for (int kx = 0; kx < K; ++kx)
DSCONV_UNROLL
        for (int o = 0; o < TW; ++o)
DSCONV_UNROLL
          for (int e = 0; e < V; ++e) sums[ky * K + kx][e] += in[o * S + kx][e] * dz[o][e];
    }
  }

  // The sums of the threads of each channel vector (lanes equal modulo group_vectors), in a fixed
  // order, as values[tap * V + e].
  float values[N];
DSCONV_UNROLL
  for (int tap = 0; tap <= K * K; ++tap)
DSCONV_UNROLL
    for (int e = 0; e < V; ++e) values[tap * V + e] = sums[tap][e];
  float* scratch = pf::dynamic_shared<float>();
  detail::reduce_values<N>(values, scratch, t.group_vectors, wp, tid, threads);
  const int taps = K * K;
  for (int j = tid; j < t.group_vectors * N; j += threads) {
    const int member = j / N, i = j - member * N;  // (once per value stored)
    const int tap = i / V, channel = c0 + member * V + i % V;  // (tap == taps: the bias)
    detail::store_weight_sum(pf::shared_load(scratch + detail::reduced_at<N - 1, 1>(0, member, t.group_vectors, wp) + i),
                             channel, tap, taps, s.c, partial, static_cast<int>(place.strip_block), grad_weight, grad_bias);
  }
}

}  // namespace kernels
}  // namespace dsconv
