#pragma once
// 1x1 convolution, NHWC, 16-bit types on NVIDIA's tensor cores (the variant mma_stream): the
// activations stream from global memory straight into the mma.sync fragments, with no shared
// memory tile, no ldmatrix and no barrier between them and the multiplications.
//
// Y[p][n] = X[p][:] . W[n][:] for the pixels p of every image (NHWC: a pixel's c_in channels
// are contiguous, and so are its c_out outputs). A warp computes 32 pixels (two m16 tiles) x
// 8 * NT outputs over the whole of K, K in chunks of 32 channels, two m16n8k16 products per
// tile pair and chunk. The order of k inside a chunk is free (A and B only have to agree), and
// so is the order of the outputs inside the warp's slice (W's rows are read in that order):
//   - k: lane (g, t) of the mma layout (g = lane / 4, t = lane % 4) holds, in the two products
//     of a chunk, the chunk's channels 8t .. 8t + 7 of its rows g and g + 8: one 16-byte load
//     of each row (words 0, 1 the first product's a[0] / a[2], words 2, 3 the second's), and of
//     W likewise (b[0], b[1]);
//   - n: fragment column c of n tile j is output channel (c / 2) * 2 NT + 2 j + c % 2 of the
//     slice, so that lane (g, t)'s accumulators of a row, over the NT tiles, are the slice's
//     channels 2 NT t .. 2 NT t + 2 NT - 1: one store of 4 NT bytes (16 for NT = 4).
// The slice's weights go to shared memory once per block in the order the lanes read them (a
// chunk of a tile: 32 lanes x 16 bytes, conflict-free), its biases to registers; a warp then
// walks its pixel tiles (the blocks of the grid take turns), loading the next chunk (or the
// next tile's first) before multiplying the current one and, at a tile's end, before the
// epilogue: z = acc + bias + residual, act(z), stored as the tile's rows. K's last chunk may be
// partial (K a multiple of 8: lanes past it multiply zeros), rows past the pixels load zeros and
// store nothing. Pointers not aligned to 16 bytes move element by element into the same words.
//
// The held form (pointwise_nhwc_stream_held), for the thin-K layers (K at most 64: the expand
// layers): a warp loads its tile's whole K (one or two chunks) once and walks the block's
// slices with it, where the streaming form above loads the tile again for every slice (a grid
// row each). The block stages the weights and biases of all its slices; a slice's products
// start from its biases (the accumulators' first value: no addition after) and its epilogue
// stores at offsets from the tile's row pointers. An expand layer of 24 -> 144 channels took
// six loads of each tile and six passes of the streaming form's per-tile code, 4-byte stores
// (six-channel slices); held, it loads a tile once and stores 8 or 16 bytes a row and slice.

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
  int slice_tiles;    // NT: n tiles (8 outputs each) of a warp's slice
  int tiles;          // ceil(pixels / 32): the pixel tiles of the GEMM
  int warps;          // warps walking the tiles of a slice: gridDim.x * warps per block
  int block_slices;   // slices a block stages and a warp walks with each tile (held form; else 1)
  bool aligned;       // input, weight, residual, output and pre-activation 16-byte aligned
};

// Lane `lane`'s channel offset in a 32-channel chunk, and its word of a 16-byte load.
DSCONV_HOST_DEVICE constexpr int stream_lane_k(int lane) { return 8 * (lane % 4); }

// Output channel of fragment column c of n tile j in a slice of nt tiles.
DSCONV_HOST_DEVICE constexpr int stream_channel(int j, int c, int nt) { return (c / 2) * 2 * nt + 2 * j + c % 2; }

// Where lane `lane`'s 16 bytes of n tile j of chunk k sit in the staged weights (in words): a
// chunk's tiles side by side, so that a chunk's reads sit at constant offsets from one address.
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

// Stages the weights of `slices` consecutive slices of nt n tiles from output channel n0 in the
// lanes' order (slice by slice, each `chunks` chunks): a thread stages whole 16-byte pieces.
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

template <class T, int NT>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::stream_block_threads, detail::stream_resident_blocks)
void pointwise_nhwc_stream(detail::pointwise_shape s, detail::stream_tile t, const T* __restrict__ x,
                           const T* __restrict__ weight, const T* __restrict__ bias, const T* __restrict__ residual,
                           T* __restrict__ y, T* __restrict__ pre) {
  namespace pf = platform;
  using words = pf::vec<unsigned, 4>;
  const int tid = static_cast<int>(pf::thread_idx().x), lane = tid % 32, warp = tid / 32;
  const int g = lane / 4;
  const int n0 = static_cast<int>(pf::block_idx().y) * 8 * NT;  // the slice's first output channel
  const int K = s.c_in, N = s.c_out;

  // The slice's weights in the lanes' order.
  unsigned* w_s = pf::dynamic_shared<unsigned>();
  detail::stage_stream_weights(w_s, weight, K, n0, 1, t.chunks, NT, t.aligned);
  pf::sync_threads();

  // The lane's biases: channels 2 NT t .. + 2 NT - 1 of the slice, tile j's pair at 2 j.
  const int c0 = n0 + 2 * NT * (lane % 4);
  float b[2 * NT];
  DSCONV_UNROLL
  for (int e = 0; e < 2 * NT; ++e) b[e] = bias ? to_float(pf::load(bias + c0 + e)) : 0.f;

  const index_t pixels = static_cast<index_t>(s.n) * s.h * s.w;
  int tile = static_cast<int>(pf::block_idx().x) * static_cast<int>(pf::block_dim().x / 32) + warp;
  if (tile >= t.tiles) return;
  const auto load_chunk = [&](int tl, int k, words (&a)[4]) {
    detail::load_stream_chunk(x, K, pixels, tl, k, lane, t.aligned, a);
  };
  float acc[2][NT][4];
  const auto clear = [&] {
    DSCONV_UNROLL
    for (int i = 0; i < 2; ++i)
      DSCONV_UNROLL
      for (int j = 0; j < NT; ++j)
        DSCONV_UNROLL
        for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;
  };
  // One chunk: the next chunk's loads (at the tile's last chunk, the next tile's first) go out
  // into `nxt` before the products of `cur`.
  const auto step = [&](int k, const words (&cur)[4], words (&nxt)[4]) {
    if (k + 1 < t.chunks)
      load_chunk(tile, k + 1, nxt);
    else if (tile + t.warps < t.tiles)
      load_chunk(tile + t.warps, 0, nxt);
    detail::stream_chunk_products<T, NT>(cur, w_s + detail::stream_weight_word(k, 0, NT, lane), acc);
  };
  // Two buffers of a chunk's A words, in turn (the chunk loop unrolled by two, so that no copy
  // moves them between iterations).
  words even[4], odd[4];
  load_chunk(tile, 0, even);
  for (;;) {
    clear();
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
    // Epilogue: lane (g, t) holds of m tile i rows g + 16 i (accumulators 0, 1) and g + 8 + 16 i
    // (2, 3), tile j's channels c0 + 2 j, + 1 of each.
    const index_t r0 = static_cast<index_t>(tile) * detail::stream_rows + g;
    float z[4][2 * NT];
    DSCONV_UNROLL
    for (int q = 0; q < 4; ++q)
      DSCONV_UNROLL
      for (int j = 0; j < NT; ++j) {
        const int i = q / 2, r = 2 * (q % 2);
        z[q][2 * j] = acc[i][j][r] + b[2 * j], z[q][2 * j + 1] = acc[i][j][r + 1] + b[2 * j + 1];
      }
    detail::with_stream_forms(s.act, t.aligned, [&](auto A, auto aligned) {
      detail::store_stream_rows<NT, decltype(A)>(z, r0 * N + c0, 8 * static_cast<index_t>(N),
                                                 detail::stream_rows_here(pixels - r0), residual, y, pre, aligned);
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
