#pragma once
// Depthwise forward (and the stride-1 data gradient's transposed problem) of maps of 1, 2 or 4
// outputs a side, both layouts (the register variants' kernel there): a thread takes a vector
// of channels of one image and computes its whole map, every output from only the taps that
// land inside the map. The 32x32 networks' last stages (EfficientNet-B0's 5x5 filters on 4, 2
// and 1 pixel maps, MobileNetV2's 3x3 ones) had run on the register kernels, whose strips (8 or
// 4 outputs along a row, 8 or 16 bytes of a plane's row) and padding rows multiply zeros: a 5x5
// filter on a 2x2 map used 4 of each output's 25 taps and 2 of a strip's 8 outputs (16-bit: 11.7
// instructions per DRAM byte on full strips, sm_90 SASS, scripts/sass_budget.py, so some 47
// there, estimated, where an H200 issues about 8). Here each input is loaded, gated (the data
// gradient) and widened once, and the multiply-adds are the map's own (4 an output for 5x5 on
// 2x2): 1.0 to 3.9 instructions per DRAM byte, 4.2 to 4.6 for 16-bit 5x5 filters on 4x4 maps
// (2 channels a thread; their 196 multiply-adds a channel in fp32 are 3.1 a byte alone, and
// with the loads, conversions, stores and activation the floor is about 3.7 NCHW, 3.9 NHWC).
//
// The box is the map's whole input, B x B pixels (B = O at stride 1, 2 O at stride 2: even
// sides only), so that no access needs a test; a thread holds it whole, or, at stride 2 onto
// 4 x 4 maps (the 32x32 networks' 8 -> 4 layers: an 8 x 8 box), holds it as the loads leave it,
// in words, all of them in flight at once, and widens it into the outputs a row at a time
// (small_map_streams; one channel a thread for float, two for 16-bit), where the register
// kernels' strips of 4 outputs had read 11 columns of a row, 3 of them padding (16-bit 5x5:
// 6.4-6.6 instructions per DRAM byte NHWC, 4.5 NCHW), and where loading and widening a row at
// a time had kept an eighth of a thread's box in flight (sm_90 SASS: 32 of 256 bytes 16-bit, 64
// of 512 float), on grids of 17 to 70 threads a multiprocessor. A block takes a group of channel
// vectors whose
// weights and biases it stages in shared memory as floats (the register kernel's runs,
// stage_register_weights), and its threads take the images, as nhwc_register's take strips.
// NHWC: a pixel's vector of V channels is one access; NCHW: the thread's V planes lie one after
// another, read and written 16 bytes at a time where the tensors are aligned, else element by
// element.
// Requires multiplier 1, a square 3x3 or 5x5 filter of stride 1 or 2 with padding kernel / 2,
// square maps (small_map_side), channels a multiple of the vector.

#include <type_traits>

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../platform/recomputed.hpp"
#include "../../problem.hpp"
#include "../common/activation.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/words.hpp"
#include "nhwc_register.hpp"

namespace dsconv {
namespace detail {

// The input box's side: the input of a map of O outputs a side at stride S (small_map_side).
template <int S, int O>
DSCONV_HOST_DEVICE constexpr int small_map_box() {
  return S * O;
}

// Whether a thread holds its box as the loads leave it, in words, and widens it a row at a time
// (stride 2 onto 4 x 4 maps: an 8 x 8 box and the 16 accumulators would be 80 floats a
// channel), instead of holding it widened.
DSCONV_HOST_DEVICE constexpr bool small_map_streams(int s, int o) { return s * o * s * o + o * o > 64; }

// Rows of a box held in words (small_map_streams) that a thread loads together before it widens
// them: all B on NVIDIA, one at a time on AMD (hipcc spilled 133 to 170 VGPRs of the 16-bit
// forms holding all 8 rows on gfx906, as it had the register kernels' rows:
// register_rows_unrolled).
DSCONV_HOST_DEVICE constexpr int small_map_held_rows(int b) {
#if defined(DSCONV_PLATFORM_HIP)
  static_cast<void>(b);
  return 1;
#else
  return b;
#endif
}

// Channels a thread takes, for elements of `element_bytes` at stride s onto maps of o outputs a
// side: the widest power of two up to a 16-byte vector whose box and accumulators take at most
// 64 of the thread's registers as floats (B^2 + O^2 a channel: 16-bit 2x2 maps 8 channels, 4x4
// maps 2), or, where the thread holds its box in words (small_map_streams), at most 96 as words
// and floats (B^2 v bytes / 4 + O^2 v: float 1 channel, 16-bit 2, one word a pixel), so that
// all of its box's loads are in flight at once within the 128 registers of 2 resident blocks
// (small maps are small grids: 17 to 70 threads a multiprocessor at batch 1 and 8, whose
// loads a row at a time had kept 32 or 64 of a thread's 256 or 512 bytes in flight).
DSCONV_HOST_DEVICE constexpr int small_map_vector(int element_bytes, int s, int o) {
  int v = 16 / element_bytes;
  const int b = s * o;
  if (small_map_streams(s, o)) {
    while (v > 1 && b * b * v * element_bytes / 4 + o * o * v > 96) v /= 2;
  } else {
    while (v > 1 && (b * b + o * o) * v > 64) v /= 2;
  }
  return v;
}

// Blocks of register_block_threads a multiprocessor keeps of a form (its launch bounds: 2, at
// most 128 registers a thread, as the register kernels), but 1 where a box held in words would
// not fit 128 with the rest: its held rows' words, accumulators, a widened row and a row of taps'
// weights (V floats a tap) beside about 8 registers of addresses and indices (all 8 rows held:
// float 3x3 and 5x5 99 and 101; 16-bit 3x3 126; 16-bit 5x5 130, which spilled 260 bytes on sm_90
// at 2 blocks). One block of 256 threads still has 64 KiB of loads in flight (256 bytes a thread).
// (Of elements of `element_bytes`, k x k filters at stride s onto maps of o a side: the kernel's
// launch bounds, and the plan's waves.)
DSCONV_HOST_DEVICE constexpr int small_map_resident_blocks(int element_bytes, int k, int s, int o) {
  const int v = small_map_vector(element_bytes, s, o), b = s * o;
  const int estimate = small_map_held_rows(b) * b * v * element_bytes / 4 + o * o * v + b * v + k * v + 8;
  return small_map_streams(s, o) && estimate > 128 ? 1 : register_resident_blocks;
}

// Whether output (oy, ox)'s tap (ky, kx) reads a pixel of the box (else padding or past the map).
template <int K, int S, int B>
DSCONV_HOST_DEVICE constexpr bool small_map_reads(int oy, int ox, int ky, int kx) {
  const int iy = oy * S - K / 2 + ky, ix = ox * S - K / 2 + kx;
  return iy >= 0 && iy < B && ix >= 0 && ix < B;
}

// Whether any output of the map uses tap (ky, kx) (its weights are read only then).
template <int K, int S, int O>
DSCONV_HOST_DEVICE constexpr bool small_map_tap_used(int ky, int kx) {
  for (int oy = 0; oy < O; ++oy)
    for (int ox = 0; ox < O; ++ox)
      if (small_map_reads<K, S, small_map_box<S, O>()>(oy, ox, ky, kx)) return true;
  return false;
}

// The n elements of T at p (a whole number of words), G != none: gated by the saved tensor's at
// the same place, as floats at f: 16 bytes at a time where `aligned` (p and saved aligned to 16
// bytes, or to the run's bytes where it is shorter), else element by element (load_words).
// Every piece is loaded before the first is gated or widened: loaded and widened a piece at a
// time, ptxas issued the last pieces' loads after widening the first (sm_90, 16-bit 2 x 2 maps:
// 48 of a thread's 64 bytes in flight, 96 of 128 gated).
template <int n, gate_kind G, class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void load_gated_run(const T* p, const T* saved, const register_gate& gate, bool aligned,
                                                     float* f) {
  constexpr int E = elements_per_word<T>(), W = n / E, piece = W < 4 ? W : 4;
  static_assert(n % E == 0 && W % piece == 0, "a run of whole words, whole 16-byte pieces");
  platform::vec<unsigned, piece> v[W / piece], g[G != gate_kind::none ? W / piece : 1];
DSCONV_UNROLL
  for (int k = 0; k < W / piece; ++k) {
    v[k] = load_words<piece>(p + k * piece * E, aligned);
    if constexpr (G != gate_kind::none) g[k] = load_words<piece>(saved + k * piece * E, aligned);
  }
DSCONV_UNROLL
  for (int k = 0; k < W / piece; ++k) {
    if constexpr (G != gate_kind::none) v[k] = gated_words<T, G, piece>(v[k], g[k], gate);
    widen_words<T>(v[k], f + k * piece * E);
  }
}

// The W words w[0 .. W) to p[0 .. W E), as load_gated_run reads them.
template <int W, class T>
DSCONV_DEVICE DSCONV_FORCEINLINE void store_word_run(T* p, const unsigned* w, bool aligned) {
  constexpr int E = elements_per_word<T>(), piece = W < 4 ? W : 4;
  static_assert(W % piece == 0, "whole 16-byte pieces");
DSCONV_UNROLL
  for (int k = 0; k < W; k += piece) {
    platform::vec<unsigned, piece> v;
DSCONV_UNROLL
    for (int j = 0; j < piece; ++j) v[j] = w[k + j];
    store_words<piece>(p + k * E, v, aligned);
  }
}

}  // namespace detail

namespace kernels {

// G != none: the data gradient of stride 1 (input: grad_output, the filter rotated), each input
// gated by the activation's derivative from the saved tensor at its place as it arrives
// (kernels/common/gradient_gate.hpp). t: nhwc_register's walk with one strip an image.
template <class T, int K, int S, int O, detail::gate_kind G = detail::gate_kind::none>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::register_block_threads,
                                   (detail::small_map_resident_blocks(static_cast<int>(sizeof(T)), K, S, O)))
DSCONV_WAVES_PER_SIMD((detail::small_map_resident_blocks(static_cast<int>(sizeof(T)), K, S, O)))
void depthwise_small_map(detail::depthwise_shape s, detail::nhwc_register_tile t, const T* __restrict__ input,
                         detail::register_gate gate, const T* __restrict__ weight, const T* __restrict__ bias,
                         T* __restrict__ output, T* __restrict__ pre_activation) {
  namespace pf = platform;
  constexpr bool Gated = G != detail::gate_kind::none;
  constexpr int V = detail::small_map_vector(sizeof(T), S, O), B = detail::small_map_box<S, O>();
  constexpr int E = detail::elements_per_word<T>();
  const detail::register_thread me = detail::stage_block_weights<K, V>(t, weight, bias, s.rotate_filter);
  const float* w_s = me.taps;
  const int lane = me.lane;

  if (lane >= t.pixel_lanes) return;
  const bool nchw = s.data_layout == layout::nchw;
  const int c = me.channel;
  const index_t pixel_pitch = s.c;  // (NHWC: from a pixel to the next, elements)
  const unsigned first = me.strip_block * t.strips_per_thread * t.pixel_lanes + lane;
  for (int i = 0; i < t.strips_per_thread; ++i) {
    const unsigned image = first + static_cast<unsigned>(i * t.pixel_lanes);
    if (image >= static_cast<unsigned>(t.strips)) break;
    const index_t image_at = static_cast<index_t>(image) * s.c * (B * B) + static_cast<index_t>(c) * (nchw ? B * B : 1);
    const T* in = input + image_at;
    const T* saved = Gated ? static_cast<const T*>(gate.saved) + image_at : nullptr;

    // The map's outputs, started at the bias, then the taps that land in the box only.
    float acc[O][O][V];
DSCONV_UNROLL
    for (int e = 0; e < V; ++e) {
      const float b = pf::shared_load(w_s + K * K * V + e);
DSCONV_UNROLL
      for (int o = 0; o < O * O; ++o) acc[o / O][o % O][e] = b;
    }
    // Row iy of the box into every output that reads it, from each used tap's weights (an
    // output's taps in ky, kx order, held box or streamed).
    constexpr bool Streamed = detail::small_map_streams(S, O);
    const auto multiply_row = [&](int iy, const float(&row)[B][V]) {
DSCONV_UNROLL
      for (int oy = 0; oy < O; ++oy) {
        const int ky = iy - oy * S + K / 2;
        if (ky < 0 || ky >= K) continue;
DSCONV_UNROLL
        for (int kx = 0; kx < K; ++kx) {
          if (!detail::small_map_tap_used<K, S, O>(ky, kx)) continue;
          float w[V];
DSCONV_UNROLL
          for (int e = 0; e < V; ++e) w[e] = pf::shared_load(w_s + (ky * K + kx) * V + e);
DSCONV_UNROLL
          for (int ox = 0; ox < O; ++ox) {
            const int ix = ox * S - K / 2 + kx;
            if (ix < 0 || ix >= B) continue;
DSCONV_UNROLL
            for (int e = 0; e < V; ++e) acc[oy][ox][e] += row[ix][e] * w[e];
          }
        }
      }
    };

    // The box, gated and widened: box[y][x][e]; or, where the thread holds it in words
    // (small_map_streams), R rows of it at a time (small_map_held_rows: all of them on NVIDIA) in
    // `held`, every load of those rows issued before the first is widened, then each widened into
    // box[0] and multiplied. The accesses' width is a compile-time fact of each copy (aligned:
    // vectors), not a test at every access.
    constexpr int R = detail::small_map_held_rows(B), row_words = B * V / E;
    static_assert(!Streamed || (!Gated && V % E == 0 && row_words % 4 == 0 && B % R == 0),
                  "held boxes: stride 2 (no gate), whole words a pixel, whole 16-byte pieces of a plane's row");
    float box[Streamed ? 1 : B][B][V];
    [[maybe_unused]] unsigned held[Streamed ? R * row_words : 1];
    // Row y of the box into `row` (NHWC: a pixel's vector at a time; NCHW: element by element).
    // (`vectors` a constant at each call: cicc 13.0 crashed on this lambda as a generic one
    // called from the generic load_box.)
    const auto load_row = [&](int y, float(&row)[B][V], bool vectors) {
      if (!nchw) {
DSCONV_UNROLL
        for (int x = 0; x < B; ++x) {
          const index_t at = (y * B + x) * pixel_pitch;
          detail::load_gated_run<V, G>(in + at, Gated ? saved + at : nullptr, gate, vectors, row[x]);
        }
      } else {
DSCONV_UNROLL
        for (int e = 0; e < V; ++e)
DSCONV_UNROLL
          for (int x = 0; x < B; ++x) {
            const int at = y * B + x + e * B * B;
            unsigned raw = detail::element_bits(pf::load(in + at));
            if constexpr (Gated) raw = detail::gated_word<T, G>(raw, detail::element_bits(pf::load(saved + at)), gate);
            float f[E];
            detail::widen<T>(raw, f);
            row[x][e] = f[0];
          }
      }
    };
    // The held rows' words from row y0 on, aligned: NHWC a pixel's V / E words at a time, each
    // address one wide multiply-add from the box's (platform::held_global, unwidened: no 64-bit
    // offset formed per pixel); NCHW each plane's row in 16-byte pieces. Words held[r][x] (NHWC)
    // or held[e][r][x] (NCHW: all of the box as it lies in memory, where R = B; the order that
    // kept 16-bit forms 100 instructions shorter than [r][e][x] on sm_90).
    const auto load_held = [&](int y0) {
      if (nchw) {
DSCONV_UNROLL
        for (int k = 0; k < R * row_words; k += 4) {
          const int e = k / (R * B / E), r = k % (R * B / E) / (B / E), x = k % (B / E) * E;
          const pf::vec<unsigned, 4> v = detail::load_words<4>(in + e * B * B + (y0 + r) * B + x, true);
DSCONV_UNROLL
          for (int j = 0; j < 4; ++j) held[k + j] = v[j];
        }
      } else {
        constexpr int P = V / E;
        const T* const box_at = pf::held_global(in);
        const int pixel = pf::unwidened(s.c);
DSCONV_UNROLL
        for (int p = 0; p < R * B; ++p) {
          const pf::vec<unsigned, P> v = detail::load_words<P>(box_at + (y0 * B + p) * pixel, true);
DSCONV_UNROLL
          for (int j = 0; j < P; ++j) held[p * P + j] = v[j];
        }
      }
    };
    // Held row r, widened into `row`.
    const auto widen_row = [&](int r, float(&row)[B][V]) {
      float f[B > V ? B : V];  // (a plane's row, or a pixel's vector)
      if (nchw) {
DSCONV_UNROLL
        for (int e = 0; e < V; ++e) {
DSCONV_UNROLL
          for (int k = 0; k < B / E; ++k) detail::widen<T>(held[(e * R + r) * (B / E) + k], f + k * E);
DSCONV_UNROLL
          for (int x = 0; x < B; ++x) row[x][e] = f[x];
        }
      } else {
DSCONV_UNROLL
        for (int x = 0; x < B; ++x) {
DSCONV_UNROLL
          for (int k = 0; k < V / E; ++k) detail::widen<T>(held[r * row_words + x * (V / E) + k], f + k * E);
DSCONV_UNROLL
          for (int e = 0; e < V; ++e) row[x][e] = f[e];
        }
      }
    };
    const auto load_box = [&](auto aligned) {
      constexpr bool vectors = decltype(aligned)::value;
      if (nchw && vectors) {
        // the V planes' B x B elements, one after another: whole 16-byte vectors (V B^2
        // elements are a multiple of 16 bytes: small_map_vector)
        constexpr int n = V * B * B;
        float f[n];
        detail::load_gated_run<n, G>(in, saved, gate, true, f);
DSCONV_UNROLL
        for (int e = 0; e < V; ++e)
DSCONV_UNROLL
          for (int p = 0; p < B * B; ++p) box[p / B][p % B][e] = f[e * B * B + p];
      } else {
DSCONV_UNROLL
        for (int y = 0; y < B; ++y) load_row(y, box[y], vectors);
      }
    };
    if constexpr (Streamed) {
      // (not aligned: element by element, a row at a time, as loaded: 64 words held that way
      // took 64 addresses, and spilled on sm_90)
      const auto stream = [&](auto aligned) {
        // (one group of rows on NVIDIA; AMD's rows one at a time stay a loop, as the register
        // kernels' do, where unrolled hipcc hoists the loads of all)
DSCONV_NO_UNROLL
        for (int y0 = 0; y0 < B; y0 += R) {
          if constexpr (decltype(aligned)::value) load_held(y0);
DSCONV_UNROLL
          for (int r = 0; r < R; ++r) {
            if constexpr (decltype(aligned)::value)
              widen_row(r, box[0]);
            else
              load_row(y0 + r, box[0], false);
            multiply_row(y0 + r, box[0]);
          }
        }
      };
      if (t.aligned)
        stream(std::true_type{});
      else
        stream(std::false_type{});
    } else {
      if (t.aligned)
        load_box(std::true_type{});
      else
        load_box(std::false_type{});
DSCONV_UNROLL
      for (int y = 0; y < B; ++y) multiply_row(y, box[y]);
    }

    // The outputs as words in the order of the thread's runs in memory (NHWC: pixel after pixel,
    // a vector each; NCHW: plane after plane), through the activation (A, a compile-time case:
    // only the packing is compiled once per activation, not the stores) or as saved for the
    // backward (saved: z or act'(z), kept where asked: never by a gated form, whose problem keeps
    // nothing). Element i of the run order is
    // acc[o][e] at compile-time indices, so no move precedes the packing.
    constexpr int n = V * O * O, W = n / E;
    const auto pack = [&](auto a, auto saved, unsigned* w) {
      constexpr activation A = decltype(a)::value;
      const auto words = [&](auto planes) {
DSCONV_UNROLL
        for (int k = 0; k < W; ++k) {
          float f[E];
DSCONV_UNROLL
          for (int j = 0; j < E; ++j) {
            const int i = k * E + j, o = decltype(planes)::value ? i % (O * O) : i / V;
            f[j] = acc[o / O][o % O][decltype(planes)::value ? i / (O * O) : i % V];
          }
          w[k] = decltype(saved)::value ? detail::saved_word<A, T>(f, s.save_derivative) : detail::activated_word<A, T>(f);
        }
      };
      if (nchw)
        words(std::true_type{});
      else
        words(std::false_type{});
    };
    const index_t out_at = static_cast<index_t>(image) * s.c * (O * O) + static_cast<index_t>(c) * (nchw ? O * O : 1);
    const auto store = [&](T* to, const unsigned* w) {
      const auto runs = [&](auto aligned) {
        if (nchw) {
          detail::store_word_run<W>(to, w, decltype(aligned)::value);
        } else {
          // 16-bit elements: each pixel's store one wide multiply-add from the map's first
          // (platform::held_global, unwidened; sm_90, 5x5 on 4x4 maps: 609 instructions a map
          // against 586). Not float's: its streamed boxes counted more so (3x3 at stride 2 onto
          // 4x4 maps, 583 against 659).
          constexpr bool stepped = sizeof(T) == 2;
          T* const first_pixel = stepped ? pf::held_global(to) : to;
          const index_t pixel = stepped ? pf::unwidened(s.c) : pixel_pitch;
DSCONV_UNROLL
          for (int o = 0; o < O * O; ++o)
            detail::store_word_run<V / E>(first_pixel + o * pixel, w + o * (V / E), decltype(aligned)::value);
        }
      };
      if (t.aligned)
        runs(std::true_type{});
      else
        runs(std::false_type{});
    };
    unsigned w[W]{};  // (every activation's case packs all of it; g++ cannot tell)
    if (!Gated && pre_activation) {
      detail::with_output_activation<G>(s.act, [&](auto a) { pack(a, std::true_type{}, w); });
      store(pre_activation + out_at, w);
    }
    detail::with_output_activation<G>(s.act, [&](auto a) { pack(a, std::false_type{}, w); });
    store(output + out_at, w);
  }
}

}  // namespace kernels
}  // namespace dsconv
