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
// The held form (pointwise_nhwc_stream_held<T, NT, KC>), for the thin-K layers (K at most 64:
// the expand layers): a warp loads its tile's whole K (one or two chunks) once and walks the
// block's slices with it, where the streaming form loads the tile again for every slice (a grid
// row each). Its pixels are A's rows (X W^T: the register moves are made once a tile) and fragment
// column c of n tile j is output channel (c / 2) * 2 NT + 2 j + c % 2 of the slice, so that a
// lane's accumulators of a pixel are 2 NT contiguous channels, stored without a transpose. The
// block stages the weights and biases of all its slices; a slice's products start from its
// biases and its epilogue stores at offsets from the tile's row pointers. An expand layer of 24
// -> 144 channels took six loads of each tile and six passes of the streaming form's per-tile
// code, with 4-byte stores (six-channel slices); held, it loads a tile once and stores 8 or 16
// bytes a row and slice.

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
inline constexpr int stream_chunk = 32;                // channels of K per chunk (two k16 products)
inline constexpr int stream_rows = 32;                 // pixels a warp computes at once (two m16 tiles)

struct stream_tile {
  int chunks;         // ceil(K / 32)
  int slice_tiles;    // NB (streaming) or NT (held): blocks of 8 outputs of a warp's slice
  int tiles;          // ceil(pixels / 32): the pixel tiles of the GEMM
  int warps;          // warps walking the tiles of a slice: gridDim.x * warps per block
  int block_slices;   // slices a block stages and a warp walks with each tile (held form; else 1)
  bool aligned;       // input, weight, residual, output and pre-activation 16-byte aligned
};

// Lane `lane`'s channel offset in a 32-channel chunk, and its word of a 16-byte load.
DSCONV_HOST_DEVICE constexpr int stream_lane_k(int lane) { return 8 * (lane % 4); }

// Output channel of row (streaming form) or fragment column (held form) c of block j of 8 in a
// slice of nt blocks.
DSCONV_HOST_DEVICE constexpr int stream_channel(int j, int c, int nt) { return (c / 2) * 2 * nt + 2 * j + c % 2; }

// Where lane `lane`'s 16 bytes of n tile j of chunk k sit in the held form's staged weights (in
// words): a chunk's tiles side by side, so that a chunk's reads sit at constant offsets from one
// address.
DSCONV_HOST_DEVICE constexpr int stream_weight_word(int k, int j, int nt, int lane) { return ((k * nt + j) * 32 + lane) * 4; }

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

// A lane's NT words of a row's slice (its 2 NT channels): one access where aligned and NT is a
// vector width (1, 2, 4 words), a word at a time for NT = 3 (4-byte aligned), else element by
// element.
template <int NT, class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void load_slice(const T* p, unsigned (&w)[NT], bool aligned) {
  if constexpr (NT == 3) {
    DSCONV_UNROLL
    for (int j = 0; j < NT; ++j) w[j] = load_words<1>(p + 2 * j, aligned)[0];
  } else {
    const platform::vec<unsigned, NT> v = load_words<NT>(p, aligned);
    DSCONV_UNROLL
    for (int j = 0; j < NT; ++j) w[j] = v[j];
  }
}
template <int NT, class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void store_slice(T* p, const unsigned (&w)[NT], bool aligned) {
  if constexpr (NT == 3) {
    DSCONV_UNROLL
    for (int j = 0; j < NT; ++j) store_words<1>(p + 2 * j, platform::vec<unsigned, 1>{{w[j]}}, aligned);
  } else {
    platform::vec<unsigned, NT> v;
    DSCONV_UNROLL
    for (int j = 0; j < NT; ++j) v[j] = w[j];
    store_words<NT>(p, v, aligned);
  }
}

// Stages the held form's weights, `slices` consecutive slices of nt n tiles from output channel
// n0 in the lanes' order (slice by slice, each `chunks` chunks): a thread stages whole 16-byte
// pieces.
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void stage_stream_weights(unsigned* w_s, const T* weight, int K, int n0, int slices,
                                                           int chunks, int nt, bool aligned) {
  namespace pf = platform;
  using words = pf::vec<unsigned, 4>;
  const int pieces = slices * chunks * nt * 32;
  for (int i = static_cast<int>(pf::thread_idx().x); i < pieces; i += static_cast<int>(pf::block_dim().x)) {
    const int l = i % 32, j = i / 32 % nt, k = i / 32 / nt;  // k: the chunk counted over the slices
    const int n = n0 + k / chunks * 8 * nt + stream_channel(j, l / 4, nt);
    const int k0 = k % chunks * stream_chunk + stream_lane_k(l);
    const words v = k0 < K ? load_words<4>(weight + static_cast<index_t>(n) * K + k0, aligned) : words{};
    DSCONV_UNROLL
    for (int e = 0; e < 4; ++e) pf::shared_store(w_s + stream_weight_word(k, j, nt, l) + e, v[e]);
  }
}

// Where lane `lane`'s A fragment of m tile i and product h of chunk k sits in the streaming
// form's staged weights (in words): 128 NB words a chunk, a whole m tile's 4 words a lane, an odd
// NB's last (half) tile 2 words a lane after them.
template <int NB>
DSCONV_HOST_DEVICE constexpr int stream_a_word(int k, int i, int h, int lane) {
  return k * 128 * NB + (2 * i < NB - 1 ? (2 * i + h) * 128 + lane * 4 : (NB / 2) * 256 + h * 64 + lane * 2);
}

// Stages the streaming form's weights of the slice from output channel n0, `chunks` chunks: for
// each chunk, block b of 8 rows, product h and lane (g, t), channels 8t + 4h .. + 3 of row g of
// block b (output channel n0 + stream_channel(b, g, NB)): one 8-byte load, its words a[0] and
// a[2] (rows g, even b) or a[1] and a[3] (rows g + 8, odd b) of the m tile's fragment.
template <int NB, class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void stage_stream_transposed(unsigned* w_s, const T* weight, int K, int n0, int chunks,
                                                              bool aligned) {
  namespace pf = platform;
  const int units = chunks * NB * 2 * 32;
  for (int u = static_cast<int>(pf::thread_idx().x); u < units; u += static_cast<int>(pf::block_dim().x)) {
    const int l = u % 32, h = u / 32 % 2, b = u / 64 % NB, k = u / 64 / NB;
    const int n = n0 + stream_channel(b, l / 4, NB), k0 = k * stream_chunk + stream_lane_k(l) + 4 * h;
    const pf::vec<unsigned, 2> v =
        k0 < K ? load_words<2>(weight + static_cast<index_t>(n) * K + k0, aligned) : pf::vec<unsigned, 2>{};
    unsigned* at = w_s + stream_a_word<NB>(k, b / 2, h, l);
    const int step = 2 * (b / 2) < NB - 1 ? 2 : 1;  // a whole tile's a[0], a[2] or a[1], a[3]; a half tile's pair
    pf::shared_store(at + b % 2, v[0]);
    pf::shared_store(at + b % 2 + step, v[1]);
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

// A lane's sums z of its 4 rows (2 NT channels each) stored at elements at + q row_step of the
// output (rows q < rows): the residual added, the pre-activation stored, activation A applied as
// the words are packed, the words stored. Each tensor's test is made once for the 4 rows; an
// Aligned that is a compile-time constant leaves no element-wise path in the code.
template <int NT, class A, class T, class Aligned>
DSCONV_DEVICE DSCONV_FORCEINLINE void store_stream_rows(float (&z)[4][2 * NT], index_t at, index_t row_step, int rows,
                                                        const T* residual, T* y, T* pre, Aligned) {
  constexpr bool aligned = Aligned::value;
  unsigned w[NT];
  if (residual) {
    DSCONV_UNROLL
    for (int q = 0; q < 4; ++q) {
      if (q >= rows) break;
      load_slice<NT>(residual + at + q * row_step, w, aligned);
      DSCONV_UNROLL
      for (int j = 0; j < NT; ++j) {
        float f[2];
        widen<T>(w[j], f);
        z[q][2 * j] += f[0], z[q][2 * j + 1] += f[1];
      }
    }
  }
  if (pre) {
    DSCONV_UNROLL
    for (int q = 0; q < 4; ++q) {
      if (q >= rows) break;
      DSCONV_UNROLL
      for (int j = 0; j < NT; ++j) w[j] = narrow<T>(z[q] + 2 * j);
      store_slice<NT>(pre + at + q * row_step, w, aligned);
    }
  }
  DSCONV_UNROLL
  for (int q = 0; q < 4; ++q) {
    if (q >= rows) break;
    DSCONV_UNROLL
    for (int j = 0; j < NT; ++j) w[j] = activated_word<A::value, T>(z[q] + 2 * j);
    store_slice<NT>(y + at + q * row_step, w, aligned);
  }
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

// The streaming form's products of one chunk: b[] the chunk's loaded words (pixels g, g + 8,
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

// The streaming form's epilogue of a tile: the sums of block b and pixel tile q (pixels 8q + 2t,
// + 1 of channel stream_channel(b, g)) transposed to pixel 8q + g's channels 2 NB t + 2b, + 1 of
// the slice, stored at element at + q row_step of the output (q < rows); the residual's words
// transposed the other way to be added first; the pre-activation stored where asked; act(z)
// stored. Every lane transposes (movmatrix is warp-collective); only rows that exist load and
// store.
template <int NB, class A, class T, class Aligned>
DSCONV_DEVICE DSCONV_FORCEINLINE void store_stream_transposed(float (&acc)[(NB + 1) / 2][4][4], index_t at,
                                                              index_t row_step, int rows, const T* residual, T* y,
                                                              T* pre, Aligned) {
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
      for (int b = 0; b < NB; ++b) w[b] = platform::movmatrix_trans(narrow<T>(z[b]));
      if (here) store_slice<NB>(pre + at + q * row_step, w, aligned);
    }
    DSCONV_UNROLL
    for (int b = 0; b < NB; ++b) w[b] = platform::movmatrix_trans(activated_word<A::value, T>(z[b]));
    if (here) store_slice<NB>(y + at + q * row_step, w, aligned);
  }
}

// The products of one chunk: a[] the chunk's A words (rows g, g + 8, g + 16, g + 24), wk the
// lane's staged weights of the chunk's first n tile.
template <class T, int NT>
DSCONV_DEVICE DSCONV_FORCEINLINE void stream_chunk_products(const platform::vec<unsigned, 4> (&a)[4], const unsigned* wk,
                                                            float (&acc)[2][NT][4]) {
  DSCONV_UNROLL
  for (int j = 0; j < NT; ++j) {
    const platform::vec<unsigned, 4> bw = platform::shared_load_as<platform::vec<unsigned, 4>>(wk + j * 32 * 4);
    DSCONV_UNROLL
    for (int h = 0; h < 2; ++h) {  // the chunk's two k16 products
      const unsigned bf[2] = {bw[2 * h], bw[2 * h + 1]};
      DSCONV_UNROLL
      for (int i = 0; i < 2; ++i) {  // the two m16 tiles: rows g, g + 8 / g + 16, g + 24
        const unsigned af[4] = {a[2 * i][2 * h], a[2 * i + 1][2 * h], a[2 * i][2 * h + 1], a[2 * i + 1][2 * h + 1]};
        platform::mma_16x8x16<T>(acc[i][j], af, bf);
      }
    }
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
  detail::stage_stream_transposed<NB>(w_s, weight, K, n0, t.chunks, t.aligned);
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
                                                       aligned);
    });
    tile += t.warps;
    if (tile >= t.tiles) break;
  }
}

// The held form: KC (1 or 2) chunks of K, the whole of it, loaded once a tile; the block's
// t.block_slices slices of NT n tiles (NT 2 or 4: 8- or 16-byte stores a row) walked with it.
template <class T, int NT, int KC>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::stream_block_threads, detail::stream_resident_blocks)
void pointwise_nhwc_stream_held(detail::pointwise_shape s, detail::stream_tile t, const T* __restrict__ x,
                                const T* __restrict__ weight, const T* __restrict__ bias,
                                const T* __restrict__ residual, T* __restrict__ y, T* __restrict__ pre) {
  static_assert((NT == 2 || NT == 4) && (KC == 1 || KC == 2), "16- or 8-byte rows of a slice, K in one or two chunks");
  namespace pf = platform;
  using words = pf::vec<unsigned, 4>;
  const int tid = static_cast<int>(pf::thread_idx().x), lane = tid % 32, warp = tid / 32;
  const int slices = t.block_slices, width = 8 * NT;  // a slice's output channels
  const int n0 = static_cast<int>(pf::block_idx().y) * slices * width;
  const int K = s.c_in, N = s.c_out;

  // The slices' weights in the lanes' order, then their biases as floats (zeros without) in
  // the accumulators' order: for slice, n tile j, m tile i and lane column t, the 4 values
  // b(c), b(c + 1), b(c), b(c + 1) of channel c = 2 NT t + 2 j (one 16-byte load a product's
  // accumulators; each m tile its own copy, so that no load is merged into the other's and
  // copied).
  unsigned* w_s = pf::dynamic_shared<unsigned>();
  float* bias_s = reinterpret_cast<float*>(w_s + slices * KC * NT * 32 * 4);
  detail::stage_stream_weights(w_s, weight, K, n0, slices, KC, NT, t.aligned);
  for (int e = tid; e < slices * NT * 2 * 4; e += static_cast<int>(pf::block_dim().x)) {
    const int lane_t = e % 4, j = e / 8 % NT, sl = e / 8 / NT;
    const int c = n0 + sl * width + 2 * NT * lane_t + 2 * j;
    const float b0 = bias ? to_float(pf::load(bias + c)) : 0.f, b1 = bias ? to_float(pf::load(bias + c + 1)) : 0.f;
    pf::shared_store(reinterpret_cast<pf::vec<float, 4>*>(bias_s) + e, pf::vec<float, 4>{{b0, b1, b0, b1}});
  }
  pf::sync_threads();

  const index_t pixels = static_cast<index_t>(s.n) * s.h * s.w, row_step = 8 * static_cast<index_t>(N);
  int tile = static_cast<int>(pf::block_idx().x) * static_cast<int>(pf::block_dim().x / 32) + warp;
  if (tile >= t.tiles) return;
  const int c_lane = 2 * NT * (lane % 4);  // the lane's first channel of a slice
  const auto load_tile = [&](int tl, words (&a)[KC][4]) {
    DSCONV_UNROLL
    for (int k = 0; k < KC; ++k) detail::load_stream_chunk(x, K, pixels, tl, k, lane, t.aligned, a[k]);
  };
  const pf::vec<float, 4>* lane_bias = reinterpret_cast<const pf::vec<float, 4>*>(bias_s) + lane % 4;
  words cur[KC][4], nxt[KC][4];
  load_tile(tile, cur);
  for (;;) {
    // The next tile's loads go out first: in flight while this tile's slices multiply and store.
    const bool more = tile + t.warps < t.tiles;
    if (more) load_tile(tile + t.warps, nxt);
    const index_t r0 = static_cast<index_t>(tile) * detail::stream_rows + lane / 4;
    const index_t at0 = r0 * N + n0 + c_lane;
    const int rows = detail::stream_rows_here(pixels - r0);
    // Each slice: its biases as the products' first sums, its products, its rows.
    detail::with_stream_forms(s.act, t.aligned, [&](auto A, auto aligned) {
      for (int sl = 0; sl < slices; ++sl) {
        float acc[2][NT][4];
        DSCONV_UNROLL
        for (int j = 0; j < NT; ++j)
          DSCONV_UNROLL
          for (int i = 0; i < 2; ++i) {
            const pf::vec<float, 4> v = pf::shared_load_as<pf::vec<float, 4>>(lane_bias + ((sl * NT + j) * 2 + i) * 4);
            DSCONV_UNROLL
            for (int r = 0; r < 4; ++r) acc[i][j][r] = v[r];
          }
        DSCONV_UNROLL
        for (int k = 0; k < KC; ++k)
          detail::stream_chunk_products<T, NT>(cur[k], w_s + detail::stream_weight_word(sl * KC + k, 0, NT, lane), acc);
        // Lane (g, t) holds of m tile i rows g + 16 i (accumulators 0, 1) and g + 8 + 16 i (2, 3).
        float z[4][2 * NT];
        DSCONV_UNROLL
        for (int q = 0; q < 4; ++q)
          DSCONV_UNROLL
          for (int j = 0; j < NT; ++j) {
            const int i = q / 2, r = 2 * (q % 2);
            z[q][2 * j] = acc[i][j][r], z[q][2 * j + 1] = acc[i][j][r + 1];
          }
        detail::store_stream_rows<NT, decltype(A)>(z, at0 + sl * width, row_step, rows, residual, y, pre, aligned);
      }
    });
    if (!more) break;
    tile += t.warps;
    DSCONV_UNROLL
    for (int k = 0; k < KC; ++k)
      DSCONV_UNROLL
      for (int q = 0; q < 4; ++q) cur[k][q] = nxt[k][q];
  }
}
}  // namespace kernels
}  // namespace dsconv
