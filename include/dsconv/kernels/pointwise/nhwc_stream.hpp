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
  const int g = lane / 4, lane_k = detail::stream_lane_k(lane);
  const int n0 = static_cast<int>(pf::block_idx().y) * 8 * NT;  // the slice's first output channel
  const int K = s.c_in, N = s.c_out;

  // The slice's weights in the lanes' order: a thread stages whole 16-byte pieces.
  unsigned* w_s = pf::dynamic_shared<unsigned>();
  const int pieces = NT * t.chunks * 32;
  for (int i = tid; i < pieces; i += static_cast<int>(pf::block_dim().x)) {
    const int l = i % 32, j = i / 32 % NT, k = i / 32 / NT;
    const int n = n0 + detail::stream_channel(j, l / 4, NT);
    const int k0 = k * detail::stream_chunk + detail::stream_lane_k(l);
    const words v = k0 < K ? detail::load_words<4>(weight + static_cast<index_t>(n) * K + k0, t.aligned) : words{};
    DSCONV_UNROLL
    for (int e = 0; e < 4; ++e) pf::shared_store(w_s + detail::stream_weight_word(k, j, NT, l) + e, v[e]);
  }
  pf::sync_threads();

  // The lane's biases: channels 2 NT t .. + 2 NT - 1 of the slice, tile j's pair at 2 j.
  const int c0 = n0 + 2 * NT * (lane % 4);
  float b[2 * NT];
  DSCONV_UNROLL
  for (int e = 0; e < 2 * NT; ++e) b[e] = bias ? to_float(pf::load(bias + c0 + e)) : 0.f;

  const index_t pixels = static_cast<index_t>(s.n) * s.h * s.w, row_step = 8 * static_cast<index_t>(K);
  int tile = static_cast<int>(pf::block_idx().x) * static_cast<int>(pf::block_dim().x / 32) + warp;
  if (tile >= t.tiles) return;
  // Chunk k of tile `tl` into `a`: rows g, g + 8, g + 16, g + 24 of its 32 pixels. A full chunk
  // of a whole tile on aligned tensors (all but the last tile's, and the last, partial chunk)
  // takes its four 16-byte loads without checks.
  const auto load_chunk = [&](int tl, int k, words (&a)[4]) {
    const index_t r0 = static_cast<index_t>(tl) * detail::stream_rows + g;
    const int k0 = k * detail::stream_chunk;
    if (t.aligned && (static_cast<index_t>(tl) + 1) * detail::stream_rows <= pixels && k0 + detail::stream_chunk <= K) {
      const unsigned* p = reinterpret_cast<const unsigned*>(x + r0 * K + k0 + lane_k);
      DSCONV_UNROLL
      for (int q = 0; q < 4; ++q) a[q] = pf::load_vec<4>(p + q * row_step / detail::elements_per_word<T>());
    } else {
      DSCONV_UNROLL
      for (int q = 0; q < 4; ++q)
        a[q] = detail::stream_load(x + k0, K, r0 + 8 * q, pixels, lane_k, K - k0, t.aligned);
    }
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
    const unsigned* wk = w_s + detail::stream_weight_word(k, 0, NT, lane);
    DSCONV_UNROLL
    for (int j = 0; j < NT; ++j) {
      const words bw = pf::shared_load_as<words>(wk + j * 32 * 4);
      DSCONV_UNROLL
      for (int h = 0; h < 2; ++h) {  // the chunk's two k16 products
        const unsigned bf[2] = {bw[2 * h], bw[2 * h + 1]};
        DSCONV_UNROLL
        for (int i = 0; i < 2; ++i) {  // the two m16 tiles: rows g, g + 8 / g + 16, g + 24
          const unsigned af[4] = {cur[2 * i][2 * h], cur[2 * i + 1][2 * h], cur[2 * i][2 * h + 1],
                                  cur[2 * i + 1][2 * h + 1]};
          pf::mma_16x8x16<T>(acc[i][j], af, bf);
        }
      }
    }
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
    // (2, 3), tile j's channels c0 + 2 j, + 1 of each. The activation is a compile-time constant
    // in each copy (A), so its switch folds away.
    const auto epilogue = [&](auto A) {
      DSCONV_UNROLL
      for (int q = 0; q < 4; ++q) {
        const index_t row = static_cast<index_t>(tile) * detail::stream_rows + g + 8 * q;
        if (row >= pixels) continue;
        const int i = q / 2, r = 2 * (q % 2);
        float z[2 * NT];
        DSCONV_UNROLL
        for (int j = 0; j < NT; ++j) z[2 * j] = acc[i][j][r] + b[2 * j], z[2 * j + 1] = acc[i][j][r + 1] + b[2 * j + 1];
        const index_t at = row * N + c0;
        unsigned w[NT];
        if (residual) {
          detail::load_slice<NT>(residual + at, w, t.aligned);
          DSCONV_UNROLL
          for (int j = 0; j < NT; ++j) {
            float f[2];
            detail::widen<T>(w[j], f);
            z[2 * j] += f[0], z[2 * j + 1] += f[1];
          }
        }
        if (pre) {
          DSCONV_UNROLL
          for (int j = 0; j < NT; ++j) w[j] = detail::narrow<T>(z + 2 * j);
          detail::store_slice<NT>(pre + at, w, t.aligned);
        }
        DSCONV_UNROLL
        for (int e = 0; e < 2 * NT; ++e) z[e] = detail::activate(z[e], decltype(A)::value);
        DSCONV_UNROLL
        for (int j = 0; j < NT; ++j) w[j] = detail::narrow<T>(z + 2 * j);
        detail::store_slice<NT>(y + at, w, t.aligned);
      }
    };
    detail::with_activation(s.act, epilogue);
    tile += t.warps;
    if (tile >= t.tiles) break;
  }
}

}  // namespace kernels
}  // namespace dsconv
