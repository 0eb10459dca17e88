#pragma once
// Launch plans of the tiled pointwise GEMM variants, and the heuristic that picks one.

#include <type_traits>

#include "../config.hpp"
#include "../kernels/pointwise/gemm_mma.hpp"
#include "../kernels/pointwise/gemm_operands.hpp"
#include "../kernels/pointwise/gemm_tiled.hpp"
#include "../kernels/pointwise/warp_dot.hpp"
#include "../params.hpp"
#include "../platform/platform.hpp"
#include "../problem.hpp"
#include "pointwise_stream_plan.hpp"
#include "tuning/variant_choice.hpp"
#include "variants.hpp"

namespace dsconv {
namespace detail {

// The large SIMT tile needs ~165 registers a thread (one block per multiprocessor); the small
// one fits two blocks, which hides the latency its shorter inner loop exposes. (The H200
// measured the large tile slower than the small one on every 1x1 layer, by 1.78x geometric
// mean.) The small tile steps 16 along k on NVIDIA: a step's staging, barrier and index
// arithmetic then cost half as much per multiply-add as at 8 (sm_90, float: the main loop
// issues 256 FFMA in about 500 instructions, where it had 128 in 340), in 125 registers at
// most. On AMD it steps 8, as it did before: hipcc loads a whole unrolled step's rows ahead,
// and at 16 the tile took 191-217 VGPRs on gfx906 (one block a compute unit), or, held to the
// 128 of two blocks, spilled 120-144. The host platform compiles both and runs each vendor's
// on that vendor's profiles (with_small_simt_tile), so that each form is tested, and planned
// under the name its GPU build has.
using gemm_large_tile = kernels::gemm_tile<128, 128, 8, 8, 8, 1>;
template <int Step>
using gemm_small_tile_stepping = kernels::gemm_tile<64, 64, Step, 4, 4, 2>;
using gemm_small_tile_nvidia = gemm_small_tile_stepping<16>;
using gemm_small_tile_amd = gemm_small_tile_stepping<8>;
// The small tile's shape, which the grids are planned with (both vendors' forms have it).
using gemm_small_tile = gemm_small_tile_nvidia;
static_assert(gemm_small_tile_amd::bm == gemm_small_tile::bm && gemm_small_tile_amd::bn == gemm_small_tile::bn &&
                  gemm_small_tile_amd::threads == gemm_small_tile::threads,
              "both vendors' small SIMT tiles have the shape the grids are planned with");
// Tensor-core tiles of each matrix unit, 128x128 and 64x64 for both (the grids are planned
// with mma_large_tile / mma_small_tile). NVIDIA: 8 warps of 64x32 and 4 warps of 32x32; AMD:
// 4 waves of 64x64 and 4 waves of 32x32 (256 threads either way on AMD, where a wave has 64).
template <class Unit>
struct mma_tiles;
// The small NVIDIA tile holds three blocks' registers (168 a thread): its 64-byte stages took
// 160 to 166 where two were asked for (three reside either way), and at four (128) the element
// form and the gated staging spilled 8 to 96 bytes. Three stages of 64 bytes in flight, 192
// bytes a thread, are 72 KiB a multiprocessor.
template <>
struct mma_tiles<kernels::mma_sync_unit> {
  using large = kernels::mma_tile<128, 128, 2, 4, 1, kernels::mma_sync_unit>;
  using small = kernels::mma_tile<64, 64, 2, 2, 3, kernels::mma_sync_unit>;
};
template <>
struct mma_tiles<kernels::mfma_unit> {
  using small = kernels::mma_tile<64, 64, 2, 2, 2, kernels::mfma_unit>;
  // Where operands are misaligned the large tile moves single elements as the small one does:
  // AMD's 128x128 tile moving them needs more scalar registers than a wave has (each of a
  // thread's 16 elements per operand keeps its offset in them) and spills.
  using large = kernels::mma_tile<128, 128, 2, 2, 1, kernels::mfma_unit, true, small::element_form>;
};
using mma_large_tile = mma_tiles<kernels::mma_sync_unit>::large;
using mma_small_tile = mma_tiles<kernels::mma_sync_unit>::small;
static_assert(mma_tiles<kernels::mfma_unit>::large::bm == mma_large_tile::bm &&
                  mma_tiles<kernels::mfma_unit>::large::bn == mma_large_tile::bn &&
                  mma_tiles<kernels::mfma_unit>::small::bm == mma_small_tile::bm &&
                  mma_tiles<kernels::mfma_unit>::small::bn == mma_small_tile::bn,
              "every matrix unit's tiles have the sizes the grids are planned with");

// The passes of a pointwise layer, each a GEMM (gemm_operands.hpp).
enum class gemm_pass { forward, backward_data, backward_weight };

inline gemm_operands make_pass_gemm(gemm_pass pass, const pointwise_params& p) {
  const pointwise_shape s = make_shape(p);
  switch (pass) {
    case gemm_pass::backward_data: return make_backward_data_gemm(s);
    case gemm_pass::backward_weight: return make_backward_weight_gemm(s);
    default: return make_gemm(s);
  }
}

// The grid of a tiled GEMM variant over `g`, or false when it exceeds the device's grid limits.
template <class Tile>
bool plan_gemm(const gemm_operands& g, const platform::device_properties& dev, platform::dims& grid) {
  const long long gx = (g.n + Tile::bn - 1) / Tile::bn, gy = (g.m + Tile::bm - 1) / Tile::bm;
  const long long gz = g.batches;
  if (gx > dev.max_grid_x || gy > dev.max_grid_y || gz > dev.max_grid_z) return false;
  grid = platform::dims{static_cast<unsigned>(gx), static_cast<unsigned>(gy), static_cast<unsigned>(gz)};
  return true;
}

// Whether the matrix-unit variants can multiply elements of type T on `dev`: 16-bit types on
// either unit (half only on Turing's); float on AMD's in fp32, on NVIDIA's (sm_80+) as TF32:
// each operand split into two TF32 parts and three products (about fp32's accuracy), or, where
// the caller allows TF32 (pointwise_params::allow_tf32), rounded to TF32 and one product
// (matrix_units.hpp).
template <class T>
bool mma_usable(const platform::device_properties& dev) {
  switch (dev.matrix) {
    case platform::matrix_unit::mma_sync: return true;
    case platform::matrix_unit::mma_sync_f16: return std::is_same<T, half>::value;
    case platform::matrix_unit::mfma: return true;
    default: return false;
  }
}

// split_k: at most this many slices of the summed K.
inline constexpr long long split_k_max_slices = 32;

struct split_k_plan {
  gemm_operands g;     // with slices and k_slice set
  platform::dims grid; // of the GEMM launch: 64x64 tiles x batches x slices
  bool tensor_cores;   // mma_small's kernel, else gemm_small's
  index_t workspace_bytes;  // the partial sums, and A's row sums where `row_sums` was asked for
  index_t row_sums_offset;  // bytes from the workspace's start to the row sums
};

// Enough slices of the summed K (whole granules each) for the 64x64 tiles to give every
// multiprocessor two blocks; false when it has fewer than two granules (nothing to split).
// `row_sums`: room for A's row sums per slice too (the backward weight's bias gradient).
template <class T>
bool plan_split_k(gemm_operands g, const platform::device_properties& dev, bool row_sums,
                  split_k_plan& plan) {
  static_assert(gemm_small_tile::bm == mma_small_tile::bm && gemm_small_tile::bn == mma_small_tile::bn,
                "split_k plans one grid for both 64x64 kernels");
  const long long gx = (g.n + gemm_small_tile::bn - 1) / gemm_small_tile::bn;
  const long long gy = (g.m + gemm_small_tile::bm - 1) / gemm_small_tile::bm;
  const long long base = gx * gy * g.batches;
  const long long summed = g.k_batches * g.k_padded;
  const long long granules = (summed + split_k_granule - 1) / split_k_granule;
  long long slices = (2LL * dev.multiprocessor_count + base - 1) / base;
  if (slices < 2) slices = 2;
  if (slices > split_k_max_slices) slices = split_k_max_slices;
  if (slices > granules) slices = granules;
  if (slices < 2) return false;
  g.k_slice = (granules + slices - 1) / slices * split_k_granule;
  g.slices = (summed + g.k_slice - 1) / g.k_slice;
  const long long gz = g.batches * g.slices;
  if (gx > dev.max_grid_x || gy > dev.max_grid_y || gz > dev.max_grid_z) return false;
  plan.g = g;
  plan.grid = platform::dims{static_cast<unsigned>(gx), static_cast<unsigned>(gy), static_cast<unsigned>(gz)};
  plan.tensor_cores = mma_usable<T>(dev);
  plan.row_sums_offset = g.slices * g.batches * g.m * g.n * static_cast<index_t>(sizeof(float));
  plan.workspace_bytes = plan.row_sums_offset + (row_sums ? g.slices * g.m * static_cast<index_t>(sizeof(float)) : 0);
  return true;
}

// Matrix-vector and skinny products only: a warp per output re-reads the wider operand once
// per row of the narrower one, which only pays while that side has a handful of rows. It sums
// one GEMM along K and no rows of A (so it runs no backward weight pass).
inline constexpr long long warp_dot_max_narrow_side = 8;

// One warp per output, grid-stride: enough blocks to fill the device several times over.
inline bool plan_warp_dot(const gemm_operands& g, const platform::device_properties& dev, platform::dims& grid) {
  if ((g.m < g.n ? g.m : g.n) > warp_dot_max_narrow_side || g.k_batches > 1) return false;
  const long long warps_per_block = warp_dot_block_threads / static_cast<unsigned>(dev.warp_size);
  const long long wanted = (g.m * g.n + warps_per_block - 1) / warps_per_block;
  const long long resident = 32LL * dev.multiprocessor_count;
  const long long gz = g.batches;
  if (gz > dev.max_grid_z) return false;
  grid = platform::dims{static_cast<unsigned>(wanted < resident ? wanted : resident), 1, static_cast<unsigned>(gz)};
  return true;
}

// Whether `v` can run `pass` of `p` (grid: its grid where it has a planned one). The backward
// weight pass runs every variant but warp_dot.
template <class T>
bool plan_variant(pointwise_variant v, gemm_pass pass, const pointwise_params& p, const platform::device_properties& dev,
                  platform::dims& grid) {
  const gemm_operands g = make_pass_gemm(pass, p);
  switch (v) {
    case pointwise_variant::gemm_large: return plan_gemm<gemm_large_tile>(g, dev, grid);
    case pointwise_variant::gemm_small: return plan_gemm<gemm_small_tile>(g, dev, grid);
    case pointwise_variant::warp_dot: return pass != gemm_pass::backward_weight && plan_warp_dot(g, dev, grid);
    case pointwise_variant::mma_large:  // (its element form may be the small tile's: its grid too)
      return mma_usable<T>(dev) && plan_gemm<mma_small_tile>(g, dev, grid) && plan_gemm<mma_large_tile>(g, dev, grid);
    case pointwise_variant::mma_small: return mma_usable<T>(dev) && plan_gemm<mma_small_tile>(g, dev, grid);
    case pointwise_variant::split_k: {
      split_k_plan plan;
      if (!plan_split_k<T>(g, dev, pass == gemm_pass::backward_weight, plan)) return false;
      grid = plan.grid;
      return true;
    }
    case pointwise_variant::mma_stream: {
      stream_plan plan;
      if (pass != gemm_pass::forward || !stream_limits<T>(p, dev).empty() ||
          !plan_stream(p, dev, nullptr, nullptr, nullptr, nullptr, nullptr, plan))
        return false;
      grid = plan.grid;
      return true;
    }
    default: return true;  // grid-stride kernels fit any problem
  }
}

// The heuristic: the small GEMM tile wherever its grid gives every multiprocessor a block, on
// tensor cores where they can take the type; when even the small tile leaves multiprocessors
// idle (batch 1, small maps, the squeeze-excitation matrix-vector products, and the backward
// weight pass, whose C is the small weight matrix), a warp per output spreads the work over
// the whole device instead, or, for wider products with a long K and the caller's workspace,
// split_k gives the small tiles' blocks a slice of K each.
// The large tiles are never chosen: on an H100 they ran slower than the small ones on 232 of
// the 256 forward 1x1 layer cases at batch 32 and 128 (geometric mean 1.64x, up to 6.2x), and
// won the other 24 by at most 1.4x (results/gpu/h100-2026-11-24-legacy/sweep.md). With the small tiles chosen, the
// median per-layer speedup over cuDNN's legacy API at batch 128 went from 0.68x to 1.00x (MobileNetV2) and
// 0.75x to 0.85x (EfficientNet-B0) there (results/gpu/h100-2026-11-24-legacy/after).
// Each large tile fits one block per multiprocessor by registers (SIMT: ~180 a thread; tensor
// cores: 140-176 a thread at 256 threads, on sm_90), so a block's loads wait with no other
// block's arithmetic to hide them; the small tiles keep two or three resident. The large
// tiles stay available as forced variants.
// NHWC forward passes of 16-bit types on NVIDIA tensor cores take mma_stream, which reads the
// activations straight into the tensor cores' fragments and keeps a slice's weights on chip,
// where its counted instructions per DRAM byte stay under stream_instruction_limit (the thin and
// middle layers; the widest re-read their activations once per slice of outputs).
// All of this is the rule where nothing was measured: on an architecture whose GPU measured the
// forward pass's variants on this layer (`tables`: tuning/variant_choice.hpp), the forward pass
// takes the fastest that can run it (split_k only with the workspace it needs).
template <class T>
pointwise_variant choose_pointwise(gemm_pass pass, const pointwise_params& p, const platform::device_properties& dev,
                                   std::size_t workspace_bytes,
                                   const tuning::variant_table* tables = tuning::variant_tables,
                                   std::size_t table_count = tuning::variant_table_count) {
  if (const tuning::variant_row* row =
          pass == gemm_pass::forward ? tuning::measured_pointwise<T>(dev.arch, p, tables, table_count) : nullptr) {
    const pointwise_variant measured = tuning::variant_named(row->variant, all_pointwise_variants);
    platform::dims grid;
    split_k_plan plan;
    if (measured != pointwise_variant::automatic && plan_variant<T>(measured, pass, p, dev, grid) &&
        (measured != pointwise_variant::split_k ||
         (plan_split_k<T>(make_pass_gemm(pass, p), dev, false, plan) &&
          static_cast<index_t>(workspace_bytes) >= plan.workspace_bytes)))
      return measured;
  }
  platform::dims stream_grid;
  if (plan_variant<T>(pointwise_variant::mma_stream, pass, p, dev, stream_grid) &&
      stream_instructions_per_byte(p) <= stream_instruction_limit)
    return pointwise_variant::mma_stream;
  const bool mma = mma_usable<T>(dev);
  const pointwise_variant small = mma ? pointwise_variant::mma_small : pointwise_variant::gemm_small;
  platform::dims grid;
  const long long sms = dev.multiprocessor_count;
  const bool small_fits = plan_variant<T>(small, pass, p, dev, grid);
  if (small_fits && static_cast<long long>(grid.volume()) >= sms) return small;
  // warp_dot's lanes split K: only where both operands are contiguous along K are its reads
  // coalesced (not A = W^T of the data pass, whose K is the weight's rows).
  const gemm_operands g = make_pass_gemm(pass, p);
  if (g.a_k == 1 && g.b_k == 1 && plan_variant<T>(pointwise_variant::warp_dot, pass, p, dev, grid))
    return pointwise_variant::warp_dot;
  split_k_plan plan;
  if (plan_split_k<T>(g, dev, pass == gemm_pass::backward_weight, plan) &&
      plan.g.k_slice < plan.g.k_batches * plan.g.k_padded && static_cast<index_t>(workspace_bytes) >= plan.workspace_bytes)
    return pointwise_variant::split_k;
  return small_fits ? small : pointwise_variant::direct;
}

// Global-memory elements the forward pass of `p` moves as the heuristic runs it (the block
// planner's cost of a 1x1 layer): a tiled GEMM reads A once per column of its tiles and B once
// per row of them; the other variants are counted at the least they move (each operand once).
template <class T>
long long pointwise_forward_elements(const pointwise_params& p, bool residual, const platform::device_properties& dev) {
  const gemm_operands g = make_gemm(make_shape(p));
  long long a_reads = 1, b_reads = 1;
  switch (choose_pointwise<T>(gemm_pass::forward, p, dev, 0)) {
    case pointwise_variant::gemm_small:
    case pointwise_variant::mma_small:
      a_reads = ceil_div(g.n, gemm_small_tile::bn), b_reads = ceil_div(g.m, gemm_small_tile::bm);
      break;
    default: break;
  }
  const long long outputs = static_cast<long long>(g.batches) * g.m * g.n;
  return static_cast<long long>(g.batches) * (a_reads * g.m * g.k + b_reads * g.k * g.n) + outputs +
         (residual ? outputs : 0) + p.c_out;
}

}  // namespace detail
}  // namespace dsconv
