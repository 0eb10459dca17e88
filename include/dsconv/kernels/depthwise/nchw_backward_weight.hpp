#pragma once
// Depthwise NCHW weight gradient, shared-memory tiled: grad_weight[c][tap] = the sum over every
// image and output of dz * x (dz = grad_output, times act'() where the layer fused an
// activation) and grad_bias[c] = the sum of dz, deterministic (no atomics). A block takes G =
// tile.channels consecutive channels and a run of items, each a band (or whole planes of a
// group of images) of the forward's tiling: it stages the item's input band as the forward
// does (nchw_band.hpp) and the item's dz rows after it (read once, coalesced), and thread t
// adds, for the outputs of channel t % G it takes in the forward's order, dz times every tap's
// staged input into per-thread sums; after its items it adds the sums over its threads in a
// fixed order (weight_reduce.hpp) and stores the gradient, or, where the items are spread
// over several blocks (with the caller's workspace, so that batch 1 fills the device too), its
// partial sums for depthwise_weight_reduce.
// G is 1 but for small planes that do not fill whole 32-byte sectors (7x7, 14x14), where
// neighbouring channels' blocks would read the sectors they share (dispatch/
// depthwise_backward_plan.hpp: group_small_planes). dz is staged even for one channel: read
// from global memory inside the tap loop, its 64-bit address and load took the registers that
// keep a 5x5 filter's 25 sums at 4 resident blocks (64 registers: sm_80 spilled 8 to 12
// bytes), and staged it costs one shared store and load against the taps' 25.
// With dz staged, the block's threads can walk its outputs in several tap groups (sets of
// whole warps, weight_reduce.hpp: weight_tap_groups_of), each summing its share of the taps:
// 3x3 filters take one group, 5x5 two (13 sums a thread: 4 waves a SIMD on gfx906, where
// 25 took 74 VGPRs), 7x7 four; every group reads each staged dz, one shared load more per
// output and group than one group's. Run-time filters keep 16 taps' sums and take passes,
// one per block row of the grid (grid.y), each over all of the items. Multiplier 1.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/index_walk.hpp"
#include "nchw_band.hpp"
#include "tile.hpp"
#include "weight_reduce.hpp"

namespace dsconv {
namespace detail {
// The weight gradient's staging paths (nchw_band.hpp): its per-tap sums stay live across the
// staging, so it compiles no pairs and no staging order (gfx906, 3x3 float: 71 VGPRs, 75 with
// the order, 87 with pairs too; sm_80 spilled), and no 16-byte vectors where registers are
// short: on AMD, where 4 waves per SIMD (4 blocks of 256 threads a CU) leave 64 VGPRs, which
// its 3x3 kernels fit only staging element by element (51 to 61 VGPRs on gfx906, against 63
// to 81), and for 16-bit elements of 5x5 and 7x7 filters (sm_90 spilled 4 bytes at 64
// registers with vectors; float spilled 4 with elements). Its plans match (weight_reduce.hpp:
// weight_stages_elements).
template <class T, int K>
DSCONV_HOST_DEVICE constexpr int weight_staging_paths() {
#if defined(DSCONV_PLATFORM_HIP)
  constexpr bool amd = true;
#else
  constexpr bool amd = false;
#endif
  return weight_stages_elements(K, static_cast<int>(sizeof(T)), amd) ? 0 : kernels::staging_vectors;
}

// How a weight-gradient launch spreads its items (bands of images) over blocks.
struct weight_items {
  int per_block;     // items a block takes, in order
  int groups;        // blocks per channel (group): grid.x = channel groups * groups
  float* partial;    // [groups][channels][taps + 1] where groups > 1, else nullptr
  int dz_plane;      // NCHW: the staged stride of a dz plane (floats), the item's rows of one
                     // channel of one image; 0 for NHWC
};
}  // namespace detail

namespace kernels {

template <class T, int K, int S>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::depthwise_block_threads, (detail::weight_resident_blocks<T, K, S, true>()))
void depthwise_nchw_backward_weight(detail::depthwise_shape s, detail::depthwise_tile t, detail::weight_items items,
                                    const T* __restrict__ input, const T* __restrict__ grad_output,
                                    detail::gate_tensor<T> gate, T* __restrict__ grad_weight, T* __restrict__ grad_bias) {
  namespace pf = platform;
  constexpr int C = detail::weight_chunk_of(K, true), groups = detail::weight_tap_groups_of(K, true);
  const detail::window_geometry<K, S> win(s);
  const int kh = win.kh, kw = win.kw, sh = win.sh, sw = win.sw, dh = win.dh, dw = win.dw, taps = win.taps;
  const int tid = static_cast<int>(pf::thread_idx().x), threads = static_cast<int>(pf::block_dim().x);
  const detail::warp_position wp(tid, threads);
  constexpr int phases = S > 1 ? S : 1;  // column phases of a staged row (tile.hpp)
  const int pitch = t.row_stride, plane_stage = t.plane_stride, phase_pitch = pitch / phases;
  float* staged = pf::dynamic_shared<float>();

  // This block's channels (G = t.channels from c0) and its items: item i is band i % bands of
  // image group i / bands, walked without dividing.
  const int channel_group = static_cast<int>(pf::block_idx().x) / items.groups;  // (once per block)
  const int group = static_cast<int>(pf::block_idx().x) - channel_group * items.groups;
  const int G = t.channels, c0 = channel_group * G;
  const int g = tid & (G - 1);  // this thread keeps the sums of channel c0 + g
  const int bands = (s.out_h + t.rows - 1) / t.rows, image_groups = (s.n + t.images - 1) / t.images;
  const int first = group * items.per_block;
  const int last = first + items.per_block < bands * image_groups ? first + items.per_block : bands * image_groups;
  const int first_band = first % bands, first_image_group = first / bands;
  const index_t out_plane = static_cast<index_t>(s.out_h) * s.out_w;

  // This thread's tap group (sets of threads / groups threads, whole warps) and its taps (the
  // bias with the first tap's).
  const int set_threads = threads / groups, tap_group = tid / set_threads, set_tid = tid - tap_group * set_threads;
  const int pass = detail::weight_pass<K, true>();
  const detail::thread_taps<K, phases, C, groups> own_taps(tap_group, pass, taps, kw, dw, dh * pitch, 1, phase_pitch);
  float sums[C], bias = 0.f;
  DSCONV_UNROLL
  for (int i = 0; i < C; ++i) sums[i] = 0.f;
  int band = first_band, image_group = first_image_group;
  float* dz_staged = staged + G * t.images * plane_stage;  // the channels' dz rows after their inputs
  const int slot0 = set_tid / G, slot_step = set_threads / G;  // (once per block)
  for (int item = first; item < last; ++item) {
    const nchw_planes pl(t, s.c, s.n, c0, image_group * t.images);
    const int oy0 = band * t.rows, rows = s.out_h - oy0 < t.rows ? s.out_h - oy0 : t.rows;  // (full-width bands)
    const nchw_band b{oy0 * sh - s.pad_h, (rows - 1) * sh + (kh - 1) * dh + 1, s.pad_w, s.pad_w, s.h, s.w};
    stage_nchw_band<phases, detail::weight_staging_paths<T, K>()>(staged, input, static_cast<const T*>(nullptr), activation::none,
                                                          s.c, pl, b, t, tid, threads);
    // The band's dz rows of each plane: one contiguous range per image and channel, [plane][rows
    // * out_w] at dz_plane apart, read in order.
    const int band_elements = rows * s.out_w;
    detail::for_each_strided<3>(pl.i_count * pl.g_count * band_elements, {pl.g_count, band_elements}, tid, threads,
                                [&](const auto& at) {
      const index_t off = (static_cast<index_t>(pl.b0 + at.outer()) * s.c + c0 + at[0]) * out_plane +
                          static_cast<index_t>(oy0) * s.out_w + at[1];
      const float dz = detail::gated_load(grad_output, gate, off);
      pf::shared_store(dz_staged + (at.outer() * pl.g_count + at[0]) * items.dz_plane + at[1], dz);
    });
    pf::sync_threads();
    // This thread's channel's outputs, each tap group's threads in the forward's order (rows in
    // row slots; with G channels a G-th of the threads each, row slots a multiple of 32 / G so
    // that a warp's threads of one channel share a row).
    if (g < pl.g_count)
      own_taps.visit([&](const auto& own) {
        detail::for_each_strided<3>(pl.i_count * rows * t.row_slots, {rows, t.row_slots}, slot0, slot_step,
                                    [&](const auto& at) {
          const int bi = at.outer(), plane = bi * pl.g_count + g, oy = at[0], ox = at[1];
          if (ox >= s.out_w) return;
          const float dz = pf::shared_load(dz_staged + plane * items.dz_plane + oy * s.out_w + ox);
          if (own.sums_bias()) bias += dz;
          const float* window = staged + plane * plane_stage + oy * sh * pitch + (phases > 1 ? ox : ox * sw);
          DSCONV_UNROLL
          for (int i = 0; i < C; ++i) sums[i] += dz * pf::shared_load(window + own.at(i));
        });
      });
    pf::sync_threads();  // before the next item's staging
    if (++band == bands) band = 0, ++image_group;
  }
  // Each channel's and tap group's sums (threads with ids equal modulo G in a set) in staged.
  detail::reduce_chunk<C, groups>(sums, bias, staged, G, wp, tid, threads);
  // Stored in the gradient's order (channel, then tap, the bias last), the tap groups' values
  // side by side: value v < groups * C of a channel is tap group v / C's sum i = v % C.
  constexpr int values = groups * C + 1;
  for (int j = tid; j < G * values; j += threads) {
    const int jg = j / values, v = j - jg * values, c = c0 + jg;  // (once per value)
    const bool is_bias = v == groups * C;
    const int set = is_bias ? 0 : v / C, i = is_bias ? C : v - set * C, tap = pass * groups * C + v;
    if (c >= s.c || (!is_bias && tap >= taps) || (is_bias && pass != 0)) continue;  // (the bias: the first pass's)
    detail::store_weight_sum(pf::shared_load(staged + detail::reduced_at<C, groups>(set, jg, G, wp) + i), c,
                             is_bias ? taps : tap, taps, s.c, items.partial, group, grad_weight, grad_bias);
  }
}

}  // namespace kernels
}  // namespace dsconv
