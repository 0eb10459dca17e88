#pragma once
// Depthwise NHWC forward of 16-bit types on NVIDIA's tensor cores (the variant nhwc_matrix),
// and on the transposed problem the data gradient of stride 1 (gated as nhwc_register's is).
// A depthwise filter cannot be a GEMM's shared operand (each channel has its own), but it can
// be a block-diagonal one: with K = (tap pair p, channel c) and N = channel c',
//   out[m][c'] = sum_{tap} in[m + tap][c'] w[c'][tap] = sum_k A[m][k] B[k][c'],
//   A[m][(p, c)] = in[m + tap_p][c],   B[(p, c)][c'] = w[c'][tap_p] if c == c' else 0,
// one m16n8k16 product per pair of taps for 16 output pixels (m) x 8 channels (one 16-byte
// vector). A's rows are whole 16-byte pixel vectors of the NHWC tile as staged, so ldmatrix
// loads a fragment with no transposition: 5 products and 5 fragment loads for a 3x3 filter,
// 13 and 13 for 5x5, per 16 x 8 outputs. The tensor cores do 8 times the useful work, which
// costs nothing here: the SIMT kernel (nhwc_register.hpp) spends 9 or 25 fp32 multiply-adds
// and the conversions of each 16-bit output, 5.4 instructions per DRAM byte for 3x3 and 12.4
// for 5x5 (sm_90), above the 4 a memory-bound kernel can afford; this one counts 2.5 and 3.6
// at stride 1, 1.5 and 1.9 at stride 2 (scripts/sass_budget.py, through relu6); the gated data
// gradient 2.4 and 3.3, where nhwc_register's counts 5.4 and 14.9.
//
// A block (4 warps) takes one channel vector (blockIdx.x) and a run of consecutive tiles of
// 16 x 16 output pixels (blockIdx.y): it stages a tile's input, (15 S + K) x (15 S + K) pixel
// vectors, in shared memory (zeros where padding), then warp w makes output rows w, w + 4,
// w + 8 and w + 12 of the tile, their products interleaved. The next tile's input is loaded
// into registers while this tile is multiplied, so that each thread has its loads in flight
// across the products. The filter's B fragments sit in registers for the block's run; the bias
// starts the accumulators. Lane (g, q) ends with outputs (pixel g and g + 8, channels 2q and
// 2q + 1): a word each, so a warp's stores of a pixel row are 16 pixels x 16 bytes, whole lines.
// The walk is compiled once per activation, alignment and pre-activation store, and tiles
// inside the map take their loads and stores without tests: branches and 64-bit index
// arithmetic had taken most of the instructions.
// A non-finite input reaches, through B's zeros, every channel of its vector at the outputs
// whose window holds it (NaN where the reference has a finite value in the other channels).
// Requires multiplier 1, channels in whole 16-byte vectors, a specialised filter
// (register_filter), 16-bit elements and an image of fewer than 2^31 elements
// (dispatch/depthwise_matrix_plan.hpp).

#include <type_traits>

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/activation.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/words.hpp"

namespace dsconv {
namespace detail {

inline constexpr int matrix_tile = 16;  // output pixels a tile has along each side
inline constexpr unsigned matrix_block_threads = 128;
inline constexpr int matrix_warps = static_cast<int>(matrix_block_threads) / 32;  // each makes 4 of a tile's rows
// Blocks resident per multiprocessor the kernel is compiled for (registers a thread, sm_90):
// four for 3x3 filters at stride 1 (124), three for 3x3 at stride 2 (168; at 128 it spilled)
// and 5x5 at stride 1 (156), two for 5x5 at stride 2 (241: its 13 tap pairs' B fragments and
// ten staged vectors a thread). Bytes in flight a multiprocessor: 24 KiB at stride 1, 40-54 at
// stride 2.
template <int K, int S>
DSCONV_HOST_DEVICE constexpr int matrix_resident_blocks() {
  return K == 3 && S == 1 ? 4 : K == 3 || S == 1 ? 3 : 2;
}

// Input pixels a tile stages along each side.
DSCONV_HOST_DEVICE constexpr int matrix_input_side(int k, int s) { return (matrix_tile - 1) * s + k; }

// Where column `col` of a staged row sits, in 16-byte slots: at stride 1 in place; at stride 2
// the even columns from slot 0 and the odd ones from slot 20 (4 mod 8). A fragment load's 8
// rows are columns 2m + kx of one row, which in place lie 32 bytes apart, two to each group of
// four banks (the host platform counted reads twice as long); split by parity they are 8
// consecutive slots, one a group; and a phase of 8 consecutive columns' stores fills slots
// j .. j + 3 and 20 + j .. 23 + j, distinct groups too.
inline constexpr int matrix_odd_slots = 20;
template <int S>
DSCONV_HOST_DEVICE constexpr int matrix_slot(int col) {
  return S == 1 ? col : (col % 2) * matrix_odd_slots + col / 2;
}
// Slots a staged row takes.
DSCONV_HOST_DEVICE constexpr int matrix_row_slots(int k, int s) {
  return s == 1 ? matrix_input_side(k, s) : matrix_odd_slots + matrix_input_side(k, s) / 2;
}
static_assert((matrix_input_side(5, 2) + 1) / 2 <= matrix_odd_slots, "the even columns fit before the odd ones");

struct nhwc_matrix_tile {
  int tiles_x, tiles_y;   // tiles along out_w and out_h
  int tiles;              // n * tiles_y * tiles_x
  int tiles_per_block;    // consecutive tiles a block takes (row-major: columns, rows, images)
  bool aligned;           // input and outputs aligned to 16 bytes
};

}  // namespace detail

namespace kernels {

// G != none: the data gradient of stride 1 (input: grad_output, the filter rotated), each
// vector multiplied by the activation's derivative from the saved tensor at the same place as
// it arrives (kernels/common/gradient_gate.hpp).
template <class T, int K, int S, detail::gate_kind G = detail::gate_kind::none>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::matrix_block_threads, (detail::matrix_resident_blocks<K, S>()))
void depthwise_nhwc_matrix(detail::depthwise_shape s, detail::nhwc_matrix_tile t, const T* __restrict__ input,
                           detail::register_gate gate, const T* __restrict__ weight, const T* __restrict__ bias, T* __restrict__ output,
                           T* __restrict__ pre_activation) {
  static_assert(sizeof(T) == 2, "16-bit elements: 8 channels a 16-byte vector");
  namespace pf = platform;
  constexpr int side = detail::matrix_input_side(K, S), pixels = side * side;
  constexpr int row_slots = detail::matrix_row_slots(K, S);
  constexpr int threads = static_cast<int>(detail::matrix_block_threads);
  constexpr int per_thread = (pixels + threads - 1) / threads;  // pixel vectors a thread stages
  constexpr int taps = K * K, pairs = (taps + 1) / 2;
  using vector = pf::vec<unsigned, 4>;
  DSCONV_SHARED_ARRAY(vector, staged, [side * row_slots]);

  const int tid = static_cast<int>(pf::thread_idx().x), warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, q = lane % 4;
  const int c0 = static_cast<int>(pf::block_idx().x) * 8;

  // B of each tap pair: lane (g, q) holds B[2q, 2q + 1][g] and B[8 + 2q, 9 + 2q][g], the
  // weight w[c0 + g][tap] in the half whose channel is g, zeros elsewhere.
  unsigned b[pairs][2];
  {
    const T* w = weight + static_cast<index_t>(c0 + g) * taps;
    DSCONV_UNROLL
    for (int i = 0; i < pairs; ++i)
      DSCONV_UNROLL
      for (int p = 0; p < 2; ++p) {
        const int tap = 2 * i + p;
        const unsigned bits = tap < taps ? detail::element_bits(pf::load(w + (s.rotate_filter ? taps - 1 - tap : tap))) : 0u;
        b[i][p] = (g == 2 * q ? bits : 0u) | (g == 2 * q + 1 ? bits << 16 : 0u);
      }
  }
  float bias_of[2];
  DSCONV_UNROLL
  for (int e = 0; e < 2; ++e) bias_of[e] = bias ? to_float(pf::load(bias + c0 + 2 * q + e)) : 0.f;

  // This thread's pixel vectors of a tile's input: the same places in every tile, so their
  // offsets from the tile's first input pixel, and their slots, are worked out once.
  int offset[per_thread], row_of[per_thread], col_of[per_thread], slot_of[per_thread];
  DSCONV_UNROLL
  for (int j = 0; j < per_thread; ++j) {
    const int pixel = tid + j * threads;
    row_of[j] = pixel / side, col_of[j] = pixel - pixel / side * side;
    offset[j] = (row_of[j] * s.w + col_of[j]) * s.c;
    slot_of[j] = row_of[j] * row_slots + detail::matrix_slot<S>(col_of[j]);
  }

  // The block's tiles, consecutive: (image, tile row, tile column) of the first divided once,
  // then stepped.
  struct place {
    int n, ty, tx;
    DSCONV_DEVICE DSCONV_FORCEINLINE void step(const detail::nhwc_matrix_tile& t) {
      if (++tx == t.tiles_x) {
        tx = 0;
        if (++ty == t.tiles_y) ty = 0, ++n;
      }
    }
  };
  const int first_tile = static_cast<int>(pf::block_idx().y) * t.tiles_per_block;
  const int left = t.tiles - first_tile, count = left < t.tiles_per_block ? left : t.tiles_per_block;
  place next_at{first_tile / (t.tiles_x * t.tiles_y), first_tile / t.tiles_x % t.tiles_y, first_tile % t.tiles_x};

  vector next[per_thread];
  // Lane l addresses row l % 8 + 8 (l / 8 % 2) (the pixel m) of matrix l / 16 (the pair's
  // first or second tap); its outputs are pixels g and g + 8 of a row, channels 2q and 2q + 1.
  const int m = lane % 8 + 8 * (lane / 8 % 2), second = lane / 16;
  const int out_row = s.out_w * s.c, eight = 8 * s.c;
  // (an image's elements: offsets inside one are 32-bit, the planner keeps them under 2^31)
  const index_t image_in = static_cast<index_t>(s.h) * s.w * s.c, image_out = static_cast<index_t>(s.out_h) * out_row;
  // The walk with the activation, the alignment and whether it keeps the activation's input
  // (`keep`: pre_activation given) compile-time constants, one switch for the walk (with the
  // alignment tested at each access, nvcc issued both forms' loads and stores and selected).
  const auto walk = [&](auto act, auto aligned, auto keep) {
    constexpr activation A = decltype(act)::value;
    constexpr bool vectors = decltype(aligned)::value;
    // Tile `at`'s input into `next` (zeros outside the map): without tests where the whole
    // tile lies inside the map.
    const auto fetch = [&](const place& at) {
      const int iy0 = at.ty * detail::matrix_tile * S - s.pad_h, ix0 = at.tx * detail::matrix_tile * S - s.pad_w;
      const index_t first = static_cast<index_t>(at.n) * image_in + ((iy0 * s.w + ix0) * s.c + c0);
      const bool inside = iy0 >= 0 && iy0 + side <= s.h && ix0 >= 0 && ix0 + side <= s.w;
      // (Gated: the saved vector at the same place, gated into the input's as it arrives)
      const auto load = [&](int j) {
        vector v = detail::load_words<4>(input + first + offset[j], vectors);
        if constexpr (G != detail::gate_kind::none)
          v = detail::gated_words<T, G, 4>(
              v, detail::load_words<4>(static_cast<const T*>(gate.saved) + first + offset[j], vectors), gate);
        return v;
      };
      DSCONV_UNROLL
      for (int j = 0; j < per_thread; ++j) {
        const bool staged_pixel = per_thread * threads == pixels || tid + j * threads < pixels;
        const int iy = iy0 + row_of[j], ix = ix0 + col_of[j];
        if (inside) {  // (no zeros to set first)
          if (staged_pixel) next[j] = load(j);
        } else {
          next[j] = vector{};
          if (staged_pixel && iy >= 0 && iy < s.h && ix >= 0 && ix < s.w) next[j] = load(j);
        }
      }
    };
    if (count > 0) fetch(next_at);
    for (int i = 0; i < count; ++i) {
      const place at = next_at;
      next_at.step(t);
      pf::sync_threads();  // (the previous tile's fragment loads are done)
      DSCONV_UNROLL
      for (int j = 0; j < per_thread; ++j)
        if (per_thread * threads == pixels || tid + j * threads < pixels)
          pf::shared_store(staged + slot_of[j], next[j]);
      pf::sync_threads();
      if (i + 1 < count) fetch(next_at);

      // This lane's first output of the tile (pixel g of row 0, channels 2q and 2q + 1), and
      // whether its two pixels g and g + 8 lie inside the map.
      const int oy0 = at.ty * detail::matrix_tile, ox0 = at.tx * detail::matrix_tile;
      const index_t lane_out =
          static_cast<index_t>(at.n) * image_out + ((oy0 * s.out_w + ox0 + g) * s.c + c0 + 2 * q);
      T* const out = output + lane_out;
      [[maybe_unused]] T* const pre = pre_activation + lane_out;
      const bool left = ox0 + g < s.out_w, right = ox0 + g + 8 < s.out_w;
      // Warp w's output rows w, w + 4, w + 8 and w + 12 of the tile, their products interleaved
      // (four independent chains of accumulation: one chain made ptxas wait between products).
      constexpr int rows = detail::matrix_tile / detail::matrix_warps;
      float acc[rows][4];
      DSCONV_UNROLL
      for (int k = 0; k < rows; ++k) acc[k][0] = acc[k][2] = bias_of[0], acc[k][1] = acc[k][3] = bias_of[1];
      DSCONV_UNROLL
      for (int pair = 0; pair < pairs; ++pair) {
        int tap = 2 * pair + second;
        tap = tap < taps ? tap : 0;  // (B's zeros: any staged, finite pixel)
        const int ky = tap / K, kx = tap % K;
        DSCONV_UNROLL
        for (int k = 0; k < rows; ++k) {
          const int r = warp + detail::matrix_warps * k;
          unsigned a[4];
          pf::ldmatrix_x4<false>(a, staged + (r * S + ky) * row_slots + detail::matrix_slot<S>(m * S + kx));
          pf::mma_16x8x16<T>(acc[k], a, b[pair]);
        }
      }
      // The rows' stores: without tests where the tile lies inside the map (a branch per
      // store cost three instructions of each seven).
      const auto store_rows = [&](auto whole) {
        DSCONV_UNROLL
        for (int k = 0; k < rows; ++k) {
          const int r = warp + detail::matrix_warps * k;
          if (!decltype(whole)::value && oy0 + r >= s.out_h) break;  // (warp-uniform; the rows ascend)
          const int row_at = r * out_row;
          DSCONV_UNROLL
          for (int h = 0; h < 2; ++h) {
            if (!decltype(whole)::value && !(h == 0 ? left : right)) continue;
            const int at_pixel = row_at + h * eight;
            if constexpr (decltype(keep)::value)
              detail::store_words<1>(pre + at_pixel, pf::vec<unsigned, 1>{detail::narrow<T>(acc[k] + 2 * h)}, vectors);
            detail::store_words<1>(out + at_pixel, pf::vec<unsigned, 1>{detail::activated_word<A, T>(acc[k] + 2 * h)},
                                   vectors);
          }
        }
      };
      if (oy0 + detail::matrix_tile <= s.out_h && ox0 + detail::matrix_tile <= s.out_w)
        store_rows(std::true_type{});
      else
        store_rows(std::false_type{});
    }
  };
  detail::with_activation(s.act, [&](auto act) {
    const auto with_pre = [&](auto aligned) {
      if (pre_activation)
        walk(act, aligned, std::true_type{});
      else
        walk(act, aligned, std::false_type{});
    };
    if (t.aligned)
      with_pre(std::true_type{});
    else
      with_pre(std::false_type{});
  });
}

}  // namespace kernels
}  // namespace dsconv
