#pragma once
// The plane form of nchw_matrix (kernels/depthwise/nchw_matrix.hpp): depthwise NCHW forward of
// 16-bit types on NVIDIA's tensor cores for output planes of at most 8 x 8 (7x7 maps of the 224
// networks, 8x8 and smaller of the 32 ones), and on the transposed problem the data gradient of
// stride 1. A 16 x 16 warp tile of the tile form holds 19% of a 7x7 plane, and its staging moves
// 4-byte words along rows, which an odd width does not have. Here A's 16 rows are two images'
// planes of one channel, rows 0-7 the first image's output rows, 8-15 the second's (ldmatrix
// takes each lane's row address, so each image's staged plane lies in its own part of shared
// memory), and one n-tile is a plane's 8 output columns: per filter row one fragment load and one
// product at stride 1 (two of each at stride 2: windows 16 columns apart, as the tile form's),
// with the same Toeplitz B bands (nchw_matrix_bands). A warp tile is S == 1 ? 8 : 4 images'
// planes of one channel (four or two products a filter row); a warp's run of tiles walks the
// images, then the channels, keeping its B bands.
//
// Every tile is whole planes, so each lane stages the same places of every tile: a plane's
// elements move as 4-byte words where its width is even (2-byte elements where it is odd, as
// the 7x7 planes are), lane l taking items l, l + 32, ... of the plane's contiguous elements,
// to places in shared memory computed once. Rows and columns outside the plane are zeros written
// once, never overwritten. The next tile's items are loaded before this tile's products. Lane
// (g, q) ends with row g, columns 2q and 2q + 1, of each image: stored as a word where the output
// width is even, else element by element, the bias having started the accumulators. Counted
// (sm_90 SASS, scripts/sass_budget.py, through relu6): 4.7-4.9 instructions per DRAM byte on 7x7
// planes (scale 3.9-4.1), 2.2-3.2 on 8x8, 3.1-3.4 from 14x14 to 7x7 at stride 2 (gated: 4.7-4.9
// and 2.4-2.7). Of a 7x7 tile's 229-241, about 104 do the work (products, fragment loads,
// loads, stores, conversions). The rest had been address arithmetic, 280-285 a tile: with a
// 64-bit step between images ptxas rebuilt each element store's address from the output
// parameter (16 LDC and 38 LEA of 285 for 3x3). The steps are 32-bit values LLVM may not widen
// (platform::unwidened; images of fewer than 2^31 bytes, as the plan requires), added as one
// wide multiply-add (IMAD.WIDE) to the pointer: 5.8 -> 4.7 (3x3), 5.7 -> 4.9 (5x5). Not for the
// gated forms' steps (5x5 gated spilled 4 bytes with them). Neither storing an image's second
// element under the first's test (272-288 for 3x3) nor addressing the images from the tile's
// pointer by index (282-343, 4 bytes spilled for 5x5) had helped.
// Requires what nchw_matrix does, but for even rows: those only at stride 2 (input rows), and
// output planes of at most 8 x 8 (dispatch/depthwise_nchw_matrix_plan.hpp).

#include <type_traits>

#include "../../config.hpp"
#include "../../platform/platform.hpp"
#include "../../platform/recomputed.hpp"
#include "../../problem.hpp"
#include "../common/activation.hpp"
#include "../common/gradient_gate.hpp"
#include "../common/words.hpp"
#include "nchw_matrix.hpp"

namespace dsconv {
namespace detail {

inline constexpr int nchw_plane_side = 8;  // a plane's outputs along each side, at most

// Images a warp tile takes, two an M tile: eight at stride 1, so that the loads of a tile and the
// next tile's in flight are bytes enough (a 7x7 plane is 98 bytes), four at stride 2 (whose
// planes are four times as large).
DSCONV_HOST_DEVICE constexpr int nchw_plane_images(int stride) { return stride == 1 ? 8 : 4; }

// Blocks resident per multiprocessor the kernel is compiled for: four at stride 1 (128
// registers: 16 warps' loads in flight, a third more than at three; 0 spills on sm_80 and
// sm_90, gated too), but for 5x5 filters on Turing (whose 16-bit product is two: 4 and 12 bytes
// spilled at four) and at stride 2 (at four, the 5x5 filter's spilled 8 bytes on sm_90) three.
DSCONV_HOST_DEVICE constexpr int nchw_plane_resident_blocks(int k, int stride) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  constexpr bool turing = true;
#else
  constexpr bool turing = false;
#endif
  return stride == 2 || (turing && k == 5) ? 3 : 4;
}

// A warp tile's staging for a K x K filter of stride S: an image's staged rows (input rows -P
// to 7 S + P; at stride 2 the even rows before the odd ones, as the tile form's), the row pitch
// in elements (an odd number of 16-byte slots: the fragment loads' 8 rows in 8 banks' groups),
// input column x at element window_lead + x of its row, and the images a tile takes.
template <int K, int S>
struct nchw_plane_geometry {
  static constexpr int P = K / 2;
  static constexpr int rows = (nchw_plane_side - 1) * S + K;
  static constexpr int window_lead = nchw_matrix_window_lead;
  static constexpr int windows = S;  // 16 columns each from column -window_lead, 16 apart
  static constexpr int pitch = S == 1 ? 24 : 40;
  static constexpr int row_pairs = (rows + 1) / 2;
  static constexpr int staged_rows = S == 1 ? rows : 2 * row_pairs;
  static constexpr int image_elements = staged_rows * pitch;
  static constexpr int images = nchw_plane_images(S);
  static constexpr int m_tiles = images / 2;
  static constexpr int elements = images * image_elements;
  static constexpr int max_plane = nchw_plane_side * S * nchw_plane_side * S;  // an input plane's elements, at most
  DSCONV_HOST_DEVICE static constexpr int row_at(int r) { return S == 1 ? r : (r % 2) * row_pairs + r / 2; }
  static_assert(windows * 16 <= pitch && window_lead + nchw_plane_side * S + P <= windows * 16, "the windows fit the pitch");
  static_assert((pitch / 8) % 2 == 1, "an odd number of 16-byte slots a row");
};

}  // namespace detail

namespace kernels {

// Launched as depthwise_nchw_matrix is, with the plan's tile (nchw_matrix_tile: one a group
// of images of a channel) and gate G (its data gradient's).
template <class T, int K, int S, detail::gate_kind G = detail::gate_kind::none>
DSCONV_KERNEL DSCONV_LAUNCH_BOUNDS(detail::nchw_matrix_block_threads, detail::nchw_plane_resident_blocks(K, S))
void depthwise_nchw_matrix_plane(detail::depthwise_shape s, detail::nchw_matrix_tile t, const T* __restrict__ input,
                                 detail::register_gate gate, const T* __restrict__ weight, const T* __restrict__ bias,
                                 T* __restrict__ output, T* __restrict__ pre_activation) {
  static_assert(sizeof(T) == 2, "16-bit elements");
  namespace pf = platform;
  using geo = detail::nchw_plane_geometry<K, S>;
  constexpr bool gated = G != detail::gate_kind::none;
  constexpr int warps = detail::nchw_matrix_warps, IM = geo::m_tiles, images = geo::images;
  DSCONV_SHARED_ARRAY(T, staged, [warps * geo::elements]);

  const int tid = static_cast<int>(pf::thread_idx().x), warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, q = lane % 4;
  T* const own = detail::nchw_matrix_own_staging(staged, geo::elements, warp, lane);

  // The warp's run of tiles (images `images` at a time, then channels) and the first one's place.
  const detail::nchw_matrix_run run = detail::nchw_matrix_warp_run(t, warp);
  const int groups = (s.n + images - 1) / images;
  const int from = run.first < t.tiles ? run.first : 0;
  int next_group = from % groups, next_c = from / groups;

  unsigned b[K][S][2];  // the B bands of the channel whose tiles the warp is on (nchw_matrix_bands)
  int b_channel = -1;
  float bias_of = 0.f;

  const int plane_in = s.h * s.w, plane_out = s.out_h * s.out_w;
  // The next image's plane of the channel: c planes on, in bytes, a 32-bit value kept 32-bit
  // (above). Pointers step by it (an index stepped by elements had cost a shift and an add more
  // an access); `unit` is a 1 the compiler cannot see, so that a step is one IMAD.WIDE.
  const int image_in = pf::unwidened(plane_in * s.c * 2), image_out = pf::unwidened(plane_out * s.c * 2);
  const int unit = pf::unwidened(1);
  const auto advanced = [unit](auto* p, int bytes, auto wide) {
    using byte = std::conditional_t<std::is_const_v<std::remove_pointer_t<decltype(p)>>, const char, char>;
    return reinterpret_cast<decltype(p)>(reinterpret_cast<byte*>(p) + (decltype(wide)::value ? static_cast<index_t>(bytes) * unit : bytes));
  };
  // Lane l addresses row m = l % 8 + 8 (l / 8 % 2) of a fragment: output row m % 8 of image m / 8
  // of the M tile, columns 8 (l / 16) on of a window.
  const int m = lane % 8 + 8 * (lane / 8 % 2);
  const T* const lane_rows = own + (m / 8) * geo::image_elements + (m % 8) * geo::pitch + 8 * (lane / 16);
  // Lane (g, q)'s outputs: row g, columns 2q and 2q + 1 of each image, where inside the plane.
  const int lane_out = g * s.out_w + 2 * q;
  const bool row_in = g < s.out_h, first_in = row_in && 2 * q < s.out_w, second_in = row_in && 2 * q + 1 < s.out_w;
  const bool out_words = s.out_w % 2 == 0;

  // The walk with the items' bytes GB (4: words; 2: elements) a compile-time constant.
  const auto walk = [&](auto granule) {
    constexpr int GB = decltype(granule)::value, GE = GB / 2;
    constexpr int each = geo::max_plane / GE / 32;  // items a lane, at most
    // Item j of the lane, elements GE (lane + 32 j) on of a plane: whether the plane has it, and
    // its place in an image's staging (the division once, before the walk).
    int to[each];
    bool has[each];
    DSCONV_UNROLL
    for (int j = 0; j < each; ++j) {
      const int x = (lane + 32 * j) * GE, y = x / s.w;
      has[j] = x < plane_in;
      to[j] = geo::row_at(y + geo::P) * geo::pitch + geo::window_lead + (x - y * s.w);
    }
    unsigned next[images][each]{};
    [[maybe_unused]] unsigned kept[gated ? images : 1][gated ? each : 1]{};
    int next_images = 0;  // the fetched tile's images that exist

    // Tile (group, c)'s items into next. Full: all its images exist (every tile but an odd
    // batch's last one of a channel), so no test stands between the images' loads; FirstWhole:
    // every lane has its first item (planes of 32 items or more), which then loads without a
    // predicate (each predicate had cost its loads an address computed apart: 7x7 planes, 310 ->
    // 282 instructions a tile).
    const auto fetch = [&](int group, int c) {
      const int n0 = group * images;
      next_images = s.n - n0 < images ? s.n - n0 : images;
      const index_t plane_at = (static_cast<index_t>(n0) * s.c + c) * plane_in + GE * lane;
      const auto images_of = [&](auto full, auto first_whole) {
        const T* src = input + plane_at;
        [[maybe_unused]] const T* saved = gated ? static_cast<const T*>(gate.saved) + plane_at : nullptr;
        DSCONV_UNROLL
        for (int im = 0; im < images; ++im, src = advanced(src, image_in, std::bool_constant<!gated>{})) {
          if (!decltype(full)::value && im >= next_images) continue;  // (nothing of a missing image is loaded or staged)
          if constexpr (gated)
            if (im > 0) saved = advanced(saved, image_in, std::false_type{});
          DSCONV_UNROLL
          for (int j = 0; j < each; ++j) {
            if (!(j == 0 && decltype(first_whole)::value) && !has[j]) continue;
            if constexpr (GB == 4) {
              next[im][j] = pf::load(reinterpret_cast<const unsigned*>(src + 32 * GE * j));
              if constexpr (gated) kept[im][j] = pf::load(reinterpret_cast<const unsigned*>(saved + 32 * GE * j));
            } else {
              next[im][j] = detail::element_bits(pf::load(src + 32 * j));
              if constexpr (gated) kept[im][j] = detail::element_bits(pf::load(saved + 32 * j));
            }
          }
        }
      };
      if (next_images != images)
        images_of(std::false_type{}, std::false_type{});
      else if (plane_in >= 32 * GE)
        images_of(std::true_type{}, std::true_type{});
      else
        images_of(std::true_type{}, std::false_type{});
    };
    const auto stage = [&](int count, auto full) {
      DSCONV_UNROLL
      for (int im = 0; im < images; ++im) {
        if (!decltype(full)::value && im >= count) continue;
        T* const image = own + im * geo::image_elements;
        DSCONV_UNROLL
        for (int j = 0; j < each; ++j) {
          if (!has[j]) continue;
          unsigned v = next[im][j];
          if constexpr (gated) v = detail::gated_word<T, G>(v, kept[im][j], gate);
          if constexpr (GB == 4)
            pf::shared_store(reinterpret_cast<unsigned*>(image + to[j]), v);
          else
            pf::shared_store(image + to[j], T::from_bits(static_cast<unsigned short>(v)));
        }
      }
    };

    if (run.count > 0) fetch(next_group, next_c);
    for (int i = 0; i < run.block_count; ++i) {
      const int group = next_group, c = next_c, count = next_images;
      const bool mine = i < run.count;
      if (++next_group == groups) next_group = 0, ++next_c;
      pf::sync_threads();  // (the previous tile's fragment loads are done)
      if (mine && count == images)
        stage(count, std::true_type{});
      else if (mine)
        stage(count, std::false_type{});
      pf::sync_threads();
      if (i + 1 < run.count) fetch(next_group, next_c);
      if (!mine) continue;

      if (c != b_channel) {
        detail::nchw_matrix_bands<T, K, S>(weight, c, s.rotate_filter, g, q, b);
        b_channel = c;
        bias_of = bias ? to_float(pf::load(bias + c)) : 0.f;
      }
      float acc[IM][4];
      DSCONV_UNROLL
      for (int mt = 0; mt < IM; ++mt)
        DSCONV_UNROLL
        for (int e = 0; e < 4; ++e) acc[mt][e] = bias_of;
      DSCONV_UNROLL
      for (int ky = 0; ky < K; ++ky)
        DSCONV_UNROLL
        for (int mt = 0; mt < IM; ++mt) {
          // Input row S (m % 8) + ky of the lane's image: rows one pitch apart for every m.
          const T* const rows = lane_rows + 2 * mt * geo::image_elements + geo::row_at(ky) * geo::pitch;
          unsigned a[S][4];
          DSCONV_UNROLL
          for (int w = 0; w < S; ++w) pf::ldmatrix_x4<false>(a[w], rows + 16 * w);
          DSCONV_UNROLL
          for (int d = 0; d < S; ++d) pf::mma_16x8x16<T>(acc[mt], a[d], b[ky][d]);
        }

      // Image 2 mt + h's outputs are acc[mt][2h], acc[mt][2h + 1]; Full: all images exist.
      const index_t tile_out = (static_cast<index_t>(group) * images * s.c + c) * plane_out + lane_out;
      const auto put = [&](T* at, unsigned word) {
        if (out_words) {
          if (first_in) pf::store(reinterpret_cast<unsigned*>(at), word);
        } else {
          if (first_in) pf::store(at, T::from_bits(static_cast<unsigned short>(word)));
          if (second_in) pf::store(at + 1, T::from_bits(static_cast<unsigned short>(word >> 16)));
        }
      };
      // Full: every image exists, the pre-activation is stored where Pre says and the
      // activation is the compile-time Act; else (an odd batch's last image group of a channel)
      // all three are tested at run time (one copy of the loop where each form had one).
      const auto store_tile = [&](auto full, auto pre_form, auto act) {
        constexpr bool Full = decltype(full)::value, Pre = decltype(pre_form)::value;
        T* out = output + tile_out;
        T* pre = pre_activation ? pre_activation + tile_out : nullptr;
        DSCONV_UNROLL
        for (int im = 0; im < images; ++im, out = advanced(out, image_out, std::bool_constant<!gated>{})) {
          if (!Full && im >= count) continue;
          const float* const f = acc[im / 2] + 2 * (im % 2);
          if (Full ? Pre : pre != nullptr) {
            if constexpr (Full) {
              put(pre, detail::saved_word<decltype(act)::value, T>(f, s.save_derivative));
            } else {
              const bool d = s.save_derivative;
              const float z[2] = {d ? detail::derivative_at(f[0], s.act) : f[0], d ? detail::derivative_at(f[1], s.act) : f[1]};
              put(pre, detail::narrow<T>(z));
            }
            pre = advanced(pre, image_out, std::bool_constant<!gated>{});
          }
          if constexpr (Full) {
            put(out, detail::activated_word<decltype(act)::value, T>(f));
          } else {
            const activation run_act = gated ? activation::none : s.act;
            const float a[2] = {detail::activate(f[0], run_act), detail::activate(f[1], run_act)};
            put(out, detail::narrow<T>(a));
          }
        }
      };
      // (The data gradient's activation is none: its gate applied the derivative.)
      const auto store_full = [&](auto pre_form) {
        detail::with_output_activation<G>(s.act, [&](auto act) { store_tile(std::true_type{}, pre_form, act); });
      };
      if (count != images)
        store_tile(std::false_type{}, std::false_type{}, std::integral_constant<activation, activation::none>{});
      else if (pre_activation)
        store_full(std::true_type{});
      else
        store_full(std::false_type{});
    }
  };
  // (Stride 2 takes even input widths only: its element walk, eight items a lane an image,
  // spilled 8 bytes for 5x5 filters on sm_90; no network has such a layer.)
  if (S == 2 || t.granule == 4)
    walk(std::integral_constant<int, 4>{});
  else
    walk(std::integral_constant<int, S == 1 ? 2 : 4>{});
}

}  // namespace kernels
}  // namespace dsconv
