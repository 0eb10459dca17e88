#pragma once
// What the depthwise weight-gradient kernels share: per-thread sums of dz * x for a chunk of
// the filter's taps (and of dz, the bias gradient), added up over the block in a fixed order
// (the same bits on every run), and the second pass that adds the blocks' partial sums.

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../common/grid_stride.hpp"
#include "tile.hpp"

namespace dsconv {
namespace detail {

// The NCHW kernel's threads stage dz (nchw_backward_weight.hpp), so several sets of its threads
// can walk the same staged outputs, each summing its own taps: a specialised filter's taps are
// split over as many tap groups (sets of whole warps) as keep at most weight_group_sums sums a
// thread. 13 is what a 5x5 filter's half needs: gfx906 held its 25 sums in 74 to 75 VGPRs (3
// waves per SIMD; at 64, 6 to 10 spilled), 15 of them in 64. A 7x7 filter then takes 4 groups
// in one pass over its input, where whole-row passes of 28 taps read it twice.
inline constexpr int weight_group_sums = 13;
DSCONV_HOST_DEVICE constexpr int weight_tap_groups_of(int k, bool nchw) {
  return nchw && k != 0 ? (k * k + weight_group_sums - 1) / weight_group_sums : 1;
}
// Taps whose sums a thread keeps in registers (k: the specialised square filter's size, 0 for
// run-time filters): run-time filters 16 taps; NCHW specialised filters their tap group's
// (the filter's taps over weight_tap_groups_of, rounded up: the last group's spare sums read
// inside the window and are never stored); NHWC the whole filter up to 5x5, larger filters
// whole filter rows, 28 taps at most. A block takes one pass of that many taps per tap group
// over its work (grid.y: the passes). (The planner sizes the launch and the block's reduction
// scratch from the same counts.)
DSCONV_HOST_DEVICE constexpr int weight_chunk_of(int k, bool nchw) {
  return k == 0 ? 16
         : nchw  ? (k * k + weight_tap_groups_of(k, nchw) - 1) / weight_tap_groups_of(k, nchw)
         : k * k <= 25 ? k * k
                       : 28 / k * k;
}

// Blocks of the weight-gradient kernels a multiprocessor is to hold at once: their launch
// bounds on CUDA, which cap registers at 64 for 4 blocks of 256 threads, 80 for 3, 128 for 2.
// A thread keeps a sum per tap of its pass (weight_chunk_of) live across the staging of each
// item: 9 for 3x3 and 13 for NCHW tap groups fit 64, as do NHWC 5x5's 25 (with reduce_chunk's
// order); NHWC 7x7's 28 fit 80; run-time filters need 108 to 123. Fewer registers than these
// spilled 4 to 56 bytes (sm_75/80/90).
template <class T, int K, int S, bool Nchw>
DSCONV_HOST_DEVICE constexpr int weight_resident_blocks() {
  return K == 3 || K == 5 || (K == 7 && Nchw) ? depthwise_resident_blocks : K == 7 ? 3 : 2;
}

// Whether the NCHW weight gradient stages its input element by element (k: the specialised
// filter's size, 0 for run-time filters; element_bytes: sizeof(T); amd: a HIP build, or its
// plan for waves of 64), where 16-byte vectors would cost registers its sums need
// (nchw_backward_weight.hpp: weight_staging_paths).
DSCONV_HOST_DEVICE constexpr bool weight_stages_elements(int k, int element_bytes, bool amd) {
  return amd || (k >= 5 && element_bytes == 2);
}

// The taps a thread sums, first .. first + C - 1 with first = First + pass * C, as offsets
// from a window's first staged element: `row` per filter row (times the dilation), `col` per
// staged column, `phase` per column phase (K and Phases as in window_sum). A specialised
// filter's taps are First (a tap group's first, at compile time) on in one pass, or passes of
// whole filter rows: each tap's offset is its row's (rows past the filter read the last one)
// plus a compile-time multiple of the steps; a run-time filter's offsets are computed once per
// block. Taps past the filter read inside the window and their sums are never stored: the loop
// over a pass's taps then has no per-tap condition (on AMD each would hold a 64-bit lane mask
// in scalar registers, more than the kernel has).
template <int K, int Phases, int C, int First = 0>
struct pass_taps {
  static constexpr int lead = K != 0 ? First % K : 0;                  // the first tap's column
  static constexpr int rows = K != 0 ? (lead + C - 1) / K + 1 : 1;     // filter rows the taps touch
  // (K != 0 ? K : 1): nvcc warns of a % 0 even where K == 0 has already decided the assertion.
  static_assert(K == 0 || First == 0 || C * (First / C) == First, "a tap group's first tap is a multiple of C");
  static_assert(K != 0 || (Phases == 1 && First == 0), "run-time filters stage unphased rows, in passes");
  int first;  // the first tap
  int col, phase;
  int offset[K != 0 ? rows : C];  // per row the taps touch (specialised filters) or per tap

  // `pass`: 0 where one pass covers the filter (the compiler then sees the constants).
  DSCONV_DEVICE pass_taps(int pass, int taps, int kw, int dw, int row, int col_step, int phase_step)
      : first(First + pass * C), col(col_step), phase(phase_step) {
    if constexpr (K != 0) {
      const int first_row = first / K;  // (passes > 0: whole rows, C a multiple of K)
      DSCONV_UNROLL
      for (int r = 0; r < rows; ++r) offset[r] = (first_row + r < K ? first_row + r : K - 1) * row;
    } else {
      int ky = first / kw, kx = first - ky * kw;  // (once per block)
      DSCONV_UNROLL
      for (int i = 0; i < C; ++i) {
        offset[i] = first + i < taps ? ky * row + kx * dw * col : 0;  // (run-time filters: unphased rows)
        if (++kx == kw) kx = 0, ++ky;
      }
    }
  }
  // Whether these taps' thread sums the bias too (the first tap's; known at compile time for one pass).
  DSCONV_DEVICE DSCONV_FORCEINLINE bool sums_bias() const { return first == 0; }
  DSCONV_DEVICE DSCONV_FORCEINLINE int at(int i) const {
    if constexpr (K != 0)
      return offset[(lead + i) / K] + (lead + i) % K / Phases * col + (lead + i) % K % Phases * phase;  // (constants once unrolled)
    else
      return offset[i];
  }
};

// A thread's taps: its tap group's pass_taps (Groups sets of whole warps, group = the thread's).
// One group keeps its pass_taps, built once per block; several build their group's where
// f uses it (a few multiplications by constants, no division): a switch over compile-time
// firsts, so that each group's offsets fold to constants.
template <int K, int Phases, int C, int Groups>
class thread_taps {
  static_assert(K != 0, "run-time filters take one tap group");

 public:
  DSCONV_DEVICE thread_taps(int group, int pass, int taps, int kw, int dw, int row, int col_step, int phase_step)
      : group_(group), row_(row), col_(col_step), phase_(phase_step) {
    (void)pass, (void)taps, (void)kw, (void)dw;  // (one pass: weight_pass is 0)
  }
  template <class F>
  DSCONV_DEVICE DSCONV_FORCEINLINE void visit(F&& f) const {
    visit_from<0>(f);
  }

 private:
  template <int G, class F>
  DSCONV_DEVICE DSCONV_FORCEINLINE void visit_from(F& f) const {
    if (G == Groups - 1 || group_ == G)
      f(pass_taps<K, Phases, C, G * C>(0, 0, 0, 0, row_, col_, phase_));
    else if constexpr (G + 1 < Groups)
      visit_from<G + 1>(f);
  }
  int group_, row_, col_, phase_;
};
template <int K, int Phases, int C>
class thread_taps<K, Phases, C, 1> {
 public:
  DSCONV_DEVICE thread_taps(int, int pass, int taps, int kw, int dw, int row, int col_step, int phase_step)
      : taps_(pass, taps, kw, dw, row, col_step, phase_step) {}
  template <class F>
  DSCONV_DEVICE DSCONV_FORCEINLINE void visit(F&& f) const {
    f(taps_);
  }

 private:
  pass_taps<K, Phases, C> taps_;
};

// Where a thread sits in its block's warps (computed once per block: the warp width is a
// run-time value on some platforms, and the callers reduce inside their loops).
struct warp_position {
  int width, warps, warp, lane;
  DSCONV_DEVICE warp_position(int tid, int threads)
      : width(platform::warp_size()), warps(threads / width), warp(tid / width), lane(tid - warp * width) {}
};

// Adds N values of each thread (`values[i]`) over the threads of the block that share a channel
// and a set: those whose ids are equal modulo `group` (1: all of them; a power of two up to the
// warp width) among Sets consecutive sets of whole warps (tap groups, each summing its own
// taps). Each value is summed over a warp by a butterfly (fixed order), then over the set's
// warps in warp order through `scratch` (warps * group * N floats). Ends with the sums in
// scratch[reduced_at(set, group index, group) + i] for the caller to store after a barrier.
template <int N, int Sets = 1>
DSCONV_DEVICE DSCONV_FORCEINLINE void reduce_values(float (&values)[N], float* scratch, int group, const warp_position& wp,
                                                    int tid, int threads) {
  namespace pf = platform;
  // (each step over all values in place: a value at a time, sm_80 spilled a 5x5 filter's
  // sums at 64 registers)
  for (int offset = wp.width >> 1; offset >= group; offset >>= 1) {
    DSCONV_UNROLL
    for (int i = 0; i < N; ++i) values[i] += pf::shfl_xor(values[i], offset);
  }
  if (wp.lane < group) {
    float* own = scratch + (wp.warp * group + wp.lane) * N;
    DSCONV_UNROLL
    for (int i = 0; i < N; ++i) pf::shared_store(own + i, values[i]);
  }
  pf::sync_threads();
  // Entry j of a set (< group * N: value j % N of group member j / N) added over the set's
  // warps into its first warp's copy, which is that entry itself: no other thread reads or
  // writes it.
  const int set_warps = wp.warps / Sets, entries = group * N;
  for (int set = 0; set < Sets; ++set) {
    float* first = scratch + set * set_warps * entries;
    for (int j = tid; j < entries; j += threads) {
      float total = 0.f;
      for (int w = 0; w < set_warps; ++w) total += pf::shared_load(first + w * entries + j);
      pf::shared_store(first + j, total);
    }
  }
  pf::sync_threads();
}
// reduce_values of the per-thread sums of a chunk of taps (`sums[i]`, tap first + i) and of the
// bias gradient (`bias`, where first is 0): tap i at i, the bias at C.
template <int C, int Sets = 1>
DSCONV_DEVICE DSCONV_FORCEINLINE void reduce_chunk(float (&sums)[C], float bias, float* scratch, int group,
                                                   const warp_position& wp, int tid, int threads) {
  float values[C + 1];
  DSCONV_UNROLL
  for (int i = 0; i < C; ++i) values[i] = sums[i];
  values[C] = bias;
  reduce_values<C + 1, Sets>(values, scratch, group, wp, tid, threads);
}
// Where reduce_chunk<C, Sets> leaves the sums of group member `member` of set `set`.
template <int C, int Sets>
DSCONV_DEVICE DSCONV_FORCEINLINE int reduced_at(int set, int member, int group, const warp_position& wp) {
  return ((set * (wp.warps / Sets)) * group + member) * (C + 1);
}

// Stores sum `v` of tap `tap` (taps: the bias) of `channel` as a weight-gradient kernel's block
// ends: its partial sum (partial: [groups][channels][taps + 1], `group` the block's) where the
// launch spreads each channel's sums over blocks, else rounded to T into grad_weight or
// grad_bias (null: not wanted).
template <class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void store_weight_sum(float v, int channel, int tap, int taps, int channels, float* partial,
                                                       int group, T* grad_weight, T* grad_bias) {
  namespace pf = platform;
  if (partial)
    pf::store(partial + (static_cast<index_t>(group) * channels + channel) * (taps + 1) + tap, v);
  else if (tap < taps)
    pf::store(grad_weight + static_cast<index_t>(channel) * taps + tap, from_float<T>(v));
  else if (grad_bias)
    pf::store(grad_bias + channel, from_float<T>(v));
}

// The block's pass of a weight-gradient kernel's taps: grid.y where its tap groups take
// several passes, else 0 at compile time (pass_taps then folds its offsets to constants).
template <int K, bool Nchw>
DSCONV_DEVICE DSCONV_FORCEINLINE int weight_pass() {
  constexpr bool one = K != 0 && weight_chunk_of(K, Nchw) * weight_tap_groups_of(K, Nchw) >= K * K;
  return one ? 0 : static_cast<int>(platform::block_idx().y);
}

}  // namespace detail

namespace kernels {

// The second pass where the weight gradient's blocks wrote partial sums: each tap's (and the
// bias's) sums [group][channel][taps + 1] added in group order, then rounded to T.
template <class T>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::grid_stride_block_threads, 1)
void depthwise_weight_reduce(const float* __restrict__ partial, int groups, int channels, int taps, T* __restrict__ grad_weight,
                             T* __restrict__ grad_bias) {
  const index_t per_group = static_cast<index_t>(channels) * (taps + 1);
  detail::for_each_grid_stride<2>(per_group, {static_cast<index_t>(taps + 1)}, [&](const auto& at) {
    float sum = 0.f;
    for (int g = 0; g < groups; ++g) sum += platform::load(partial + g * per_group + at.index());
    const index_t c = at.outer(), tap = at[0];
    if (tap < taps)
      platform::store(grad_weight + c * taps + tap, from_float<T>(sum));
    else if (grad_bias)
      platform::store(grad_bias + c, from_float<T>(sum));
  });
}

}  // namespace kernels
}  // namespace dsconv
