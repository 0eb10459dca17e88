#pragma once
// Depthwise NCHW data gradient of stride 2, register-blocked (the variant nchw_register's data
// gradient at stride 2): nhwc_register_transposed.hpp's blocks along a plane's rows. A thread
// takes RB = 4 rows (8: nchw_transposed_rows) x TW columns (16 bytes of a row) of one plane of
// grad_input, the rows placed so that iy0 + P is even (from row -(P % 2)) and the columns from a
// multiple of TW (the stores' alignment), the columns' parity against P a compile-time constant
// F of the launch: which taps reach which of its elements, and from which of the dz values it
// holds, is then known at compile time. Row r takes the taps ky = r + K - 1 - 2 d from dz row
// a - R + d (a = (iy0 + P) / 2, R = (K - 1) / 2, d = 0 .. RB / 2 - 1 + R, where 0 <= ky < K);
// column q the taps kx of q + F's parity from dz column ox0 +
// (q + F - kx) / 2 + R - F. So the block reads RB / 2 + R dz rows of TW / 2 + R elements (3 x 5
// for a 16-bit 3x3 filter, 4 x 4 for float 5x5), each loaded, gated (gradient_gate.hpp) and widened
// once and multiplied into every element it reaches: K^2 multiply-adds a 2 x 2 quad, the
// minimum. dz's elements load one by one (a window starts at any column), or, for 16-bit 5x5
// filters where dz's rows are of an even width, as the aligned 32-bit words that hold the window
// (the kernel's LoadBytes 4; its first element's parity is then a constant); the block's rows
// leave as 16-byte stores where grad_input's rows and pointer allow (the plan's chunk_bytes:
// 16, else one element). The thread keeps its channel's K x K taps in registers for the
// bands_per_thread blocks it walks down the plane (nchw_register_tile, as the forward's), and,
// for 16-bit 5x5 filters through a gate (nchw_transposed_rolls), the R dz rows each block
// shares with the next: after the walk's first, a block loads and gates RB / 2 dz rows.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/words.hpp"
#include "nchw_register.hpp"

namespace dsconv {
namespace detail {

// Whether a block's dz windows may load as aligned 32-bit words, two 16-bit elements each, rather
// than element by element (the kernel's LoadBytes 4, which the plan chooses where dz's and the
// saved tensor's pointers are 4-byte aligned, their rows of an even width and the padding K / 2):
// for 16-bit 5x5 filters, whose window rows of 6 elements then take 4 registers where they took
// 6, which lets a block of 8 rows (below) keep its loads in flight within 128 registers (with
// element loads, bfloat16 had spilled 44 bytes through the scale gate and half 144 through the
// clamp on sm_90). Not on AMD, where the gated blocks of 8 rows spilled 46-57 bytes on gfx906.
DSCONV_HOST_DEVICE constexpr bool nchw_transposed_words(int element_bytes, int k) {
#if defined(DSCONV_PLATFORM_HIP)
  return (void)element_bytes, (void)k, false;
#else
  return element_bytes == 2 && k == 5;
#endif
}

// grad_input rows a thread's block takes, half of each parity: 4 (each dz row then serves up to
// 3 of them for a 3x3 filter, 5 for 5x5; 2 rows had left 20 bytes of loads in flight a thread
// for 16-bit 3x3 filters); 8 where the windows load as words (16-bit 5x5), whose blocks of 4 had
// left 48 bytes a thread in flight at 128 registers and 512 threads a multiprocessor (24 of CUB's
// 48 KiB): a block of 8 loads 4 new dz rows of each tensor where blocks keep the 2 they share.
DSCONV_HOST_DEVICE constexpr int nchw_transposed_rows(bool word_windows) { return word_windows ? 8 : 4; }

// Whether a thread's consecutive blocks keep the (K - 1) / 2 dz rows they share (kernel below):
// for 16-bit 5x5 filters through a gate, where each dz row's loads, gate and widening had run
// twice (sm_90: silu 6.2 instructions per DRAM byte, 4.6 kept; bytes in flight a thread 84 and
// 48). Elsewhere a block loads all its rows: the kept rows leave a block half the loads in
// flight (16-bit 5x5 ungated 24 bytes a thread, 12 KiB a multiprocessor, for 4.3 -> 4.0
// instructions a byte; float 5x5 silu 128 -> 64 bytes for 3.6 -> 2.7, under 4 either way).
DSCONV_HOST_DEVICE constexpr bool nchw_transposed_rolls(int element_bytes, int k, bool gated) {
  return element_bytes == 2 && k == 5 && gated;
}

// Blocks of nchw_register_block_threads a multiprocessor holds (the kernel's launch bounds, the
// plan's waves): on NVIDIA 4 for 16-bit 3x3 filters, whose 68-72 registers had let 3 reside on
// sm_90 (768 threads x a gated block's 60 bytes of loads: 45 of CUB's 48 KiB); at 64 registers
// 4 do (60 KiB; no spills on sm_75, sm_80, sm_90). Elsewhere, and on AMD (where 4 waves a SIMD
// spilled the ungated half kernel on gfx906), the forward's 2.
DSCONV_HOST_DEVICE constexpr int nchw_transposed_resident_blocks(int element_bytes, int k) {
#if defined(DSCONV_PLATFORM_HIP)
  return (void)element_bytes, (void)k, nchw_register_resident_blocks;
#else
  return element_bytes == 2 && k == 3 ? 4 : nchw_register_resident_blocks;
#endif
}

}  // namespace detail

namespace kernels {

// LoadBytes: the bytes of a dz load, sizeof(T) (elements) or 4 (words of two 16-bit elements,
// where nchw_transposed_words).
template <class T, int K, detail::gate_kind G, int LoadBytes>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::nchw_register_block_threads,
                                   (detail::nchw_transposed_resident_blocks(static_cast<int>(sizeof(T)), K)))
DSCONV_WAVES_PER_SIMD((detail::nchw_transposed_resident_blocks(static_cast<int>(sizeof(T)), K)))
void depthwise_nchw_register_transposed(detail::depthwise_shape s, detail::nchw_register_tile t,
                                        const T* __restrict__ grad_output, detail::register_gate gate,
                                        const T* __restrict__ weight, T* __restrict__ grad_input) {
  namespace pf = platform;
  constexpr bool Gated = G != detail::gate_kind::none, Words = LoadBytes != static_cast<int>(sizeof(T));
  static_assert(!Words || (LoadBytes == 4 && detail::nchw_transposed_words(sizeof(T), K)), "words of two 16-bit elements");
  constexpr int TW = 16 / static_cast<int>(sizeof(T)), R = (K - 1) / 2;
  constexpr int RB = detail::nchw_transposed_rows(Words), DR = RB / 2 + R;  // the block's rows, its window's
  constexpr int DW = TW / 2 + R;  // the dz window's columns
  constexpr int KR = detail::nchw_transposed_rolls(sizeof(T), K, Gated) ? R : 0;  // the dz rows a block keeps
  static_assert(RB / 2 >= KR, "a block's kept rows are read before the next block's are kept");

  const unsigned item = pf::block_idx().x * pf::block_dim().x + pf::thread_idx().x;
  if (item >= static_cast<unsigned>(t.items)) return;
  const unsigned rest = t.strip_col.div(item), plane = t.band_group.div(rest);
  const int ix0 = static_cast<int>(item - rest * t.strip_cols) * TW;
  const int first_band = static_cast<int>(rest - plane * t.band_groups) * t.bands_per_thread;
  const int c = static_cast<int>(plane - t.plane_channel.div(plane) * s.c);

  float w[K * K];  // the channel's taps, for every block the thread takes
  DSCONV_UNROLL
  for (int tap = 0; tap < K * K; ++tap) w[tap] = to_float(pf::load(weight + static_cast<index_t>(c) * (K * K) + tap));

  const index_t dz_plane = static_cast<index_t>(plane) * s.out_h * s.out_w;
  const T* const dz = grad_output + dz_plane;
  const T* const saved = Gated ? static_cast<const T*>(gate.saved) + dz_plane : nullptr;
  T* const plane_out = grad_input + static_cast<index_t>(plane) * s.h * s.w;

  // The blocks with the columns' parity F and stores of CE elements (compile-time constants).
  const auto blocks = [&](auto parity, auto chunk) {
    constexpr int F = decltype(parity)::value, CE = decltype(chunk)::value;
    const int ox0 = (ix0 + s.pad_w - F) / 2 - R + F;  // the dz window's first column
    const bool columns_inside = ox0 >= 0 && ox0 + DW <= s.out_w;
    // A block's first grad_input row (from row -(P % 2)) and its dz window's first row.
    const auto first_row = [&](int band) { return RB * band - s.pad_h % 2; };
    const auto window_row = [&](int band) { return (first_row(band) + s.pad_h) / 2 - R; };
    // dz row oy of the window's columns into `in`, gated and widened (zeros outside dz); inside:
    // the row and the columns lie inside dz (no tests).
    const auto load_row = [&](int oy, float* in, auto inside) {
      const bool row_inside = oy >= 0 && oy < s.out_h;
      const auto present = [&](int ox) { return decltype(inside)::value || (row_inside && ox >= 0 && ox < s.out_w); };
      if constexpr (Words) {
        // The words from column ox0 - A, A the parity of ox0 (ix0 / 2 a multiple of 4, the
        // padding K / 2 of parity F), widened; the window's elements from the A-th. The row's
        // width is even, so that a word lies wholly inside the row or outside it.
        constexpr int A = (((K / 2 - F) / 2 - R + F) % 2 + 2) % 2, NW = (A + DW + 1) / 2;
        float wide[2 * NW];
        [[maybe_unused]] float wide_saved[Gated ? 2 * NW : 1];
        DSCONV_UNROLL
        for (int k = 0; k < NW; ++k) {
          const int ox = ox0 - A + 2 * k;
          const index_t at = static_cast<index_t>(oy) * s.out_w + ox;
          detail::widen<T>(present(ox) ? detail::load_words<1>(dz + at, true)[0] : 0u, wide + 2 * k);
          if constexpr (Gated)
            detail::widen<T>(present(ox) ? detail::load_words<1>(saved + at, true)[0] : 0u, wide_saved + 2 * k);
        }
        DSCONV_UNROLL
        for (int j = 0; j < DW; ++j) in[j] = wide[A + j];
        if constexpr (Gated)
          DSCONV_UNROLL
          for (int j = 0; j < DW; ++j) in[j] = detail::gated_value<G>(in[j], wide_saved[A + j], gate);
      } else {
        DSCONV_UNROLL
        for (int j = 0; j < DW; ++j) {
          const int ox = ox0 + j;
          const index_t at = static_cast<index_t>(oy) * s.out_w + ox;
          in[j] = present(ox) ? to_float(pf::load(dz + at)) : 0.f;
          if constexpr (Gated) in[j] = detail::gated_value<G>(in[j], present(ox) ? to_float(pf::load(saved + at)) : 0.f, gate);
        }
      }
    };
    // The KR dz rows a block shares with the next (RB / 2 rows below it), where blocks keep
    // them (nchw_transposed_rolls): the walk's first block's loaded here, each later block's
    // kept from the one before, so that a walk loads, gates and widens each dz row once (a block
    // that keeps none loads all RB / 2 + R: for 5x5 filters each row twice).
    [[maybe_unused]] float kept[KR > 0 ? KR : 1][DW];
    DSCONV_UNROLL
    for (int d = 0; d < KR; ++d) load_row(window_row(first_band) + d, kept[d], std::false_type{});
    for (int i = 0; i < t.bands_per_thread; ++i) {
      const int band = first_band + i;
      if (band >= t.bands) break;
      const int iy0 = first_row(band), oy0 = window_row(band);
      float acc[RB][TW] = {};
      // The window's dz rows, each multiplied into the block's rows it reaches: the first KR the
      // block before's (kept), the others loaded, the last KR kept for the next block. Inside (a
      // compile-time fact): the rows loaded lie inside dz, their loads without tests.
      const auto rows = [&](auto inside) {
        DSCONV_UNROLL
        for (int d = 0; d < DR; ++d) {
          float in[DW];
          if (d < KR) {
            DSCONV_UNROLL
            for (int j = 0; j < DW; ++j) in[j] = kept[d][j];
          } else {
            load_row(oy0 + d, in, inside);
          }
          DSCONV_UNROLL
          for (int r = 0; r < RB; ++r) {
            const int ky = r + K - 1 - 2 * d;
            if (ky < 0 || ky >= K) continue;  // (the rows this dz row does not reach)
            DSCONV_UNROLL
            for (int kx = 0; kx < K; ++kx)
              DSCONV_UNROLL
              for (int q = (kx + F) % 2; q < TW; q += 2) acc[r][q] += in[(q + F - kx) / 2 + R - F] * w[ky * K + kx];
          }
          if (d >= DR - KR) {  // (after the rows d < KR read theirs: DR - KR >= RB / 2 >= KR)
            DSCONV_UNROLL
            for (int j = 0; j < DW; ++j) kept[d - (DR - KR)][j] = in[j];
          }
        }
      };
      if (columns_inside && oy0 + KR >= 0 && oy0 + DR <= s.out_h)
        rows(std::true_type{});
      else
        rows(std::false_type{});
      DSCONV_UNROLL
      for (int r = 0; r < RB; ++r) {
        const int iy = iy0 + r;
        if (iy < 0 || iy >= s.h) continue;
        detail::store_chunks<activation::none, false, T, TW, CE>(acc[r], plane_out + static_cast<index_t>(iy) * s.w + ix0, false,
                                                                s.w - ix0);
      }
    }
  };
  using even = std::integral_constant<int, 0>;
  using odd = std::integral_constant<int, 1>;
  using vector = std::integral_constant<int, TW>;
  using element = std::integral_constant<int, 1>;
  if constexpr (Words) {  // (the plan's padding K / 2: the columns' parity K / 2 % 2)
    using padding_parity = std::integral_constant<int, K / 2 % 2>;
    t.chunk_bytes == 16 ? blocks(padding_parity{}, vector{}) : blocks(padding_parity{}, element{});
  } else if (t.chunk_bytes == 16) {
    s.pad_w % 2 ? blocks(odd{}, vector{}) : blocks(even{}, vector{});
  } else {
    s.pad_w % 2 ? blocks(odd{}, element{}) : blocks(even{}, element{});
  }
}

}  // namespace kernels
}  // namespace dsconv
