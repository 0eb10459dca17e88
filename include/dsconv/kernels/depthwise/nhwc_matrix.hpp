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
// for 5x5 (sm_90), above the 4 a memory-bound kernel can afford; this one counts 2.7 and 3.7
// at stride 1, 1.2 and 1.7 at stride 2 (scripts/sass_budget.py, through relu6, tiles of 16 x 16
// inside the map); the gated data gradient 2.1 and 2.8 (scale), where nhwc_register's counts 5.3
// and 14.6 (both tensors' copies in flight across the products, the gate applied as they land).
//
// A block (4 warps) takes 256 output pixel vectors a tile, TS x TS pixels of 256 / TS^2 channel
// vectors (blockIdx.x), and a run of consecutive tiles (blockIdx.y): it stages a tile's input,
// ((TS - 1) S + K)^2 pixel vectors a channel vector, in shared memory (zeros where padding),
// then each warp makes 4 products of 16 output pixels, interleaved: with TS = 16 (one vector)
// warp w makes rows w, w + 4, w + 8 and w + 12; with TS = 8 (four vectors, where those tiles
// are the better used, as on 7x7 maps) warp w makes its own vector's 8 rows, two a product.
// The tiles' inputs go through a ring of 2 to 4 stages (matrix_stages), copied asynchronously
// (cp.async) stages - 1 tiles ahead of the one being multiplied, so that a multiprocessor has
// 48 KiB or more of loads in flight: copies hold no registers while in flight, where the next
// tile's input loaded into registers had allowed one tile ahead, 24 KiB at stride 1. The ring
// is unrolled, each stage's addresses constants. Gated, each thread gates its
// own copies in place once they land, before the tile's one barrier.
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
#include <utility>

#include "../../config.hpp"
#include "../../platform/async_copy.hpp"
#include "../../platform/platform.hpp"
#include "../../platform/recomputed.hpp"
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
// four for 3x3 filters at stride 1 (98-128), three for the others (126-168: 5x5 at stride 2
// holds its 13 tap pairs' B fragments); on Turing two for 5x5 at stride 2 (156-432 bytes
// spilled at three) and for half 3x3 at stride 2 on 8 x 8 tiles (whose 16-bit product is two: 8
// bytes spilled at three). The tiles' copies in flight hold no registers (matrix_stages).
template <int K, int S, gate_kind G, int TS>
DSCONV_HOST_DEVICE constexpr int matrix_resident_blocks() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  constexpr bool turing = true;
#else
  constexpr bool turing = false;
#endif
  return K == 3 && S == 1                       ? 4
         : turing && S == 2 && (K == 5 || TS == 8) ? 2
                                                 : 3;
}

// Input pixels a tile of TS x TS outputs stages along each side.
DSCONV_HOST_DEVICE constexpr int matrix_input_side(int k, int s, int ts) { return (ts - 1) * s + k; }

// Where column `col` of a staged row sits, in 16-byte slots: at stride 1 in place; at stride 2
// the even columns from slot 0 and the odd ones from slot matrix_odd_slots (4 mod 8). A
// fragment load's 8 rows are columns 2m + kx of one row, which in place lie 32 bytes apart,
// two to each group of four banks (the host platform counted reads twice as long); split by
// parity they are 8 consecutive slots, one a group; and a phase of 8 consecutive columns'
// stores fills slots j .. j + 3 and odd + j .. odd + 3 + j, distinct groups too.
// 5x5 filters on 8 x 8 tiles start the odd ones at 10, right after the evens (2 mod 8: two of a
// phase's eight copies share a group), so that two stages fit a block's 48 KiB (at 12: 51 KiB).
DSCONV_HOST_DEVICE constexpr int matrix_odd_slots(int k, int ts) { return ts == 16 ? 20 : k == 5 ? 10 : 12; }
template <int K, int S, int TS>
DSCONV_HOST_DEVICE constexpr int matrix_slot(int col) {
  return S == 1 ? col : (col % 2) * matrix_odd_slots(K, TS) + col / 2;
}
// Slots a staged row takes.
DSCONV_HOST_DEVICE constexpr int matrix_row_slots(int k, int s, int ts) {
  return s == 1 ? matrix_input_side(k, s, ts) : matrix_odd_slots(k, ts) + matrix_input_side(k, s, ts) / 2;
}
static_assert((matrix_input_side(3, 2, 16) + 1) / 2 <= matrix_odd_slots(3, 16) &&
                  (matrix_input_side(5, 2, 16) + 1) / 2 <= matrix_odd_slots(5, 16) &&
                  (matrix_input_side(3, 2, 8) + 1) / 2 <= matrix_odd_slots(3, 8) &&
                  (matrix_input_side(5, 2, 8) + 1) / 2 <= matrix_odd_slots(5, 8),
              "the even columns fit before the odd ones");

// A stage: one tile's staged input (and, gated, the saved tensor's vectors after it), 16-byte
// slots.
DSCONV_HOST_DEVICE constexpr int matrix_stage_slots(int k, int s, bool gated, int ts) {
  return (gated ? 2 : 1) * matrix_tile_vectors(ts) * matrix_input_side(k, s, ts) * matrix_row_slots(k, s, ts);
}
// Stages in the ring: the fewest (at least 2) whose copies in flight, all stages but the one
// being multiplied, reach 48 KiB a multiprocessor at the kernel's resident blocks (NVIDIA's CUB
// sizes its streaming kernels so on an H200), as long as one more fits a block's 48 KiB of static
// shared memory, and at most 4. (Each stage is a copy of the walk's code: the ring is unrolled.)
// Turing, whose copies are loads and stores (no overlap within a thread), takes 2; even so its
// 64 KiB a multiprocessor binds the stride-2 and gated forms at 1 to 3 resident blocks where
// the one staged tile and registers had allowed 2 to 4 (kernel_resources.md's occupancy,
// sm_75): a one-stage form the planner picks there is to come.
template <int K, int S, gate_kind G, int TS>
DSCONV_HOST_DEVICE constexpr int matrix_stages() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  constexpr bool copies_block = true;  // (Turing: copies are loads and stores, more stages only take shared memory)
#else
  constexpr bool copies_block = false;
#endif
  constexpr bool gated = G != gate_kind::none;
  constexpr int threads = static_cast<int>(matrix_block_threads), side = matrix_input_side(K, S, TS);
  constexpr int copied = (gated ? 2 : 1) * 16 * ((matrix_tile_vectors(TS) * side * side + threads - 1) / threads);
  constexpr int stage_in_flight = copied * threads * matrix_resident_blocks<K, S, G, TS>();
  constexpr int stage_bytes = matrix_stage_slots(K, S, gated, TS) * 16;
  int n = 2;
  while (!copies_block && n < 4 && (n - 1) * stage_in_flight < 48 * 1024 && (n + 1) * stage_bytes <= 48 * 1024) ++n;
  return n;
}

// f(std::integral_constant<int, k>{}) for k = 0 .. N - 1, in order.
template <int N, class F, int... k>
DSCONV_DEVICE DSCONV_FORCEINLINE void for_each_constant(F&& f, std::integer_sequence<int, k...>) {
  (f(std::integral_constant<int, k>{}), ...);
}
template <int N, class F>
DSCONV_DEVICE DSCONV_FORCEINLINE void for_each_constant(F&& f) {
  for_each_constant<N>(f, std::make_integer_sequence<int, N>{});
}

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
  constexpr int taps = K * K, pairs = (taps + 1) / 2;
  using vector = pf::vec<unsigned, 4>;
  constexpr bool Gated = G != detail::gate_kind::none;
  constexpr int tensor_slots = VB * vector_slots, stage_slots = detail::matrix_stage_slots(K, S, Gated, TS);
  constexpr int stages = detail::matrix_stages<K, S, G, TS>();
  static_assert(stages * stage_slots * 16 <= 48 * 1024, "two stages fit a block's static shared memory");
  DSCONV_SHARED_ARRAY(vector, staged, [stages * stage_slots]);

  const int tid = static_cast<int>(pf::thread_idx().x), warp = tid / 32, lane = tid % 32;
  // Whether this thread stages a j-th pixel vector: a test for the last j only, where the
  // threads outnumber the vectors left (a test of each had cost an instruction a copy).
  const auto stages_pixel = [&](int j) { return (j + 1) * threads <= VB * pixels || tid + j * threads < VB * pixels; };
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
    slot_of[j] = v * vector_slots + row_of[j] * row_slots + detail::matrix_slot<K, S, TS>(col_of[j]);
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
  [[maybe_unused]] const T* const saved = static_cast<const T*>(gate.saved);
  const int first_tile = static_cast<int>(pf::block_idx().y) * t.tiles_per_block;
  const int left = t.tiles - first_tile, count = left < t.tiles_per_block ? left : t.tiles_per_block;
  const place first_at{first_tile / (t.tiles_x * t.tiles_y), first_tile / t.tiles_x % t.tiles_y, first_tile % t.tiles_x};

  // Lane l addresses row l % 8 + 8 (l / 8 % 2) (the pixel m) of matrix l / 16 (the pair's
  // first or second tap); its outputs are pixels g and g + 8 of a row, channels 2q and 2q + 1.
  const int m = lane % 8 + 8 * (lane / 8 % 2), second = lane / 16;
  // The slot of the row lane l addresses for each tap pair in its warp's first product (in a
  // stage); product k's is k product_step slots further (its rows product_row(k), below): one
  // register a pair and an immediate offset a product and stage (the addresses worked out from
  // the tap had taken 25 registers and two chains of products where four were meant).
  constexpr int rows = detail::matrix_products;
  constexpr int product_step = (VB == 1 ? detail::matrix_warps : 2) * S * row_slots;
  int fragment_at[pairs];
  DSCONV_UNROLL
  for (int pair = 0; pair < pairs; ++pair) {
    int tap = 2 * pair + second;
    tap = tap < taps ? tap : 0;  // (B's zeros: any staged, finite pixel)
    const int ky = tap / K, kx = tap % K, r = (VB == 1 ? warp : 0) + m / TS;
    fragment_at[pair] = own * vector_slots + (r * S + ky) * row_slots + detail::matrix_slot<K, S, TS>(m % TS * S + kx);
  }
  const int out_row = s.out_w * s.c;
  // (an image's elements: offsets inside one are 32-bit, the planner keeps them under 2^31)
  const index_t image_in = static_cast<index_t>(s.h) * s.w * s.c, image_out = static_cast<index_t>(s.out_h) * out_row;
  // The walk with the activation and whether it keeps the activation's input (`keep`:
  // pre_activation given) compile-time constants, one switch for the walk (a switch a tile,
  // before its stores, added 20 instructions to its 156-326).
  const auto walk = [&](auto act, auto keep) {
    constexpr activation A = decltype(act)::value;
    constexpr bool vectors = true;  // (16-byte accesses: the dispatch checked the alignment)
    // Tile `at`'s input copied into stage `stage` (zeros outside the map, reading nothing
    // there), asynchronously (cp.async: sm_80 and newer; loads and stores on sm_75), one commit
    // group a tile: without tests where the whole tile lies inside the map. Gated: the saved
    // vectors at the same places into the stage's second half.
    const auto copy = [&](const place& at, int stage) {
      const int iy0 = at.ty * TS * S - s.pad_h, ix0 = at.tx * TS * S - s.pad_w;
      const index_t first = static_cast<index_t>(at.n) * image_in + ((iy0 * s.w + ix0) * s.c + c0);
      const bool inside = iy0 >= 0 && iy0 + side <= s.h && ix0 >= 0 && ix0 + side <= s.w;
      // (the tile's first pixel, outside the map where it is padding: only offset into it
      // inside; held, so that each copy's source is two instructions from it, where the 64-bit
      // sum with the pointer had taken four and the pointer's reload: sm_90, 5x5 on 16 x 16
      // tiles, 274 instructions a tile against 284, before the ring kept its places)
      const T* const tile_in = pf::held_global(input + first);
      [[maybe_unused]] const T* const tile_saved = Gated ? pf::held_global(saved + first) : nullptr;
      vector* const to = staged + stage * stage_slots;
      const auto copies = [&](auto whole_tile) {
        DSCONV_UNROLL
        for (int j = 0; j < per_thread; ++j) {
          if (!stages_pixel(j)) continue;
          const int iy = iy0 + row_of[j], ix = ix0 + col_of[j];
          const bool in_map = decltype(whole_tile)::value || (iy >= 0 && iy < s.h && ix >= 0 && ix < s.w);
          // (a valid address where nothing is read: the tensor's first element)
          pf::async_copy_16_whole(reinterpret_cast<T*>(to + slot_of[j]), in_map ? tile_in + offset[j] : input, in_map);
          if constexpr (Gated)
            pf::async_copy_16_whole(reinterpret_cast<T*>(to + tensor_slots + slot_of[j]),
                                    in_map ? tile_saved + offset[j] : saved, in_map);
        }
      };
      if (inside)
        copies(std::true_type{});
      else
        copies(std::false_type{});
    };
    // Stages 0 .. stages - 2 go in flight first, a commit group each (empty past the block's
    // tiles, so that the count of groups stays that of tiles); then each tile waits for its own,
    // copies the one stages - 1 ahead into the stage the previous tile used and multiplies.
    // (copy_at: the next tile to copy; copied[stage]: the tile a stage holds, set as it is
    // copied, where a second cursor stepped along had cost 16 instructions a tile)
    place copy_at = first_at, copied[stages]{};
    DSCONV_UNROLL
    for (int k = 0; k < stages - 1; ++k) {
      if (k < count) copy(copy_at, k), copied[k] = copy_at, copy_at.step(t);
      pf::async_copy_commit();
    }
    // Tile i in stage `stage`, a compile-time constant: the ring unrolled, so that the fragment
    // loads' addresses are a stage's constants from registers set once (with the stage a
    // run-time value they were worked out again each tile: sm_90, 5x5 on 16 x 16 tiles, 308
    // instructions a tile).
    const auto tile = [&](int i, auto stage_constant) {
      constexpr int stage = decltype(stage_constant)::value;
      const place at = copied[stage];
      pf::async_copy_wait_pending<stages - 2>();  // (this thread's copies of tile i have landed)
      vector* const own_stage = staged + stage * stage_slots;
      if constexpr (Gated) {
        // this thread's own copies gated in place (no other thread reads them before the barrier)
        DSCONV_UNROLL
        for (int j = 0; j < per_thread; ++j)
          if (stages_pixel(j))
            pf::shared_store(own_stage + slot_of[j],
                             detail::gated_words<T, G, 4>(pf::shared_load(own_stage + slot_of[j]),
                                                          pf::shared_load(own_stage + tensor_slots + slot_of[j]), gate));
      }
      pf::sync_threads();  // (every thread's copies of tile i are in; tile i - 1's fragment loads are done)
      if (i + stages - 1 < count)
        copy(copy_at, (stage + stages - 1) % stages), copied[(stage + stages - 1) % stages] = copy_at, copy_at.step(t);
      pf::async_copy_commit();

      // This lane's first output of the tile (pixel g of row 0, channels 2q and 2q + 1 of the
      // warp's vector).
      const int oy0 = at.ty * TS, ox0 = at.tx * TS;
      const index_t lane_out =
          static_cast<index_t>(at.n) * image_out + ((oy0 * s.out_w + ox0 + g) * s.c + cw + 2 * q);
      T* const out = pf::held_global(output + lane_out);
      [[maybe_unused]] T* const pre = pre_activation + lane_out;
      // The warp's products k = 0 .. 3, their 16 pixels m: (row, column) of the tile, row
      // product_row(k) + m / TS, column m % TS (TS = 16: rows w, w + 4, w + 8, w + 12; TS = 8:
      // rows 2k and 2k + 1), interleaved (four independent chains of accumulation: one chain
      // made ptxas wait between products).
      const auto product_row = [&](int k) { return VB == 1 ? warp + detail::matrix_warps * k : 2 * k; };
      float acc[rows][4];
      DSCONV_UNROLL
      for (int k = 0; k < rows; ++k) acc[k][0] = acc[k][2] = bias_of[0], acc[k][1] = acc[k][3] = bias_of[1];
      DSCONV_UNROLL
      for (int pair = 0; pair < pairs; ++pair)
        DSCONV_UNROLL
        for (int k = 0; k < rows; ++k) {
          unsigned a[4];
          pf::ldmatrix_x4<false>(a, own_stage + fragment_at[pair] + k * product_step);
          pf::mma_16x8x16<T>(acc[k], a, b[pair]);
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
    };
    for (int i = 0; i < count; i += stages)
      detail::for_each_constant<stages>([&](auto stage) {
        if (i + decltype(stage)::value < count) tile(i + decltype(stage)::value, stage);
      });
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
