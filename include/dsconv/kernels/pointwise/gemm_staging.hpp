#pragma once
// Staging of one GEMM operand tile, shared by the tiled GEMM kernels: a ROWS x COLS tile of a
// matrix given by strides, spread evenly over the block's THREADS, is loaded step after step
// along K (k_cursor) from global memory into registers (zero outside the matrix) and later
// written to shared memory in whatever arrangement the kernel's inner loop wants, or copied
// straight there. Splitting load and store lets a kernel load the next tile while it
// multiplies the current one (double buffering).
// With V > 1 a thread loads runs of V elements that are consecutive in memory, one vector
// load each: for operands whose rows are aligned for it and hold whole runs. With V = 1 it
// loads single elements THREADS apart, so that consecutive threads read consecutive addresses
// whatever the alignment. The dispatcher picks the form (the tiles' element_form), so odd
// channel counts and misaligned pointers never fail.

#include <type_traits>

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

  // This thread's runs of a tile that moves along K step after step (both GEMM kernels),
  // placed once per block: a step then costs a run an address increment and a 32-bit test,
  // where placing each run afresh each step, with 64-bit bounds, offsets and byte counts, took
  // about 35 instructions a run on sm_90: over half of a half-precision step of 16-byte runs,
  // and 36 instructions a byte in the element form. Run j lies `shift` lines (rows where columns are
  // contiguous, else columns) after run 0, so one offset places them all. Rows hold whole runs
  // (detail::operand_alignment), so a run lies wholly inside the matrix or wholly outside.
  // KIsRows: K is the tile's rows (B) or its columns (A).
  template <bool KIsRows>
  struct k_cursor {
    static constexpr int shift = THREADS * V / (ColsContiguous ? COLS : ROWS);
    static_assert(THREADS * V % (ColsContiguous ? COLS : ROWS) == 0, "a thread's runs lie whole lines apart");
    // Whether K is the contiguous dimension, and whether the runs differ in k (else across K:
    // rows of A, columns of B).
    static constexpr bool k_contiguous = KIsRows != ColsContiguous;
    static constexpr bool runs_differ_in_k = KIsRows == ColsContiguous;
    index_t offset;  // run 0's first element in the current step, from the GEMM's operand
    int room;        // runs differing in k: whether run 0 lies inside the matrix across K (0 or 1);
                     // else the lines from run 0's to the matrix's end across K, at most 2^30
                     // (run j lies inside where j * shift < room)

    // The tile's corner (row0, col0), K's part of it the first step's k; `extent`: the matrix's
    // size across K (rows of A, columns of B).
    DSCONV_DEVICE DSCONV_FORCEINLINE k_cursor(index_t row0, index_t col0, index_t extent, index_t stride, int tid) {
      const tile_position t = position(run_start(tid, 0));
      const index_t r = row0 + t.r, c = col0 + t.c, across = KIsRows ? c : r;
      const index_t left = across < extent ? extent - across : 0;
      room = runs_differ_in_k ? left > 0 : static_cast<int>(left < (1 << 30) ? left : (1 << 30));
      offset = ColsContiguous ? r * stride + c : r + c * stride;
    }

    // Whether run j lies inside the matrix this step, `inside` of the step's K inside it (k
    // from tid: cheaper than a register held across the main loop).
    DSCONV_DEVICE DSCONV_FORCEINLINE bool inside_run(int j, int inside, int tid) const {
      const tile_position t = position(run_start(tid, 0));
      const int k = KIsRows ? t.r : t.c;
      if constexpr (runs_differ_in_k)
        return room && k + j * shift < inside;
      else
        return j * shift < room && k < inside;
    }
    // Run j's first element in the operand (or in a tensor laid out as it) at `base`.
    template <class T>
    DSCONV_DEVICE DSCONV_FORCEINLINE const T* run(const T* base, int j, index_t stride) const {
      return base + offset + j * (shift * stride);
    }

    // Copies this step's runs straight to shared memory, at(row, col), asynchronously where the
    // target can (platform/async_copy.hpp), zero outside the matrix (those copies read nothing
    // and take `base`, the matrix itself, as their valid address).
    template <class T, class At>
    DSCONV_DEVICE DSCONV_FORCEINLINE void copy(const T* base, int inside, index_t stride, int tid, At at) const {
      static_assert(V * sizeof(T) == 16, "asynchronous copies move 16-byte runs");
      DSCONV_UNROLL
      for (int j = 0; j < runs; ++j) {
        const tile_position t = position(run_start(tid, j));
        const bool whole = inside_run(j, inside, tid);
        platform::async_copy_16_whole(at(t.r, t.c), whole ? run(base, j, stride) : base, whole);
      }
    }

    // Loads this step's runs into registers, zero outside the matrix; `convert` turns an
    // element into the staged value. With `gate` (CanGate: the kernel gates this operand), each
    // element is dL/dy times act'(gate), gate laid out as the operand (dL/dz, rounded to Stage).
    template <bool CanGate, class T, class Stage, class Convert>
    DSCONV_DEVICE DSCONV_FORCEINLINE void fetch(Stage (&regs)[per_thread], const T* base, const T* gate, activation act,
                                                int inside, index_t stride, int tid, Convert convert) const {
      // (the runs' addresses by increments, and the gate's test once a step, not once a run:
      // either per run cost the element form a 64-bit multiplication or a branch an element)
      const index_t delta = shift * stride;
      const T* p = run(base, 0, stride);
      if constexpr (CanGate) {
        if (gate) {
          const T* q = run(gate, 0, stride);
          constexpr int W = V * static_cast<int>(sizeof(T)) / 4;  // (words of a run)
          if constexpr (W >= 1 && std::is_same<Stage, T>::value) {
            // relu's and relu6's 0/1 derivative word by word (gradient_gate.hpp's clamp gate:
            // two packed comparisons and two products a word of 16-bit elements on sm_90),
            // where gate_run's call per run widens, switches and narrows each element.
            if (detail::gate_kind_of(act) == detail::gate_kind::clamp) {
              const detail::register_gate clamp = detail::clamp_gate<T>(act);
              DSCONV_UNROLL
              for (int j = 0; j < runs; ++j, p += delta, q += delta) {
                const bool whole = inside_run(j, inside, tid);
                const auto dy = platform::load_vec_or_zero<W>(reinterpret_cast<const unsigned*>(p), whole);
                const auto saved = platform::load_vec_or_zero<W>(reinterpret_cast<const unsigned*>(q), whole);
                const platform::vec<unsigned, W> dz = detail::gated_words<T, detail::gate_kind::clamp, W>(dy, saved, clamp);
                __builtin_memcpy(&regs[j * V], &dz, sizeof dz);
              }
              return;
            }
          }
          DSCONV_UNROLL
          for (int j = 0; j < runs; ++j, p += delta, q += delta) {
            const bool whole = inside_run(j, inside, tid);
            const platform::vec<float, V> dz =
                detail::gate_run<V>(platform::load_vec_or_zero<V>(p, whole), platform::load_vec_or_zero<V>(q, whole), act);
            DSCONV_UNROLL
            for (int e = 0; e < V; ++e) regs[j * V + e] = Stage(dz[e]);
          }
          return;
        }
      }
      DSCONV_UNROLL
      for (int j = 0; j < runs; ++j, p += delta) {
        const platform::vec<T, V> x = platform::load_vec_or_zero<V>(p, inside_run(j, inside, tid));
        DSCONV_UNROLL
        for (int e = 0; e < V; ++e) regs[j * V + e] = convert(x[e]);
      }
    }
    // On `steps` steps, each `bk` further along K (`stride`: the operand's, as placed), none
    // of them into another of the GEMMs summed along K.
    DSCONV_DEVICE DSCONV_FORCEINLINE void next(int bk, index_t stride, index_t steps = 1) {
      offset += steps * (k_contiguous ? static_cast<index_t>(bk) : bk * stride);
    }
    // Whether run j lies inside the matrix across K: for the block, whatever the step.
    DSCONV_DEVICE DSCONV_FORCEINLINE bool inside_across(int j) const {
      return runs_differ_in_k ? room != 0 : j * shift < room;
    }
  };

  // This thread's runs over whole steps (gemm_mma.hpp): steps whose K lies wholly inside the
  // matrix, in one of the GEMMs summed along K, so that only a run's place across K, the same
  // for the block, can put it outside. Each run's source then moves by one addition a step,
  // where k_cursor's copy computes it from the offset and tests the step's K: on sm_90 that
  // was about 20 of the 64x64 tile's 114 instructions a 64-byte stage. A run outside the matrix
  // copies nothing from a place inside it, the same k on line 0 across K (cp.async takes a valid
  // address either way).
  template <class T>
  struct whole_step_runs {
    static_assert(V * sizeof(T) == 16, "asynchronous copies move 16-byte runs");
    const T* source[runs];
    bool inside[runs];
    index_t delta;

    // From the cursor `c` at the step whose first k is k0, of the GEMM at `base`.
    template <bool KIsRows>
    DSCONV_DEVICE DSCONV_FORCEINLINE whole_step_runs(const k_cursor<KIsRows>& c, const T* base, index_t k0, int bk,
                                                     index_t stride, int tid) {
      constexpr bool k_contiguous = k_cursor<KIsRows>::k_contiguous;
      delta = k_contiguous ? static_cast<index_t>(bk) : bk * stride;
      DSCONV_UNROLL
      for (int j = 0; j < runs; ++j) {
        const tile_position t = position(run_start(tid, j));
        const index_t k = k0 + (KIsRows ? t.r : t.c);
        inside[j] = c.inside_across(j);
        source[j] = inside[j] ? c.run(base, j, stride) : base + (k_contiguous ? k : k * stride);
      }
    }

    // Copies this step's runs to shared memory, at(row, col), and moves on to the next step.
    template <class At>
    DSCONV_DEVICE DSCONV_FORCEINLINE void copy(int tid, At at) {
      DSCONV_UNROLL
      for (int j = 0; j < runs; ++j) {
        const tile_position t = position(run_start(tid, j));
        platform::async_copy_16_whole(at(t.r, t.c), source[j], inside[j]);
        source[j] += delta;
      }
    }
  };

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
