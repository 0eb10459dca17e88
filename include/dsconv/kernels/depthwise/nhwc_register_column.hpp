#pragma once
// The stride-1 data gradient of float NHWC layers with a fused activation (the variant
// nhwc_register's, gate G clamp or scale): the forward on grad_output with the filter rotated, each
// element of grad_output multiplied by the activation's derivative at the saved tensor's element
// (kernels/common/gradient_gate.hpp). nhwc_register's strips (a row of 4 outputs x a 16-byte
// vector a thread) read each input row once per strip that reads it, K times for the K output rows
// under it and about twice across its strips' halos: the gate's 8 instructions an element (silu's
// from z, which these kernels computed then) were spent 10 times over for a 5x5 filter, 11.3
// instructions per DRAM byte on sm_90. Here a thread takes one channel (or two) and a strip of
// column_strip outputs along a row, and walks down rows_per_thread output rows: the K - 1 input
// rows the next output row shares with this one stay in registers, gated, so each input element
// is loaded and gated once per walk (and (TW + K - 1) / TW times across the strips of a row). One channel a thread, or
// two for 3x3 filters (column_vector): the window of K rows of a 16-byte vector would not fit the
// registers (5 rows x 12 columns x 4 channels); threads take consecutive channel vectors of a
// pixel first, so a warp's 4- or 8-byte loads cover 128 or 256 contiguous bytes, then strip
// columns, row groups and images.
// Requires float, multiplier 1, a square 3x3 or 5x5 filter of stride 1 without dilation (the
// data gradient's transposed problem: any padding up to K - 1 there).

#include <type_traits>

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../platform/recomputed.hpp"
#include "../../problem.hpp"
#include "../common/fast_divmod.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/words.hpp"

namespace dsconv {
namespace detail {

inline constexpr unsigned column_block_threads = 256;
inline constexpr int column_resident_blocks = 2;
// Outputs a thread computes along a row, for v channels a thread (column_vector): the window of
// K rows x (TW + K - 1) gated floats a channel and its K x K taps in registers. One channel: 8
// on NVIDIA (each input read 1.5 times for a 5x5 filter: 5.4 instructions per DRAM byte on sm_90
// through the silu gate, 6 outputs 5.5, 4 outputs 6.1); 4 on AMD, where hipcc spilled 8 (332
// bytes a lane for 5x5 filters on gfx906). Two: 4 (with 8, a row's 40 loaded floats beside the
// 60 of the window spilled 68-72 bytes on sm_90).
DSCONV_HOST_DEVICE constexpr int column_strip(int v) {
#if defined(DSCONV_PLATFORM_HIP)
  return (void)v, 4;
#else
  return v == 1 ? 8 : 4;
#endif
}

// Whether the walk is unrolled K rows at a time, its window a ring whose slots are compile-time
// (NVIDIA: the K - 1 rows' copies a row had taken 48 moves of 780 instructions for 5x5, sm_90);
// on AMD one row at a time, the window's rows copied down (hipcc hoisted the unrolled rows'
// loads and spilled 172 bytes a lane for 5x5 filters on gfx906).
inline constexpr bool column_ring =
#if defined(DSCONV_PLATFORM_HIP)
    false;
#else
    true;
#endif

// Channels a thread takes: 2 for 3x3 filters, whose strips of 4 outputs then load rows of 6
// pixels' 8-byte vectors (96 bytes of the two tensors, where one channel's strips of 8 loaded 80
// and kept 40 KiB in flight a multiprocessor at 2 resident blocks, sm_90), where channels come in
// pairs and every tensor is aligned to 8 bytes (the plan's vector); else 1 (5x5: a row is 96
// bytes already).
DSCONV_HOST_DEVICE constexpr int column_vector(int k) { return k == 3 ? 2 : 1; }

struct nhwc_column_tile {
  int strip_cols;       // strips per output row: ceil(out_w / column_strip(vector))
  int row_groups;       // groups of rows_per_thread output rows per image
  int rows_per_thread;  // output rows a thread walks down
  int vector;           // channels a thread: column_vector, or 1 (odd channels, tensors not aligned to 8 bytes)
  int items;            // threads with work: n * row_groups * strip_cols * c / vector
  fast_divmod channel{1u};    // item -> (rest, channel vector): by c / vector
  fast_divmod strip_col{1u};  // rest -> (image row group, strip column): by strip_cols
  fast_divmod row_group{1u};  // image row group -> (image, row group): by row_groups
};

}  // namespace detail

namespace kernels {

// s: the transposed problem's shape (input grad_output, output grad_input, the filter rotated).
// V: channels a thread (t.vector).
template <int K, detail::gate_kind G, int V>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::column_block_threads, detail::column_resident_blocks)
DSCONV_WAVES_PER_SIMD(detail::column_resident_blocks)
void depthwise_nhwc_register_column(detail::depthwise_shape s, detail::nhwc_column_tile t, const float* __restrict__ input,
                                    detail::register_gate gate, const float* __restrict__ weight,
                                    float* __restrict__ output) {
  namespace pf = platform;
  constexpr int TW = detail::column_strip(V), IW = TW + K - 1;
  const unsigned item = pf::block_idx().x * pf::block_dim().x + pf::thread_idx().x;
  if (item >= static_cast<unsigned>(t.items)) return;
  const unsigned rest = t.channel.div(item), image_group = t.strip_col.div(rest), n = t.row_group.div(image_group);
  const int c = static_cast<int>(item - rest * (s.c / V)) * V;
  const int ox0 = static_cast<int>(rest - image_group * t.strip_cols) * TW;
  const int oy0 = static_cast<int>(image_group - n * t.row_groups) * t.rows_per_thread;

  float w[K * K][V];
DSCONV_UNROLL
  for (int tap = 0; tap < K * K; ++tap)
DSCONV_UNROLL
    for (int e = 0; e < V; ++e)
      w[tap][e] = pf::load(weight + static_cast<index_t>(c + e) * (K * K) + (s.rotate_filter ? K * K - 1 - tap : tap));

  const int ix0 = ox0 - s.pad_w;
  // (32-bit offsets from the tensors' pointers, which the plan keeps below 2^31 elements: one
  // offset serves both tensors' loads, advanced by c a column; signed offsets from a pointer to
  // the thread's image had counted 6.4 a byte for 5x5 through the silu gate, 5.3 now)
  const unsigned image_at = n * static_cast<unsigned>(s.h * s.w * s.c) + static_cast<unsigned>(c);
  const float* saved = static_cast<const float*>(gate.saved);
  // The walk, its columns all inside the map or not (a compile-time fact: no per-element test on
  // the strips inside).
  const auto walk = [&](auto all_inside) {
    // Input row iy under the strip into x, gated; zeros outside the map (the padding). Every load
    // of a row is issued before its first product needs it.
    const auto read_row = [&](int iy, float (&x)[IW][V]) {
      if (static_cast<unsigned>(iy) >= static_cast<unsigned>(s.h)) {
DSCONV_UNROLL
        for (int j = 0; j < IW; ++j)
DSCONV_UNROLL
          for (int e = 0; e < V; ++e) x[j][e] = 0.f;
        return;
      }
      unsigned at = image_at + static_cast<unsigned>((iy * s.w + ix0) * s.c);
DSCONV_UNROLL
      for (int j = 0; j < IW; ++j) {
        const bool inside = decltype(all_inside)::value || static_cast<unsigned>(ix0 + j) < static_cast<unsigned>(s.w);
        if constexpr (V == 1) {
          x[j][0] = inside ? detail::gated_value<G>(pf::load(input + at), pf::load(saved + at), gate) : 0.f;
        } else {
          float dy[V] = {}, z[V] = {};
          if (inside) {
            detail::widen_words<float>(detail::load_words<V>(input + at, true), dy);
            detail::widen_words<float>(detail::load_words<V>(saved + at, true), z);
          }
DSCONV_UNROLL
          for (int e = 0; e < V; ++e) x[j][e] = inside ? detail::gated_value<G>(dy[e], z[e], gate) : 0.f;
        }
        at += static_cast<unsigned>(s.c);
      }
    };

    // The window: input row oy - pad_h + r of output row oy in x[(oy - oy0 + r) % K] (column_ring:
    // a ring, its slots compile-time in a walk unrolled K rows at a time; else in x[r], the rows
    // copied down after each output row), the first K - 1 read before the walk, the last at each
    // row.
    constexpr int U = detail::column_ring ? K : 1;  // output rows an iteration of the walk
    float x[K][IW][V];
    const int iy0 = oy0 - s.pad_h;
DSCONV_UNROLL
    for (int r = 0; r < K - 1; ++r) read_row(iy0 + r, x[r]);
    const int count = s.out_w - ox0, left = s.out_h - oy0, rows = t.rows_per_thread < left ? t.rows_per_thread : left;
    for (int i0 = 0; i0 < rows; i0 += U) {
DSCONV_UNROLL
      for (int u = 0; u < U; ++u) {
        const int i = i0 + u;
        if (i >= rows) return;
        read_row(iy0 + i + K - 1, x[(u + K - 1) % K]);
        float acc[TW][V];
DSCONV_UNROLL
        for (int o = 0; o < TW; ++o)
DSCONV_UNROLL
          for (int e = 0; e < V; ++e) acc[o][e] = 0.f;
DSCONV_UNROLL
        for (int ky = 0; ky < K; ++ky)
DSCONV_UNROLL
          for (int kx = 0; kx < K; ++kx)
DSCONV_UNROLL
            for (int o = 0; o < TW; ++o)
DSCONV_UNROLL
              for (int e = 0; e < V; ++e) acc[o][e] += x[(u + ky) % K][o + kx][e] * w[ky * K + kx][e];
        // (each store one wide multiply-add from the row's first output, platform::held_global and
        // unwidened: sm_90, 5x5 through the scale gate, 1637 -> 1585 instructions a walk of 5
        // rows inside the map, the edge strips' form 2075 -> 1883, 4.32 -> 3.92 a DRAM byte)
        float* const out = pf::held_global(output + ((static_cast<index_t>(n) * s.out_h + oy0 + i) * s.out_w + ox0) * s.c + c);
        const int column = pf::unwidened(s.c);
DSCONV_UNROLL
        for (int o = 0; o < TW; ++o) {
          if (!decltype(all_inside)::value && o >= count) continue;
          if constexpr (V == 1) {
            pf::store(out + o * column, acc[o][0]);
          } else {
            pf::vec<unsigned, V> bits;
DSCONV_UNROLL
            for (int e = 0; e < V; ++e) bits[e] = detail::element_bits(acc[o][e]);
            detail::store_words<V>(out + o * column, bits, true);
          }
        }
        if constexpr (U == 1) {
DSCONV_UNROLL
          for (int r = 0; r < K - 1; ++r)
DSCONV_UNROLL
            for (int j = 0; j < IW; ++j)
DSCONV_UNROLL
              for (int e = 0; e < V; ++e) x[r][j][e] = x[r + 1][j][e];
        }
      }
    }
  };
  if (ix0 >= 0 && ix0 + IW <= s.w)
    walk(std::true_type{});
  else
    walk(std::false_type{});
}

}  // namespace kernels
}  // namespace dsconv
