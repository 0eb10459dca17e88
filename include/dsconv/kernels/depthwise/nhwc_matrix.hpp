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
// and the conversions of each 16-bit output, 5.1 instructions per DRAM byte for 3x3 and 11.7
// for 5x5 (sm_90), above the 4 a memory-bound kernel can afford; this one counts 2.4 and 3.6
// at stride 1, 1.5 and 2.0 at stride 2 (scripts/sass_budget.py, through relu6, tiles of 16 x 16
// inside the map); the gated data gradient 1.8 and 3.0, where nhwc_register's counts 5.3 and 14.6
// (both tensors' loads in flight across the products, the gate applied as the vectors are staged).
//
// A block (4 warps) takes 256 output pixel vectors a tile, TS x TS pixels of 256 / TS^2 channel
// vectors (blockIdx.x), and a run of consecutive tiles (blockIdx.y): it stages a tile's input,
// ((TS - 1) S + K)^2 pixel vectors a channel vector, in shared memory (zeros where padding),
// then each warp makes 4 products of 16 output pixels, interleaved: with TS = 16 (one vector)
// warp w makes rows w, w + 4, w + 8 and w + 12; with TS = 8 (four vectors, where those tiles
// are the better used, as on 7x7 maps; 2.7 and 3.9 at stride 1 on whole tiles) warp w makes
// its own vector's 8 rows, two a product. The next tile's input is loaded into registers while
// this tile is multiplied, so that each thread has its loads in flight across the products.
// The filter's B fragments sit in registers for the block's run; the bias starts the
// accumulators. Lane (g, q) ends with outputs (pixel g and g + 8 of a product, channels 2q and
// 2q + 1): a word each, so a warp's stores of a product are 16 pixels x 16 bytes, whole lines.
// The walk is compiled once per activation and pre-activation store, and tiles inside the map
// take their loads and stores without tests: branches and 64-bit index arithmetic had taken
// most of the instructions.
// A non-finite input reaches, through B's zeros, every channel of its vector at the outputs
// whose window holds it (NaN where the reference has a finite value in the other channels).
// Requires multiplier 1, channels in whole 16-byte vectors (TS = 8: in whole blocks of four),
// a specialised filter (register_filter), 16-bit elements, an image of fewer than 2^31
// elements (dispatch/depthwise_matrix_plan.hpp) and tensors aligned to 16 bytes (elsewhere the
// dispatch runs nhwc_register: a walk for unaligned accesses had doubled the kernel's code).

#include <type_traits>

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/activation.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/words.hpp"

namespace dsconv {
namespace detail {

inline constexpr unsigned matrix_block_threads = 128;
inline constexpr int matrix_warps = static_cast<int>(matrix_block_threads) / 32;  // each makes 4 products a tap pair
// A block's tile: TS x TS output pixels of 256 / TS^2 channel vectors, 4 products of 16 pixels
// a warp. TS = 16 (one vector: warp w makes rows w, w + 4, w + 8 and w + 12) on large maps;
// TS = 8 (four vectors, warp w makes its vector's whole tile, two rows a product) where those
// tiles are the better used: small maps, which a 16 x 16 tile would leave mostly empty (a
// fifth of it used at 7x7, where 8 x 8 uses 0.77).
DSCONV_HOST_DEVICE constexpr int matrix_tile_vectors(int ts) { return 256 / (ts * ts); }
inline constexpr int matrix_products = 4;  // a warp's products a tap pair (16 output pixels each)
// Blocks resident per multiprocessor the kernel is compiled for (registers a thread, sm_90):
// four for 3x3 filters at stride 1 (124-128), three for 3x3 at stride 2 (168; at 128 it
// spilled) and 5x5 at stride 1 (156-166), two for 5x5 at stride 2 (241: its 13 tap pairs' B
// fragments and ten staged vectors a thread) and for the gated 5x5 on 8 x 8 tiles (five staged
// vectors a thread of each tensor: 168 spilled), and on Turing for half 3x3 at stride 2 on 8 x 8
// tiles (whose 16-bit product is two: 8 bytes spilled at three). Bytes in flight a
// multiprocessor: 24 KiB at stride 1 (gated: 36-48), 40-54 at stride 2.
template <int K, int S, gate_kind G, int TS>
DSCONV_HOST_DEVICE constexpr int matrix_resident_blocks() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  constexpr bool turing = true;
#else
  constexpr bool turing = false;
#endif
  return K == 3 && S == 1                                                          ? 4
         : K == 5 && S == 1 && G != gate_kind::none && TS == 8                     ? 2
         : turing && K == 3 && S == 2 && TS == 8                                   ? 2
         : K == 3 || S == 1                                                        ? 3
                                                                                   : 2;
}

// Input pixels a tile of TS x TS outputs stages along each side.
DSCONV_HOST_DEVICE constexpr int matrix_input_side(int k, int s, int ts) { return (ts - 1) * s + k; }

// Where column `col` of a staged row sits, in 16-byte slots: at stride 1 in place; at stride 2
// the even columns from slot 0 and the odd ones from slot matrix_odd_slots (4 mod 8). A
// fragment load's 8 rows are columns 2m + kx of one row, which in place lie 32 bytes apart,
// two to each group of four banks (the host platform counted reads twice as long); split by
// parity they are 8 consecutive slots, one a group; and a phase of 8 consecutive columns'
// stores fills slots j .. j + 3 and odd + j .. odd + 3 + j, distinct groups too.
DSCONV_HOST_DEVICE constexpr int matrix_odd_slots(int ts) { return ts == 16 ? 20 : 12; }
template <int S, int TS>
DSCONV_HOST_DEVICE constexpr int matrix_slot(int col) {
  return S == 1 ? col : (col % 2) * matrix_odd_slots(TS) + col / 2;
}
// Slots a staged row takes.
DSCONV_HOST_DEVICE constexpr int matrix_row_slots(int k, int s, int ts) {
  return s == 1 ? matrix_input_side(k, s, ts) : matrix_odd_slots(ts) + matrix_input_side(k, s, ts) / 2;
}
static_assert((matrix_input_side(5, 2, 16) + 1) / 2 <= matrix_odd_slots(16) &&
                  (matrix_input_side(5, 2, 8) + 1) / 2 <= matrix_odd_slots(8),
              "the even columns fit before the odd ones");

struct nhwc_matrix_tile {
  int tiles_x, tiles_y;   // tiles (TS x TS outputs) along out_w and out_h
  int tiles;              // n * tiles_y * tiles_x
  int tiles_per_block;    // consecutive tiles a block takes (row-major: columns, rows, images)
  int first_channel;      // the launch's first block's first channel (its channel groups from there)
};

}  // namespace detail

namespace kernels {

// G != none: the data gradient of stride 1 (input: grad_output, the filter rotated), each
// vector multiplied by the activation's derivative from the saved tensor at the same place as
// it is staged (kernels/common/gradient_gate.hpp).
template <class T, int K, int S, detail::gate_kind G = detail::gate_kind::none, int TS = 16>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::matrix_block_threads, (detail::matrix_resident_blocks<K, S, G, TS>()))
void depthwise_nhwc_matrix(detail::depthwise_shape s, detail::nhwc_matrix_tile t, const T* __restrict__ input,
                           detail::register_gate gate, const T* __restrict__ weight, const T* __restrict__ bias, T* __restrict__ output,
                           T* __restrict__ pre_activation) {
  static_assert(sizeof(T) == 2, "16-bit elements: 8 channels a 16-byte vector");
  namespace pf = platform;
  static_assert(TS == 16 || TS == 8, "tiles of 16 x 16 or 8 x 8 outputs");
  constexpr int VB = detail::matrix_tile_vectors(TS);  // the block's channel vectors
  constexpr int side = detail::matrix_input_side(K, S, TS), pixels = side * side;
  constexpr int row_slots = detail::matrix_row_slots(K, S, TS), vector_slots = side * row_slots;
  constexpr int threads = static_cast<int>(detail::matrix_block_threads);
  constexpr int per_thread = (VB * pixels + threads - 1) / threads;  // pixel vectors a thread stages
  constexpr bool whole_threads = per_thread * threads == VB * pixels;
  constexpr int taps = K * K, pairs = (taps + 1) / 2;
  using vector = pf::vec<unsigned, 4>;
  DSCONV_SHARED_ARRAY(vector, staged, [VB * vector_slots]);

  const int tid = static_cast<int>(pf::thread_idx().x), warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, q = lane % 4;
  const int c0 = t.first_channel + static_cast<int>(pf::block_idx().x) * VB * 8;
  // The warp's channel vector: the block's one (TS = 16), or its own of the four (TS = 8).
  const int own = VB == 1 ? 0 : warp, cw = c0 + own * 8;

  // B of each tap pair: lane (g, q) holds B[2q, 2q + 1][g] and B[8 + 2q, 9 + 2q][g], the
  // weight w[cw + g][tap] in the half whose channel is g, zeros elsewhere.
  unsigned b[pairs][2];
  {
    const T* w = weight + static_cast<index_t>(cw + g) * taps;
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
  for (int e = 0; e < 2; ++e) bias_of[e] = bias ? to_float(pf::load(bias + cw + 2 * q + e)) : 0.f;

  // This thread's pixel vectors of a tile's input (vector after vector): the same places in
  // every tile, so their offsets from the tile's first input pixel, and their slots, are
  // worked out once.
  int offset[per_thread], row_of[per_thread], col_of[per_thread], slot_of[per_thread];
  DSCONV_UNROLL
  for (int j = 0; j < per_thread; ++j) {
    const int staged_at = tid + j * threads, v = VB == 1 ? 0 : staged_at / pixels, pixel = staged_at - v * pixels;
    row_of[j] = pixel / side, col_of[j] = pixel - pixel / side * side;
    offset[j] = (row_of[j] * s.w + col_of[j]) * s.c + v * 8;
    slot_of[j] = v * vector_slots + row_of[j] * row_slots + detail::matrix_slot<S, TS>(col_of[j]);
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
  // (Gated: the saved vectors at the same places, gated into next's as they are staged, so
  // that both tensors' loads are in flight across the products)
  [[maybe_unused]] vector kept[G != detail::gate_kind::none ? per_thread : 1];
  // Lane l addresses row l % 8 + 8 (l / 8 % 2) (the pixel m) of matrix l / 16 (the pair's
  // first or second tap); its outputs are pixels g and g + 8 of a row, channels 2q and 2q + 1.
  const int m = lane % 8 + 8 * (lane / 8 % 2), second = lane / 16;
  const int out_row = s.out_w * s.c;
  // (an image's elements: offsets inside one are 32-bit, the planner keeps them under 2^31)
  const index_t image_in = static_cast<index_t>(s.h) * s.w * s.c, image_out = static_cast<index_t>(s.out_h) * out_row;
  // The walk with the activation and whether it keeps the activation's input (`keep`:
  // pre_activation given) compile-time constants, one switch for the walk (a switch a tile,
  // before its stores, added 20 instructions to its 156-326).
  const auto walk = [&](auto act, auto keep) {
    constexpr activation A = decltype(act)::value;
    constexpr bool vectors = true;  // (16-byte accesses: the dispatch checked the alignment)
    // Tile `at`'s input into `next` (zeros outside the map): without tests where the whole
    // tile lies inside the map.
    const auto fetch = [&](const place& at) {
      const int iy0 = at.ty * TS * S - s.pad_h, ix0 = at.tx * TS * S - s.pad_w;
      const index_t first = static_cast<index_t>(at.n) * image_in + ((iy0 * s.w + ix0) * s.c + c0);
      const bool inside = iy0 >= 0 && iy0 + side <= s.h && ix0 >= 0 && ix0 + side <= s.w;
      const auto load = [&](int j) {
        next[j] = detail::load_words<4>(input + first + offset[j], vectors);
        if constexpr (G != detail::gate_kind::none)
          kept[j] = detail::load_words<4>(static_cast<const T*>(gate.saved) + first + offset[j], vectors);
      };
      DSCONV_UNROLL
      for (int j = 0; j < per_thread; ++j) {
        const bool staged_pixel = whole_threads || tid + j * threads < VB * pixels;
        const int iy = iy0 + row_of[j], ix = ix0 + col_of[j];
        if (inside) {  // (no zeros to set first)
          if (staged_pixel) load(j);
        } else {
          next[j] = vector{};
          if constexpr (G != detail::gate_kind::none) kept[j] = vector{};
          if (staged_pixel && iy >= 0 && iy < s.h && ix >= 0 && ix < s.w) load(j);
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
        if (whole_threads || tid + j * threads < VB * pixels) {
          if constexpr (G != detail::gate_kind::none) next[j] = detail::gated_words<T, G, 4>(next[j], kept[j], gate);
          pf::shared_store(staged + slot_of[j], next[j]);
        }
      pf::sync_threads();
      if (i + 1 < count) fetch(next_at);

      // This lane's first output of the tile (pixel g of row 0, channels 2q and 2q + 1 of the
      // warp's vector).
      const int oy0 = at.ty * TS, ox0 = at.tx * TS;
      const index_t lane_out =
          static_cast<index_t>(at.n) * image_out + ((oy0 * s.out_w + ox0 + g) * s.c + cw + 2 * q);
      T* const out = output + lane_out;
      [[maybe_unused]] T* const pre = pre_activation + lane_out;
      // The warp's products k = 0 .. 3, their 16 pixels m: (row, column) of the tile, row
      // product_row(k) + m / TS, column m % TS (TS = 16: rows w, w + 4, w + 8, w + 12; TS = 8:
      // rows 2k and 2k + 1), interleaved (four independent chains of accumulation: one chain
      // made ptxas wait between products).
      const auto product_row = [&](int k) { return VB == 1 ? warp + detail::matrix_warps * k : 2 * k; };
      constexpr int rows = detail::matrix_products;
      float acc[rows][4];
      DSCONV_UNROLL
      for (int k = 0; k < rows; ++k) acc[k][0] = acc[k][2] = bias_of[0], acc[k][1] = acc[k][3] = bias_of[1];
      const vector* const own_staged = staged + own * vector_slots;
      DSCONV_UNROLL
      for (int pair = 0; pair < pairs; ++pair) {
        int tap = 2 * pair + second;
        tap = tap < taps ? tap : 0;  // (B's zeros: any staged, finite pixel)
        const int ky = tap / K, kx = tap % K;
        DSCONV_UNROLL
        for (int k = 0; k < rows; ++k) {
          const int r = product_row(k) + m / TS;
          unsigned a[4];
          pf::ldmatrix_x4<false>(a, own_staged + (r * S + ky) * row_slots + detail::matrix_slot<S, TS>(m % TS * S + kx));
          pf::mma_16x8x16<T>(acc[k], a, b[pair]);
        }
      }
      // The lane's pixels g and g + 8 of each product: (row, column) below the lane's first
      // output: on one row 8 columns apart (TS = 16), or one row apart (TS = 8).
      const int second_row = 8 / TS, second_col = 8 % TS;
      const bool left = ox0 + g < s.out_w, right = ox0 + g + second_col < s.out_w;
      // The rows' stores: without tests where the tile lies inside the map (a branch per
      // store cost three instructions of each seven).
      const auto store_rows = [&](auto whole) {
        DSCONV_UNROLL
        for (int k = 0; k < rows; ++k) {
          const int r = product_row(k);
          if (!decltype(whole)::value && oy0 + r >= s.out_h) break;  // (warp-uniform; the rows ascend)
          const int row_at = r * out_row;
          DSCONV_UNROLL
          for (int h = 0; h < 2; ++h) {
            if (!decltype(whole)::value && !(h == 0 ? left : right)) continue;
            if (!decltype(whole)::value && second_row && h == 1 && oy0 + r + 1 >= s.out_h) continue;
            const int at_pixel = row_at + h * (second_row * out_row + second_col * s.c);
            if constexpr (decltype(keep)::value)
              detail::store_words<1>(pre + at_pixel,
                                     pf::vec<unsigned, 1>{detail::saved_word<A, T>(acc[k] + 2 * h, s.save_derivative)}, vectors);
            detail::store_words<1>(out + at_pixel, pf::vec<unsigned, 1>{detail::activated_word<A, T>(acc[k] + 2 * h)},
                                   vectors);
          }
        }
      };
      if (oy0 + TS <= s.out_h && ox0 + TS <= s.out_w)
        store_rows(std::true_type{});
      else
        store_rows(std::false_type{});
    }
  };
  // (A gated form, the data gradient's, has no activation and keeps nothing: its walk is
  // compiled once, where every activation's had made it 40-66 thousand PTX lines and a quarter
  // of the depthwise kernels' compile time.)
  detail::with_output_activation<G>(s.act, [&](auto act) {
    if (G == detail::gate_kind::none && pre_activation)
      walk(act, std::integral_constant<bool, G == detail::gate_kind::none>{});
    else
      walk(act, std::false_type{});
  });
}

}  // namespace kernels
}  // namespace dsconv
