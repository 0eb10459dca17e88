#pragma once
// The fused inverted-residual block, NHWC. Project (blocks without squeeze-excitation): expand
// 1x1 -> act -> depthwise -> act -> project 1x1 (+ bias, + residual) in one kernel, the
// expanded tensor never in global memory. !Project (blocks with squeeze-excitation, whose
// project needs the pool of the whole depthwise output first): expand -> act -> depthwise ->
// act, written once as the depthwise output, with the tile's sums per channel for the pool
// (the unfused sequence writes the expanded tensor, reads it, writes the depthwise output and
// reads it again for the pool). A block takes a tile of output pixels of one image (fused_tile.hpp): it
// stages the tile's input with its halo once (the only activation it reads from global memory;
// the residual comes from it too), then for each slice of 16 expanded channels
//   1. stages the slice's expand and depthwise weights,
//   2. expands the halo's pixels into the slice (zero outside the image: the depthwise layer's
//      padding is of the expanded tensor; without an expand layer the slice is the input's),
//   3. stages the slice's project weights and runs the depthwise filter over the slice (in
//      strips of 7 outputs of a row where the plan says so: fused_depthwise.hpp),
//   4. adds the slice's share of the project 1x1 into per-thread sums (registers),
// and finally writes the tile's outputs (!Project: step 3 writes the depthwise outputs and
// step 4 sums each channel over the tile's pixels, in a fixed order). Weights are read once per tile; the planner sizes
// tiles so that they stay small next to the activations.
// Lanes: in steps 2 and 3 a half-warp's 16 lanes take the 16 channels of one pixel, the two
// half-warps two pixels whose rows fused_tile.hpp's pitches put 16 banks apart (the pixel's
// input values are one word for a half-warp); in step 4 a warp's lanes take consecutive
// output channels of a pixel (consecutive weights), each thread at most fused_block_outputs
// pixels q_step apart. With a matrix Unit (16-bit types; float on AMD's fp32 MFMA, and on
// NVIDIA's mma.sync in TF32 where the caller allows it, its operands rounded as staged), steps 2
// (blocks that expand) and 4 (Project) are the unit's products instead, on the matrix-unit
// GEMM's operand layout (k_rows): step 2 multiplies the input, staged as T in K stages of 32
// bytes (16 channels, 8 floats), by the slice's expand weights (fused_mma_expand;
// fused_tile.hpp), and step 3 stores its outputs as T, so that in step 4 each warp multiplies
// its 16x16 output tiles (fused_tile.hpp: fused_mma_tile) by the slice's K stages (one, or two
// for float), keeping their sums in the unit's accumulators; the depthwise output is rounded to T
// before that product, as the unfused sequence stores it (the expanded slice stays float).

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../platform/recomputed.hpp"
#include "../../problem.hpp"
#include "../common/activation.hpp"
#include "../common/index_walk.hpp"
#include "../pointwise/matrix_units.hpp"
#include "../pointwise/mma_shared_tiles.hpp"
#include "fused_depthwise.hpp"
#include "fused_tile.hpp"

namespace dsconv {
namespace detail {
// The weights of a block as the kernels take them (null biases: zero).
template <class T>
struct block_weight_ptrs {
  const T *expand_weight, *expand_bias, *depthwise_weight, *depthwise_bias, *project_weight, *project_bias;
};

// The unit steps' operands in shared memory: 32-byte K-stage rows of the matrix-unit GEMM's
// k_rows layout, as many rows as the plan sizes.
template <class T, class Unit>
using fused_operand = kernels::k_rows<T, 1, Unit>;

// Step 2 on a matrix unit (fused_tile.hpp): the staged input, [K stages][rows][16 or 8] as T
// in k_rows tiles, times the slice's expand weights, [K stages][16][16 or 8], plus the slice's
// biases (bias[16]: the sums start from them), then the activation. Warp w takes the 16-row
// tiles w, w + warps, ... of the product, each 16 rows by the slice's 16 channels (two of
// mma.sync's 8-column tiles, one of MFMA's), so that a tile's input fragments, its loop and its
// activation's dispatch serve all 16 channels. store(row, col, v) takes a lane's sums of a row:
// v[j] (j < NI), a vec<float, n> of n consecutive columns from col + j * tile_n.
//   mma.sync: a lane's sums are columns 2t, 2t + 1 (+ 8) of rows g and g + 8 (g = lane / 4,
//   t = lane % 4), each pair stored as 8 bytes: a half-warp's store writes 8 columns of rows
//   g = 0..3.
//   MFMA, the product untransposed (the input the instruction's A): a lane's sums are rows
//   4q .. 4q + 3 (q = lane / 16) of column lane % 16, stored as 4 bytes: a store writes rows r
//   and r + 4 of 16 columns in one phase (fused_tile.hpp: mfma_row_pixel).
template <class T, class Unit>
struct fused_mma_expand {
  using op = typename Unit::template op<T>;
  using operand = fused_operand<T, Unit>;
  static constexpr int warps = static_cast<int>(fused_block_threads) / Unit::lanes;
  static constexpr int NI = fused_mma_tile / Unit::tile_n, MT = fused_mma_tile;
  static constexpr bool mfma = std::is_same<Unit, kernels::mfma_unit>::value;
  static_assert(mfma ? NI == 1 : NI == 2 && Unit::run == 2, "mma.sync: two 8-column tiles of 2-column runs a 16-row tile");

  template <class Store>
  static DSCONV_DEVICE DSCONV_FORCEINLINE void run(T* input, int rows, int k_stages, T* weights, const float* bias,
                                                   activation act, int tid, Store&& store) {
    DSCONV_NO_UNROLL
    for (int m = tid / Unit::lanes * MT; m < rows; m += warps * MT) {
      // (the lane recomputed in each tile: held through the slice loop, it spilled on sm_90)
      const int lane = platform::recomputed(tid % Unit::lanes);
      float acc[NI][Unit::accumulators];
      DSCONV_UNROLL
      for (int j = 0; j < NI; ++j)
        DSCONV_UNROLL
        for (int r = 0; r < Unit::accumulators; ++r)
          acc[j][r] = platform::shared_load(bias + (mfma ? lane % 16 : j * Unit::tile_n + Unit::col(lane, r)));
      DSCONV_NO_UNROLL
      for (int ks = 0; ks < k_stages; ++ks) {
        unsigned a[1][op::a_regs], b[NI][op::b_regs];
        op::template load_a<1>(a, operand{input + ks * rows * operand::row_elements}, m, lane);
        op::template load_b<NI>(b, operand{weights + ks * MT * operand::row_elements}, 0, lane);
        DSCONV_UNROLL
        for (int j = 0; j < NI; ++j) {
          if constexpr (mfma)
            op::mma(acc[j], b[j], a[0]);  // (op::mma transposes: this is the input times the weights)
          else
            op::mma(acc[j], a[0], b[j]);
        }
      }
      // (the activation's switch once a tile, not once a sum; the stores after it, outside the
      // switch's lambda, which may not hold the kernel's `store`)
      with_activation(act, [&](auto a) {
        DSCONV_UNROLL
        for (int j = 0; j < NI; ++j)
          DSCONV_UNROLL
          for (int r = 0; r < Unit::accumulators; ++r) acc[j][r] = activate(acc[j][r], a);
      });
      if constexpr (mfma) {
        DSCONV_UNROLL
        for (int r = 0; r < Unit::accumulators; ++r) {
          platform::vec<float, 1> v[1];
          v[0][0] = acc[0][r];
          store(m + 4 * (lane / 16) + r, lane % 16, v);
        }
      } else {
        DSCONV_UNROLL
        for (int h = 0; h < 2; ++h) {
          platform::vec<float, 2> v[NI];
          DSCONV_UNROLL
          for (int j = 0; j < NI; ++j) v[j][0] = acc[j][2 * h], v[j][1] = acc[j][2 * h + 1];
          store(m + Unit::row(lane, 2 * h), Unit::col(lane, 0), v);
        }
      }
    }
  }
};
template <class T>
struct fused_mma_expand<T, void> {};

// Step 4 on a matrix unit: a warp's output tiles (fused_tile.hpp: tiles w, w + warps, ... of
// q_tiles x o_tiles, pixel tile fastest) and their sums in the unit's accumulators.
template <class T, class Unit>
struct fused_mma_project {
  using op = typename Unit::template op<T>;
  using operand = fused_operand<T, Unit>;
  static constexpr int warps = static_cast<int>(fused_block_threads) / Unit::lanes;
  static constexpr int F = fused_mma_warp_tiles(Unit::lanes), NI = fused_mma_tile / Unit::tile_n;
  const fused_block_tile& t;  // (its q_tiles and o_tiles, kernel parameters)
  float acc[F][NI][Unit::accumulators];

  // Tile f of the warp: its first pixel << 16 | its first output channel, -1 past the block's
  // tiles. Found again where it is needed (a few instructions): kept in registers through the
  // slice loop, a warp's tiles spilled on sm_80 beside the expand step's sums.
  DSCONV_DEVICE DSCONV_FORCEINLINE int tile_at(int f, int tid) const {
    // (recomputed: hoisted out of the slice loop, the quotients spilled beside step 3's strips)
    const int tile = platform::recomputed(tid / Unit::lanes + f * warps);
    int o_tile, q_tile;
    small_divmod(tile, t.q_tiles, o_tile, q_tile);
    return tile < t.q_tiles * t.o_tiles ? (q_tile * fused_mma_tile) << 16 | o_tile * fused_mma_tile : -1;
  }

  DSCONV_DEVICE explicit fused_mma_project(const fused_block_tile& tile) : t(tile) {
    DSCONV_UNROLL
    for (int f = 0; f < F; ++f) {
      DSCONV_UNROLL
      for (int j = 0; j < NI; ++j)
        DSCONV_UNROLL
        for (int r = 0; r < Unit::accumulators; ++r) acc[f][j][r] = 0.f;
    }
  }
  // The slice's share: d [pixels][slice] times the project weights w [output channels][slice].
  DSCONV_DEVICE DSCONV_FORCEINLINE void add_slice(const operand& d, const operand& w, int tid) {
    const int lane = tid % Unit::lanes;
    DSCONV_UNROLL
    for (int f = 0; f < F; ++f) {
      const int at = tile_at(f, tid);
      if (at < 0) continue;  // (the same for a whole warp)
      unsigned a[1][op::a_regs], b[NI][op::b_regs];
      op::template load_a<1>(a, d, at >> 16, lane);
      op::template load_b<NI>(b, w, at & 0xffff, lane);
      DSCONV_UNROLL
      for (int j = 0; j < NI; ++j) op::mma(acc[f][j], a[0], b[j]);
    }
  }
  // store(pixel, output channel, sum + bias(output channel)) for each of the warp's sums (a
  // lane's bias read once a tile: its column is the same in each of its rows), a tile at a
  // time through a scratch tile ([16][fused_mma_scratch_pitch] floats from `scratch`, one per
  // warp of `scratch_warps` at once; every thread of the block calls this, for its barriers):
  // a lane's accumulators are a few columns of a few rows, so that stored from them a warp's
  // store would touch 8 or 16 rows (sectors) for 16 or 8 bytes of each; from the scratch, 16
  // lanes store 16 consecutive channels of one pixel.
  template <class Bias, class Store>
  DSCONV_DEVICE DSCONV_FORCEINLINE void for_each_sum(int tid, float* scratch, int scratch_warps, Bias&& bias,
                                                     Store&& store) const {
    const int lane = tid % Unit::lanes, warp = tid / Unit::lanes;
    for (int first = 0; first < warps; first += scratch_warps) {
      const bool turn = warp >= first && warp < first + scratch_warps;
      store_tiles(turn ? lane : -1, tid, scratch + (turn ? warp - first : 0) * fused_mma_scratch_largest, bias, store);
    }
  }

 private:
  // The warp's tiles through its scratch tile (lane < 0: a warp whose turn it is not, which
  // only meets the barriers).
  template <class Bias, class Store>
  DSCONV_DEVICE DSCONV_FORCEINLINE void store_tiles(int lane, int tid, float* scratch, Bias& bias, Store& store) const {
    constexpr int pitch = fused_mma_scratch_pitch(Unit::run), run = Unit::run;
    DSCONV_UNROLL
    for (int f = 0; f < F; ++f) {
      const int at = tile_at(f, tid);
      const bool has = lane >= 0 && at >= 0;  // (the same for a whole warp)
      if (has)
        DSCONV_UNROLL
        for (int j = 0; j < NI; ++j)
          DSCONV_UNROLL
          for (int r = 0; r < Unit::accumulators; r += run) {
            platform::vec<float, run> v;
            DSCONV_UNROLL
            for (int e = 0; e < run; ++e) v[e] = acc[f][j][r + e];
            platform::shared_store(reinterpret_cast<platform::vec<float, run>*>(
                                       scratch + Unit::row(lane, r) * pitch + j * Unit::tile_n + Unit::col(lane, r)),
                                   v);
          }
      platform::sync_threads();
      static_assert(Unit::lanes % fused_mma_tile == 0, "a lane keeps its column");
      if (has) {
        const int col = lane % fused_mma_tile, oc = (at & 0xffff) + col;
        const float b = bias(oc);
        for (int row = lane / fused_mma_tile; row < fused_mma_tile; row += Unit::lanes / fused_mma_tile)
          store((at >> 16) + row, oc, platform::shared_load(scratch + row * pitch + col) + b);
      }
      platform::sync_threads();  // (before the next tile's sums replace these)
    }
  }
};
template <class T>
struct fused_mma_project<T, void> {
  DSCONV_DEVICE explicit fused_mma_project(const fused_block_tile&) {}
};
}  // namespace detail

namespace kernels {

// output: [n][out_h][out_w][c_out] (Project), or the depthwise output
// [n][out_h][out_w][expanded] and pool_partial[n][tiles_y * tiles_x][expanded], each tile's
// sums of its pixels' depthwise outputs per channel (!Project; null with Project). Unit: the
// matrix unit of steps 2 (where the block expands) and 4 (matrix_units.hpp), void for the SIMT
// cores.
template <class T, bool Project, class Unit = void>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::fused_block_threads, detail::fused_resident_blocks)
void inverted_residual_fused_nhwc(detail::block_shape s, detail::fused_block_tile t, detail::block_weight_ptrs<T> wts,
                                  const T* __restrict__ input, T* __restrict__ output, float* __restrict__ pool_partial) {
#if defined(__HIP_DEVICE_COMPILE__) && !defined(DSCONV_HAS_WAVE_MFMA)
  // An AMD target without MFMA (gfx906 and the DCUs): the unit's kernels are never launched
  // there (its instructions trap), so they are not built for it (the rest is unreachable; the
  // fused block's MFMA instantiation held more scalar registers than gfx906 has).
  if constexpr (std::is_same<Unit, kernels::mfma_unit>::value) {
    platform::gpu_detail::no_matrix_unit();
    return;
  }
#endif
  namespace pf = platform;
  constexpr int threads = static_cast<int>(detail::fused_block_threads), EC = detail::fused_block_slice;
  constexpr int R = detail::fused_block_outputs, PX = detail::fused_expand_pixels, groups = threads / EC;
  constexpr int G = detail::fused_block_output_group;
  static_assert(groups % 4 == 0, "step 2's slots of a thread keep their pixel's shift (slot_pixel)");
  constexpr bool unit = !std::is_void<Unit>::value, mma = unit && Project;  // (mma: the project on the unit)
  // (a K stage of the unit: 32 bytes of a row, KS channels; the slice is SS of them: one for
  // 16-bit types, two for float)
  using operand = detail::fused_operand<T, std::conditional_t<unit, Unit, kernels::mma_sync_unit>>;
  constexpr int KS = operand::row_elements, SS = EC / KS;
  // An operand of the unit's products as it is staged: float on mma.sync (the caller allowed
  // TF32) rounded to TF32 there, once, as the 1x1 layers round theirs; other types as they are.
  constexpr bool tf32 = std::is_same<T, float>::value && std::is_same<Unit, kernels::mma_sync_unit>::value;
  const auto staged = [](T v) { if constexpr (tf32) return pf::round_to_tf32(v); else return v; };
  // The unit's operands in 16-byte runs of V elements where the call allows it
  // (t.vector_staging: fused_vector_staging), RK of them a K-stage row: one global load and one
  // shared store a run, where element by element each element took its own, with its index math.
  constexpr int V = 16 / static_cast<int>(sizeof(T)), RK = KS / V;
  // (the slice's weights so on NVIDIA only: on AMD their runs' uniform addresses held more
  // scalar registers than the slice loop leaves, and 1 to 8 spilled on gfx90a)
#if defined(DSCONV_PLATFORM_HIP)
  constexpr bool weight_runs = false;
#else
  constexpr bool weight_runs = true;
#endif
  const auto staged_run = [&](const T* from, bool inside) {
    pf::vec<T, V> v;
    if (inside) {
      v = pf::load_vec<V>(from);
      DSCONV_UNROLL
      for (int e = 0; e < V; ++e) v[e] = staged(v[e]);
    } else {
      __builtin_memset(&v, 0, sizeof v);  // (zero words: element by element, nvcc shuffled 16-bit halves)
    }
    return v;
  };
  static_assert(EC % KS == 0, "the unit's product takes the slice as whole 32-byte K stages");
  const int tid = static_cast<int>(pf::thread_idx().x);
  float* sh = pf::dynamic_shared<float>();
  float *be_s = sh, *bd_s = sh + EC, *in_s = sh + detail::fused_block_input, *mask_s = sh + t.mask, *x_s = sh + t.x;
  float *wd_s = sh + t.wd, *d_s = sh + t.d, *we_s = sh + t.we, *wp_s = sh + t.wp;
  const int ip = t.in_pitch, sp = t.slice_pitch, op = t.out_pitch, taps = s.taps();
  constexpr int ep = detail::fused_expand_pitch, dp = detail::fused_depthwise_pitch;

  // This block's tile (once per block).
  int tile_y, tile_x, b, rest;
  detail::small_divmod(static_cast<int>(pf::block_idx().x), t.tiles_x, rest, tile_x);
  detail::small_divmod(rest, t.tiles_y, b, tile_y);
  const int oy0 = tile_y * t.rows, ox0 = tile_x * t.cols;
  const int iy0 = oy0 * s.stride - s.pad, ix0 = ox0 * s.stride - s.pad;
  const int halo = t.in_rows * t.in_cols, Q = t.rows * t.cols;

  // The input tile with its halo, zero outside the image, and its mask; in pixel order, or in
  // step 2's slot order (staging_pair: fused_tile.hpp); with the unit's expand
  // (k_stage_rows > 0), as T in K stages (KS channels of the stage's rows: 16, or 8 floats).
  const int slots = detail::slot_count(halo, t.pair);
  const bool unit_expand = unit && s.has_expand;  // (the plan's k_stage_rows > 0 just there)
  const int k_stages = (s.c_in + KS - 1) / KS;
  T* const in_t = reinterpret_cast<T*>(in_s);
  auto input_stage = [&](int k_stage) { return operand{in_t + k_stage * t.k_stage_rows * KS}; };
  // The pixel of a row of those stages, and the row of a pixel (fused_tile.hpp: a swap of two
  // bits on MFMA; mma.sync's rows are its pixels).
  auto row_pixel = [](int row) { return std::is_same<Unit, kernels::mfma_unit>::value ? detail::mfma_row_pixel(row) : row; };
  auto stage = [&](int r, int col, int c) {
    const int y = iy0 + r, x = ix0 + col;
    const bool inside = y >= 0 && y < s.h && x >= 0 && x < s.w;
    const float v = inside ? to_float(pf::load(input + ((static_cast<index_t>(b) * s.h + y) * s.w + x) * s.c_in + c)) : 0.f;
    pf::shared_store(in_s + (r * t.in_cols + col) * ip + c, v);
  };
  // (a K stage's row `row` from channel c = k_stage * KS + k: where the input holds it, and
  // whether it does)
  auto input_run = [&](int row, int c, bool& inside) {
    const int pixel = row_pixel(row);
    int r, col;
    detail::small_divmod(pixel, t.in_cols, r, col);
    const int y = iy0 + r, x = ix0 + col;
    inside = pixel < halo && c < s.c_in && y >= 0 && y < s.h && x >= 0 && x < s.w;
    return input + ((static_cast<index_t>(b) * s.h + y) * s.w + x) * s.c_in + c;
  };
  if (unit_expand && t.vector_staging) {  // (runs of V channels)
    detail::for_each_strided<3>(k_stages * t.k_stage_rows * RK, {t.k_stage_rows, RK}, tid, threads, [&](const auto& at) {
      bool inside;
      const T* const from = input_run(at[0], at.outer() * KS + at[1] * V, inside);
      input_stage(at.outer()).store_run(at[0], at[1] * V, staged_run(from, inside));
    });
  } else if (unit_expand) {
    detail::for_each_strided<3>(k_stages * t.k_stage_rows * KS, {t.k_stage_rows, KS}, tid, threads, [&](const auto& at) {
      bool inside;
      const T* const from = input_run(at[0], at.outer() * KS + at[1], inside);
      pf::shared_store(input_stage(at.outer()).at(at[0], at[1]), inside ? staged(pf::load(from)) : from_float<T>(0.f));
    });
  } else if (t.staging_pair == 2) {
    for (int i = tid; i < slots * s.c_in; i += threads) {
      int slot, c, r, col;
      detail::small_divmod(i, s.c_in, slot, c);
      const int pixel = detail::slot_pixel(slot, 2);
      if (pixel >= halo) continue;
      detail::small_divmod(pixel, t.in_cols, r, col);
      stage(r, col, c);
    }
  } else {
    detail::for_each_strided<3>(halo * s.c_in, {t.in_cols, s.c_in}, tid, threads,
                                [&](const auto& at) { stage(at.outer(), at[0], at[1]); });
  }
  // (with the unit's expand, 0 for the rows past the halo too: step 2 stores every row's sums)
  detail::for_each_strided<2>(unit_expand ? t.k_stage_rows : halo, {t.in_cols}, tid, threads, [&](const auto& at) {
    const int y = iy0 + at.outer(), x = ix0 + at[0];
    pf::shared_store(mask_s + at.index(), at.index() < halo && y >= 0 && y < s.h && x >= 0 && x < s.w ? 1.f : 0.f);
  });
  // The depthwise outputs' rows past the tile, which step 4 reads for outputs it never stores:
  // zero, so that they stay finite.
  // (mma: the depthwise outputs and the project weights as T, [q_rows][EC] and
  // [o_tiles * 16][EC], in SS K stages of [rows][KS] (fused_tile.hpp: fused_stage_gap))
  T *const d_t = reinterpret_cast<T*>(d_s), *const wp_t = reinterpret_cast<T*>(wp_s);
  auto d_stage = [&](int k_stage) { return operand{d_t + k_stage * detail::fused_stage_pitch(t.q_rows, t.q_pair) * KS}; };
  auto wp_stage = [&](int k_stage) {
    const int rows = t.o_tiles * detail::fused_mma_tile;
    return operand{wp_t + k_stage * detail::fused_stage_pitch(rows, detail::fused_project_weight_rows_apart) * KS};
  };
  if constexpr (mma)
    for (int i = Q * EC + tid; i < t.q_rows * EC; i += threads) {
      const int c = i % EC;
      pf::shared_store(d_stage(c / KS).at(i / EC, c % KS), from_float<T>(0.f));
    }
  else if (Project)
    for (int i = Q * dp + tid; i < t.q_rows * dp; i += threads) pf::shared_store(d_s + i, 0.f);

  // Step 4's outputs of this thread: channel o of pixels q0, q0 + q_step, ...
  const bool projects = Project && tid < t.q_step * s.c_out;
  int q0, o;
  detail::small_divmod(tid, s.c_out, q0, o);
  float acc[R];
  DSCONV_UNROLL
  for (int k = 0; k < R; ++k) acc[k] = 0.f;
  detail::fused_mma_project<T, std::conditional_t<Project, Unit, void>> unit_sums(t);  // (with a Unit)

  const int lane = tid % EC, group = tid / EC;
  // Where a lane's channel of the slice lies in the unit's K stages (`stages`: d_stage or
  // wp_stage), at a row.
  auto lane_at = [&](const auto& stages, int row) { return stages(SS == 1 ? 0 : lane / KS).at(row, lane % KS); };
  // (which biases there are, as bits recomputed in each slice on AMD: their tests, held through
  // the slice loop as 64-bit scalar masks, spilled scalar registers there)
  const int biases_present = (wts.expand_bias ? 1 : 0) | (wts.depthwise_bias ? 2 : 0);
  for (int e0 = 0; e0 < s.expanded; e0 += EC) {
    const int ec = s.expanded - e0 < EC ? s.expanded - e0 : EC;
    // 1. The slice's expand and depthwise weights; channels past the last are zero. The expand
    // weights are read along c_in by a warp's lanes (consecutive words) and stored transposed,
    // the depthwise weights copied as they are ([slice][taps]: where taps is odd, as for every
    // odd kernel, step 3's lanes read rows in distinct banks). Plain loops, not index walks: a
    // walk's steps are scalar registers held through the slice loop, and this kernel has none
    // to spare on AMD.
    // (the thread recomputed in these loops: their address math, hoisted out of the slice loop,
    // spilled in float's TF32 kernel)
    if (unit_expand && weight_runs && pf::recomputed_test(t.vector_staging)) {  // ([K stages][slice channel][16] as T, in runs)
      for (int i = pf::recomputed(tid); i < k_stages * EC * RK; i += threads) {
        const int k_stage = i / (EC * RK), e = i / RK % EC, k = i % RK * V;
        operand{reinterpret_cast<T*>(we_s) + k_stage * EC * KS}.store_run(
            e, k, staged_run(wts.expand_weight + static_cast<index_t>(e0 + e) * s.c_in + k_stage * KS + k,
                             e < ec && k_stage * KS + k < s.c_in));
      }
    } else if (unit_expand) {  // (element by element)
      for (int i = pf::recomputed(tid); i < k_stages * EC * KS; i += threads) {
        const int k_stage = i / (EC * KS), e = i / KS % EC, c = k_stage * KS + i % KS;
        pf::shared_store(operand{reinterpret_cast<T*>(we_s) + k_stage * EC * KS}.at(e, i % KS),
                         e < ec && c < s.c_in ? staged(pf::load(wts.expand_weight + static_cast<index_t>(e0 + e) * s.c_in + c))
                                              : from_float<T>(0.f));
      }
    } else if (!unit && s.has_expand) {
      for (int e = group; e < EC; e += groups)
        for (int c = lane; c < s.c_in; c += EC) {
          const float v = e < ec ? to_float(pf::load(wts.expand_weight + static_cast<index_t>(e0 + e) * s.c_in + c)) : 0.f;
          pf::shared_store(we_s + c * ep + e, v);
        }
    }
    for (int i = tid; i < EC * taps; i += threads) {
      const float v = i < ec * taps ? to_float(pf::load(wts.depthwise_weight + static_cast<index_t>(e0) * taps + i)) : 0.f;
      pf::shared_store(wd_s + i, v);
    }
    if (tid < EC) {
      const bool in_slice = tid < ec;
      const int present = pf::recomputed_test(biases_present);
      pf::shared_store(be_s + tid, in_slice && (present & 1) ? to_float(pf::load(wts.expand_bias + e0 + tid)) : 0.f);
      pf::shared_store(bd_s + tid, in_slice && (present & 2) ? to_float(pf::load(wts.depthwise_bias + e0 + tid)) : 0.f);
    }
    pf::sync_threads();

    // 2. The slice of the expanded tensor at every halo pixel: thread (group, lane) takes
    // channel `lane` of PX pixels at a time, slots `groups` apart (each weight read once for
    // PX). A slot is a halo pixel, the two groups of a warp `pair` pixels apart (slot_pixel);
    // past the halo's last pixel a thread reads that pixel again and stores nothing. Without an expand
    // layer the slice is the staged input's channels e0.. (zero outside the image), which step
    // 3 reads where they are.
    if (unit_expand) {
      if constexpr (unit)
        detail::fused_mma_expand<T, Unit>::run(in_t, t.k_stage_rows, k_stages, reinterpret_cast<T*>(we_s), be_s, s.act, tid,
                                               [&](int row, int col, auto& v) {
                                                 constexpr int runs = sizeof(v) / sizeof(v[0]), n = sizeof(v[0]) / sizeof(float);
                                                 const int pixel = row_pixel(row);
                                                 const float m = pf::shared_load(mask_s + pixel);
                                                 DSCONV_UNROLL
                                                 for (int j = 0; j < runs; ++j) {
                                                   DSCONV_UNROLL
                                                   for (int e = 0; e < n; ++e) v[j][e] *= m;
                                                   pf::shared_store(reinterpret_cast<pf::vec<float, n>*>(x_s + pixel * sp + col + j * Unit::tile_n), v[j]);
                                                 }
                                               });
    } else if (!unit && s.has_expand) {
      // (this thread's slots are all `group` mod 4, groups being a multiple of 4: each is its
      // pixel less one shift)
      const int shift = detail::slot_pixel(group, t.pair) - group;
      for (int p0 = group; p0 < slots; p0 += groups * PX) {
        int px[PX];
        bool valid[PX];
        DSCONV_UNROLL
        for (int j = 0; j < PX; ++j) {
          const int pixel = p0 + j * groups + shift;
          valid[j] = pixel < halo;
          px[j] = valid[j] ? pixel : halo - 1;
        }
        float v[PX];
        const float bias = pf::shared_load(be_s + lane);
        DSCONV_UNROLL
        for (int j = 0; j < PX; ++j) v[j] = bias;
        for (int c = 0; c < s.c_in; ++c) {
          const float w = pf::shared_load(we_s + c * ep + lane);
          DSCONV_UNROLL
          for (int j = 0; j < PX; ++j) v[j] += pf::shared_load(in_s + px[j] * ip + c) * w;
        }
        DSCONV_UNROLL
        for (int j = 0; j < PX; ++j)
          if (valid[j]) pf::shared_store(x_s + px[j] * sp + lane, pf::shared_load(mask_s + px[j]) * detail::activate(v[j], s.act));
      }
    }
    pf::sync_threads();

    // 3. The slice's project weights (where the expand weights were: step 2 is done with them),
    // and the depthwise filter over the slice at the tile's pixels.
    if constexpr (mma) {  // (as T, rows up to whole tiles, zero past c_out; runs of V, or a lane's channel)
      if (weight_runs && pf::recomputed_test(t.vector_staging)) {
        constexpr int RS = EC / V;  // (runs a row of the slice)
        for (int i = pf::recomputed(tid); i < t.o_tiles * detail::fused_mma_tile * RS; i += threads) {
          const int oc = i / RS, c = i % RS * V;
          wp_stage(c / KS).store_run(oc, c % KS, staged_run(wts.project_weight + static_cast<index_t>(oc) * s.expanded + e0 + c,
                                                          c < ec && oc < s.c_out));
        }
      } else {
        for (int oc = group; oc < t.o_tiles * detail::fused_mma_tile; oc += groups) {
          const bool inside = lane < ec && oc < s.c_out;
          pf::shared_store(lane_at(wp_stage, oc), inside ? staged(pf::load(wts.project_weight + static_cast<index_t>(oc) * s.expanded + e0 + lane))
                                                       : from_float<T>(0.f));
        }
      }
    } else if (Project) {
      for (int oc = group; oc < s.c_out; oc += groups) {
        const float v = lane < ec ? to_float(pf::load(wts.project_weight + static_cast<index_t>(oc) * s.expanded + e0 + lane)) : 0.f;
        pf::shared_store(wp_s + lane * op + oc, v);
      }
    }
    // (Without an expand layer, lanes past the slice's last channel read that channel: their
    // depthwise weights and project weights are zero.)
    const float* slice = s.has_expand ? x_s + lane : in_s + e0 + (lane < ec ? lane : ec - 1);
    float pool = 0.f;  // (!Project: this thread's pixels' sum of channel e0 + lane)
    // Where the slice's depthwise outputs of a strip (or a pixel) from tile pixel (qy, qx) go,
    // found once for its pixels: with Project the pixel's row of the staged outputs; else its
    // place in the output, and how many of the strip's pixels lie inside the image (0 for a
    // row past it, or a lane past the slice's channels). (The image recomputed at each strip:
    // the output addresses' products, hoisted out of the slice loop, spilled beside the strips;
    // the offset inside the image is 32-bit: the planner fuses no image of 2^31 elements or more.)
    struct output_at {
      T* p;
      int inside;
    };
    const auto locate = [&](int qy, int qx) {
      if constexpr (Project) {
        return qy * t.cols + qx;
      } else {
        const int oy = oy0 + qy, ox = ox0 + qx, inside = lane < ec && oy < s.out_h ? s.out_w - ox : 0;
        T* const image = output + static_cast<index_t>(pf::recomputed(b)) * s.out_h * s.out_w * s.expanded;
        return output_at{image + (inside > 0 ? (oy * s.out_w + ox) * s.expanded + e0 + lane : 0), inside};
      }
    };
    // The slice's depthwise output v (bias and activation applied) at pixel j of `at`; fresh for
    // one of the calls of each pixel, the one the pool sums.
    const auto put = [&](const auto& at, int j, float v, bool fresh) {
      if constexpr (mma) {
        pf::shared_store(lane_at(d_stage, at + j), staged(from_float<T>(v)));
      } else if constexpr (Project) {
        pf::shared_store(d_s + (at + j) * dp + lane, v);
      } else if (j < pf::recomputed_test(at.inside)) {  // (recomputed on AMD: gfx906 spilled the strip's 7 tests)
        const T z = from_float<T>(v);  // (the pool sums what the project will read)
        pf::store(at.p + j * s.expanded, z);
        pool += fresh ? to_float(z) : 0.f;
      }
    };
    // In strips where the plan says so (fused_tile.hpp: fused_takes_strips), a warp's two
    // groups strip_pair strips apart (fused_depthwise.hpp); else a pixel at a time.
    // (the group and the groups recomputed: the walks' index math stays in this step, not held
    // through the slice loop)
    const int step_group = pf::recomputed(group), step_groups = pf::recomputed(groups);
    const float bias_d = pf::shared_load(bd_s + lane), *const lane_taps = wd_s + lane * taps;
    const int first_strip = detail::slot_pixel(step_group, t.strip_pair);
    // (the plan gives strips only to these four forms: fused_takes_strips. A switch, not a chain
    // of tests: AMD's compiler hoisted each test out of the slice loop as a 64-bit scalar mask,
    // and ran out of scalar registers)
    constexpr detail::fused_expander E = !unit                                                ? detail::fused_expander::simt
                                         : std::is_same<Unit, kernels::mfma_unit>::value ? detail::fused_expander::mfma
                                                                                         : detail::fused_expander::mma_sync;
    constexpr int P1 = detail::fused_expanded_slice_pitch(E, 1), P2 = detail::fused_expanded_slice_pitch(E, 2);
    using detail::fused_depthwise_strips;
    switch (t.strip_pair ? (s.kernel == 5 ? 2 : 0) + (s.stride == 2 ? 1 : 0) : -1) {
      case 0: fused_depthwise_strips<3, 1, P1>::run(slice, lane_taps, bias_d, s.act, t, first_strip, step_groups, locate, put); break;
      case 1: fused_depthwise_strips<3, 2, P2>::run(slice, lane_taps, bias_d, s.act, t, first_strip, step_groups, locate, put); break;
      case 2: fused_depthwise_strips<5, 1, P1>::run(slice, lane_taps, bias_d, s.act, t, first_strip, step_groups, locate, put); break;
      case 3: fused_depthwise_strips<5, 2, P2>::run(slice, lane_taps, bias_d, s.act, t, first_strip, step_groups, locate, put); break;
      default:  // (on the unit's expand, a warp's two groups take outputs q_pair apart: fused_tile.hpp)
        for (detail::index_walk<2> at({t.cols}, unit ? detail::slot_pixel(step_group, t.q_pair) : step_group, step_groups);
             at.index() < Q; at.advance()) {
          const float* window = slice + (at.outer() * s.stride * t.in_cols + at[0] * s.stride) * sp;
          float v = bias_d;
          for (int ky = 0; ky < s.kernel; ++ky)
            for (int kx = 0; kx < s.kernel; ++kx)
              v += pf::shared_load(window + (ky * t.in_cols + kx) * sp) * pf::shared_load(lane_taps + ky * s.kernel + kx);
          put(locate(at.outer(), at[0]), 0, detail::activate(v, s.act), true);
        }
    }
    if (!Project) pf::shared_store(d_s + group * EC + lane, pool);
    pf::sync_threads();

    // 4. The slice's share of the project 1x1; !Project: the tile's sums of the slice's
    // channels, over the groups in order.
    if (!Project && tid < ec) {
      float sum = 0.f;
      for (int g = 0; g < groups; ++g) sum += pf::shared_load(d_s + g * EC + tid);
      pf::store(pool_partial + (static_cast<index_t>(b) * t.tiles_y * t.tiles_x + tile_y * t.tiles_x + tile_x) * s.expanded +
                    e0 + tid,
                sum);
    }
    if constexpr (mma) {
      DSCONV_UNROLL
      for (int k_stage = 0; k_stage < SS; ++k_stage) unit_sums.add_slice(d_stage(k_stage), wp_stage(k_stage), tid);
    } else if (projects) {
      for (int e = 0; e < EC; ++e) {
        const float w = pf::shared_load(wp_s + e * op + o);
        DSCONV_UNROLL
        for (int k = 0; k < R; ++k)
          if (k - k % G < t.q_count) acc[k] += pf::shared_load(d_s + (q0 + k * t.q_step) * dp + e) * w;
      }
    }
    pf::sync_threads();  // before the next slice's weights and values replace these
  }

  // The tile's outputs: bias, and the residual (stride 1, c_out == c_in) from the staged input
  // (the input itself where the staged one is rounded to TF32).
  if constexpr (mma) {
    // (after the last slice's barrier: the regions from the mask on are free, and hold the
    // warps' scratch)
    const auto bias = [&](int oc) { return wts.project_bias && oc < s.c_out ? to_float(pf::load(wts.project_bias + oc)) : 0.f; };
    unit_sums.for_each_sum(tid, sh + detail::fused_mma_scratch_at(t), t.scratch_warps, bias, [&](int q, int oc, float v) {
      if (q >= Q || oc >= s.c_out) return;
      int qy, qx;
      detail::small_divmod(q, t.cols, qy, qx);
      const int oy = oy0 + qy, ox = ox0 + qx;
      if (oy >= s.out_h || ox >= s.out_w) return;
      if (s.residual) {  // (TF32's staged input is rounded: the residual then from global memory, as it is)
        const int pixel = (qy + s.pad) * t.in_cols + qx + s.pad;
        v += unit_expand && tf32 ? to_float(pf::load(input + ((static_cast<index_t>(b) * s.h + oy) * s.w + ox) * s.c_in + oc))
             : unit_expand       ? to_float(pf::shared_load(input_stage(oc / KS).at(row_pixel(pixel), oc % KS)))
                                 : pf::shared_load(in_s + pixel * ip + oc);
      }
      pf::store(output + ((static_cast<index_t>(b) * s.out_h + oy) * s.out_w + ox) * s.c_out + oc, from_float<T>(v));
    });
    return;
  }
  if (!projects) return;
  const float bias = wts.project_bias ? to_float(pf::load(wts.project_bias + o)) : 0.f;
  int qy = 0, qx = 0;
  detail::small_divmod(q0, t.cols, qy, qx);
  int step_y, step_x;
  detail::small_divmod(t.q_step, t.cols, step_y, step_x);
  DSCONV_UNROLL
  for (int k = 0; k < R; ++k) {
    const int oy = oy0 + qy, ox = ox0 + qx;
    if (k < t.q_count && qy < t.rows && oy < s.out_h && ox < s.out_w) {
      float v = acc[k] + bias;
      if (s.residual) v += pf::shared_load(in_s + ((qy + s.pad) * t.in_cols + qx + s.pad) * ip + o);
      pf::store(output + ((static_cast<index_t>(b) * s.out_h + oy) * s.out_w + ox) * s.c_out + o, from_float<T>(v));
    }
    // The next pixel, q_step further (without dividing; recomputed: the pixels of all 16
    // outputs, found ahead, spilled on sm_75).
    qx = pf::recomputed(qx + step_x), qy += step_y;
    if (qx >= t.cols) qx -= t.cols, ++qy;
  }
}

}  // namespace kernels
}  // namespace dsconv
