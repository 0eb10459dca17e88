#pragma once
// Depthwise NHWC data gradient of stride 2, register-blocked (the variant nhwc_register's data
// gradient at stride 2): grad_input[iy][ix] sums w[ky][kx] dz[(iy + P - ky) / 2][(ix + P - kx) / 2]
// over the taps where both divisions are exact (transposed_taps.hpp), dz = grad_output (times
// act'() where the layer fused an activation, gated as it arrives: gradient_gate.hpp).
//
// A thread takes a block of 2 rows x TW = 4 columns (2 on AMD) of grad_input for one vector of
// channels, placed so that iy0 + P and ix0 + P are even: which taps reach which of its elements,
// and from which of the dz values it holds, is then known at compile time, and no element tests
// a tap. Row r of the block takes the taps ky = r + K - 1 - 2 d from dz row a - R + d (a = (iy0 +
// P) / 2, R = (K - 1) / 2, d = 0 .. R); column 2 m + (kx % 2) takes tap kx from dz column b - R +
// m + R - kx / 2. So the block reads R + 1 dz rows of TW / 2 + R vectors (on NVIDIA 2 x 3 for a
// 3x3 filter, 3 x 4 for 5x5), straight from global memory, each loaded, gated and widened once
// and multiplied into every element it reaches: K^2 multiply-adds a 2 x 2 quad of elements, the
// minimum (the shared-memory tiled kernel it replaces staged dz and read each element's taps
// from shared memory, with an index division per element). The block's elements leave as
// 16-byte stores (8-byte for 16-bit 5x5 filters, whose vectors are 4 channels so that the
// window's widened rows fit the registers, as the forward's at stride 1: register_vector).
//
// Blocks of grad_input rows start at row -(P % 2) (and columns at -(P % 2)): a block may hang
// one element over the map's first row or column, which it neither reads nor stores. The block's
// weights stage in shared memory as the forward's (stage_register_weights, not rotated), the
// threads take strips as the forward's threads take theirs (nhwc_register_tile), a strip here
// being a walk of walk_blocks blocks down a column of blocks (strip_cols its columns, image_row
// dividing by its walks down an image): the walk forms the addresses of its first block once and
// advances them a block at a time, and for 16-bit 5x5 filters keeps the R dz rows a block shares
// with the next (transposed_keeps_rows), its one new row a block copied into a ring in shared
// memory a block ahead (transposed_ring_stages). Counted (sm_90 SASS, scripts/sass_budget.py, an
// iteration of the walk): 16-bit 5x5 through the scale gate 378 instructions a block, 3.94 per
// DRAM byte, 128 bytes in flight a thread (the new row loaded into registers as the block began:
// 368, 3.83 and 64 bytes; 599 and 6.24 with a block a strip and every row loaded; 389 and 4.05
// with 64-bit steps between a row's columns and a block's stores: platform::unwidened), 3x3
// 2.1-2.4, float 1.1-2.9.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../platform/recomputed.hpp"
#include "../../problem.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/words.hpp"
#include "nhwc_register.hpp"

namespace dsconv {
namespace detail {

// Channels per thread: a 16-byte vector, but 8 bytes of a 16-bit type for 5x5 filters (the
// forward's register_vector at stride 1), and grad_input columns per block: 4, 2 on AMD (hipcc
// spilled the 5x5 blocks of 4 on gfx906, as it did the forward's strips: register_strip).
template <class T, int K>
DSCONV_HOST_DEVICE constexpr int transposed_vector() {
  return register_vector<T, K, 1>();
}
inline constexpr int transposed_columns =
#if defined(DSCONV_PLATFORM_HIP)
    2;
#else
    4;
#endif

// Whether a walk's consecutive blocks keep the (K - 1) / 2 dz rows they share, widened (kernel
// below): for 16-bit 5x5 filters on NVIDIA, where each dz row's loads, gate and widening had run
// (K + 1) / 2 times a walk (sm_90 through the scale gate, with the walk's addresses advanced:
// 460 instructions a block kept as gated words and widened again, 449 kept widened, 4.7 per
// DRAM byte; 420 once the block's addresses were advanced, not formed again). Not on AMD, whose
// loops over the window's rows are not unrolled (a kept row indexed at run time would live in
// scratch memory), nor for 3x3 filters or float (16-bit 3x3 blocks hold 120-126 registers of the
// 128; float 5x5 counts 2.2-3.1 a byte without). Kept rows move up a slot a block (some 35
// moves of the 420): a ring unrolled three blocks at a time spilled 2.4 KB on sm_90.
template <class T, int K>
DSCONV_HOST_DEVICE constexpr bool transposed_keeps_rows() {
#if defined(DSCONV_PLATFORM_HIP)
  return false;
#else
  return sizeof(T) == 2 && K == 5;
#endif
}

// Blocks of a walk whose new dz row (the one it does not keep from the block before) a
// thread's ring in shared memory holds, where transposed_keeps_rows: each row is copied
// asynchronously (platform::async_copy_whole) a block ahead of its products, so that two rows
// are in flight, 128 bytes a thread gated (64 ungated), 64 KiB a multiprocessor at two blocks
// of 256 threads, where a row loaded into registers as the block begins had kept 64 (32 KiB,
// two thirds of CUB's 48; registers held no second row: 122 of 128 taken). The ring takes 32
// KiB a block gated. One before sm_80, whose copies are a load and a store in the thread's
// order and whose 64 KiB of shared memory a multiprocessor would hold only one block of two.
DSCONV_HOST_DEVICE constexpr int transposed_ring_stages() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  return 1;
#else
  return 2;
#endif
}

// Whether strips whose columns all lie inside the map store without a test an element (a copy
// of the stores of their own): on NVIDIA; on AMD the second copy spilled 2 scalar registers
// (gfx90a, 16-bit 5x5 through the clamp gate).
inline constexpr bool transposed_whole_stores =
#if defined(DSCONV_PLATFORM_HIP)
    false;
#else
    true;
#endif

// dz rows whose loads a thread issues together: all of them on NVIDIA, one at a time on AMD
// (hipcc hoisted a 5x5 window's loads and spilled the gated float blocks on gfx906, as the
// forward's register_rows_unrolled).
template <int K>
DSCONV_HOST_DEVICE constexpr int transposed_rows_unrolled() {
#if defined(DSCONV_PLATFORM_HIP)
  return 1;
#else
  return (K + 1) / 2;
#endif
}

// The blocks of grad_input of height h, width w and padding (ph, pw) along each dimension:
// rows of 2 and columns of transposed_columns from -(pad % 2).
DSCONV_HOST_DEVICE constexpr int transposed_block_rows(int h, int ph) { return (h + ph % 2 + 1) / 2; }
DSCONV_HOST_DEVICE constexpr int transposed_block_cols(int w, int pw) {
  return (w + pw % 2 + transposed_columns - 1) / transposed_columns;
}

}  // namespace detail

namespace kernels {

template <class T, int K, detail::gate_kind G = detail::gate_kind::none>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::register_block_threads, detail::register_resident_blocks)
DSCONV_WAVES_PER_SIMD(detail::register_resident_blocks)
void depthwise_nhwc_register_transposed(detail::depthwise_shape s, detail::nhwc_register_tile t,
                                        const T* __restrict__ grad_output, detail::register_gate gate,
                                        const T* __restrict__ weight, T* __restrict__ grad_input) {
  namespace pf = platform;
  constexpr bool Gated = G != detail::gate_kind::none;
  constexpr int V = detail::transposed_vector<T, K>(), TW = detail::transposed_columns;
  constexpr int E = detail::elements_per_word<T>(), W = V / E;  // a vector's elements per word, its words
  constexpr int R = (K - 1) / 2, DW = TW / 2 + R;                  // dz rows before the block's; its dz columns
  constexpr int KR = detail::transposed_keeps_rows<T, K>() ? R : 0;     // the dz rows a block keeps for the next
  using words = pf::vec<unsigned, W>;
  // The ring of new dz rows (transposed_ring_stages): a thread's stage holds the row's DW
  // vectors, each with its saved tensor's beside it where gated (one 16-byte read), at
  // [stage][column][thread] (a warp's reads of a column: consecutive slots).
  constexpr bool Ring = KR > 0;
  constexpr int stages = detail::transposed_ring_stages(), threads = static_cast<int>(detail::register_block_threads);
  using slot = pf::vec<unsigned, Ring ? W * (Gated ? 2 : 1) : 1>;  // (16 bytes at most: the array's alignment)
  DSCONV_SHARED_ARRAY(slot, ring, [Ring ? stages * DW * threads : 1]);
  const detail::register_thread me =
      detail::stage_block_weights<K, V>(t, weight, static_cast<const T*>(nullptr), /*rotate=*/false);
  const float* w_s = me.taps;
  const int lane = me.lane;

  if (lane >= t.pixel_lanes) return;
  const int c = me.channel;
  const int block_rows = detail::transposed_block_rows(s.h, s.pad_h);
  const index_t row_pitch = static_cast<index_t>(s.w) * s.c, dz_pitch = static_cast<index_t>(s.out_w) * s.c;
  const unsigned first = me.strip_block * t.strips_per_thread * t.pixel_lanes + lane;
  for (int i = 0; i < t.strips_per_thread; ++i) {
    const unsigned strip = first + static_cast<unsigned>(i * t.pixel_lanes);
    if (strip >= static_cast<unsigned>(t.strips)) break;
    const unsigned row = t.strip_row.div(strip), n = t.image_row.div(row);
    // (the image's walks down a column: image_row's divisor)
    const int first_block = static_cast<int>(row - n * t.image_row.divisor) * t.walk_blocks;  // the walk's first block row
    const int ix0 = TW * static_cast<int>(strip - row * t.strip_cols) - s.pad_w % 2;
    const int ox0 = (ix0 + s.pad_w) / 2 - R;  // the dz window's first column
    const bool columns_inside = ox0 >= 0 && ox0 + DW <= s.out_w;
    const index_t image_at = static_cast<index_t>(n) * s.out_h * dz_pitch + c;
    const T* image = grad_output + image_at;
    const T* saved = Gated ? static_cast<const T*>(gate.saved) + image_at : nullptr;
    // grad_input's strip of columns ix0 .. ix0 + TW - 1 (those inside the map: from .. count - 1)
    // in the image's row 0.
    T* const out_column = grad_input + static_cast<index_t>(n) * s.h * row_pitch + static_cast<index_t>(ix0) * s.c + c;
    const bool columns_whole = ix0 >= 0 && ix0 + TW <= s.w;
    const int count = s.w - ix0, from = ix0 < 0 ? -ix0 : 0;
    // Block b's first grad_input row (from row -(P % 2)) and its dz window's first row: one dz row
    // further down for each block of the walk.
    const auto first_row = [&](int b) { return 2 * b - s.pad_h % 2; };
    const auto window_row = [&](int b) { return (first_row(b) + s.pad_h) / 2 - R; };

    // dz row oy of the window's columns as words, gated as they arrive: zeros outside dz; inside
    // (a constant at every call, so that the inlined copy has no checks): the row and the
    // window's columns lie inside dz. (A bool, not a compile-time type: cicc 13.0 crashed on this
    // lambda as a generic one called from the generic `rows`.)
    const auto load_row = [&](int oy, index_t at, words* raw, bool inside) {
      const auto load = [&](int j, index_t at) {
        raw[j] = detail::load_words<W>(image + at, t.aligned);
        if constexpr (Gated) raw[j] = detail::gated_words<T, G, W>(raw[j], detail::load_words<W>(saved + at, t.aligned), gate);
      };
      const bool row_inside = oy >= 0 && oy < s.out_h;
      if (inside || (row_inside && columns_inside)) {
        const int column = pf::unwidened(s.c);  // (a 32-bit step between the columns: one instruction an address)
        DSCONV_UNROLL
        for (int j = 0; j < DW; ++j) load(j, at + j * column);
      } else {
        DSCONV_UNROLL
        for (int j = 0; j < DW; ++j) {
          raw[j] = words{};  // zeros: outside dz
          if (row_inside && ox0 + j >= 0 && ox0 + j < s.out_w) load(j, at + j * s.c);
        }
      }
    };
    // The KR dz rows a block shares with the next (transposed_keeps_rows), widened: the walk's
    // first block's loaded here, each later block's kept from the one before, so that a walk
    // loads, gates and widens each dz row once.
    [[maybe_unused]] float kept[KR > 0 ? KR : 1][DW][V];
    DSCONV_UNROLL
    for (int d = 0; d < KR; ++d) {
      words raw[DW];
      const int oy = window_row(first_block) + d;
      load_row(oy, static_cast<index_t>(oy) * dz_pitch + static_cast<index_t>(ox0) * s.c, raw, false);
      DSCONV_UNROLL
      for (int j = 0; j < DW; ++j) detail::widen_words<T>(raw[j], kept[d][j]);
    }

    // The ring (transposed_ring_stages): the walk's next block's new dz row (d = R of its window)
    // into the next stage of the thread's ring, zeros outside dz: DW copies a tensor (tensors not
    // aligned to the vector: loaded element by element and stored). The row, its vectors at the
    // window's first column and the stage advance a call, as the walk's blocks; after a block's
    // call the stage is the one the block reads (its row was copied stages - 1 calls before).
    // Rows past the walk's last block's copy nothing. Steps of a row of dz (and two of
    // grad_input, the walk's stores) are 32-bit values (platform::unwidened; the refusal keeps
    // rows under 2^30 elements).
    const int walk_end = first_block + t.walk_blocks < block_rows ? first_block + t.walk_blocks : block_rows;
    slot* const my_ring = ring + static_cast<int>(pf::thread_idx().x);
    constexpr int stage_slots = DW * threads;
    [[maybe_unused]] int copy_oy = window_row(first_block) + R, ring_stage = 0;
    [[maybe_unused]] const int copy_end = window_row(walk_end) + R;
    // (the rows whose copies need no test: inside dz and before copy_end, where the window's
    // columns lie inside dz and the tensors are aligned; an empty range elsewhere)
    const bool columns_fast = columns_inside && t.aligned;
    [[maybe_unused]] const int fast_first = copy_oy > 0 ? copy_oy : 0, fast_end = copy_end < s.out_h ? copy_end : s.out_h;
    [[maybe_unused]] const unsigned fast_rows = columns_fast && fast_end > fast_first ? static_cast<unsigned>(fast_end - fast_first) : 0u;
    const index_t copy_first = static_cast<index_t>(copy_oy) * dz_pitch + static_cast<index_t>(ox0) * s.c;
    const int dz_step = pf::unwidened(s.out_w * s.c), out_step = pf::unwidened(2 * s.w * s.c);
    [[maybe_unused]] const T* copy_dz = image + copy_first;
    [[maybe_unused]] const T* copy_saved = Gated ? saved + copy_first : nullptr;
    // (copy_row and copy_next generic, `auto...`, so that only the forms with a ring, which call
    // them, compile their bodies)
    const auto copy_row = [&](auto...) {
      const int oy = copy_oy;
      const T* const dz = copy_dz;
      [[maybe_unused]] const T* const sv = copy_saved;
      slot* const to = my_ring + ring_stage;
      const auto piece = [&](int j, int tensor) { return reinterpret_cast<unsigned*>(to + j * threads) + tensor * W; };
      const int column = pf::unwidened(s.c);  // (as load_row's)
      if (static_cast<unsigned>(oy - fast_first) < fast_rows) {  // (the row's fast form: no test)
        DSCONV_UNROLL
        for (int j = 0; j < DW; ++j) {
          pf::async_copy_whole<W * 4>(piece(j, 0), reinterpret_cast<const unsigned*>(dz + j * column), true);
          if constexpr (Gated) pf::async_copy_whole<W * 4>(piece(j, 1), reinterpret_cast<const unsigned*>(sv + j * column), true);
        }
        return;
      }
      if (oy >= copy_end) return;
      // Rows at the edges, and all where the tensors are not aligned: each vector tested, its
      // place formed from the image's (the fast form's pointers would be copied for these: some
      // 4 instructions a block more in the fast form), outside dz zeros (a copy reading nothing
      // still takes a valid address: the image's first vector).
      const bool row_inside = oy >= 0 && oy < s.out_h;
      const index_t row_at = static_cast<index_t>(oy) * dz_pitch + static_cast<index_t>(ox0) * s.c;
      DSCONV_UNROLL
      for (int j = 0; j < DW; ++j) {
        const bool in = row_inside && ox0 + j >= 0 && ox0 + j < s.out_w;
        const index_t at = in ? row_at + j * s.c : 0;
        const auto one = [&](int tensor, const T* base) {
          if (t.aligned)
            pf::async_copy_whole<W * 4>(piece(j, tensor), reinterpret_cast<const unsigned*>(base + at), in);
          else
            pf::shared_store(reinterpret_cast<words*>(piece(j, tensor)), in ? detail::load_words<W>(base + at, false) : words{});
        };
        one(0, image);
        if constexpr (Gated) one(1, saved);
      }
    };
    // (advanced after the copies, whose addresses then need no second copy of the pointers)
    [[maybe_unused]] const auto copy_next = [&](auto...) {
      copy_row();
      ++copy_oy;
      copy_dz += dz_step;
      if constexpr (Gated) copy_saved += dz_step;
      if constexpr (stages == 2)
        ring_stage ^= stage_slots;
      else if constexpr (stages > 2)
        ring_stage = ring_stage + stage_slots == stages * stage_slots ? 0 : ring_stage + stage_slots;
    };
    if constexpr (Ring) {
      DSCONV_UNROLL
      for (int k = 0; k + 1 < stages; ++k) {
        copy_next();
        pf::async_copy_commit();  // (a group each, empty or not: the waits count groups)
      }
    }

    // (the block's first grad_input row, its window's first dz row and that row's offset at the
    // window's first column, advanced a block at a time)
    int iy0 = first_row(first_block), oy0 = window_row(first_block);
    index_t window_at = static_cast<index_t>(oy0) * dz_pitch + static_cast<index_t>(ox0) * s.c;
    T* out_row = out_column + static_cast<index_t>(iy0) * row_pitch;
    for (int b = first_block; b < walk_end;
         ++b, iy0 += 2, ++oy0, window_at += dz_pitch, out_row += out_step) {
      if constexpr (!detail::register_row_pointer) {  // (AMD: formed from the block's index, as the forward's rows)
        iy0 = first_row(b), oy0 = window_row(b);
        window_at = static_cast<index_t>(oy0) * dz_pitch + static_cast<index_t>(ox0) * s.c;
        out_row = out_column + static_cast<index_t>(iy0) * row_pitch;
      }
      if constexpr (Ring) {
        copy_next();  // (the row of the block stages - 1 on, into the stage the block before read)
        pf::async_copy_commit();
        pf::async_copy_wait_pending<stages - 1>();  // (this block's row has landed; only this thread reads it)
      }
      float acc[2][TW][V] = {};
      // The window's dz rows d = 0 .. R, widened and multiplied into the block's rows they reach:
      // the first KR the block before's (kept), the others loaded; the last KR kept for the next.
      const auto rows = [&](auto inside) {
        // (declared here: clang takes an unroll count from the lambda's own scope only)
        [[maybe_unused]] constexpr int row_unroll = detail::transposed_rows_unrolled<K>();  // (host: no pragma)
        DSCONV_UNROLL_BY(row_unroll)
        for (int d = 0; d <= R; ++d) {
          float in[DW][V];
          if (d < KR) {  // (register renaming on NVIDIA, whose loop over d is unrolled)
            DSCONV_UNROLL
            for (int j = 0; j < DW; ++j)
              DSCONV_UNROLL
              for (int e = 0; e < V; ++e) in[j][e] = kept[d][j][e];
          } else if constexpr (Ring) {  // (d == R: the block's new row, from the ring)
            const slot* const from = my_ring + ring_stage;
            DSCONV_UNROLL
            for (int j = 0; j < DW; ++j) {
              const slot got = pf::shared_load(from + j * threads);
              words raw, saved_raw;
              DSCONV_UNROLL
              for (int w = 0; w < W; ++w) raw[w] = got[w], saved_raw[w] = got[Gated ? W + w : w];
              if constexpr (Gated) raw = detail::gated_words<T, G, W>(raw, saved_raw, gate);
              detail::widen_words<T>(raw, in[j]);
            }
          } else {
            words raw[DW];
            load_row(oy0 + d, window_at + d * dz_pitch, raw, decltype(inside)::value);
            DSCONV_UNROLL
            for (int j = 0; j < DW; ++j) detail::widen_words<T>(raw[j], in[j]);
          }
          DSCONV_UNROLL
          for (int r = 0; r < 2; ++r) {
            const int ky = r + K - 1 - 2 * d;
            if (ky >= K) continue;  // (row 1 takes nothing from the window's first row)
            DSCONV_UNROLL
            for (int kx = 0; kx < K; ++kx) {
              float w[V];
              DSCONV_UNROLL
              for (int e = 0; e < V; ++e) w[e] = pf::shared_load(w_s + (ky * K + kx) * V + e);
              DSCONV_UNROLL
              for (int m = 0; m < TW / 2; ++m)
                DSCONV_UNROLL
                for (int e = 0; e < V; ++e) acc[r][2 * m + kx % 2][e] += in[R + m - kx / 2][e] * w[e];
            }
          }
          if (KR > 0 && d == R) {  // (the rows d < KR have been read: the kept rows move up by one)
            DSCONV_UNROLL
            for (int k = 0; k + 1 < KR; ++k)
              DSCONV_UNROLL
              for (int j = 0; j < DW; ++j)
                DSCONV_UNROLL
                for (int e = 0; e < V; ++e) kept[k][j][e] = kept[k + 1][j][e];
            DSCONV_UNROLL
            for (int j = 0; j < DW; ++j)
              DSCONV_UNROLL
              for (int e = 0; e < V; ++e) kept[KR > 0 ? KR - 1 : 0][j][e] = in[j][e];
          }
        }
      };
      if constexpr (Ring) {  // (no row is loaded here: the ring's copies tested the edges)
        rows(std::true_type{});
      } else if (columns_inside && oy0 + KR >= 0 && oy0 + R < s.out_h)
        rows(std::true_type{});
      else
        rows(std::false_type{});

      // The block's rows (those inside the map), at the strip's columns: where all lie inside the
      // map (every strip but those on its edges) without a test an element.
      // Whole: the block's rows and columns all inside the map. (Tested once a block, not a row:
      // ptxas formed the strip's columns again from its index for the second row's test, some
      // 17 instructions.)
      const auto store_rows = [&](auto whole) {
        DSCONV_UNROLL
        for (int r = 0; r < 2; ++r) {
          const int iy = iy0 + r;
          if (!decltype(whole)::value && (iy < 0 || iy >= s.h)) continue;
          T* const out = out_row + r * row_pitch;
          if constexpr (decltype(whole)::value)
            detail::store_strip<activation::none>(acc[r], out, static_cast<T*>(nullptr), false, pf::unwidened(s.c), TW, t.aligned);
          else
            detail::store_strip<activation::none>(acc[r], out, static_cast<T*>(nullptr), false, s.c, count, t.aligned, from);
        }
      };
      if (detail::transposed_whole_stores && columns_whole && iy0 >= 0 && iy0 + 2 <= s.h)
        store_rows(std::true_type{});
      else
        store_rows(std::false_type{});
    }
  }
}

}  // namespace kernels
}  // namespace dsconv
