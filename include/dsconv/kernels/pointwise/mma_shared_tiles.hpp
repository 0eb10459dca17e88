#pragma once
// How the matrix-unit GEMM (gemm_mma.hpp) lays out one K stage (RowBytes of operand per row:
// 32, or 64 where stages are copied asynchronously) of its operand tiles in shared memory, so
// that neither the staging stores nor the fragment loads meet a bank conflict (the host
// platform's bank model checks it on every layer):
//
//   k_rows    rows of RowBytes, k-contiguous: A always, B where it arrives k-contiguous (the
//             NHWC form). No padding: instead the 8-byte units of row r are permuted, unit u
//             stored at u ^ Unit::swizzle<RowBytes>(r). mma.sync reads 8 rows x 16 bytes per
//             8x8 matrix of ldmatrix, MFMA 16 rows x 8 bytes per fragment load; the swizzle spreads either over all 32
//             banks, and keeps the staging's 8- and 16-byte stores (4 or 8 rows a phase)
//             conflict-free. (Padding rows to 48 bytes, as before, left 2-way conflicts on the
//             stores and on every MFMA fragment load.)
//   n_rows    rows of BN elements, n-contiguous: B where it arrives n-contiguous (the NCHW
//             form), staged as it comes instead of transposed (each transposed 2-byte store
//             was a 16-way conflict). Rows padded by 8 elements, which puts the k rows a
//             fragment reads (4 or 8 of them, one element per lane, or 8 rows of 16 bytes
//             for ldmatrix) in distinct banks and keeps 16-byte runs aligned.
// Either can be viewed from k0 on (a unit's K step of a stage that holds two): the fragment
// loads then read k0 + k.

#include "../../config.hpp"
#include "../../platform/platform.hpp"

namespace dsconv {
namespace kernels {

template <class S, int ROWS, class Unit, int RowBytes = 32>
struct k_rows {
  static constexpr int row_elements = RowBytes / static_cast<int>(sizeof(S));  // one K stage
  static constexpr int unit_elements = 8 / static_cast<int>(sizeof(S));
  static constexpr int elements = ROWS * row_elements;
  S* base;
  int k0 = 0;

  // Element k of row r. Where the swizzle keeps 16-byte runs whole (mma.sync's), the run
  // k .. k + 16 bytes (k a multiple of it) starts there: an asynchronous copy's destination.
  DSCONV_DEVICE DSCONV_FORCEINLINE S* at(int r, int k) const {
    const int unit = ((k0 + k) / unit_elements) ^ Unit::template swizzle<RowBytes>(r);
    return base + r * row_elements + unit * unit_elements + k % unit_elements;
  }

  // Stores the V elements k .. k + V - 1 of row r (k a multiple of V): 16 bytes as one store
  // (its two 8-byte units swapped where the swizzle swaps them), 8 bytes as one, less
  // element by element.
  template <int V>
  DSCONV_DEVICE DSCONV_FORCEINLINE void store_run(int r, int k, const platform::vec<S, V>& run) const {
    constexpr int bytes = V * static_cast<int>(sizeof(S));
    if constexpr (bytes == 16) {
      const int swizzle = Unit::template swizzle<RowBytes>(r);
      const bool swap = swizzle & 1;
      // As words: a swap of 16-bit elements took a byte permute each on sm_90, and the store
      // split into three. (Indices known at compile time: indexing by a run-time value put
      // the run in scratch memory on AMD.)
      platform::vec<unsigned, 4> words, placed;
      __builtin_memcpy(&words, &run, sizeof words);
      DSCONV_UNROLL
      for (int w = 0; w < 4; ++w) placed[w] = swap ? words[(w + 2) % 4] : words[w];
      const int first_unit = ((k0 + k) / unit_elements) ^ (swizzle & ~1);
      platform::shared_store(
          reinterpret_cast<platform::vec<unsigned, 4>*>(base + r * row_elements + first_unit * unit_elements), placed);
    } else if constexpr (bytes == 8) {
      platform::shared_store(reinterpret_cast<platform::vec<S, V>*>(at(r, k)), run);
    } else {
      DSCONV_UNROLL
      for (int e = 0; e < V; ++e) platform::shared_store(at(r, k + e), run[e]);
    }
  }
};

template <class S, int K_ROWS, int N>
struct n_rows {
  static constexpr int pitch = N + 8;
  static constexpr int elements = K_ROWS * pitch;
  S* base;
  int k0 = 0;

  // Element n of row k.
  DSCONV_DEVICE DSCONV_FORCEINLINE S* at(int k, int n) const { return base + (k0 + k) * pitch + n; }

  // Stores the V elements n .. n + V - 1 of row k (n a multiple of V) as one store.
  template <int V>
  DSCONV_DEVICE DSCONV_FORCEINLINE void store_run(int k, int n, const platform::vec<S, V>& run) const {
    platform::shared_store(reinterpret_cast<platform::vec<S, V>*>(at(k, n)), run);
  }
};

}  // namespace kernels
}  // namespace dsconv
