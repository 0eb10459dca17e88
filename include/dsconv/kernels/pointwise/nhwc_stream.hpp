#pragma once
// 1x1 convolution, NHWC, 16-bit types on NVIDIA's tensor cores (the variant mma_stream): the
// activations stream from global memory straight into the mma.sync fragments, with no shared
// memory tile of them, no ldmatrix and no barrier between them and the multiplications. Two
// forms; in both a warp computes tiles of 32 pixels, K in chunks of 32 channels (two k16
// products), lane (g, t) (g = lane / 4, t = lane % 4) loading the chunk's channels 8t .. 8t + 7
// of pixels g, g + 8, g + 16, g + 24 of its tile (one 16-byte load each); the order of k inside
// a chunk is free (A and B only have to agree), and so is the order of the outputs inside a
// slice of them (W's rows are staged in that order). The warps walk their pixel tiles (the
// blocks of the grid take turns), the next tile's loads issued before this one's products. K's
// last chunk may be partial (K a multiple of 8: lanes past it multiply zeros), pixels past the
// last load zeros and store nothing; pointers not aligned to 16 bytes move element by element
// into the same words. A block stages its slices' weights in shared memory once, in the order
// the lanes read them (32 lanes x 16 or 8 bytes: conflict-free).
//
// The streaming form (pointwise_nhwc_stream<T, NB>), for K of any length: Y^T = W X^T for a
// slice of 8 NB output channels (a grid row each) over the whole of K: ceil(NB / 2) m16 tiles of
// W's rows times the tile's 32 pixels as four n8 tiles.
//   - The lane's 16-byte load of pixel g + 8q holds, in its words 2h and 2h + 1, its B fragment
//     (b[0], b[1]) of product h and pixel tile q as it lies: no register moves between the loads
//     and the products. W's fragments (a[0..3]: channels 8t + 4h .. + 3 of rows g and g + 8) are
//     read from shared memory, 16 bytes a product (8 for an odd NB's last m tile, whose rows g + 8
//     are zeros).
//   - Row c of block b of 8 rows (m tile b / 2, rows 8 (b % 2) + c) is output channel
//     2 NB (c / 2) + 2 b + c % 2 of the slice. A lane's sums of block b and pixel tile q, packed
//     to 16 bits (row g, pixels 2t and 2t + 1 of the tile), are an 8x8 matrix that movmatrix
//     transposes: the lane then holds pixel 8q + g's channels 2 NB t + 2 b, + 1, so that over the
//     blocks it holds 2 NB contiguous channels of a pixel: one store of 4 NB bytes (16 for
//     NB = 4). The residual comes in the same way back (its words transposed to the sums').
//   - The sums start from the biases; the epilogue adds the residual, stores the pre-activation
//     where asked and stores act(z).
// It had been the other way round (X W^T, pixels as A's rows): an A fragment pairs rows g and
// g + 8, which a lane's loads hold in different registers, so every chunk moved registers into
// place (sm_90: about 121 instructions a chunk of a 32-output slice; now about 45, of them 16
// products, 4 fragment reads and 4 loads).
//
// The held form (pointwise_nhwc_stream_held<T, NB, KC>), for K of up to four chunks (128
// channels: the expand layers): the same products and epilogue, the loops the other way round.
// A warp loads its tile's whole K once and walks all of its block's slices with it, where the
// streaming form loads the tile again for every slice (a grid row each); the block stages the
// weights and biases of its slices (the biases as the accumulators' first values, 16 bytes a
// read). KC = 2 holds one or two chunks and keeps the next tile's loads in flight across this
// tile's slices; KC = 4 holds three or four, the next tile's loads going out after its last
// slice (twice those words did not fit the registers), at three resident blocks. An expand
// layer of 24 -> 144 channels had taken six loads of each tile and six passes of the per-tile
// code, with 4-byte stores.

#include <type_traits>

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/activation.hpp"
#include "../common/words.hpp"

namespace dsconv {
namespace detail {

inline constexpr unsigned stream_block_threads = 128;  // 4 warps
inline constexpr int stream_resident_blocks = 4;       // 16 warps a multiprocessor: 128 registers a thread
// The held form's: 4, and 3 where it holds four chunks (168 registers a thread: at 128 ptxas
// spilled 20 bytes of the 16-bit form with four blocks a slice on sm_75).
DSCONV_HOST_DEVICE constexpr int stream_held_resident_blocks(int kc) { return kc == 4 ? 3 : stream_resident_blocks; }
inline constexpr int stream_chunk = 32;                // channels of K per chunk (two k16 products)
inline constexpr int stream_rows = 32;                 // pixels a warp computes at once (two m16 tiles)

struct stream_tile {
  int chunks;         // ceil(K / 32)
  int slice_tiles;    // NB: blocks of 8 outputs of a warp's slice
  int tiles;          // ceil(pixels / 32): the pixel tiles of the GEMM
  int warps;          // warps walking the tiles of a grid row: gridDim.x * warps per block
  int block_slices;   // slices a block stages and a warp walks with each tile (held form; else 1)
  bool aligned;       // input, weight, residual, output and pre-activation 16-byte aligned
};

// Lane `lane`'s channel offset in a 32-channel chunk, and its word of a 16-byte load.
DSCONV_HOST_DEVICE constexpr int stream_lane_k(int lane) { return 8 * (lane % 4); }

// Output channel of row c of block j of 8 in a slice of nt blocks.
DSCONV_HOST_DEVICE constexpr int stream_channel(int j, int c, int nt) { return (c / 2) * 2 * nt + 2 * j + c % 2; }

// The 16 bytes (4 words) of row `row` (< rows: else zeros) at channels k0 + 8t .. + 7 of a
// chunk, of which only the first `k_left` channels exist (a partial last chunk: lanes past it
// load zeros).
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE platform::vec<unsigned, 4> stream_load(const T* base, index_t pitch, index_t row,
                                                                        index_t rows, int lane_k, int k_left,
                                                                        bool aligned) {
  platform::vec<unsigned, 4> w{};
  if (row < rows && lane_k < k_left) w = load_words<4>(base + row * pitch + lane_k, aligned);
  return w;
}

// A lane's NB words of a pixel's slice (its 2 NB channels): one access where aligned and NB is a
// vector width (1, 2, 4 words), a word at a time for NB = 3 (4-byte aligned), else element by
// element.
template <int NB, class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void load_slice(const T* p, unsigned (&w)[NB], bool aligned) {
  if constexpr (NB == 3) {
    DSCONV_UNROLL
    for (int j = 0; j < NB; ++j) w[j] = load_words<1>(p + 2 * j, aligned)[0];
  } else {
    const platform::vec<unsigned, NB> v = load_words<NB>(p, aligned);
    DSCONV_UNROLL
    for (int j = 0; j < NB; ++j) w[j] = v[j];
  }
}
template <int NB, class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void store_slice(T* p, const unsigned (&w)[NB], bool aligned) {
  if constexpr (NB == 3) {
    DSCONV_UNROLL
    for (int j = 0; j < NB; ++j) store_words<1>(p + 2 * j, platform::vec<unsigned, 1>{{w[j]}}, aligned);
  } else {
    platform::vec<unsigned, NB> v;
    DSCONV_UNROLL
    for (int j = 0; j < NB; ++j) v[j] = w[j];
    store_words<NB>(p, v, aligned);
  }
}

// Where lane `lane`'s A fragment of m tile i and product h of staged chunk k sits in the staged
// weights (in words): 128 NB words a chunk, a whole m tile's 4 words a lane, an odd NB's last
// (half) tile 2 words a lane after them.
template <int NB>
DSCONV_HOST_DEVICE constexpr int stream_a_word(int k, int i, int h, int lane) {
  return k * 128 * NB + (2 * i < NB - 1 ? (2 * i + h) * 128 + lane * 4 : (NB / 2) * 256 + h * 64 + lane * 2);
}

// Stages the weights of `slices` consecutive slices from output channel n0, `chunks` chunks each
// (staged chunk sl chunks + k): for each chunk, block b of 8 rows, product h and lane (g, t),
// channels 8t + 4h .. + 3 of row g of block b (output channel stream_channel(b, g, NB) of the
// slice): one 8-byte load, its words a[0] and a[2] (rows g, even b) or a[1] and a[3] (rows g + 8,
// odd b) of the m tile's fragment.
template <int NB, class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void stage_stream_weights(unsigned* w_s, const T* weight, int K, int n0, int slices,
                                                           int chunks, bool aligned) {
  namespace pf = platform;
  const int units = chunks * NB * 2 * 32, step = static_cast<int>(pf::block_dim().x);  // units: a slice's
  // u counts a slice's pieces, sl the slices (carried, not divided: the chunk count is a run-time value)
  for (int u = static_cast<int>(pf::thread_idx().x), sl = 0; sl < slices; u += step) {
    while (u >= units && sl < slices) u -= units, ++sl;
    if (sl >= slices) break;
    const int l = u % 32, h = u / 32 % 2, b = u / 64 % NB, k = u / 64 / NB;
    const int n = n0 + sl * 8 * NB + stream_channel(b, l / 4, NB), k0 = k * stream_chunk + stream_lane_k(l) + 4 * h;
    const pf::vec<unsigned, 2> v =
        k0 < K ? load_words<2>(weight + static_cast<index_t>(n) * K + k0, aligned) : pf::vec<unsigned, 2>{};
    unsigned* at = w_s + stream_a_word<NB>(sl * chunks + k, b / 2, h, l);
    const int pair = 2 * (b / 2) < NB - 1 ? 2 : 1;  // a whole tile's a[0], a[2] or a[1], a[3]; a half's pair
    pf::shared_store(at + b % 2, v[0]);
    pf::shared_store(at + b % 2 + pair, v[1]);
  }
}

// Chunk k of pixel tile `tile` into `a`: lane (g, t)'s channels 8t .. 8t + 7 of rows g, g + 8,
// g + 16, g + 24. A whole tile on aligned tensors takes four 16-byte loads: without a test in a
// whole chunk, predicated on the lane's channels lying inside K in a partial last one; the rest
// checks each row.
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void load_stream_chunk(const T* x, int K, index_t pixels, int tile, int k, int lane,
                                                        bool aligned, platform::vec<unsigned, 4> (&a)[4]) {
  const index_t r0 = static_cast<index_t>(tile) * stream_rows + lane / 4;
  const int k0 = k * stream_chunk, lane_k = stream_lane_k(lane);
  if (aligned && (static_cast<index_t>(tile) + 1) * stream_rows <= pixels) {
    const bool whole = k0 + stream_chunk <= K, inside = lane_k < K - k0;
    const unsigned* p = reinterpret_cast<const unsigned*>(x + r0 * K + k0 + lane_k);
    const index_t row_step = 8 * static_cast<index_t>(K) / elements_per_word<T>();
    DSCONV_UNROLL
    for (int q = 0; q < 4; ++q)
      a[q] = whole || inside ? platform::load_vec<4>(p + q * row_step) : platform::vec<unsigned, 4>{};
  } else {
    DSCONV_UNROLL
    for (int q = 0; q < 4; ++q) a[q] = stream_load(x + k0, K, r0 + 8 * q, pixels, lane_k, K - k0, aligned);
  }
}

// Rows g, g + 8, g + 16, g + 24 of a tile that exist, where `rows_left` = pixels - (the tile's
// first pixel + g): row g + 8 q exists where 8 q < rows_left.
DSCONV_DEVICE DSCONV_FORCEINLINE int stream_rows_here(index_t rows_left) {
  return rows_left <= 0 ? 0 : rows_left >= 3 * 8 + 1 ? 4 : static_cast<int>((rows_left + 7) / 8);
}

// f(A, Aligned): the activation and the tensors' alignment made compile-time constants, one
// copy of f for each.
template <class F>
DSCONV_DEVICE DSCONV_FORCEINLINE void with_stream_forms(activation act, bool aligned, F&& f) {
  with_activation(act, [&](auto A) {
    if (aligned)
      f(A, std::true_type{});
    else
      f(A, std::false_type{});
  });
}

// The products of one chunk (both forms): b[] the chunk's loaded words (pixels g, g + 8,
// g + 16, g + 24: B fragments as they lie), wk the staged weights of the chunk.
template <class T, int NB>
DSCONV_DEVICE DSCONV_FORCEINLINE void stream_transposed_products(const platform::vec<unsigned, 4> (&b)[4],
                                                                 const unsigned* wk, int lane,
                                                                 float (&acc)[(NB + 1) / 2][4][4]) {
  DSCONV_UNROLL
  for (int i = 0; i < (NB + 1) / 2; ++i)
    DSCONV_UNROLL
    for (int h = 0; h < 2; ++h) {
      unsigned af[4];
      if (2 * i < NB - 1) {
        const auto a = platform::shared_load_as<platform::vec<unsigned, 4>>(wk + stream_a_word<NB>(0, i, h, lane));
        af[0] = a[0], af[1] = a[1], af[2] = a[2], af[3] = a[3];
      } else {  // an odd NB's last m tile: rows g + 8 zero
        const auto a = platform::shared_load_as<platform::vec<unsigned, 2>>(wk + stream_a_word<NB>(0, i, h, lane));
        af[0] = a[0], af[1] = 0u, af[2] = a[1], af[3] = 0u;
      }
      DSCONV_UNROLL
      for (int q = 0; q < 4; ++q) {
        const unsigned bf[2] = {b[q][2 * h], b[q][2 * h + 1]};
        platform::mma_16x8x16<T>(acc[i][q], af, bf);
      }
    }
}

// The epilogue of a tile's slice (both forms): the sums of block b and pixel tile q (pixels
// 8q + 2t, + 1 of channel stream_channel(b, g)) transposed to pixel 8q + g's channels 2 NB t + 2b,
// + 1 of the slice, stored at element at + q row_step of the output (q < rows); the residual's
// words transposed the other way to be added first; the pre-activation (or act'(z) where
// `derivative`) stored where asked; act(z)
// stored. Every lane transposes (movmatrix is warp-collective); only rows that exist load and
// store.
template <int NB, class A, class T, class Aligned>
DSCONV_DEVICE DSCONV_FORCEINLINE void store_stream_transposed(float (&acc)[(NB + 1) / 2][4][4], index_t at,
                                                              index_t row_step, int rows, const T* residual, T* y,
                                                              T* pre, bool derivative, Aligned) {
  constexpr bool aligned = Aligned::value;
  DSCONV_UNROLL
  for (int q = 0; q < 4; ++q) {
    const bool here = q < rows;
    float z[NB][2];
    DSCONV_UNROLL
    for (int b = 0; b < NB; ++b) z[b][0] = acc[b / 2][q][2 * (b % 2)], z[b][1] = acc[b / 2][q][2 * (b % 2) + 1];
    unsigned w[NB];
    if (residual) {
      DSCONV_UNROLL
      for (int b = 0; b < NB; ++b) w[b] = 0u;
      if (here) load_slice<NB>(residual + at + q * row_step, w, aligned);
      DSCONV_UNROLL
      for (int b = 0; b < NB; ++b) {
        float f[2];
        widen<T>(platform::movmatrix_trans(w[b]), f);
        z[b][0] += f[0], z[b][1] += f[1];
      }
    }
    if (pre) {
      DSCONV_UNROLL
      for (int b = 0; b < NB; ++b) w[b] = platform::movmatrix_trans(saved_word<A::value, T>(z[b], derivative));
      if (here) store_slice<NB>(pre + at + q * row_step, w, aligned);
    }
    DSCONV_UNROLL
    for (int b = 0; b < NB; ++b) w[b] = platform::movmatrix_trans(activated_word<A::value, T>(z[b]));
    if (here) store_slice<NB>(y + at + q * row_step, w, aligned);
  }
}

}  // namespace detail

namespace kernels {

template <class T, int NB>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::stream_block_threads, detail::stream_resident_blocks)
void pointwise_nhwc_stream(detail::pointwise_shape s, detail::stream_tile t, const T* __restrict__ x,
                           const T* __restrict__ weight, const T* __restrict__ bias, const T* __restrict__ residual,
                           T* __restrict__ y, T* __restrict__ pre) {
  static_assert(NB >= 1 && NB <= 4, "one to four blocks of 8 outputs a slice");
  constexpr int MT = (NB + 1) / 2;  // m16 tiles of the slice
  namespace pf = platform;
  using words = pf::vec<unsigned, 4>;
  const int tid = static_cast<int>(pf::thread_idx().x), lane = tid % 32, warp = tid / 32;
  const int g = lane / 4;
  const int n0 = static_cast<int>(pf::block_idx().y) * 8 * NB;  // the slice's first output channel
  const int K = s.c_in, N = s.c_out;

  unsigned* w_s = pf::dynamic_shared<unsigned>();
  detail::stage_stream_weights<NB>(w_s, weight, K, n0, 1, t.chunks, t.aligned);
  pf::sync_threads();

  // The lane's biases: of row g of each block (an odd NB's missing block: 0).
  float b[2 * MT];
  DSCONV_UNROLL
  for (int e = 0; e < 2 * MT; ++e)
    b[e] = bias && e < NB ? to_float(pf::load(bias + n0 + detail::stream_channel(e, g, NB))) : 0.f;

  const index_t pixels = static_cast<index_t>(s.n) * s.h * s.w;
  int tile = static_cast<int>(pf::block_idx().x) * static_cast<int>(pf::block_dim().x / 32) + warp;
  if (tile >= t.tiles) return;
  // A whole tile on aligned tensors loads its chunks from one pointer a tile (the lane's words of
  // pixel g), chunk k 16 words on; the rest checks each pixel.
  const index_t pixel_words = 8 * static_cast<index_t>(K) / detail::elements_per_word<T>();  // 8 pixels
  const unsigned* lane_words = nullptr;
  const auto start_tile = [&] {
    const bool fast = t.aligned && (static_cast<index_t>(tile) + 1) * detail::stream_rows <= pixels;
    lane_words = fast ? reinterpret_cast<const unsigned*>(x + (static_cast<index_t>(tile) * detail::stream_rows + g) * K +
                                                          detail::stream_lane_k(lane))
                      : nullptr;
  };
  const auto load_chunk = [&](int k, words (&a)[4]) {
    if (lane_words && detail::stream_lane_k(lane) < K - k * detail::stream_chunk) {
      DSCONV_UNROLL
      for (int q = 0; q < 4; ++q) a[q] = pf::load_vec<4>(lane_words + k * (detail::stream_chunk / 2) + q * pixel_words);
    } else {
      detail::load_stream_chunk(x, K, pixels, tile, k, lane, t.aligned, a);
    }
  };
  float acc[MT][4][4];
  // One chunk: the next chunk's loads (at the tile's last chunk, the next tile's first) go out
  // into `nxt` before the products of `cur`.
  const auto step = [&](int k, const words (&cur)[4], words (&nxt)[4]) {
    if (k + 1 < t.chunks)
      load_chunk(k + 1, nxt);
    else if (tile + t.warps < t.tiles)
      detail::load_stream_chunk(x, K, pixels, tile + t.warps, 0, lane, t.aligned, nxt);
    detail::stream_transposed_products<T, NB>(cur, w_s + detail::stream_a_word<NB>(k, 0, 0, 0), lane, acc);
  };
  // Two buffers of a chunk's words, in turn (the chunk loop unrolled by two, so that no copy
  // moves them between iterations).
  words even[4], odd[4];
  detail::load_stream_chunk(x, K, pixels, tile, 0, lane, t.aligned, even);
  for (;;) {
    start_tile();
    DSCONV_UNROLL
    for (int i = 0; i < MT; ++i)  // the sums start from the biases: rows g, g + 8 of m tile i
      DSCONV_UNROLL
      for (int q = 0; q < 4; ++q) acc[i][q][0] = acc[i][q][1] = b[2 * i], acc[i][q][2] = acc[i][q][3] = b[2 * i + 1];
    int k = 0;
    for (; k + 1 < t.chunks; k += 2) {
      step(k, even, odd);
      step(k + 1, odd, even);
    }
    if (k < t.chunks) {  // an odd count: the next tile's first chunk went to `odd`
      step(k, even, odd);
      DSCONV_UNROLL
      for (int q = 0; q < 4; ++q) even[q] = odd[q];
    }
    const index_t r0 = static_cast<index_t>(tile) * detail::stream_rows + g;  // the lane's pixel of tile q = 0
    detail::with_stream_forms(s.act, t.aligned, [&](auto A, auto aligned) {
      detail::store_stream_transposed<NB, decltype(A)>(acc, r0 * N + n0 + 2 * NB * (lane % 4),
                                                       8 * static_cast<index_t>(N),
                                                       detail::stream_rows_here(pixels - r0), residual, y, pre,
                                                       s.save_derivative, aligned);
    });
    tile += t.warps;
    if (tile >= t.tiles) break;
  }
}

// The held form: the tile's t.chunks (at most KC: 2, or 4) chunks of K loaded once; the block's
// t.block_slices slices of NB blocks walked with them.
template <class T, int NB, int KC>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::stream_block_threads, detail::stream_held_resident_blocks(KC))
void pointwise_nhwc_stream_held(detail::pointwise_shape s, detail::stream_tile t, const T* __restrict__ x,
                                const T* __restrict__ weight, const T* __restrict__ bias,
                                const T* __restrict__ residual, T* __restrict__ y, T* __restrict__ pre) {
  static_assert(NB >= 1 && NB <= 4 && (KC == 2 || KC == 4), "one to four blocks a slice, K in two or four chunks");
  constexpr int MT = (NB + 1) / 2;  // m16 tiles of a slice
  constexpr bool ahead = KC == 2;   // the next tile's loads in flight during this one's slices
  namespace pf = platform;
  using words = pf::vec<unsigned, 4>;
  const int tid = static_cast<int>(pf::thread_idx().x), lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, slices = t.block_slices, width = 8 * NB;  // a slice's output channels
  const int n0 = static_cast<int>(pf::block_idx().y) * slices * width;
  const int K = s.c_in, N = s.c_out;

  // The slices' weights, then their biases as floats (zeros without) in the accumulators'
  // order: for slice, m tile i, pixel tile q and row g, the quad b(row g), b(row g), b(row g + 8),
  // b(row g + 8) of m tile i (one 16-byte read a product's accumulators; each pixel tile its own
  // copy, so that no read is merged into another's and copied).
  unsigned* w_s = pf::dynamic_shared<unsigned>();
  auto* bias_s = reinterpret_cast<pf::vec<float, 4>*>(w_s + slices * t.chunks * 128 * NB);
  detail::stage_stream_weights<NB>(w_s, weight, K, n0, slices, t.chunks, t.aligned);
  for (int e = tid; e < slices * MT * 4 * 8; e += static_cast<int>(pf::block_dim().x)) {
    const int row = e % 8, i = e / 32 % MT, sl = e / 32 / MT;
    float b[2];
    DSCONV_UNROLL
    for (int r = 0; r < 2; ++r) {
      const int block = 2 * i + r;
      b[r] = bias && block < NB ? to_float(pf::load(bias + n0 + sl * width + detail::stream_channel(block, row, NB))) : 0.f;
    }
    pf::shared_store(bias_s + e, pf::vec<float, 4>{{b[0], b[0], b[1], b[1]}});
  }
  pf::sync_threads();

  const index_t pixels = static_cast<index_t>(s.n) * s.h * s.w, row_step = 8 * static_cast<index_t>(N);
  int tile = static_cast<int>(pf::block_idx().x) * static_cast<int>(pf::block_dim().x / 32) + warp;
  if (tile >= t.tiles) return;
  const auto load_tile = [&](int tl, words (&a)[KC][4]) {
    DSCONV_UNROLL
    for (int k = 0; k < KC; ++k)
      if (k < t.chunks) detail::load_stream_chunk(x, K, pixels, tl, k, lane, t.aligned, a[k]);
  };
  words cur[KC][4], nxt[ahead ? KC : 1][4];
  load_tile(tile, cur);
  for (;;) {
    const bool more = tile + t.warps < t.tiles;
    if constexpr (ahead) {
      if (more) load_tile(tile + t.warps, nxt);
    }
    const index_t r0 = static_cast<index_t>(tile) * detail::stream_rows + g;  // the lane's pixel of tile q = 0
    const index_t at0 = r0 * N + n0 + 2 * NB * (lane % 4);
    const int rows = detail::stream_rows_here(pixels - r0);
    detail::with_stream_forms(s.act, t.aligned, [&](auto A, auto aligned) {
      for (int sl = 0; sl < slices; ++sl) {
        float acc[MT][4][4];
        DSCONV_UNROLL
        for (int i = 0; i < MT; ++i)
          DSCONV_UNROLL
          for (int q = 0; q < 4; ++q) {
            const pf::vec<float, 4> v = pf::shared_load_as<pf::vec<float, 4>>(bias_s + ((sl * MT + i) * 4 + q) * 8 + g);
            DSCONV_UNROLL
            for (int r = 0; r < 4; ++r) acc[i][q][r] = v[r];
          }
        DSCONV_UNROLL
        for (int k = 0; k < KC; ++k)
          if (k < t.chunks)
            detail::stream_transposed_products<T, NB>(cur[k], w_s + detail::stream_a_word<NB>(sl * t.chunks + k, 0, 0, 0),
                                                      lane, acc);
        detail::store_stream_transposed<NB, decltype(A)>(acc, at0 + sl * width, row_step, rows, residual, y, pre,
                                                         s.save_derivative, aligned);
      }
    });
    if (!more) break;
    tile += t.warps;
    if constexpr (ahead) {
      DSCONV_UNROLL
      for (int k = 0; k < KC; ++k)
        DSCONV_UNROLL
        for (int q = 0; q < 4; ++q) cur[k][q] = nxt[k][q];
    } else {
      load_tile(tile, cur);
    }
  }
}

}  // namespace kernels
}  // namespace dsconv
