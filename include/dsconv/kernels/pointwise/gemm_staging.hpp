#pragma once
// Staging of one GEMM operand tile, shared by the tiled GEMM kernels: a ROWS x COLS tile of a
// matrix given by strides is loaded from global memory into registers (zero outside the
// matrix), spread evenly over the block's THREADS, and later written to shared memory in
// whatever arrangement the kernel's inner loop wants. Splitting the two steps lets a kernel
// load the next tile while it multiplies the current one (double buffering).

#include "../../config.hpp"
#include "../../platform/platform.hpp"

namespace dsconv {
namespace kernels {

struct tile_position {
  int r, c;
};

// ColsContiguous: whether consecutive columns are adjacent in global memory (column stride
// 1) or consecutive rows are (row stride 1). A compile-time fact, so that the loads carry no
// run-time choice between two address patterns.
template <int ROWS, int COLS, int THREADS, bool ColsContiguous>
struct operand_tile {
  static constexpr int per_thread = ROWS * COLS / THREADS;
  static_assert(ROWS * COLS % THREADS == 0, "tile loads must split evenly over the threads");

  // Element `i` of the tile, numbered along the contiguous dimension, so consecutive threads
  // load consecutive addresses.
  static DSCONV_DEVICE DSCONV_FORCEINLINE tile_position position(int i) {
    if constexpr (ColsContiguous)
      return tile_position{i / COLS, i % COLS};
    else
      return tile_position{i % ROWS, i / ROWS};
  }

  // Loads this thread's share of the tile whose corner is (row0, col0) of a rows x cols matrix
  // whose non-contiguous dimension has stride `stride`; `convert` turns an element (zero
  // outside the matrix) into the staged value.
  template <class T, class Stage, class Convert>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void fetch(Stage (&regs)[per_thread], const T* base, index_t row0, index_t col0,
                                                     index_t rows, index_t cols, index_t stride, int tid,
                                                     Convert convert) {
    DSCONV_UNROLL
    for (int j = 0; j < per_thread; ++j) {
      const tile_position t = position(tid + j * THREADS);
      const index_t r = row0 + t.r, c = col0 + t.c;
      T v = T(0.f);
      if (r < rows && c < cols) v = platform::load(base + (ColsContiguous ? r * stride + c : r + c * stride));
      regs[j] = convert(v);
    }
  }

  // Hands each staged value to put(row, col, value), rows and columns relative to the tile.
  template <class Stage, class Put>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void stash(const Stage (&regs)[per_thread], int tid, Put put) {
    DSCONV_UNROLL
    for (int j = 0; j < per_thread; ++j) {
      const tile_position t = position(tid + j * THREADS);
      put(t.r, t.c, regs[j]);
    }
  }
};

}  // namespace kernels
}  // namespace dsconv
