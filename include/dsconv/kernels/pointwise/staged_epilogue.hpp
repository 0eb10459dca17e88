#pragma once
// The end of the matrix-unit GEMM kernel (gemm_mma.hpp): its BM x BN tile of C, accumulated
// in registers in the tensor cores' fragments, passes through shared memory, so that each
// thread then takes runs of 16 bytes of output along a row: one vector load of the residual and
// of a bias along n, one vector store, and the activation a compile-time constant (one switch a
// pass, not one an element). Stored straight from the fragments, a mma.sync lane held two
// columns of a row (4 bytes of half: half of every 32-byte sector written per store), each run
// switching on the activation per element: on a half 1x1 layer that expands 16 channels to 96
// the epilogue alone issued about 9 instructions per byte it stored. (The SIMT GEMM stores from
// its registers: its 128x128 tile's element form, at 255 registers on gfx906, spilled in passes.)
//
// Shared memory: rows of BN floats, BN + 8 apart (8 banks mod 32), rows 4-7 of every 8 with
// column c at c ^ 20 (16-byte chunks swapped in pairs, and the halves of each 32 columns: c ^ 4
// would do for the fragments; the 20 also kept apart a SIMT element form's rows 4 apart, which
// the host platform's bank test checked while the SIMT tile used this). No side meets a bank
// conflict: the fragment writes (mma.sync: 8-byte pairs, a half-warp's 16 lanes on 4 rows;
// MFMA: 16-byte runs, 8 lanes a phase on 8 rows) and the row reads (8 lanes a phase, lane l on
// row l % 8 of the same chunk column).
// Where the kernel's shared memory cannot hold the whole tile it goes in passes of whole
// 8-row groups (rows_per_pass), a barrier between passes.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../common/activation.hpp"
#include "gemm_epilogue.hpp"
#include "gemm_operands.hpp"

namespace dsconv {
namespace kernels {

// OperandWords: 4-byte words of shared memory the kernel's main loop uses (the staging may
// take more, up to cap_words, to go in fewer passes: see words).
template <int BM, int BN, int THREADS, int OperandWords>
struct staged_tile {
  static constexpr int pitch = BN + 8;
  // The operands' memory, or more, up to 34 KiB: the 64x64 tiles take the whole tile in one
  // pass (18 KiB where their operands had 17, the same resident blocks), the 128x128 tiles two
  // passes of 64 rows (they reside one block a multiprocessor, by registers), not six.
  static constexpr int cap_words = 8704;
  static constexpr int whole_words = BM * pitch;
  static constexpr int wanted_words = whole_words < cap_words ? whole_words : cap_words;
  static constexpr int words = wanted_words > OperandWords ? wanted_words : OperandWords;
  static constexpr int rows_per_pass = words / pitch / 8 * 8 < BM ? words / pitch / 8 * 8 : BM;
  static constexpr int passes = (BM + rows_per_pass - 1) / rows_per_pass;
  static_assert(rows_per_pass >= 8, "a pass holds at least one 8-row group");
  static_assert(BN % 32 == 0, "rows are whole bank rounds (the pitch keeps 8 banks mod 32)");

  // Column c of row r (c a multiple of the run it starts: runs of 2 and 4 stay whole).
  static DSCONV_DEVICE DSCONV_FORCEINLINE float* at(float* s, int r, int c) {
    return s + r * pitch + (c ^ (r & 4 ? 20 : 0));
  }

  // Stores the tile through out: write(s, r0, rows) puts each accumulator of tile rows
  // [r0, r0 + rows) at at(s, row - r0, column) (the calling kernel's arrangement); then runs of
  // V consecutive columns (16 bytes of output) go to out.store_run. Called by every thread
  // after a barrier past the main loop (the operand tiles free); ends without a barrier.
  template <class Out, class Write>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void store(float* s, int tid, const Out& out, const detail::gemm_operands& g,
                                                     const gemm_block& blk, index_t m0, index_t n0, Write write) {
    using value_type = typename Out::value_type;
    constexpr int V = 16 / static_cast<int>(sizeof(value_type));
    constexpr int runs_per_row = BN / V;
    static_assert(BN % V == 0 && V % 4 == 0, "rows are whole runs of 16-byte chunks");
    DSCONV_UNROLL  // (each pass's rows known at compile time: write's tests of them fold)
    for (int pass = 0; pass < passes; ++pass) {
      const int r0 = pass * rows_per_pass;
      const int rows = BM - r0 < rows_per_pass ? BM - r0 : rows_per_pass;
      if (pass > 0) platform::sync_threads();  // the previous pass's reads are done
      write(s, r0, rows);
      platform::sync_threads();
      // A thread's runs: column run j of rows r_first, r_first + step, ... (runs u = tid +
      // i * THREADS of rows' 8-row groups, u % 8 the row in its group), so that the column, the
      // swizzle and the shared-memory offsets are the same for all of them, and the rows and
      // C's offsets move by constants (a run's epilogue took about 46 instructions on sm_90
      // when each decoded its place afresh, 35 now). (Rows `step` apart, a multiple of 8, have
      // the same swizzle.) Not unrolled: that saved about 37 instructions a tile for 2.6 times
      // the kernels' code (each copy holds every activation's and the element-wise stores).
      static_assert(THREADS % (8 * runs_per_row) == 0, "a thread's runs lie in one column");
      constexpr int step = THREADS / runs_per_row;
      const int j = tid / 8 % runs_per_row, r_first = tid / (8 * runs_per_row) * 8 + tid % 8;
      const index_t m_first = m0 + r0 + r_first, n = n0 + j * V;
      detail::with_activation(g.act, [&](auto act) {
        for (int i = 0; i < (rows_per_pass + step - 1) / step; ++i) {
          if (r_first + i * step >= rows) break;
          platform::vec<float, V> v;
          DSCONV_UNROLL
          for (int q = 0; q < V; q += 4) {
            const float* chunk_at = at(s, r_first, j * V + q) + i * step * pitch;
            const platform::vec<float, 4> chunk =
                platform::shared_load(reinterpret_cast<const platform::vec<float, 4>*>(chunk_at));
            DSCONV_UNROLL
            for (int e = 0; e < 4; ++e) v[q + e] = chunk[e];
          }
          const index_t m = m_first + i * step;
          if (m < g.m) out.template store_run<V>(g, blk, m, n, v, act);
        }
      });
    }
  }
};

}  // namespace kernels
}  // namespace dsconv
