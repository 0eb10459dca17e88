#pragma once
// Depthwise NCHW forward of 16-bit types on NVIDIA's tensor cores (the variant nchw_matrix),
// and on the transposed problem the data gradient of stride 1 (gated as nchw_register's is).
// In NCHW a plane's rows are contiguous, so one filter row is a Toeplitz matrix along them:
// for 8 consecutive outputs of an output row and 16 consecutive input columns of the input
// row that filter row ky reads,
//   out[oy][ox0 + n] += sum_k in[S oy + ky - P][x0 + k] B[k][n],   B[k][n] = w[ky][k - S n + x0 - S ox0 + P]
// (zero where that tap does not exist), which is an m16n8k16 product with A's 16 rows the input
// rows under 16 output rows, straight as staged (ldmatrix, no transposition), and B a band of
// the filter row that depends only on where the 16 columns start relative to the outputs, not
// on the tile: it sits in registers for all of a warp's tiles of one channel. A warp's tile is
// 16 x 16 outputs of one plane, two products (n-tiles) a filter row: at stride 1 each n-tile's
// 8 outputs read 7 + K columns, inside one 16-column window that starts 4 columns before them
// (ldmatrix needs 16-byte aligned rows, which staging the row 4 columns to the right of the
// 16-byte boundaries gives), so a filter row is 2 fragment loads and 2 products with one B for
// both; at stride 2 an n-tile reads 14 + K columns, two windows 16 columns apart, and the two
// n-tiles share the middle one: 3 loads and 4 products with two B bands. Per 256 outputs that is
// 20 and 12 warp-instructions for 5x5 and 3x3 filters at stride 1, where nchw_register's SIMT
// band spends 25 and 9 fp32 multiply-adds an output. At stride 1 a warp tile is the same 16 x 16
// outputs of two images' planes of the channel (one B for both), so that the tile's fixed costs
// (addresses, edge tests, barriers) are paid once for twice the bytes. Counted (sm_90 SASS,
// scripts/sass_budget.py, through relu6, tiles inside the map, 16-byte granules): 4.0, 2.7, 3.9
// and 3.0 instructions per DRAM byte for 3x3 and 5x5 filters at stride 1 and 2, the gated data
// gradient 3.4 and 3.6, where nchw_register issues 3.8, 2.3, 9.5 and 4.4 (gated 3.5 and 8.4).
//
// Each warp stages its own tile's input, 15 S + K rows of the 16 S columns under its outputs and
// the halo words either side (loaded whole, the columns outside the filter's reach cleared, so
// that a non-finite input reaches exactly the outputs whose window holds it), in its own part
// of shared memory; the columns the windows read beyond those (multiplied by B's zeros) are
// zeros written once. Rows at stride 2 are stored by parity (even rows, then odd ones), so that
// a fragment's 8 rows, input rows 2m + ky, lie one row pitch apart (an odd number of 16-byte
// slots: no bank conflicts). The main columns move in granules of 16, 8 or 4 bytes (the plan's:
// the widest dividing the rows' bytes and the tensors' alignment; the halo words need rows of an
// even number of elements). The forward copies its tiles asynchronously (cp.async) into a ring
// of stages, two tiles ahead of the one multiplied (60-70 KiB in flight a multiprocessor, where
// the next tile's loads into registers had kept 30-35); the data gradient loads the next tile's
// items of both tensors into registers before this tile's products, so that they are in flight
// across them (60 KiB), and gates them as it stages them. A block is 4 warps, each walking its
// own run of consecutive tiles (columns, rows, images, then channels: a warp's run keeps its
// channel, and its B bands, across images); the barriers are the block's, a warp without a tile
// left passes them. Lane (g, q) ends with outputs (row g and g + 8, columns 2q and 2q + 1 of
// each n-tile), which leave as words, the bias having started the accumulators.
// Requires multiplier 1, a specialised filter (register_filter) with padding K / 2, 16-bit
// elements, even input and output widths, 4-byte aligned tensors and planes of fewer than 2^31
// elements (dispatch/depthwise_nchw_matrix_plan.hpp).

#include <type_traits>

#include "../../config.hpp"
#include "../../platform/async_copy.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/activation.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/words.hpp"

namespace dsconv {
namespace detail {

inline constexpr unsigned nchw_matrix_block_threads = 128;
inline constexpr int nchw_matrix_warps = static_cast<int>(nchw_matrix_block_threads) / 32;
inline constexpr int nchw_matrix_side = 16;  // a warp tile's outputs along each side
// Columns a fragment's 16-column window starts before the first output's input column (the
// staged row's main columns then start 8 bytes past a 16-byte slot; ldmatrix needs aligned rows).
inline constexpr int nchw_matrix_window_lead = 4;

// A warp tile's staging, for a K x K filter of stride S: rows, the columns a window starts
// before the outputs' first input column (staged column c sits at element c + window_lead of
// its row), windows (16 columns each; stride 1: one an n-tile, 8 apart; stride 2: two an n-tile,
// 16 apart, the middle one shared), the halo words a row has (left at column -2, right at 16 S),
// and the row pitch in elements (an odd number of 16-byte slots).
template <int K, int S>
struct nchw_matrix_geometry {
  static constexpr int P = K / 2;
  static constexpr int rows = (nchw_matrix_side - 1) * S + K;
  static constexpr int window_lead = nchw_matrix_window_lead;
  static constexpr int windows = S == 1 ? 2 : 3;
  static constexpr int window_step = 8 * S;                    // columns between windows
  static constexpr int bands = S;                              // B bands a filter row: windows an n-tile
  static constexpr int main_columns = nchw_matrix_side * S;    // the columns under the outputs
  static constexpr bool right_halo = (nchw_matrix_side - 1) * S + K - P > main_columns;
  static constexpr int halo_words = 1 + (right_halo ? 1 : 0);
  static constexpr int pitch = S == 1 ? 24 : 56;
  static constexpr int row_pairs = (rows + 1) / 2;             // stride 2: the even rows before the odd ones
  static constexpr int staged_rows = S == 1 ? rows : 2 * row_pairs;
  static constexpr int image_elements = staged_rows * pitch;   // an image's staged tile
  // Images a warp tile takes, at the same place of the same channel's planes (one B for both):
  // two at stride 1, whose tiles move few bytes for the tile's fixed costs (its addresses, edge
  // tests, barriers), one at stride 2 (four times the input a tile; its registers).
  static constexpr int images = S == 1 ? 2 : 1;
  static constexpr int elements = images * image_elements;    // a warp's staged tile
  // The row of shared memory that input row r of the tile (0: the first one staged) takes.
  DSCONV_HOST_DEVICE static constexpr int row_at(int r) { return S == 1 ? r : (r % 2) * row_pairs + r / 2; }
  // Bits of the halo words the filter reads: the left word holds columns -2 and -1 (a 3x3 filter
  // reads -1 only), the right one columns 16 S and 16 S + 1 (read: the first, and the second
  // for a 5x5 filter at stride 1).
  static constexpr unsigned left_mask = P >= 2 ? 0xffffffffu : 0xffff0000u;
  static constexpr unsigned right_mask = S == 1 && P >= 2 ? 0xffffffffu : 0x0000ffffu;
  static_assert(window_lead + main_columns + 2 * halo_words <= pitch + 2 && (pitch / 8) % 2 == 1, "a row fits its pitch");
  static_assert((windows - 1) * window_step + 16 <= pitch, "the windows (from column -window_lead) fit the pitch");
};

// Blocks resident per multiprocessor the kernel is compiled for: three (170 registers a
// thread; at four, 128, ptxas spilled the 3x3 stride-1 forms on sm_90 and the 5x5 stride-1
// forward on sm_75, where a 16-bit product is two).
inline constexpr int nchw_matrix_resident_blocks = 3;

// Staged tiles a warp keeps: the forward's ring (the kernel's walk), the fewest stages (at least
// 2) whose copies in flight, all stages but the one being multiplied, reach 48 KiB a
// multiprocessor at the kernel's resident blocks (CUB's aim on an H200), as long as one more
// fits a block's 48 KiB of static shared memory, and at most 4: a thread copies, 16-byte form,
// 80 bytes a tile at stride 1 (two images) and 88-92 at stride 2, 30-35 KiB a multiprocessor a
// stage, so three stages. Turing, whose copies are loads and stores (no overlap within a
// thread), takes 2. The data gradient (G != none) stages one tile, its next one's loads in
// registers.
template <int K, int S, gate_kind G>
DSCONV_HOST_DEVICE constexpr int nchw_matrix_stages() {
  constexpr bool copies_block = !platform::async_copies_overlap;
  if (G != gate_kind::none) return 1;
  using geo = nchw_matrix_geometry<K, S>;
  constexpr int main_each = (geo::rows * geo::main_columns / 8 + 31) / 32, halo_each = (geo::rows * geo::halo_words + 31) / 32;
  constexpr int copied = geo::images * (16 * main_each + 4 * halo_each);
  constexpr int stage_in_flight = copied * static_cast<int>(nchw_matrix_block_threads) * nchw_matrix_resident_blocks;
  constexpr int stage_bytes = nchw_matrix_warps * geo::elements * 2;
  int n = 2;
  while (!copies_block && n < 4 && (n - 1) * stage_in_flight < 48 * 1024 && (n + 1) * stage_bytes <= 48 * 1024) ++n;
  return n;
}

struct nchw_matrix_tile {
  int tiles_x, tiles_y;  // warp tiles (16 x 16 outputs) along out_w and out_h (the plane form: 1, 1)
  int tiles;             // c * n * tiles_y * tiles_x (the plane form: c * image groups)
  int tiles_per_warp;    // consecutive tiles a warp takes (columns, rows, images, channels)
  int granule;           // bytes of a main-column load: 16, 8 or 4 (the plane form: 4 or 2)
};

// The warp's part of the block's staging (`elements` of T a warp, an even number), zeroed: what
// no tile's staging writes (the tile form's columns before -2 and past the right halo, the plane
// form's padding rows and columns) stays zero for every tile.
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE T* nchw_matrix_own_staging(T* staged, int elements, int warp, int lane) {
  T* const own = staged + warp * elements;
  for (int i = lane; i < elements / 2; i += 32) platform::shared_store(reinterpret_cast<unsigned*>(own) + i, 0u);
  return own;
}

// A warp's run of consecutive tiles: the first, how many it takes, and how many warp 0 of its
// block takes (the most: the block's barriers are passed that many times).
struct nchw_matrix_run {
  int first, count, block_count;
};
DSCONV_DEVICE DSCONV_FORCEINLINE nchw_matrix_run nchw_matrix_warp_run(const nchw_matrix_tile& t, int warp) {
  const int block_first = static_cast<int>(platform::block_idx().x) * nchw_matrix_warps * t.tiles_per_warp;
  const int first = block_first + warp * t.tiles_per_warp;
  const int left = t.tiles - first, block_left = t.tiles - block_first;
  return {first, left < 0 ? 0 : left < t.tiles_per_warp ? left : t.tiles_per_warp,
          block_left < t.tiles_per_warp ? block_left : t.tiles_per_warp};
}

// B of channel c's filter row ky and band d for lane (g, q): B[2q, 2q + 1][g] and B[2q + 8,
// 2q + 9][g], B[k][n] = w[ky][k - S n + P - window_lead + 8 S d] (zero outside the filter): the
// Toeplitz band of 8 outputs whose input columns start window_lead before the first output's
// (stride 1), and 16 columns on for each further band (stride 2). The filter is read rotated for
// the data gradient.
template <class T, int K, int S>
DSCONV_DEVICE DSCONV_FORCEINLINE void nchw_matrix_bands(const T* weight, int c, bool rotate, int g, int q,
                                                        unsigned (&b)[K][S][2]) {
  constexpr int taps = K * K, P = K / 2;
  const T* w = weight + static_cast<index_t>(c) * taps;
  DSCONV_UNROLL
  for (int ky = 0; ky < K; ++ky)
    DSCONV_UNROLL
    for (int d = 0; d < S; ++d)
      DSCONV_UNROLL
      for (int r = 0; r < 2; ++r) {
        unsigned word = 0;
        DSCONV_UNROLL
        for (int e = 0; e < 2; ++e) {
          const int kx = 2 * q + 8 * r + e - S * g + P - nchw_matrix_window_lead + 8 * S * d;
          const int tap = ky * K + kx;
          if (kx >= 0 && kx < K) word |= element_bits(platform::load(w + (rotate ? taps - 1 - tap : tap))) << (16 * e);
        }
        b[ky][d][r] = word;
      }
}

}  // namespace detail

namespace kernels {

// G != none: the data gradient of stride 1 (input: grad_output, the filter rotated), each
// staged word multiplied by the activation's derivative from the saved tensor at the same place
// (kernels/common/gradient_gate.hpp).
template <class T, int K, int S, detail::gate_kind G = detail::gate_kind::none>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::nchw_matrix_block_threads, detail::nchw_matrix_resident_blocks)
void depthwise_nchw_matrix(detail::depthwise_shape s, detail::nchw_matrix_tile t, const T* __restrict__ input,
                           detail::register_gate gate, const T* __restrict__ weight, const T* __restrict__ bias,
                           T* __restrict__ output, T* __restrict__ pre_activation) {
  static_assert(sizeof(T) == 2, "16-bit elements");
  namespace pf = platform;
  using geo = detail::nchw_matrix_geometry<K, S>;
  constexpr bool gated = G != detail::gate_kind::none;
  constexpr int warps = detail::nchw_matrix_warps, side = detail::nchw_matrix_side;
  // A warp's staged tiles: the forward's ring of `stages`, the data gradient's one (the walk).
  constexpr int stages = detail::nchw_matrix_stages<K, S, G>();
  static_assert(warps * stages * geo::elements * 2 <= 48 * 1024, "the ring fits a block's static shared memory");
  DSCONV_SHARED_ARRAY(T, staged, [warps * stages * geo::elements]);

  const int tid = static_cast<int>(pf::thread_idx().x), warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, q = lane % 4;
  T* const own = detail::nchw_matrix_own_staging(staged, stages * geo::elements, warp, lane);
  pf::sync_threads();  // (the zeros are in before any lane's copies land)

  // The warp's run of tiles, and the first one's place (tile column, row, first image,
  // channel; plane: image x channels + channel).
  const detail::nchw_matrix_run run = detail::nchw_matrix_warp_run(t, warp);
  const int first = run.first, count = run.count, block_count = run.block_count;
  struct place {
    int tx, ty, n, c, plane;
    DSCONV_DEVICE DSCONV_FORCEINLINE void step(const detail::nchw_matrix_tile& t, int images, int channels) {
      if (++tx < t.tiles_x) return;
      tx = 0;
      if (++ty < t.tiles_y) return;
      ty = 0, n += geo::images, plane += geo::images * channels;
      if (n >= images) n = 0, ++c, plane = c;
    }
  };
  const int image_groups = (s.n + geo::images - 1) / geo::images;
  const int per_plane = t.tiles_x * t.tiles_y, per_channel = per_plane * image_groups;
  const int from = first < t.tiles ? first : 0;
  const int from_n = from / per_plane % image_groups * geo::images, from_c = from / per_channel;
  place next_at{from % t.tiles_x, from / t.tiles_x % t.tiles_y, from_n, from_c, from_n * s.c + from_c};

  // The B bands of the channel whose tiles the warp is on (nchw_matrix_bands).
  unsigned b[K][geo::bands][2];
  int b_channel = -1;
  float bias_of = 0.f;

  const index_t plane_in = static_cast<index_t>(s.h) * s.w, plane_out = static_cast<index_t>(s.out_h) * s.out_w;
  // The second image's planes: c planes on.
  const index_t image_in = plane_in * s.c, image_out = plane_out * s.c;
  // Lane l addresses row m = l % 8 + 8 (l / 8 % 2) of the fragment, columns 8 (l / 16) on.
  const int m = lane % 8 + 8 * (lane / 8 % 2);
  const T* const lane_rows = own + m * geo::pitch + 8 * (lane / 16);

  // The walk with the main columns' granule (GB bytes) a compile-time constant. (The activation
  // is one only in the epilogue, a switch a tile: a walk for each of them had made 18 copies of
  // the loop, which took 15 s more of each 16-bit host build source where these take 6.5, for 0.1
  // to 0.2 fewer instructions per DRAM byte.)
  const auto walk = [&](auto granule) {
    constexpr int GB = decltype(granule)::value, GE = GB / 2, GW = GB / 4;
    constexpr int IM = geo::images;
    constexpr int per_row = geo::main_columns / GE;
    constexpr int main_items = geo::rows * per_row, halo_items = geo::rows * geo::halo_words;
    constexpr int main_each = (main_items + 31) / 32, halo_each = (halo_items + 31) / 32;
    using chunk = pf::vec<unsigned, GW>;
    // This lane's staging items, item lane + 32 j of a tile's rows taken in order: per_row and
    // the halo words a row divide 32, so the lane keeps its column and steps 32 / per_row rows
    // (32 / halo_words for the halo words) an item; at stride 2 that step is even, so the row's
    // parity, and its half of the staged rows, stays too. Its offsets from the tile's first
    // input element, and its places in a staged tile, are the same in every tile.
    constexpr int main_step = 32 / per_row, halo_step = 32 / geo::halo_words;
    const int main_row = lane / per_row, main_col = lane % per_row * GE;
    const int halo_row = lane / geo::halo_words, halo_col = lane % geo::halo_words == 0 ? -2 : geo::main_columns;
    const int main_at = geo::row_at(main_row) * geo::pitch + geo::window_lead + main_col;
    const int halo_at = geo::row_at(halo_row) * geo::pitch + geo::window_lead + halo_col;
    const unsigned halo_mask = halo_col < 0 ? geo::left_mask : geo::right_mask;
    const int main_in = main_row * s.w + main_col, halo_in = halo_row * s.w + halo_col;
    const int main_in_step = main_step * s.w, halo_in_step = halo_step * s.w;
    const bool main_last = main_items % 32 == 0 || main_row + (main_each - 1) * main_step < geo::rows;
    const bool halo_last = halo_items % 32 == 0 || halo_row + (halo_each - 1) * halo_step < geo::rows;
    // (whether this lane has a j-th item: a test of the last one only)
    const auto main_item = [&](int j) { return j + 1 < main_each || main_last; };
    const auto halo_item = [&](int j) { return j + 1 < halo_each || halo_last; };
    // Where item j lies in an image's staged tile.
    const auto main_place = [&](int j) { return main_at + geo::row_at(j * main_step) * geo::pitch; };
    const auto halo_place = [&](int j) { return halo_at + geo::row_at(j * halo_step) * geo::pitch; };
    // Whether an item lies inside the map (Inside: the whole tile does).
    const auto main_inside = [&](auto inside, int iy0, int ix0, int j) {
      return decltype(inside)::value ||
             (static_cast<unsigned>(iy0 + main_row + j * main_step) < static_cast<unsigned>(s.h) && ix0 + main_col < s.w);
    };
    const auto halo_inside = [&](auto inside, int iy0, int ix0, int j) {
      const int ix = ix0 + halo_col;
      return decltype(inside)::value ||
             (static_cast<unsigned>(iy0 + halo_row + j * halo_step) < static_cast<unsigned>(s.h) && ix >= 0 && ix < s.w);
    };
    // f(at, inside) with the tile's test of lying inside the map made a compile-time constant.
    const auto with_tile = [&](const place& at, auto f) {
      const int iy0 = at.ty * side * S - geo::P, ix0 = at.tx * side * S;
      if (iy0 >= 0 && iy0 + geo::rows <= s.h && ix0 > 0 && ix0 + geo::main_columns + 2 <= s.w)
        f(std::true_type{});
      else
        f(std::false_type{});
    };

    // Tile `at`'s products from its staged input at `staged_tile` (IM images), and its outputs.
    const auto multiply = [&](const place& at, const T* staged_tile, bool second) {
      if (at.c != b_channel) {
        detail::nchw_matrix_bands<T, K, S>(weight, at.c, s.rotate_filter, g, q, b);
        b_channel = at.c;
        bias_of = bias ? to_float(pf::load(bias + at.c)) : 0.f;
      }
      float acc[IM][2][4];
      DSCONV_UNROLL
      for (int im = 0; im < IM; ++im)
        DSCONV_UNROLL
        for (int j = 0; j < 2; ++j)
          DSCONV_UNROLL
          for (int e = 0; e < 4; ++e) acc[im][j][e] = bias_of;
      DSCONV_UNROLL
      for (int ky = 0; ky < K; ++ky)
        DSCONV_UNROLL
        for (int im = 0; im < IM; ++im) {
          // Input row S m + ky of the tile for the lane's row m: rows one pitch apart for every m.
          const T* const rows = lane_rows + (staged_tile - own) + im * geo::image_elements + geo::row_at(ky) * geo::pitch;
          unsigned a[geo::windows][4];
          DSCONV_UNROLL
          for (int w = 0; w < geo::windows; ++w) pf::ldmatrix_x4<false>(a[w], rows + w * geo::window_step);
          DSCONV_UNROLL
          for (int j = 0; j < 2; ++j)
            DSCONV_UNROLL
            for (int d = 0; d < geo::bands; ++d) pf::mma_16x8x16<T>(acc[im][j], a[S == 1 ? j : j + d], b[ky][d]);
        }

      // Lane (g, q)'s outputs: rows oy0 + g and oy0 + g + 8, columns ox0 + 8 j + 2q and the next,
      // of each image; without tests where the tile lies inside the map.
      const int oy0 = at.ty * side, ox0 = at.tx * side;
      const index_t lane_out = static_cast<index_t>(at.plane) * plane_out + ((oy0 + g) * s.out_w + ox0 + 2 * q);
      const auto store_tile = [&](auto whole, auto act) {
        DSCONV_UNROLL
        for (int im = 0; im < IM; ++im) {
          if (im > 0 && !second) break;
          T* const out = output + (lane_out + im * image_out);
          DSCONV_UNROLL
          for (int h = 0; h < 2; ++h)
            DSCONV_UNROLL
            for (int j = 0; j < 2; ++j) {
              if (!decltype(whole)::value && (oy0 + g + 8 * h >= s.out_h || ox0 + 8 * j + 2 * q >= s.out_w)) continue;
              const int at_out = 8 * h * s.out_w + 8 * j;
              if (pre_activation)
                pf::store(reinterpret_cast<unsigned*>(pre_activation + (lane_out + im * image_out) + at_out),
                          detail::saved_word<decltype(act)::value, T>(acc[im][j] + 2 * h, s.save_derivative));
              pf::store(reinterpret_cast<unsigned*>(out + at_out),
                        detail::activated_word<decltype(act)::value, T>(acc[im][j] + 2 * h));
            }
        }
      };
      // (The data gradient's activation is none: its gate applied the derivative.)
      const auto store_with = [&](auto whole) {
        detail::with_output_activation<G>(s.act, [&](auto act) { store_tile(whole, act); });
      };
      if (oy0 + side <= s.out_h && ox0 + side <= s.out_w)
        store_with(std::true_type{});
      else
        store_with(std::false_type{});
    };

    if constexpr (!gated) {
      // The forward: a ring of `stages` staged tiles a warp, copied asynchronously (cp.async:
      // sm_80 and newer; loads and stores on sm_75) stages - 1 tiles ahead of the one multiplied,
      // so that a multiprocessor has 48 KiB or more of copies in flight (nchw_matrix_stages):
      // copies hold no registers while in flight, where the next tile's loads into registers
      // had allowed one tile ahead (80-92 bytes a thread, 30-35 KiB a multiprocessor).
      // Tile `at` into `stage`, one commit group (the caller's), zeros outside the map (reading
      // nothing there): the lane's main items and halo words, each copy's source one wide
      // multiply-add from the lane's first item of the image (platform::held_global,
      // unwidened: its 32-bit offset added to the pointer had taken four instructions a copy), the
      // last ones where the lane has them. A missing second image copies nothing: its products
      // are made of whatever its part holds, and not stored. The main columns move as 8-byte
      // halves where the granule is 16 (the window lead puts them 8 bytes past a slot).
      const int main_step_in = pf::unwidened(main_in_step), halo_step_in = pf::unwidened(halo_in_step);
      const auto copy = [&](const place& at, T* stage) {
        with_tile(at, [&](auto inside) {
          const int iy0 = at.ty * side * S - geo::P, ix0 = at.tx * side * S, tile_in = iy0 * s.w + ix0;
          const bool second = IM > 1 && at.n + 1 < s.n;
          // (offsets inside a plane are 32-bit: the plan keeps planes under 2^31 elements)
          const index_t tile_at = static_cast<index_t>(at.plane) * plane_in + tile_in;
          // Image im's main item j and halo word j (`input`: a valid address where nothing is read).
          const auto main_copy = [&](int im, int j) {
            const bool in = main_inside(inside, iy0, ix0, j);
            const T* const first = pf::held_global(input + (tile_at + im * image_in + main_in));
            const T* const from = in ? first + j * main_step_in : input;
            T* const to = stage + im * geo::image_elements + main_place(j);
            if constexpr (GB == 16) {
              pf::async_copy_whole<8>(to, from, in);
              pf::async_copy_whole<8>(to + 4, in ? from + 4 : input, in);
            } else {
              pf::async_copy_whole<GB>(to, from, in);
            }
          };
          const auto halo_copy = [&](int im, int j) {
            const bool in = halo_inside(inside, iy0, ix0, j);
            const T* const first = pf::held_global(input + (tile_at + im * image_in + halo_in));
            pf::async_copy_whole<4>(stage + im * geo::image_elements + halo_place(j), in ? first + j * halo_step_in : input, in);
          };
          // (the items every lane has, then the last ones where the lane has them, of both
          // images together: ptxas puts three idle shared loads before each run of cp.async after
          // a branch, sm_90)
          DSCONV_UNROLL
          for (int im = 0; im < IM; ++im) {
            if (im > 0 && !second) break;
            DSCONV_UNROLL
            for (int j = 0; j + 1 < main_each; ++j) main_copy(im, j);
            DSCONV_UNROLL
            for (int j = 0; j + 1 < halo_each; ++j) halo_copy(im, j);
          }
          DSCONV_UNROLL
          for (int im = 0; im < IM; ++im) {
            if (im > 0 && !second) break;
            if (main_last) main_copy(im, main_each - 1);
            if (halo_last) halo_copy(im, halo_each - 1);
          }
        });
      };
      // This lane's halo words of the tile in `stage`, landed, with the columns outside the
      // filter's reach cleared (before the tile's barrier: no other lane reads them before it),
      // so that a non-finite input reaches exactly the outputs whose window holds it.
      constexpr bool masks = geo::left_mask != 0xffffffffu || (geo::right_halo && geo::right_mask != 0xffffffffu);
      const auto clear_halo = [&](T* stage, bool second) {
        DSCONV_UNROLL
        for (int im = 0; im < IM; ++im) {
          if (im > 0 && !second) break;
          DSCONV_UNROLL
          for (int j = 0; j < halo_each; ++j) {
            if (!halo_item(j)) continue;
            unsigned* const at = reinterpret_cast<unsigned*>(stage + im * geo::image_elements + halo_place(j));
            pf::shared_store(at, pf::shared_load(at) & halo_mask);
          }
        }
      };

      // Stages 0 .. stages - 2 go in flight first, a commit group each (empty past the warp's
      // tiles, so that the count of groups stays that of tiles); then each tile waits for its
      // own, copies the one stages - 1 ahead into the stage the previous tile used and
      // multiplies. Every warp passes block_count barriers, a warp past its tiles too. (The ring
      // is a loop, its stage a run-time offset: unrolled, with three stages the walk's code grew
      // past what nvcc inlines, and the kernel passed its state to a call through a 440-500 byte
      // stack frame.)
      place copy_at = next_at, tile_at = next_at;
      DSCONV_UNROLL
      for (int k = 0; k < stages - 1; ++k) {
        if (k < count) copy(copy_at, own + k * geo::elements), copy_at.step(t, s.n, s.c);
        pf::async_copy_commit();
      }
      int stage = 0;
      for (int i = 0; i < block_count; ++i) {
        const int ahead = stage == 0 ? stages - 1 : stage - 1;  // (the stage tile i - 1 used)
        const bool mine = i < count, second = IM > 1 && tile_at.n + 1 < s.n;
        T* const own_stage = own + stage * geo::elements;
        pf::async_copy_wait_pending<stages - 2>();  // (this lane's copies of tile i have landed)
        if constexpr (masks)
          if (mine) clear_halo(own_stage, second);
        pf::sync_threads();  // (every lane's items of tile i are in; tile i - 1's fragment loads are done)
        if (i + stages - 1 < count) copy(copy_at, own + ahead * geo::elements), copy_at.step(t, s.n, s.c);
        pf::async_copy_commit();
        stage = stage + 1 == stages ? 0 : stage + 1;
        if (!mine) continue;
        multiply(tile_at, own_stage, second);
        tile_at.step(t, s.n, s.c);  // (after: tile i's place is not copied)
      }
    } else {
      // The data gradient: the next tile's items loaded into registers, in flight across this
      // tile's products (both tensors: 160 bytes a thread, 60 KiB a multiprocessor, as a ring
      // of two stages would have; a ring's landed items gated from shared memory had counted
      // 4.4-4.6 instructions per DRAM byte through the clamp gate against 3.4-3.6, sm_90), then
      // gated into the warp's staged tile.
      chunk next[IM][main_each]{}, kept[IM][main_each]{};
      unsigned next_halo[IM][halo_each]{}, kept_halo[IM][halo_each]{};
      bool next_second = false;  // the fetched tile has a second image

      // Tile `at`'s items into next and kept (zeros outside the map): without tests where the
      // whole tile lies inside it.
      const auto fetch = [&](const place& at) {
        with_tile(at, [&](auto inside) {
          const int iy0 = at.ty * side * S - geo::P, ix0 = at.tx * side * S, tile_in = iy0 * s.w + ix0;
          next_second = IM > 1 && at.n + 1 < s.n;
          DSCONV_UNROLL
          for (int im = 0; im < IM; ++im) {
            if (im > 0 && !next_second) break;  // (nothing of a missing image is staged)
            const index_t plane_at = static_cast<index_t>(at.plane) * plane_in + im * image_in + tile_in;
            const T* const src = input + plane_at;
            const T* const saved = static_cast<const T*>(gate.saved) + plane_at;
            DSCONV_UNROLL
            for (int j = 0; j < main_each; ++j) {
              const bool in = main_inside(inside, iy0, ix0, j);
              if (!decltype(inside)::value) next[im][j] = kept[im][j] = chunk{};  // (zeros where the tile leaves the map)
              if (main_item(j) && in) {
                const int at_in = main_in + j * main_in_step;
                next[im][j] = pf::load_vec<GW>(reinterpret_cast<const unsigned*>(src + at_in));
                kept[im][j] = pf::load_vec<GW>(reinterpret_cast<const unsigned*>(saved + at_in));
              }
            }
            DSCONV_UNROLL
            for (int j = 0; j < halo_each; ++j) {
              const bool in = halo_inside(inside, iy0, ix0, j);
              if (!decltype(inside)::value) next_halo[im][j] = kept_halo[im][j] = 0u;
              if (halo_item(j) && in) {
                const int at_in = halo_in + j * halo_in_step;
                next_halo[im][j] = pf::load(reinterpret_cast<const unsigned*>(src + at_in));
                kept_halo[im][j] = pf::load(reinterpret_cast<const unsigned*>(saved + at_in));
              }
            }
          }
        });
      };
      // The fetched tile, gated, into this warp's staged tile, the main columns as 8-byte halves
      // where the granule is 16 (the window lead puts them 8 bytes past a slot), the halo words'
      // columns outside the filter's reach cleared. A missing second image stages nothing: its
      // products are made of whatever its part holds, and not stored.
      const auto stage = [&](bool second) {
        DSCONV_UNROLL
        for (int im = 0; im < IM; ++im) {
          if (im > 0 && !second) break;
          T* const image = own + im * geo::image_elements;
          DSCONV_UNROLL
          for (int j = 0; j < main_each; ++j) {
            if (!main_item(j)) continue;
            const chunk v = detail::gated_words<T, G, GW>(next[im][j], kept[im][j], gate);
            T* const to = image + main_place(j);
            if constexpr (GW == 4) {
              pf::shared_store(reinterpret_cast<pf::vec<unsigned, 2>*>(to), pf::vec<unsigned, 2>{v[0], v[1]});
              pf::shared_store(reinterpret_cast<pf::vec<unsigned, 2>*>(to + 4), pf::vec<unsigned, 2>{v[2], v[3]});
            } else {
              pf::shared_store(reinterpret_cast<chunk*>(to), v);
            }
          }
          DSCONV_UNROLL
          for (int j = 0; j < halo_each; ++j) {
            if (!halo_item(j)) continue;
            pf::shared_store(reinterpret_cast<unsigned*>(image + halo_place(j)),
                             detail::gated_word<T, G>(next_halo[im][j], kept_halo[im][j], gate) & halo_mask);
          }
        }
      };

      if (count > 0) fetch(next_at);
      for (int i = 0; i < block_count; ++i) {
        const place at = next_at;
        const bool mine = i < count, second = next_second;
        next_at.step(t, s.n, s.c);
        pf::sync_threads();  // (the previous tile's fragment loads are done)
        if (mine) stage(second);
        pf::sync_threads();
        if (i + 1 < count) fetch(next_at);
        if (mine) multiply(at, own, second);
      }
    }
  };
  switch (t.granule) {
    case 16: walk(std::integral_constant<int, 16>{}); break;
    case 8: walk(std::integral_constant<int, 8>{}); break;
    default: walk(std::integral_constant<int, 4>{}); break;
  }
}

}  // namespace kernels
}  // namespace dsconv
