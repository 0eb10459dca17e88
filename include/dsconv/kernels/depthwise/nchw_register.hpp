#pragma once
// Depthwise NCHW forward, register-blocked (the variant nchw_register). A thread computes a
// band of TH output rows x VO consecutive outputs (16 bytes of an output row, or 8:
// nchw_register_strip) of one (image, channel) plane, then the same columns of the next bands (bands_per_thread of them). A band
// reads (TH - 1) * S + K input rows, the 16 * S bytes under its outputs and the few halo elements
// either side (which neighbouring threads load too: L1 serves them), widened to float once and
// added to the fp32 accumulators of every output row that reads them, times the tap weights,
// which the thread keeps in registers (one channel per thread: its K x K weights and bias are
// loaded once, not per output); its first K - S rows are the band before's last, kept in
// registers (nchw_register_rolls), so that a walk reads (and gates) each input row once. The outputs leave with bias and
// activation applied. In NCHW a plane's rows are contiguous, so the vector runs along the
// outputs of one channel: the accumulators are TH x VO floats and the widened input row VO S +
// K - S, which leaves registers for several rows where the NHWC kernel, whose vector runs across
// channels, holds one. No shared memory and no barrier; all of a band's loads are issued before
// its arithmetic needs them (each is predicated, none behind a branch).
//
// Memory moves in chunks of CB bytes (the plan's chunk_bytes: 16 where the rows and pointers are
// 16-byte aligned, else 8, 4 or one 16-bit element), so that a chunk lies wholly inside or
// wholly outside a row and each is one predicated access.
//
// Threads take consecutive strip columns of a band first (a warp's loads cover whole runs of a
// row), then groups of bands, then planes. Requires multiplier 1, a square 3x3 or 5x5 filter of
// stride 1 or 2 without dilation, padding K / 2 (the map kept, or halved at stride 2).

#include <type_traits>

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../problem.hpp"
#include "../common/activation.hpp"
#include "../common/fast_divmod.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/words.hpp"

namespace dsconv {
namespace detail {

inline constexpr unsigned nchw_register_block_threads = 256;
// Registers for two resident blocks at least (128 a thread).
inline constexpr int nchw_register_resident_blocks = 2;

// Output rows a thread computes per band: the band's addressing and epilogue are shared by its
// rows, and where bands do not keep their overlap (nchw_register_rolls) each input row is widened
// once a band and serves up to K of them, so instructions per output fall as TH grows ((TH - 1) S
// + K rows for TH rows); but all of a band's rows are in registers at once. 8 for 16-bit 3x3
// filters at stride 1 on NVIDIA (the 64 accumulators and 10 rows of 16 bytes fit 128 registers:
// 3.8 instructions per DRAM byte on sm_90 where 4 rows took 4.6; hipcc spilled them on gfx906: 4
// there; accumulated and stored in halves, nchw_register_geometry::halves), 4 for float, 2 for
// the other 16-bit forms (stride 2: 9 rows of 32 bytes; 5x5: 8 rows and 25 taps) and for 5x5
// filters at stride 2 (11 float rows spilled on sm_75 and gfx906); half
// that where memory moves in chunks of 4 bytes or less, one register per element or pair (ptxas
// spilled the 16-bit 5x5 stride 2 band otherwise). Gated (the data gradient, whose saved rows are
// loaded too): 4 rows for 16-bit 3x3 filters (6, before the bands kept their overlap, counted
// 3.5 and 6.3 a byte through the clamp and silu gates, 4 with it 3.3 and 5.4; 6 spilled
// then), 2 for float 5x5 (4.1 and 4.8 on sm_90; 1 row counted 4.8 and 5.5, with half the bytes in
// flight).
DSCONV_HOST_DEVICE constexpr int nchw_register_rows(int element_bytes, int k, int s, int chunk_bytes, bool gated = false) {
#if defined(DSCONV_PLATFORM_HIP)
  const int rows_16bit_3x3 = 4;
#else
  const int rows_16bit_3x3 = gated ? 4 : 8;
#endif
  const int rows = k == 5 && s == 2 ? 2
                   : element_bytes == 4 ? (gated && k == 5 ? 2 : 4)
                   : k == 3 && s == 1 ? rows_16bit_3x3
                                      : 2;
  return chunk_bytes >= 8 || rows == 1 ? rows : rows / 2;
}

// Whether a thread's consecutive bands keep their overlap in registers: the K - S input rows a
// band shares with the next, read (gated) and widened once a walk, not once a band that reads
// them (for float 5x5 gated bands of 2 rows: 3 times; instructions per DRAM byte on sm_90 fell
// from 8.8 and 12.1 (bands of 1 row) to 4.1 and 4.8 through the clamp and silu gates). All
// forms but two whose bands' rows fill the registers already: 16-bit 3x3 filters at stride 1
// ungated (8 of the band's 10 rows are new; ptxas spilled the 2 kept) and 16-bit 5x5 filters at
// stride 2 (it spilled 1072 bytes).
DSCONV_HOST_DEVICE constexpr bool nchw_register_rolls(int element_bytes, int k, int s, bool gated) {
  return !(element_bytes == 2 && ((k == 3 && s == 1 && !gated) || (k == 5 && s == 2)));
}

// The widest access, and the bytes of outputs a strip row has with it: 16, but 8 for 5x5 filters
// on AMD, whose compiler spilled their bands at the 128 registers of two waves per SIMD on gfx906.
DSCONV_HOST_DEVICE constexpr int nchw_register_widest_chunk(int k) {
#if defined(DSCONV_PLATFORM_HIP)
  return k == 5 ? 8 : 16;
#else
  return (void)k, 16;
#endif
}

// Outputs of a strip row: the widest access's bytes of them, half that where memory moves element
// by element (16-bit elements in rows that are not 4-byte aligned), so that a band's element loads
// fit the registers.
DSCONV_HOST_DEVICE constexpr int nchw_register_strip(int element_bytes, int k, int chunk_bytes) {
  return nchw_register_widest_chunk(k) / (chunk_bytes == 2 ? 2 : 1) / element_bytes;
}

struct nchw_register_tile {
  int strip_cols;        // strips per output row: ceil(out_w / VO)
  int bands;             // bands per plane: ceil(out_h / TH)
  int band_groups;       // groups of bands_per_thread consecutive bands per plane
  int bands_per_thread;  // bands a thread walks down, one after the other
  int items;             // threads with work: n * c * band_groups * strip_cols
  int chunk_bytes;       // 16, 8, 4 or 2 (16-bit types): divides both rows' bytes and every pointer's alignment
  fast_divmod strip_col{1u};      // item -> (rest, strip column): by strip_cols
  fast_divmod band_group{1u};     // rest -> (plane, band group): by band_groups
  fast_divmod plane_channel{1u};  // plane -> (image, channel): by c
};

// The kernel's compile-time shape for elements T, a K x K filter of stride S and chunks of CB bytes
// (Gated: the data gradient's).
template <class T, int K, int S, int CB = 16, bool Gated = false>
struct nchw_register_geometry {
  static constexpr int VO = nchw_register_strip(sizeof(T), K, CB);  // outputs of a strip row
  static constexpr int TH = nchw_register_rows(sizeof(T), K, S, CB, Gated);
  static constexpr int E = elements_per_word<T>();
  static constexpr int L = K / 2, R = K / 2 + 1 - S;  // halo columns left and right of the VO S under a strip
  static constexpr int IW = L + VO * S + R;           // input columns a strip reads: (VO - 1) S + K
  static constexpr int IR = (TH - 1) * S + K;         // input rows a band reads
  static constexpr int C = nchw_register_rolls(sizeof(T), K, S, Gated) ? K - S : 0;  // of them, kept from the band before
  static constexpr int CE = CB / static_cast<int>(sizeof(T));  // elements per chunk
  // Halo granules: whole 32-bit words (aligned: the strip starts on a chunk of at least 4 bytes),
  // or single elements where chunks are; for float on NVIDIA, pairs where chunks are of 8 bytes
  // or more (rows are then whole pairs, so a pair lies wholly inside or outside its row): a 5x5
  // filter's halo is then one load either side a row, not two (sm_90, 4.7 -> 4.6 instructions
  // per DRAM byte; hipcc spilled the float 3x3 stride-2 and gated 5x5 bands with pairs).
#if defined(DSCONV_PLATFORM_HIP)
  static constexpr int G = CB >= 4 ? E : 1;
#else
  static constexpr int G = sizeof(T) == 4 && CB >= 8 ? 2 : CB >= 4 ? E : 1;
#endif
  static constexpr int LG = (L + G - 1) / G, RG = (R + G - 1) / G;
  // Bands of 8 rows (16-bit 3x3 filters at stride 1, ungated, on NVIDIA) issue all their input
  // rows' loads first and accumulate and store their output rows in two halves of 4: with the 8
  // rows' 64 accumulators live through the band, ptxas had kept 5 of its 10 rows' loads in flight
  // at 128 registers. sm_90 SASS: 120 -> 198 bytes in flight a thread for half (160 -> 236 for
  // bfloat16, whose halo loads are words), 942 -> 939 instructions a band (934 -> 946); the 2 rows
  // both halves read are widened once, kept as floats across the first half's stores.
  static constexpr bool halves = TH == 8;
};

// The accesses that read the input row under a strip whose VO S columns start at column ix (a
// chunk boundary): its chunks (row_part::chunk, i = q: CE elements at offset q CE) and the halo
// granules left of them (left, i = k: G elements at -(LG - k) G) and right (right: at VO S + k G).
enum class row_part { chunk, left, right };
template <row_part P>
using row_part_constant = std::integral_constant<row_part, P>;

// visit(part, i, offset) for each access of the row, in that order; part a row_part_constant.
template <class T, int K, int S, int CB, class Visit>
DSCONV_DEVICE DSCONV_FORCEINLINE void for_each_row_access(Visit&& visit) {
  using g = nchw_register_geometry<T, K, S, CB>;
DSCONV_UNROLL
  for (int q = 0; q < g::VO * S / g::CE; ++q) visit(row_part_constant<row_part::chunk>{}, q, q * g::CE);
DSCONV_UNROLL
  for (int k = 0; k < g::LG; ++k) visit(row_part_constant<row_part::left>{}, k, -(g::LG - k) * g::G);
DSCONV_UNROLL
  for (int k = 0; k < g::RG; ++k) visit(row_part_constant<row_part::right>{}, k, g::VO * S + k * g::G);
}

// Whether the access of part P at `offset` from column ix lies inside its row of width w (and
// row_ok: the row inside the map). (The first chunk lies inside every row of the map: a strip
// starts at an output, whose column ix = ox S is below w; no test, so no zeros written before
// its load.)
template <class T, int K, int S, int CB, row_part P>
DSCONV_DEVICE DSCONV_FORCEINLINE bool row_access_inside(int offset, int ix, int w, bool row_ok) {
  using g = nchw_register_geometry<T, K, S, CB>;
  if constexpr (P == row_part::chunk) return row_ok && (offset == 0 || ix + offset < w);
  if constexpr (P == row_part::left) return row_ok && ix + offset >= 0;
  return row_ok && ix + offset + g::G <= w;
}

// The halo granules' elements, widened (left's LG G, right's RG G), into their columns of x.
template <class T, int K, int S, int CB>
DSCONV_DEVICE DSCONV_FORCEINLINE void place_halos(const float* left, const float* right,
                                                  float (&x)[nchw_register_geometry<T, K, S, CB>::IW]) {
  using g = nchw_register_geometry<T, K, S, CB>;
DSCONV_UNROLL
  for (int j = 0; j < g::L; ++j) x[j] = left[g::LG * g::G - g::L + j];
DSCONV_UNROLL
  for (int j = 0; j < g::R; ++j) x[g::L + g::VO * S + j] = right[j];
}

// A band row's words as loaded (ungated, chunks and halo granules of 4 bytes or more): its VO S
// columns' chunks and the halo granules either side, widened only where the arithmetic needs them.
template <class T, int K, int S, int CB>
struct band_row_words {
  using g = nchw_register_geometry<T, K, S, CB>;
  static constexpr int W = CB / 4, GW = g::G * static_cast<int>(sizeof(T)) / 4;
  static_assert(W >= 1 && GW >= 1, "chunks and halo granules of whole words");
  platform::vec<unsigned, W> chunk[g::VO * S / g::CE];
  platform::vec<unsigned, GW> left[g::LG], right[g::RG];
};

// The words of access i of part P of a band row (Row: band_row_words, const or not).
template <row_part P, class Row>
DSCONV_DEVICE DSCONV_FORCEINLINE auto& words_of(Row& row, int i) {
  if constexpr (P == row_part::chunk)
    return row.chunk[i];
  else if constexpr (P == row_part::left)
    return row.left[i];
  else
    return row.right[i];
}

// A read of grad_output gated by the saved tensor at the same offsets (kernels/common/
// gradient_gate.hpp), or of the input as it is (saved unused).
template <class T>
struct row_source {
  const T* at;        // the first element read
  const T* saved;     // the saved tensor's element at the same place (Gated)
  register_gate gate;  // the gate's bounds
};

// CE elements at src.at + off (a chunk: aligned to its size) widened to floats at f; G != none:
// gated by the saved elements at the same place.
template <class T, int CE, gate_kind G>
DSCONV_DEVICE DSCONV_FORCEINLINE void read_chunk(const row_source<T>& src, int off, bool inside, float* f) {
  if constexpr (CE * sizeof(T) >= 4) {
    constexpr int W = static_cast<int>(CE * sizeof(T) / 4);
    platform::vec<unsigned, W> raw{};
    if (inside) raw = load_words<W>(src.at + off, true);
    if constexpr (G != gate_kind::none) {
      platform::vec<unsigned, W> kept{};
      if (inside) kept = load_words<W>(src.saved + off, true);
      raw = gated_words<T, G, W>(raw, kept, src.gate);
    }
    widen_words<T>(raw, f);
  } else {
    f[0] = inside ? to_float(platform::load(src.at + off)) : 0.f;
    if constexpr (G != gate_kind::none)
      f[0] = gated_value<G>(f[0], inside ? to_float(platform::load(src.saved + off)) : 0.f, src.gate);
  }
}

// The input row under the strip whose VO S columns start at column ix (`src.at`: that column's
// element; zeros where !row_ok: the padding), as IW floats from column ix - L: the main columns
// in chunks, each halo in the granules that hold it, every access predicated on lying inside the
// row.
template <class T, int K, int S, int CB, gate_kind G>
DSCONV_DEVICE DSCONV_FORCEINLINE void read_input_row(const row_source<T>& src, int ix, int w, bool row_ok,
                                                     float (&x)[nchw_register_geometry<T, K, S, CB>::IW]) {
  using g = nchw_register_geometry<T, K, S, CB>;
  float halo[2][(g::LG > g::RG ? g::LG : g::RG) * g::G];  // the left and right granules, widened
  for_each_row_access<T, K, S, CB>([&](auto part, int i, int offset) {
    constexpr row_part P = decltype(part)::value;
    const bool inside = row_access_inside<T, K, S, CB, P>(offset, ix, w, row_ok);
    if constexpr (P == row_part::chunk)
      read_chunk<T, g::CE, G>(src, offset, inside, x + g::L + offset);
    else
      read_chunk<T, g::G, G>(src, offset, inside, halo[P == row_part::left ? 0 : 1] + i * g::G);
  });
  place_halos<T, K, S, CB>(halo[0], halo[1], x);
}

// The input row under the strip whose VO S columns start at column ix (`at`: that column's
// element) as words (zeros where !row_ok: the padding), each access predicated as
// read_input_row's; widen_row_words makes them read_input_row's IW floats.
template <class T, int K, int S, int CB>
DSCONV_DEVICE DSCONV_FORCEINLINE void load_row_words(const T* at, int ix, int w, bool row_ok, band_row_words<T, K, S, CB>& row) {
  for_each_row_access<T, K, S, CB>([&](auto part, int i, int offset) {
    constexpr row_part P = decltype(part)::value;
    auto& v = words_of<P>(row, i);
    v = {};
    if (row_access_inside<T, K, S, CB, P>(offset, ix, w, row_ok))
      v = load_words<static_cast<int>(sizeof(v) / sizeof(unsigned))>(at + offset, true);
  });
}
template <class T, int K, int S, int CB>
DSCONV_DEVICE DSCONV_FORCEINLINE void widen_row_words(const band_row_words<T, K, S, CB>& row,
                                                      float (&x)[nchw_register_geometry<T, K, S, CB>::IW]) {
  using g = nchw_register_geometry<T, K, S, CB>;
  float halo[2][(g::LG > g::RG ? g::LG : g::RG) * g::G];  // the left and right granules, widened
  for_each_row_access<T, K, S, CB>([&](auto part, int i, int offset) {
    constexpr row_part P = decltype(part)::value;
    widen_words<T>(words_of<P>(row, i), P == row_part::chunk ? x + g::L + offset : halo[P == row_part::left ? 0 : 1] + i * g::G);
  });
  place_halos<T, K, S, CB>(halo[0], halo[1], x);
}

// Where a band reads plane row iy under column ix: whether the row lies inside the map of h rows
// (Inside: the caller knows it does), and the offset of its element in the plane (w columns),
// column ix of row 0 for a row outside (whose loads are all predicated off: it reads zeros and
// still multiplies them, no branch). (32-bit offsets within the plane, which the plan keeps below
// 2^31 elements: one wide multiply-add per row forms the address of the strip's first column,
// and every load of the row is an immediate offset from it.)
struct band_row_place {
  bool inside;
  int at;
};
template <bool Inside>
DSCONV_DEVICE DSCONV_FORCEINLINE band_row_place band_row_at(int iy, int h, int w, int ix) {
  const bool inside = Inside || static_cast<unsigned>(iy) < static_cast<unsigned>(h);
  return {inside, (inside ? iy * w : 0) + ix};
}

// Input row r of a band whose first input row is iy0 (row iy0 + r of the plane `plane.at`; G !=
// none: gated by `plane.saved`) into x, zeros for a row outside the map (Inside: the caller knows
// it inside).
template <class T, int K, int S, int CB, gate_kind G, bool Inside>
DSCONV_DEVICE DSCONV_FORCEINLINE void read_band_row(const row_source<T>& plane, int iy0, int r, int h, int w, int ix,
                                                    float (&x)[nchw_register_geometry<T, K, S, CB>::IW]) {
  const band_row_place row = band_row_at<Inside>(iy0 + r, h, w, ix);
  read_input_row<T, K, S, CB, G>(
      row_source<T>{plane.at + row.at, G != gate_kind::none ? plane.saved + row.at : nullptr, plane.gate}, ix, w, row.inside, x);
}

// Input row r of a band (widened: x) times the taps, added to the accumulators of the band's
// output rows o0 .. o0 + N - 1 that read it: input row r is filter row r - o S of output row o.
template <int K, int S, int IW, int N, int VO>
DSCONV_DEVICE DSCONV_FORCEINLINE void accumulate_row(const float (&x)[IW], int r, int o0, const float (&taps)[K * K],
                                                     float (&acc)[N][VO]) {
DSCONV_UNROLL
  for (int o = 0; o < N; ++o) {
    const int ky = r - (o0 + o) * S;
    if (ky < 0 || ky >= K) continue;  // (compile-time after unrolling)
DSCONV_UNROLL
    for (int kx = 0; kx < K; ++kx)
DSCONV_UNROLL
      for (int e = 0; e < VO; ++e) acc[o][e] += x[e * S + kx] * taps[ky * K + kx];
  }
}

// Adds a band's input rows, times the taps, to the TH x VO accumulators: its first C rows from x
// (the band before's, nchw_register_rolls), the others read into x as they are needed, rows iy0 + C
// .. iy0 + IR - 1 of the plane, each multiplied into every output row that reads it. Inside: those
// rows all lie inside the map (most bands), so the loads need only the column checks, which are
// the same for every row.
template <class T, int K, int S, int CB, gate_kind G, bool Inside>
DSCONV_DEVICE DSCONV_FORCEINLINE void accumulate_band(const row_source<T>& plane, int iy0, int h, int w, int ix,
                                                      const float (&taps)[K * K],
                                                      float (&x)[nchw_register_geometry<T, K, S, CB, G != gate_kind::none>::IR]
                                                                [nchw_register_geometry<T, K, S, CB, G != gate_kind::none>::IW],
                                                      float (&acc)[nchw_register_geometry<T, K, S, CB, G != gate_kind::none>::TH]
                                                                  [nchw_register_geometry<T, K, S, CB, G != gate_kind::none>::VO]) {
  using g = nchw_register_geometry<T, K, S, CB, G != gate_kind::none>;
DSCONV_UNROLL
  for (int r = 0; r < g::IR; ++r) {
    if (r >= g::C) read_band_row<T, K, S, CB, G, Inside>(plane, iy0, r, h, w, ix, x[r]);
    accumulate_row<K, S>(x[r], r, 0, taps, acc);
  }
}

// One output row's VO values into `to`, in chunks of CE elements, those before `count` (the
// row's end cuts the last strip at a chunk boundary): Saved, the words of the tensor saved for
// the backward (z = acc, or act'(z) where `derivative`: saved_word); else act(z), the activation
// applied as the words are made (activated_word).
template <activation A, bool Saved, class T, int VO, int CE>
DSCONV_DEVICE DSCONV_FORCEINLINE void store_chunks(const float (&acc)[VO], T* to, bool derivative, int count) {
  constexpr int E = elements_per_word<T>();
DSCONV_UNROLL
  for (int q = 0; q < VO / CE; ++q) {
    if (q > 0 && q * CE >= count) continue;  // (count > 0: the strip starts at an output)
    if constexpr (CE * sizeof(T) >= 4) {
      constexpr int W = static_cast<int>(CE * sizeof(T) / 4);
      platform::vec<unsigned, W> w;
DSCONV_UNROLL
      for (int k = 0; k < W; ++k)
        w[k] = Saved ? saved_word<A, T>(acc + q * CE + k * E, derivative) : activated_word<A, T>(acc + q * CE + k * E);
      store_words<W>(to + q * CE, w, true);
    } else {
      const float z = acc[q * CE];
      platform::store(to + q * CE, from_float<T>(Saved ? saved_value<A>(z, derivative) : activate(z, A)));
    }
  }
}

// A band's TH output rows, row o at element `at` + o `pitch` of `out` (and of `pre`, where given),
// the first `rows` of them (store_chunks; the first untested where first_row: a band starts at an
// output). The pre-activation's test is made once a band, on the tensor's pointer, and each row's
// address steps from the row before's (sm_90, float 5x5 bands of 4 rows: a test a row and each
// row's address formed from its index, 4.3 instructions per DRAM byte; this, 4.0).
template <activation A, class T, int TH, int VO, int CE>
DSCONV_DEVICE DSCONV_FORCEINLINE void store_band(float (&acc)[TH][VO], T* out, T* pre, index_t at, int pitch, bool derivative,
                                                 int rows, int count, bool first_row = true) {
  const auto rows_into = [&](T* to, auto saved) {
DSCONV_UNROLL
    for (int o = 0; o < TH; ++o, to += pitch)
      if ((o == 0 && first_row) || o < rows) store_chunks<A, decltype(saved)::value, T, VO, CE>(acc[o], to, derivative, count);
  };
  if (pre) rows_into(pre + at, std::true_type{});
  rows_into(out + at, std::false_type{});
}

}  // namespace detail

namespace kernels {

// G != none: the data gradient of stride 1 (input: grad_output, the filter rotated), each word
// multiplied by the activation's derivative from the saved tensor at the same place as it
// arrives (kernels/common/gradient_gate.hpp).
template <class T, int K, int S, detail::gate_kind G = detail::gate_kind::none>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::nchw_register_block_threads, detail::nchw_register_resident_blocks)
DSCONV_WAVES_PER_SIMD(detail::nchw_register_resident_blocks)
void depthwise_nchw_register(detail::depthwise_shape s, detail::nchw_register_tile t, const T* __restrict__ input,
                             detail::register_gate gate, const T* __restrict__ weight, const T* __restrict__ bias, T* __restrict__ output,
                             T* __restrict__ pre_activation) {
  namespace pf = platform;

  const unsigned item = pf::block_idx().x * pf::block_dim().x + pf::thread_idx().x;
  if (item >= static_cast<unsigned>(t.items)) return;
  const unsigned rest = t.strip_col.div(item), plane = t.band_group.div(rest);
  const int strip_col = static_cast<int>(item - rest * t.strip_cols);
  const int first_band = static_cast<int>(rest - plane * t.band_groups) * t.bands_per_thread;
  const int c = static_cast<int>(plane - t.plane_channel.div(plane) * s.c);

  // The channel's taps and bias, in registers for every band the thread takes.
  float w[K * K];
DSCONV_UNROLL
  for (int tap = 0; tap < K * K; ++tap)
    w[tap] = to_float(pf::load(weight + static_cast<index_t>(c) * (K * K) + (s.rotate_filter ? K * K - 1 - tap : tap)));
  const float b = bias ? to_float(pf::load(bias + c)) : 0.f;

  const index_t in_plane = static_cast<index_t>(plane) * s.h * s.w;
  constexpr bool Gated = G != detail::gate_kind::none;
  const detail::row_source<T> source{input + in_plane, Gated ? static_cast<const T*>(gate.saved) + in_plane : nullptr,
                                     gate};
  const index_t out_plane = static_cast<index_t>(plane) * s.out_h * s.out_w;

  // The bands in chunks of CB bytes (a compile-time constant from here on).
  auto bands = [&](auto chunk) {
    constexpr int CB = decltype(chunk)::value, CE = CB / static_cast<int>(sizeof(T));
    using g = detail::nchw_register_geometry<T, K, S, CB, Gated>;
    constexpr int TH = g::TH, VO = g::VO;
    const int ox0 = strip_col * VO, ix = ox0 * S;  // ix: the first column under the strip (a chunk boundary)
    const int count = s.out_w - ox0;
    // The band's input rows; its first C are the band before's last (nchw_register_rolls), read
    // for the walk's first band before it.
    constexpr int C = g::C;
    float x[g::IR][g::IW];
DSCONV_UNROLL
    for (int r = 0; r < C; ++r)
      detail::read_band_row<T, K, S, CB, G, false>(source, first_band * TH * S - g::L, r, s.h, s.w, ix, x[r]);
    // The band's first output: on NVIDIA a band's rows on from the one before's (sm_90, float 5x5:
    // 511 instructions a band against 518 formed from its row); on AMD formed from its row (the
    // 64-bit offset held across the walk spilled gfx906's bands: 131 bytes, 16-bit 3x3 gated).
#if defined(DSCONV_PLATFORM_HIP)
    constexpr bool step_band_output = false;
#else
    constexpr bool step_band_output = true;
#endif
    index_t band_at = out_plane + static_cast<index_t>(first_band) * TH * s.out_w + ox0;
    const index_t band_pitch = static_cast<index_t>(TH) * s.out_w;
    for (int i = 0; i < t.bands_per_thread; ++i) {
      const int band = first_band + i;
      if (band >= t.bands) break;
      const int oy0 = band * TH;
      if constexpr (g::halves) {
        // All IR rows' loads first (words, unwidened); then each half's output rows from its
        // input rows, stored before the next half's accumulators start.
        static_assert(!Gated && C == 0 && step_band_output && S == 1, "halves: ungated bands of stride 1 that keep no rows");
        constexpr int half = TH / 2;
        const int iy0 = oy0 - g::L;
        detail::band_row_words<T, K, S, CB> rows[g::IR];
        const auto load_rows = [&](auto inside) {
DSCONV_UNROLL
          for (int r = 0; r < g::IR; ++r) {
            const detail::band_row_place row = detail::band_row_at<decltype(inside)::value>(iy0 + r, s.h, s.w, ix);
            detail::load_row_words<T, K, S, CB>(source.at + row.at, ix, s.w, row.inside, rows[r]);
          }
        };
        if (iy0 >= 0 && iy0 + g::IR <= s.h)
          load_rows(std::true_type{});
        else
          load_rows(std::false_type{});
        float shared[K - 1][g::IW];  // the input rows both halves read, widened by the first
DSCONV_UNROLL
        for (int h = 0; h < 2; ++h) {
          float acc[half][VO];
DSCONV_UNROLL
          for (int o = 0; o < half; ++o)
DSCONV_UNROLL
            for (int e = 0; e < VO; ++e) acc[o][e] = b;
          // (input rows h half .. h half + half + K - 2)
DSCONV_UNROLL
          for (int r = h * half; r < h * half + half - 1 + K; ++r) {
            float x[g::IW];
            if (h == 1 && r < half + K - 1) {
DSCONV_UNROLL
              for (int e = 0; e < g::IW; ++e) x[e] = shared[r - half][e];
            } else {
              detail::widen_row_words<T, K, S, CB>(rows[r], x);
            }
            if (h == 0 && r >= half) {
DSCONV_UNROLL
              for (int e = 0; e < g::IW; ++e) shared[r - half][e] = x[e];
            }
            detail::accumulate_row<K, S>(x, r, h * half, w, acc);
          }
          // (a map's last band may end in its first half: the second's rows all tested)
          detail::with_output_activation<G>(s.act, [&](auto a) {
            detail::store_band<decltype(a)::value, T, half, VO, CE>(
                acc, output, pre_activation, band_at + static_cast<index_t>(h * half) * s.out_w, s.out_w, s.save_derivative,
                s.out_h - oy0 - h * half, count, h == 0);
          });
        }
        band_at += band_pitch;
        continue;
      }
      float acc[TH][VO];
DSCONV_UNROLL
      for (int o = 0; o < TH; ++o)
DSCONV_UNROLL
        for (int e = 0; e < VO; ++e) acc[o][e] = b;
      const int iy0 = oy0 * S - g::L;
      if (iy0 + C >= 0 && iy0 + g::IR <= s.h)
        detail::accumulate_band<T, K, S, CB, G, true>(source, iy0, s.h, s.w, ix, w, x, acc);
      else
        detail::accumulate_band<T, K, S, CB, G, false>(source, iy0, s.h, s.w, ix, w, x, acc);
DSCONV_UNROLL
      for (int j = 0; j < C; ++j)
DSCONV_UNROLL
        for (int e = 0; e < g::IW; ++e) x[j][e] = x[g::IR - C + j][e];
      // (rows: fewer than TH in the last band of a map whose height TH does not divide)
      detail::with_output_activation<G>(s.act, [&](auto a) {
        detail::store_band<decltype(a)::value, T, TH, VO, CE>(
            acc, output, pre_activation,
            step_band_output ? band_at : out_plane + static_cast<index_t>(oy0) * s.out_w + ox0, s.out_w,
            s.save_derivative, s.out_h - oy0, count);
      });
      if constexpr (step_band_output) band_at += band_pitch;
    }
  };
  switch (t.chunk_bytes) {
    case 16:
      if constexpr (detail::nchw_register_widest_chunk(K) == 16) bands(std::integral_constant<int, 16>{});
      break;
    case 8: bands(std::integral_constant<int, 8>{}); break;
    case 4: bands(std::integral_constant<int, 4>{}); break;
    default:
      if constexpr (sizeof(T) == 2) bands(std::integral_constant<int, 2>{});
      break;
  }
}

}  // namespace kernels
}  // namespace dsconv
