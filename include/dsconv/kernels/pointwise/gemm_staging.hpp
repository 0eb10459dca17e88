#pragma once
// Staging of one GEMM operand tile, shared by the tiled GEMM kernels: a ROWS x COLS tile of a
// matrix given by strides is loaded from global memory into registers (zero outside the
// matrix), spread evenly over the block's THREADS, and later written to shared memory in
// whatever arrangement the kernel's inner loop wants. Splitting the two steps lets a kernel
// load the next tile while it multiplies the current one (double buffering).
// Where the operand's rows are aligned for it (the dispatcher measures the alignment:
// gemm_operands::a_align / b_align), a thread loads runs of V elements that are consecutive in
// memory, one vector load each (element by element where a run crosses the matrix edge);
// otherwise single elements, THREADS apart so that consecutive threads read consecutive
// addresses. Odd channel counts and misaligned pointers thus take the same kernel.

#include "../../config.hpp"
#include "../../platform/platform.hpp"

namespace dsconv {
namespace kernels {

struct tile_position {
  int r, c;
};

// The widest run (at most 16 bytes) that divides a thread's share of a ROWS x COLS tile.
template <class T, int ROWS, int COLS, int THREADS>
DSCONV_HOST_DEVICE constexpr int staging_run() {
  int v = 16 / static_cast<int>(sizeof(T));
  while (v > 1 && (ROWS * COLS / THREADS) % v != 0) v /= 2;
  return v;
}

// ColsContiguous: whether consecutive columns are adjacent in global memory (column stride
// 1) or consecutive rows are (row stride 1). A compile-time fact, so that the loads carry no
// run-time choice between two address patterns. V: elements per run.
template <int ROWS, int COLS, int THREADS, bool ColsContiguous, int V>
struct operand_tile {
  static constexpr int per_thread = ROWS * COLS / THREADS;
  static constexpr int runs = per_thread / V;
  static_assert(ROWS * COLS % THREADS == 0, "tile loads must split evenly over the threads");
  static_assert(per_thread % V == 0 && (ColsContiguous ? COLS : ROWS) % V == 0, "runs must tile the tile");

  // Element `i` of the tile, numbered along the contiguous dimension, so consecutive threads
  // load consecutive addresses.
  static DSCONV_DEVICE DSCONV_FORCEINLINE tile_position position(int i) {
    if constexpr (ColsContiguous)
      return tile_position{i / COLS, i % COLS};
    else
      return tile_position{i % ROWS, i / ROWS};
  }
  // Whether rows aligned to `align` bytes allow this tile's vector loads of T.
  template <class T>
  static DSCONV_DEVICE DSCONV_FORCEINLINE bool vector_loads(int align) {
    return V > 1 && align >= V * static_cast<int>(sizeof(T));
  }
  // The tile element that a thread's staged value j is: with vector loads, element j % V of
  // its run j / V (runs start (tid + run * THREADS) * V); without, element tid + j * THREADS.
  static DSCONV_DEVICE DSCONV_FORCEINLINE int element(int tid, int j, bool vectors) {
    return vectors ? (tid + (j / V) * THREADS) * V + j % V : tid + j * THREADS;
  }

  // Loads this thread's share of the tile whose corner is (row0, col0) of a rows x cols matrix
  // whose non-contiguous dimension has stride `stride`; `convert` turns an element (zero
  // outside the matrix) into the staged value. vectors: vector_loads<T>(the rows' alignment).
  template <class T, class Stage, class Convert>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void fetch(Stage (&regs)[per_thread], const T* base, index_t row0, index_t col0,
                                                     index_t rows, index_t cols, index_t stride, bool vectors, int tid,
                                                     Convert convert) {
    if (!vectors) {
      DSCONV_UNROLL
      for (int j = 0; j < per_thread; ++j) {
        const tile_position t = position(element(tid, j, false));
        const index_t r = row0 + t.r, c = col0 + t.c;
        T v = T(0.f);
        if (r < rows && c < cols) v = platform::load(base + (ColsContiguous ? r * stride + c : r + c * stride));
        regs[j] = convert(v);
      }
      return;
    }
    DSCONV_UNROLL
    for (int run = 0; run < runs; ++run) {
      const tile_position t = position(element(tid, run * V, true));
      const index_t r = row0 + t.r, c = col0 + t.c;
      const index_t along = ColsContiguous ? c : r, extent = ColsContiguous ? cols : rows;
      const bool line_inside = ColsContiguous ? r < rows : c < cols;
      const T* p = base + (ColsContiguous ? r * stride + c : r + c * stride);
      if (line_inside && along + V <= extent) {
        const platform::vec<T, V> x = platform::load_vec<V>(p);
        DSCONV_UNROLL
        for (int e = 0; e < V; ++e) regs[run * V + e] = convert(x[e]);
      } else {
        DSCONV_UNROLL
        for (int e = 0; e < V; ++e)
          regs[run * V + e] = convert(line_inside && along + e < extent ? platform::load(p + e) : T(0.f));
      }
    }
  }

  // Hands each staged value to put(row, col, value), rows and columns relative to the tile;
  // vectors as for fetch.
  template <class Stage, class Put>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void stash(const Stage (&regs)[per_thread], int tid, bool vectors, Put put) {
    DSCONV_UNROLL
    for (int j = 0; j < per_thread; ++j) {
      const tile_position t = position(element(tid, j, vectors));
      put(t.r, t.c, regs[j]);
    }
  }
};

}  // namespace kernels
}  // namespace dsconv
