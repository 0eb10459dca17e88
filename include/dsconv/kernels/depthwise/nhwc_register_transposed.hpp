#pragma once
// Depthwise NHWC data gradient of stride 2, register-blocked (the variant nhwc_register's data
// gradient at stride 2): grad_input[iy][ix] sums w[ky][kx] dz[(iy + P - ky) / 2][(ix + P - kx) / 2]
// over the taps where both divisions are exact (transposed_taps.hpp), dz = grad_output (times
// act'() where the layer fused an activation, gated as it arrives: gradient_gate.hpp).
//
// A thread takes a block of 2 rows x TW = 4 columns (2 on AMD) of grad_input for one vector of
// channels, placed so that iy0 + P and ix0 + P are even: which taps reach which of its elements,
// and from which of the dz values it holds, is then known at compile time, and no element tests
// a tap. Row r of the block takes the taps ky = r + K - 1 - 2 d from dz row a - R + d (a = (iy0 +
// P) / 2, R = (K - 1) / 2, d = 0 .. R); column 2 m + (kx % 2) takes tap kx from dz column b - R +
// m + R - kx / 2. So the block reads R + 1 dz rows of TW / 2 + R vectors (on NVIDIA 2 x 3 for a
// 3x3 filter, 3 x 4 for 5x5), straight from global memory, each loaded, gated and widened once
// and multiplied into every element it reaches: K^2 multiply-adds a 2 x 2 quad of elements, the
// minimum (the shared-memory tiled kernel it replaces staged dz and read each element's taps
// from shared memory, with an index division per element). The block's elements leave as
// 16-byte stores (8-byte for 16-bit 5x5 filters, whose vectors are 4 channels so that the
// window's widened rows fit the registers, as the forward's at stride 1: register_vector).
//
// Blocks of grad_input rows start at row -(P % 2) (and columns at -(P % 2)): a block may hang
// one element over the map's first row or column, which it neither reads nor stores. The block's
// weights stage in shared memory as the forward's (stage_register_weights, not rotated), the
// threads walk blocks as the forward's walk strips (nhwc_register_tile: a strip is a block,
// strip_cols its columns of blocks, image_row divides by its rows of blocks).

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/words.hpp"
#include "nhwc_register.hpp"

namespace dsconv {
namespace detail {

// Channels per thread: a 16-byte vector, but 8 bytes of a 16-bit type for 5x5 filters (the
// forward's register_vector at stride 1), and grad_input columns per block: 4, 2 on AMD (hipcc
// spilled the 5x5 blocks of 4 on gfx906, as it did the forward's strips: register_strip).
template <class T, int K>
DSCONV_HOST_DEVICE constexpr int transposed_vector() {
  return register_vector<T, K, 1>();
}
inline constexpr int transposed_columns =
#if defined(DSCONV_PLATFORM_HIP)
    2;
#else
    4;
#endif

// dz rows whose loads a thread issues together: all of them on NVIDIA, one at a time on AMD
// (hipcc hoisted a 5x5 window's loads and spilled the gated float blocks on gfx906, as the
// forward's register_rows_unrolled).
template <int K>
DSCONV_HOST_DEVICE constexpr int transposed_rows_unrolled() {
#if defined(DSCONV_PLATFORM_HIP)
  return 1;
#else
  return (K + 1) / 2;
#endif
}

// The blocks of grad_input of height h, width w and padding (ph, pw) along each dimension:
// rows of 2 and columns of transposed_columns from -(pad % 2).
DSCONV_HOST_DEVICE constexpr int transposed_block_rows(int h, int ph) { return (h + ph % 2 + 1) / 2; }
DSCONV_HOST_DEVICE constexpr int transposed_block_cols(int w, int pw) {
  return (w + pw % 2 + transposed_columns - 1) / transposed_columns;
}

}  // namespace detail

namespace kernels {

template <class T, int K, detail::gate_kind G = detail::gate_kind::none>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::register_block_threads, detail::register_resident_blocks)
DSCONV_WAVES_PER_SIMD(detail::register_resident_blocks)
void depthwise_nhwc_register_transposed(detail::depthwise_shape s, detail::nhwc_register_tile t,
                                        const T* __restrict__ grad_output, detail::register_gate gate,
                                        const T* __restrict__ weight, T* __restrict__ grad_input) {
  namespace pf = platform;
  constexpr bool Gated = G != detail::gate_kind::none;
  constexpr int V = detail::transposed_vector<T, K>(), TW = detail::transposed_columns;
  constexpr int E = detail::elements_per_word<T>(), W = V / E;  // a vector's elements per word, its words
  constexpr int R = (K - 1) / 2, DW = TW / 2 + R;                  // dz rows before the block's; its dz columns
  using words = pf::vec<unsigned, W>;
  const detail::register_thread me =
      detail::stage_block_weights<K, V>(t, weight, static_cast<const T*>(nullptr), /*rotate=*/false);
  const float* w_s = me.taps;
  const int lane = me.lane;

  if (lane >= t.pixel_lanes) return;
  const int c = me.channel;
  const int block_rows = detail::transposed_block_rows(s.h, s.pad_h);
  const index_t row_pitch = static_cast<index_t>(s.w) * s.c, dz_pitch = static_cast<index_t>(s.out_w) * s.c;
  const unsigned first = me.strip_block * t.strips_per_thread * t.pixel_lanes + lane;
  for (int i = 0; i < t.strips_per_thread; ++i) {
    const unsigned block = first + static_cast<unsigned>(i * t.pixel_lanes);
    if (block >= static_cast<unsigned>(t.strips)) break;
    const unsigned row = t.strip_row.div(block), n = t.image_row.div(row);
    const int iy0 = 2 * static_cast<int>(row - n * block_rows) - s.pad_h % 2;
    const int ix0 = TW * static_cast<int>(block - row * t.strip_cols) - s.pad_w % 2;
    const int oy0 = (iy0 + s.pad_h) / 2 - R, ox0 = (ix0 + s.pad_w) / 2 - R;  // the dz window's first row, column
    const bool columns_inside = ox0 >= 0 && ox0 + DW <= s.out_w;
    const index_t image_at = static_cast<index_t>(n) * s.out_h * dz_pitch + c;
    const T* image = grad_output + image_at;
    const T* saved = Gated ? static_cast<const T*>(gate.saved) + image_at : nullptr;

    float acc[2][TW][V] = {};
    // The window's dz rows: loaded (gated as they arrive), widened, multiplied into the block's
    // rows they reach. Inside (a compile-time fact): every row and column of the window lies
    // inside dz, so its loads go without checks or a branch between rows.
    const auto rows = [&](auto inside) {
      // (declared here: clang takes an unroll count from the lambda's own scope only)
      [[maybe_unused]] constexpr int row_unroll = detail::transposed_rows_unrolled<K>();  // (host: no pragma)
      DSCONV_UNROLL_BY(row_unroll)
      for (int d = 0; d <= R; ++d) {
        const int oy = oy0 + d;
        words raw[DW];
        const auto load = [&](int j, index_t at) {
          raw[j] = detail::load_words<W>(image + at, t.aligned);
          if constexpr (Gated) raw[j] = detail::gated_words<T, G, W>(raw[j], detail::load_words<W>(saved + at, t.aligned), gate);
        };
        const bool row_inside = oy >= 0 && oy < s.out_h;
        if (decltype(inside)::value || (row_inside && columns_inside)) {
          const index_t at = static_cast<index_t>(oy) * dz_pitch + static_cast<index_t>(ox0) * s.c;
          DSCONV_UNROLL
          for (int j = 0; j < DW; ++j) load(j, at + j * s.c);
        } else {
          DSCONV_UNROLL
          for (int j = 0; j < DW; ++j) {
            const int ox = ox0 + j;
            raw[j] = words{};  // zeros: outside dz
            if (row_inside && ox >= 0 && ox < s.out_w) load(j, static_cast<index_t>(oy) * dz_pitch + static_cast<index_t>(ox) * s.c);
          }
        }
        float in[DW][V];
        DSCONV_UNROLL
        for (int j = 0; j < DW; ++j) detail::widen_words<T>(raw[j], in[j]);
        DSCONV_UNROLL
        for (int r = 0; r < 2; ++r) {
          const int ky = r + K - 1 - 2 * d;
          if (ky >= K) continue;  // (row 1 takes nothing from the window's first row)
          DSCONV_UNROLL
          for (int kx = 0; kx < K; ++kx) {
            float w[V];
            DSCONV_UNROLL
            for (int e = 0; e < V; ++e) w[e] = pf::shared_load(w_s + (ky * K + kx) * V + e);
            DSCONV_UNROLL
            for (int m = 0; m < TW / 2; ++m)
              DSCONV_UNROLL
              for (int e = 0; e < V; ++e) acc[r][2 * m + kx % 2][e] += in[R + m - kx / 2][e] * w[e];
          }
        }
      }
    };
    if (columns_inside && oy0 >= 0 && oy0 + R < s.out_h)
      rows(std::true_type{});
    else
      rows(std::false_type{});

    // The block's rows: inside the map (every block but those on its edges) without tests.
    const bool block_inside = iy0 >= 0 && iy0 + 2 <= s.h && ix0 >= 0 && ix0 + TW <= s.w;
    const int count = block_inside ? TW : s.w - ix0, from = ix0 < 0 ? -ix0 : 0;
    DSCONV_UNROLL
    for (int r = 0; r < 2; ++r) {
      const int iy = iy0 + r;
      if (!block_inside && (iy < 0 || iy >= s.h)) continue;
      T* const out = grad_input + (static_cast<index_t>(n) * s.h + iy) * row_pitch + static_cast<index_t>(ix0) * s.c + c;
      detail::store_strip<activation::none>(acc[r], out, static_cast<T*>(nullptr), false, s.c, count, t.aligned, from);
    }
  }
}

}  // namespace kernels
}  // namespace dsconv
