#pragma once
// Depthwise NHWC forward, register-blocked (the variant nhwc_register). A thread computes a
// strip of TW consecutive outputs of one output row for one vector of channels (16 bytes, or 8
// for some 16-bit filters: register_vector): for each of the K input rows the strip reads it loads the
// (TW - 1) * S + K input vectors once, straight from global memory (L1 and L2 serve the
// re-reads of neighbouring strips and rows), widens them to float once, and multiplies each
// by the tap weights of every output that reads it, accumulating in fp32 registers; the
// strip's outputs leave as 16-byte stores with bias and activation applied. No shared-memory
// tile and no barrier stand between the loads and the arithmetic, so many independent
// loads are in flight per thread: the shared-memory tiled kernels computed one output per
// thread from 2 K^2 shared-memory loads, 10+ instructions per DRAM byte where an H200 issues
// about 8 at full bandwidth (../shared notes, sass_baseline.md); here it is 5.1 for a
// 16-bit 3x3 filter through relu6 (scripts/sass_budget.py, sm_90), the 9 fp32 multiply-adds and
// 4.5 conversions of each output the bulk of it.
//
// A block takes a group of channel vectors (blockIdx.x) whose weights and biases it stages
// in shared memory as floats once (register_weight_pitch: each vector's taps and bias in a run
// of their own, so that a thread reads a tap's weights at a compile-time offset from its run);
// its threads take consecutive vectors of one pixel first (so that a warp's loads cover whole
// runs of a pixel's channels), then strips.
// Requires multiplier 1, channels a multiple of the vector, a specialised filter (K and S at
// compile time: 3x3 and 5x5, stride 1 and 2, no dilation). Pointers that are not aligned to
// the vector are read and written element by element (the plan's `aligned`), the same arithmetic.

#include <type_traits>

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../platform/recomputed.hpp"
#include "../../problem.hpp"
#include "../common/activation.hpp"
#include "../common/fast_divmod.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/words.hpp"

namespace dsconv {
namespace detail {

inline constexpr unsigned register_block_threads = 256;
// Registers allow two blocks (512 threads) per multiprocessor at least: with 16-byte loads of
// a whole strip row in flight per thread that is 48 KiB in flight (CUB's aim on an H200).
inline constexpr int register_resident_blocks = 2;

// Channels per thread: a 16-byte vector of the element type, but 8 bytes (4 channels) of a
// 16-bit type for 5x5 filters and at stride 2, so that the strip's widened input row (4 floats a
// vector) stays in the 128 registers a thread of two resident blocks has while the strip is
// long enough to reuse each input for several outputs (ptxas spilled 16-byte vectors there at
// any strip worth having); and 8 bytes (2 channels) of float at stride 2, so that all of a
// strip's input rows fit those registers and their loads are in flight at once
// (register_inside_path; 5x5 filters with strips of 3 outputs, register_strip): with 4 channels
// a row at a time was in flight (sm_90: 144 bytes a thread for 3x3 filters, 176 for 5x5), and
// the small grids of the networks' stride-2 layers at batch 1 to 32 (23 to 213 threads a
// multiprocessor) held 3.3 to 30 KiB of the 4.5 to 44.5 KiB they read; with 2 channels two to
// three times the threads hold 216 bytes each (3x3), 360 (5x5).
template <class T, int K, int S>
DSCONV_HOST_DEVICE constexpr int register_vector() {
  return sizeof(T) == 2 && (K == 5 || S == 2) ? 4 : sizeof(T) == 4 && S == 2 ? 2 : static_cast<int>(16 / sizeof(T));
}

// Outputs per thread along a row: 4, and 8 for 5x5 filters at stride 1 (the widened input row,
// 12 vectors of 4 floats, fits; each input then serves up to 5 outputs: float's count went
// from 6.2 to 4.9 instructions per DRAM byte, its 25 multiply-adds an output 3.1 of them) but
// for the data gradient's (Gated: the saved row's words in registers too; ptxas spilled 8); 3
// for float 5x5 filters at stride 2, whose 5 rows of 9 two-channel vectors (90 words) take the
// unchecked path (strips of 4: 110 words, which spilled 16 and 24 bytes on sm_75 and sm_80).
template <class T, int K, int S, bool Gated = false>
DSCONV_HOST_DEVICE constexpr int register_strip() {
#if defined(DSCONV_PLATFORM_HIP)
  return 2;  // hipcc keeps an address offset per input column in scalar registers: more spilled
#else
  return K == 5 && S == 1 && !Gated ? 8 : sizeof(T) == 4 && K == 5 && S == 2 ? 3 : 4;
#endif
}

// Input rows whose loads a thread issues together: all K of a 3x3 filter, and of float's at
// stride 2 (two channels a thread), on NVIDIA; else one row at a time (its loads still in flight
// together), for the same reason (hipcc hoists a whole unrolled filter's loads, which spilled on
// gfx906).
template <class T, int K, int S>
DSCONV_HOST_DEVICE constexpr int register_rows_unrolled() {
#if defined(DSCONV_PLATFORM_HIP)
  return 1;
#else
  return K == 3 || (sizeof(T) == 4 && S == 2) ? K : 1;
#endif
}

// Whether strips inside the map advance a row pointer from row to row (NVIDIA: nvcc had formed
// each row's address with a 64-bit multiply-add, 6 to 8 instructions), or form each row's
// address from its index (AMD: hipcc held the pointer in scalar registers and spilled them for
// 5x5 filters on gfx906 and gfx90a).
inline constexpr bool register_row_pointer =
#if defined(DSCONV_PLATFORM_HIP)
    false;
#else
    true;
#endif

// Whether strips that lie inside the map take their own unchecked path (the kernel's `rows`),
// whose loads of the unrolled rows may all be issued at once: where those rows' words take at
// most 96 of the 128 registers a thread has (float 3x3 at stride 2 with 4 channels, 108, spilled
// on sm_90; with 2, register_vector, 54; float 5x5 at stride 2, 2 channels and strips of 3, 90).
template <class T, int K, int S, bool Gated>
DSCONV_HOST_DEVICE constexpr bool register_inside_path() {
  constexpr int words = register_vector<T, K, S>() * static_cast<int>(sizeof(T)) / 4;
  return register_rows_unrolled<T, K, S>() * ((register_strip<T, K, S, Gated>() - 1) * S + K) * words <= 96;
}

// The filters the register kernel is compiled for.
DSCONV_HOST_DEVICE constexpr bool register_filter(int k, int s) { return (k == 3 || k == 5) && (s == 1 || s == 2); }

// Floats of the block's staged weights per channel vector: its K x K taps' V weights, then its
// V biases (tap K x K), tap after tap, padded so that the run is an odd number of 16-byte
// words: the 8 lanes of a 16-byte access phase, 8 consecutive vectors' runs at the same offset,
// then start in 8 different runs of 4 banks. A thread reads its taps at offsets known at
// compile time from its run's start (no address arithmetic per tap: a layout interleaving the
// group's runs per tap took an integer multiply-add per tap, about 30 instructions a 5x5
// strip, sm_90 SASS).
DSCONV_HOST_DEVICE constexpr int register_weight_pitch(int k, int v) {
  return ((k * k + 1) * v / 4) % 2 ? (k * k + 1) * v : (k * k + 1) * v + 4;
}
template <int K, int V>
DSCONV_HOST_DEVICE constexpr int register_weight_pitch() {
  return register_weight_pitch(K, V);
}

struct nhwc_register_tile {
  int group_vectors;      // channel vectors per block (a divisor of c / vector, at most 8)
  int pixel_lanes;        // threads per channel vector; threads past group_vectors * pixel_lanes idle
  int strip_cols;         // strips per output row: ceil(out_w / TW)
  int strips;             // n * out_h * strip_cols
  int strips_per_thread;  // strips a thread takes, pixel_lanes apart
  int walk_blocks = 1;    // the stride-2 data gradient's: blocks a strip takes down a column (nhwc_register_transposed.hpp)
  bool aligned;           // input and output (and pre-activation) aligned to the vector: vector accesses
  fast_divmod strip_row{1u};  // strip -> (n * out_h + oy, strip column): by strip_cols
  fast_divmod image_row{1u};  // n * out_h + oy -> (n, oy): by out_h
};

// A block's channel group (blockIdx.x) and its strip block (blockIdx.y: the strips it takes,
// strips_per_thread * pixel_lanes of them). The channel groups vary fastest along the grid, so
// that the blocks that read the channel groups of the same pixels run at the same time and each
// of the input's lines comes from DRAM once: with the groups along grid.y, each group walked
// the whole tensor in turn, reading its share of every line (as little as 96 of a pixel's 576
// bytes), and the other groups' shares came from DRAM again (the H200 measured 43% of the copy
// bandwidth on 144 float channels at 56x56, 75% on 32 channels: one group). (Block indices, not
// one index divided: the special registers are read again where needed, a quotient would be
// live across the strips, and the float 3x3 stride-2 weight gradient spilled on sm_90 for it.)
struct register_block_place {
  int channel_group;
  unsigned strip_block;
};
DSCONV_DEVICE DSCONV_FORCEINLINE register_block_place register_block() {
  return {static_cast<int>(platform::block_idx().x), platform::block_idx().y};
}

// The block's weights (and biases: 0 where `bias` is null) of its gc channels from c0, as
// floats in runs of register_weight_pitch<K, V>() a channel vector, the filter rotated where
// `rotate` (the stride-1 data gradient's).
template <int K, int V, class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void stage_register_weights(float* staged, const T* __restrict__ weight,
                                                             const T* __restrict__ bias, bool rotate, int c0, int gc,
                                                             int tid, int threads) {
  namespace pf = platform;
  constexpr int pitch = register_weight_pitch<K, V>();
  for (int c = tid; c < gc; c += threads) {
    float* run = staged + (c / V) * pitch + c % V;
DSCONV_UNROLL
    for (int tap = 0; tap < K * K; ++tap) {
      const int from = rotate ? K * K - 1 - tap : tap;
      pf::shared_store(run + tap * V, to_float(pf::load(weight + static_cast<index_t>(c0 + c) * (K * K) + from)));
    }
    pf::shared_store(run + K * K * V, bias ? to_float(pf::load(bias + c0 + c)) : 0.f);
  }
}

// A thread's place in its block (register_block): its channel vector's first channel, its
// lane among the block's threads of that vector, its vector's staged taps and bias (the block's
// weights of its channels staged, stage_register_weights, and the block synchronised), and the
// block's strip block.
struct register_thread {
  int channel;
  int lane;
  const float* taps;
  unsigned strip_block;
};
template <int K, int V, class T>
DSCONV_DEVICE DSCONV_FORCEINLINE register_thread stage_block_weights(const nhwc_register_tile& t, const T* __restrict__ weight,
                                                                     const T* __restrict__ bias, bool rotate) {
  namespace pf = platform;
  const int tid = static_cast<int>(pf::thread_idx().x), threads = static_cast<int>(pf::block_dim().x);
  const int gc = t.group_vectors * V;  // the block's channels
  const register_block_place place = register_block();
  const int c0 = place.channel_group * gc;
  // (the thread's channel vector and lane, divided before the staging loop so that no compiler
  // places the division inside it)
  const int cv = tid % t.group_vectors, lane = tid / t.group_vectors;
  float* staged = pf::dynamic_shared<float>();
  stage_register_weights<K, V>(staged, weight, bias, rotate, c0, gc, tid, threads);
  pf::sync_threads();
  return {c0 + cv * V, lane, staged + cv * register_weight_pitch<K, V>(), place.strip_block};
}

// The strip's epilogue with activation A (a compile-time constant, so the activation's switch
// folds away): z = acc (or act'(z) where `derivative`: saved_word) into `pre` where given, act(z)
// into `out`, outputs from `from` and before `count` only. The words are made for every output
// and only the stores are conditional, and the pre-activation is tested once a strip (sm_90,
// float 5x5 strips of 8: a branch an output for each test, 4 instructions an output more).
template <activation A, class T, int V, int TW>
DSCONV_DEVICE DSCONV_FORCEINLINE void store_strip(float (&acc)[TW][V], T* out, T* pre, bool derivative, int channel_stride,
                                                 int count, bool aligned, int from = 0) {
  constexpr int E = elements_per_word<T>(), W = V / E;
  const auto put = [&](T* to, auto saved) {
    // (each store one wide multiply-add from the strip's first output, platform::held_global:
    // sm_90, float 5x5, 1189 -> 1168 instructions a strip; every form 9-21 fewer)
    to = platform::held_global(to);
DSCONV_UNROLL
    for (int o = 0; o < TW; ++o) {
      platform::vec<unsigned, W> w;
DSCONV_UNROLL
      for (int k = 0; k < W; ++k)
        w[k] = decltype(saved)::value ? saved_word<A, T>(acc[o] + k * E, derivative) : activated_word<A, T>(acc[o] + k * E);
      // (not break: an early exit kept the accumulators out of registers on AMD)
      if (o >= from && o < count) store_words<W>(to + o * channel_stride, w, aligned);
    }
  };
  if (pre) put(pre, std::true_type{});
  put(out, std::false_type{});
}

}  // namespace detail

namespace kernels {

// G != none: the data gradient of stride 1 (input: grad_output, the filter rotated), each word
// multiplied by the activation's derivative from the saved tensor at the same place as it
// arrives (kernels/common/gradient_gate.hpp).
template <class T, int K, int S, detail::gate_kind G = detail::gate_kind::none>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::register_block_threads, detail::register_resident_blocks)
DSCONV_WAVES_PER_SIMD(detail::register_resident_blocks)
void depthwise_nhwc_register(detail::depthwise_shape s, detail::nhwc_register_tile t, const T* __restrict__ input,
                             detail::register_gate gate, const T* __restrict__ weight, const T* __restrict__ bias, T* __restrict__ output,
                             T* __restrict__ pre_activation) {
  namespace pf = platform;
  constexpr bool Gated = G != detail::gate_kind::none;
  constexpr int V = detail::register_vector<T, K, S>(), TW = detail::register_strip<T, K, S, Gated>();
  constexpr int E = detail::elements_per_word<T>(), W = V / E;  // a vector's elements per word, its words
  constexpr int IW = (TW - 1) * S + K;                             // input columns a strip reads
  using words = pf::vec<unsigned, W>;
  // Float strips step between their columns by a stride kept 32-bit (platform::unwidened): one
  // instruction an address, not two (sm_90, float 5x5: 1250 instructions a strip, 4.88 a DRAM
  // byte, against 1189, 4.64). Not 16-bit ones: the half 3x3 stride-2 form spilled so on sm_90.
  constexpr bool float_elements = sizeof(T) == 4;
  // (its channel vector's weights and biases staged as floats: register_weight_pitch)
  const detail::register_thread me = detail::stage_block_weights<K, V>(t, weight, bias, s.rotate_filter);
  const float* w_s = me.taps;  // this thread's vector's taps, then its biases
  const int lane = me.lane;

  if (lane >= t.pixel_lanes) return;
  const int c = me.channel;
  const index_t row_pitch = static_cast<index_t>(s.w) * s.c, out_pitch = static_cast<index_t>(s.out_w) * s.c;
  const unsigned first = me.strip_block * t.strips_per_thread * t.pixel_lanes + lane;
  for (int i = 0; i < t.strips_per_thread; ++i) {
    const unsigned strip = first + static_cast<unsigned>(i * t.pixel_lanes);
    if (strip >= static_cast<unsigned>(t.strips)) break;
    const unsigned row = t.strip_row.div(strip), n = t.image_row.div(row);
    const int ox0 = static_cast<int>(strip - row * t.strip_cols) * TW, oy = static_cast<int>(row - n * s.out_h);
    const int ix0 = ox0 * S - s.pad_w, iy0 = oy * S - s.pad_h;
    const bool columns_inside = ix0 >= 0 && ix0 + IW <= s.w;
    const index_t image_at = static_cast<index_t>(n) * s.h * row_pitch + c;
    const T* image = input + image_at;
    const T* saved = Gated ? static_cast<const T*>(gate.saved) + image_at : nullptr;

    float acc[TW][V];
DSCONV_UNROLL
    for (int e = 0; e < V; ++e) {
      const float b = pf::shared_load(w_s + K * K * V + e);
DSCONV_UNROLL
      for (int o = 0; o < TW; ++o) acc[o][e] = b;
    }
    // The strip's K input rows, loaded, widened and multiplied in. Inside (a compile-time
    // fact): the strip's rows and columns all lie inside the map, its loads without checks and
    // without a branch between the rows, so that the compiler may issue every row's loads before
    // the first row's arithmetic (with a test a row, each row's loads waited for the previous
    // row's products: a DRAM latency a row).
    const auto rows = [&](auto inside) {
      // (declared here: clang takes an unroll count from the lambda's own scope only)
      [[maybe_unused]] constexpr int row_unroll = detail::register_rows_unrolled<T, K, S>();  // (host: no pragma)
      // (inside: the row's first input, advanced a row at a time where register_row_pointer)
      constexpr bool advance = decltype(inside)::value && detail::register_row_pointer;
      const index_t first_at = static_cast<index_t>(iy0) * row_pitch + static_cast<index_t>(ix0) * s.c;
      const T* inside_row = advance ? image + first_at : nullptr;
      const T* inside_saved = advance && Gated ? saved + first_at : nullptr;
DSCONV_UNROLL_BY(row_unroll)
      for (int ky = 0; ky < K; ++ky) {
        const int iy = iy0 + ky;
        words raw[IW];
        // (Gated: the saved words at the same place, gated into raw as they arrive)
        // (at pointers, not 64-bit offsets per column: those spilled the 5x5 stride-2 forms on AMD;
        // kept: the saved tensor's element at the same place, Gated)
        const auto load = [&](int j, const T* at, const T* kept) {
          raw[j] = detail::load_words<W>(at, t.aligned);
          if constexpr (Gated) raw[j] = detail::gated_words<T, G, W>(raw[j], detail::load_words<W>(kept, t.aligned), gate);
        };
        // A padding row reads zeros and still multiplies them: the threads of a warp keep in
        // step at the weights' shared loads (a skipped row would split the warp's requests).
        const bool row_inside = iy >= 0 && iy < s.h;
        if (decltype(inside)::value || (row_inside && columns_inside)) {  // the row's loads without checks
          const index_t at = static_cast<index_t>(iy) * row_pitch + static_cast<index_t>(ix0) * s.c;
          const T* in_row = advance ? inside_row : image + at;
          const T* saved_row = Gated ? (advance ? inside_saved : saved + at) : nullptr;
          const int column = float_elements ? pf::unwidened(s.c) : s.c;  // (the step between the strip's columns)
DSCONV_UNROLL
          for (int j = 0; j < IW; ++j) load(j, in_row + j * column, Gated ? saved_row + j * column : nullptr);
          if constexpr (advance) inside_row += row_pitch, inside_saved += Gated ? row_pitch : 0;
        } else {
DSCONV_UNROLL
          for (int j = 0; j < IW; ++j) {
            const int ix = ix0 + j;
            raw[j] = words{};  // zeros: the padding
            if (row_inside && ix >= 0 && ix < s.w)
              load(j, image + iy * row_pitch + ix * s.c, Gated ? saved + iy * row_pitch + ix * s.c : nullptr);
          }
        }
        float in[IW][V];
DSCONV_UNROLL
        for (int j = 0; j < IW; ++j) detail::widen_words<T>(raw[j], in[j]);
DSCONV_UNROLL
        for (int kx = 0; kx < K; ++kx) {
          float w[V];
DSCONV_UNROLL
          for (int e = 0; e < V; ++e)
            w[e] = pf::shared_load(w_s + (ky * K + kx) * V + e);
DSCONV_UNROLL
          for (int o = 0; o < TW; ++o)
DSCONV_UNROLL
            for (int e = 0; e < V; ++e) acc[o][e] += in[o * S + kx][e] * w[e];
        }
      }
    };
    constexpr bool inside_path = detail::register_inside_path<T, K, S, Gated>();
    if (inside_path && columns_inside && iy0 >= 0 && iy0 + K <= s.h)
      rows(std::integral_constant<bool, inside_path>{});
    else
      rows(std::false_type{});

    const index_t first_out = (static_cast<index_t>(n) * s.out_h + oy) * out_pitch + static_cast<index_t>(ox0) * s.c + c;
    T* out = output + first_out;
    T* pre = pre_activation ? pre_activation + first_out : nullptr;
    const int count = s.out_w - ox0;
    detail::with_output_activation<G>(s.act, [&](auto a) {
      detail::store_strip<decltype(a)::value>(acc, out, pre, s.save_derivative, float_elements ? pf::unwidened(s.c) : s.c, count, t.aligned);
    });
  }
}

}  // namespace kernels
}  // namespace dsconv
