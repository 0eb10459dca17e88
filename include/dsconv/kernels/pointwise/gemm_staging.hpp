#pragma once
// Staging of one GEMM operand tile, shared by the tiled GEMM kernels: a ROWS x COLS tile of a
// matrix given by strides is loaded from global memory into registers (zero outside the
// matrix), spread evenly over the block's THREADS, and later written to shared memory in
// whatever arrangement the kernel's inner loop wants. Splitting the two steps lets a kernel
// load the next tile while it multiplies the current one (double buffering).
// With V > 1 a thread loads runs of V elements that are consecutive in memory, one vector
// load each (element by element where a run crosses the matrix edge): for operands whose rows
// are aligned for it. With V = 1 it loads single elements THREADS apart, so that consecutive
// threads read consecutive addresses whatever the alignment. The dispatcher picks the form
// (the tiles' element_form), so odd channel counts and misaligned pointers never fail.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../common/gradient_gate.hpp"

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
  static constexpr int rows = ROWS, cols = COLS, run_elements = V;
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
  // The first element of this thread's run j; the run's elements follow it in memory.
  static DSCONV_DEVICE DSCONV_FORCEINLINE int run_start(int tid, int j) { return (tid + j * THREADS) * V; }

  // This thread's run j of the tile whose corner is (row0, col0) of a rows x cols matrix whose
  // non-contiguous dimension has stride `stride`: its place in the tile, its first element's
  // offset in the matrix, and how many of its V elements lie inside the matrix.
  struct placed_run {
    tile_position t;
    index_t offset;
    int inside;
  };
  static DSCONV_DEVICE DSCONV_FORCEINLINE placed_run place(int tid, int j, index_t row0, index_t col0, index_t rows,
                                                         index_t cols, index_t stride) {
    const tile_position t = position(run_start(tid, j));
    const index_t r = row0 + t.r, c = col0 + t.c;
    const index_t along = ColsContiguous ? c : r, extent = ColsContiguous ? cols : rows;
    const bool line_inside = ColsContiguous ? r < rows : c < cols;
    const index_t left = line_inside && along < extent ? extent - along : 0;
    return placed_run{t, ColsContiguous ? r * stride + c : r + c * stride, static_cast<int>(left < V ? left : V)};
  }

  // Loads this thread's share of the tile (rows aligned to V elements when V > 1); `convert`
  // turns an element (zero outside the matrix) into the staged value.
  template <class T, class Stage, class Convert>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void fetch(Stage (&regs)[per_thread], const T* base, index_t row0, index_t col0,
                                                     index_t rows, index_t cols, index_t stride, int tid,
                                                     Convert convert) {
    DSCONV_UNROLL
    for (int j = 0; j < runs; ++j) {
      const placed_run run = place(tid, j, row0, col0, rows, cols, stride);
      const platform::vec<T, V> x = load_run(base + run.offset, run.inside);
      DSCONV_UNROLL
      for (int e = 0; e < V; ++e) regs[j * V + e] = convert(x[e]);
    }
  }

  // fetch of an operand that is dL/dy, multiplied as it is read by act'(gate), `gate` the
  // tensor the forward saved, laid out as the operand (dL/dz, rounded to Stage).
  template <class T, class Stage>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void fetch_gated(Stage (&regs)[per_thread], const T* base, const T* gate,
                                                           activation act, index_t row0, index_t col0, index_t rows,
                                                           index_t cols, index_t stride, int tid) {
    DSCONV_UNROLL
    for (int j = 0; j < runs; ++j) {
      const placed_run run = place(tid, j, row0, col0, rows, cols, stride);
      const platform::vec<float, V> dz =
          detail::gate_run<V>(load_run(base + run.offset, run.inside), load_run(gate + run.offset, run.inside), act);
      DSCONV_UNROLL
      for (int e = 0; e < V; ++e) regs[j * V + e] = Stage(dz[e]);
    }
  }

  // fetch_gated where `gate` is set, else fetch. CanGate: whether the kernel ever gates this
  // operand (only then is the gated code compiled into it).
  template <bool CanGate, class T, class Stage, class Convert>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void fetch_operand(Stage (&regs)[per_thread], const T* base, const T* gate,
                                                             activation act, index_t row0, index_t col0, index_t rows,
                                                             index_t cols, index_t stride, int tid, Convert convert) {
    if constexpr (CanGate)
      if (gate) return fetch_gated(regs, base, gate, act, row0, col0, rows, cols, stride, tid);
    fetch(regs, base, row0, col0, rows, cols, stride, tid, convert);
  }

  // The V elements at p of which `inside` lie inside the matrix (zero past them): one vector
  // load where all do (rows are aligned to V elements then), else element by element.
  template <class T>
  static DSCONV_DEVICE DSCONV_FORCEINLINE platform::vec<T, V> load_run(const T* p, int inside) {
    if (V > 1 && inside == V) return platform::load_vec<V>(p);
    platform::vec<T, V> x;
    DSCONV_UNROLL
    for (int e = 0; e < V; ++e) x[e] = e < inside ? platform::load(p + e) : T(0.f);
    return x;
  }

  // The same share copied straight to shared memory, asynchronously where the target can
  // (platform/async_copy.hpp): run j to at(row, col), its 16 bytes zero past the matrix.
  template <class T, class At>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void copy_runs(const T* base, index_t row0, index_t col0, index_t rows,
                                                         index_t cols, index_t stride, int tid, At at) {
    static_assert(V * sizeof(T) == 16, "asynchronous copies move 16-byte runs");
    DSCONV_UNROLL
    for (int j = 0; j < runs; ++j) {
      const placed_run run = place(tid, j, row0, col0, rows, cols, stride);
      // (a valid address where nothing is read: the matrix itself)
      const T* p = run.inside ? base + run.offset : base;
      platform::async_copy_16(at(run.t.r, run.t.c), p, run.inside * static_cast<int>(sizeof(T)));
    }
  }

  // Hands each staged value to put(row, col, value), rows and columns relative to the tile.
  template <class Stage, class Put>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void stash(const Stage (&regs)[per_thread], int tid, Put put) {
    DSCONV_UNROLL
    for (int j = 0; j < runs; ++j)
      DSCONV_UNROLL
      for (int e = 0; e < V; ++e) {
        const tile_position t = position(run_start(tid, j) + e);
        put(t.r, t.c, regs[j * V + e]);
      }
  }

  // Calls at(j, row, col) with the place of each of this thread's runs in the tile.
  template <class At>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void stash_places(int tid, At at) {
    DSCONV_UNROLL
    for (int j = 0; j < runs; ++j) {
      const tile_position t = position(run_start(tid, j));
      at(j, t.r, t.c);
    }
  }

  // Hands each run to put(row, col, run): the V values that follow (row, col) along the
  // contiguous dimension, for a shared-memory arrangement contiguous along it too (one vector
  // store a run).
  template <class Stage, class Put>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void stash_runs(const Stage (&regs)[per_thread], int tid, Put put) {
    DSCONV_UNROLL
    for (int j = 0; j < runs; ++j) {
      platform::vec<Stage, V> run;
      DSCONV_UNROLL
      for (int e = 0; e < V; ++e) run[e] = regs[j * V + e];
      const tile_position t = position(run_start(tid, j));
      put(t.r, t.c, run);
    }
  }
};

}  // namespace kernels
}  // namespace dsconv
