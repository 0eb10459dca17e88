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
// Every tile is whole planes, so each lane stages the same places of every tile, computed once.
// At stride 1 a plane's words (32 at most) are copied asynchronously, word l by lane l, into a
// ring of raw planes ring_stages - 1 tiles ahead of the products (ring_walk: nchw_plane_ring_stages),
// and once a tile's have landed each lane moves its word's two elements to their places in the
// staging (as one word where the plane's width is even); at stride 2 a plane's words (even input
// widths) are loaded two tiles ahead into registers (two buffers, the walk's tiles taken in
// pairs), lane l taking words l, l + 32, .... Rows and
// columns outside the plane are zeros written once, never overwritten. Lane (g, q) ends with row
// g, columns 2q and 2q + 1, of each image: stored as a word where the output width is even, else
// element by element, the bias having started the accumulators.
//
// Counted (sm_90 SASS, scripts/sass_budget.py, through relu6; 3x3 / 5x5): 7x7 planes 5.6 / 6.0
// instructions per DRAM byte (through the clamp 5.2 / 5.5, the scale 4.8 / 5.2), 8x8 3.5 / 3.7
// (3.0 / 3.3, 2.7 / 3.0), 3.2 / 3.6 from 14x14 to 7x7 at stride 2 (3.1 / 3.4 one tile ahead);
// bytes in flight a thread 96 (128 gated) at stride 1, 48 (64) KiB a multiprocessor, 128 at
// stride 2, 48 KiB at its 384 threads (64 one tile ahead). The ring's copies and the
// words read back cost 7x7 tiles some 53 instructions over registers loaded a tile ahead (241
// for 5x5: 4.9 a byte, scale 3.9-4.1), which had kept 32 bytes a thread in flight (64 gated), 16
// of CUB's 48 KiB a multiprocessor: Little's law puts that at about a third of the bandwidth,
// where 6 instructions a byte is three quarters of the issue at full bandwidth (a GPU measures
// both: the prepared experiment). Of a tile's instructions, the address arithmetic had been 280-285
// a tile for 7x7: with a 64-bit step between images ptxas rebuilt each element store's address
// from the output parameter (16 LDC and 38 LEA of 285 for 3x3). The steps are 32-bit values LLVM
// may not widen (platform::unwidened; images of fewer than 2^31 bytes, as the plan requires),
// added as one wide multiply-add (IMAD.WIDE) to the pointer: 5.8 -> 4.7 (3x3), 5.7 -> 4.9 (5x5).
// Not for the gated forms' steps (5x5 gated spilled 4 bytes with them). Neither storing an
// image's second element under the first's test (272-288 for 3x3) nor addressing the images from
// the tile's pointer by index (282-343, 4 bytes spilled for 5x5) had helped.
// Requires what nchw_matrix does, but for even rows: those only at stride 2 (input rows), and
// output planes of at most 8 x 8 (dispatch/depthwise_nchw_matrix_plan.hpp).

#include <cstdint>
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

// Tiles a warp's ring of raw planes holds at stride 1 (ring_walk): its copies run ring_stages - 1
// tiles ahead, a word a lane an image (a tensor) each, 32 bytes a tile (64 gated), so that a
// thread keeps 96 (128) bytes in flight, 48 (64) KiB a multiprocessor at 512 threads, where the
// registers of a walk one tile ahead held 32 (64). Two before sm_80, which has no asynchronous
// copies (each is a load and a store in the thread's order) and 64 KiB of shared memory a
// multiprocessor, of which a deeper ring would take the blocks' room (16 KiB a block ungated).
DSCONV_HOST_DEVICE constexpr int nchw_plane_ring_stages(bool gated) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  return (void)gated, 2;
#else
  return gated ? 3 : 4;
#endif
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
  // The ring of raw planes (stride 1: ring_walk below): a warp's ring_stages tiles of each
  // tensor's images' 32 words, each plane's slot one word more: a plane starting at an odd
  // element has lane l's second element in word l + 1, which for lane 31 is the spare word
  // (never copied, and read only where the plane has no such element: it has 49 at most), not
  // the next slot's, which may be another warp's or past the ring.
  constexpr int ring_stages = detail::nchw_plane_ring_stages(gated), tensors = gated ? 2 : 1, slot_words = 33;
  constexpr int ring_words = S == 1 ? ring_stages * tensors * images * slot_words : 1;
  DSCONV_SHARED_ARRAY(unsigned, ring, [warps * ring_words]);

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

  // Tile (group, c)'s products from its staged images (`count` of them exist), and its stores.
  const auto products_and_store = [&](int group, int c, int count) {
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
  };

  // Stride 2 (planes of even rows): the words of the next two tiles held in registers while this
  // tile's products run, in two buffers that alternate by tile (a buffer's loads are read only
  // when its tile is staged: holding the next tile only had kept 64 bytes a thread in flight, 24
  // KiB a multiprocessor at three blocks, half of CUB's 48). The walk takes its tiles in pairs,
  // each buffer's code compiled apart (registers a compile-time index; a copy from one buffer to
  // the other would wait for the loads). (Generic, `auto...`, so that only the stride-2 kernels,
  // which call it, compile its body.)
  const auto walk = [&](auto...) {
    constexpr int each = geo::max_plane / 2 / 32;  // words a lane, at most
    // Word j of the lane, elements 2 (lane + 32 j) on of a plane: whether the plane has it, and
    // its place in an image's staging (the division once, before the walk).
    int to[each];
    bool has[each];
    DSCONV_UNROLL
    for (int j = 0; j < each; ++j) {
      const int x = (lane + 32 * j) * 2, y = x / s.w;
      has[j] = x < plane_in;
      to[j] = geo::row_at(y + geo::P) * geo::pitch + geo::window_lead + (x - y * s.w);
    }
    unsigned next[2][images][each]{};
    int next_images[2] = {0, 0};  // the fetched tiles' images that exist
    int fetch_group = from % groups, fetch_c = from / groups;  // the next tile to fetch

    // Tile (fetch_group, fetch_c)'s words into buffer B. Full: all its images exist (every tile
    // but an odd batch's last one of a channel), so no test stands between the images' loads;
    // FirstWhole: every lane has its first word (planes of 64 elements or more), which then loads
    // without a predicate (each predicate had cost its loads an address computed apart: 7x7
    // planes, 310 -> 282 instructions a tile).
    const auto fetch = [&](auto buffer) {
      constexpr int B = decltype(buffer)::value;
      const int n0 = fetch_group * images, c = fetch_c;
      if (++fetch_group == groups) fetch_group = 0, ++fetch_c;
      const int have = s.n - n0 < images ? s.n - n0 : images;
      next_images[B] = have;
      const index_t plane_at = (static_cast<index_t>(n0) * s.c + c) * plane_in + 2 * lane;
      const auto images_of = [&](auto full, auto first_whole) {
        const T* src = input + plane_at;
        DSCONV_UNROLL
        for (int im = 0; im < images; ++im, src = advanced(src, image_in, std::true_type{})) {
          if (!decltype(full)::value && im >= have) continue;  // (nothing of a missing image is loaded or staged)
          DSCONV_UNROLL
          for (int j = 0; j < each; ++j) {
            if (!(j == 0 && decltype(first_whole)::value) && !has[j]) continue;
            next[B][im][j] = pf::load(reinterpret_cast<const unsigned*>(src + 64 * j));
          }
        }
      };
      if (have != images)
        images_of(std::false_type{}, std::false_type{});
      else if (plane_in >= 64)
        images_of(std::true_type{}, std::true_type{});
      else
        images_of(std::true_type{}, std::false_type{});
    };
    const auto stage = [&](auto buffer, int count, auto full) {
      constexpr int B = decltype(buffer)::value;
      DSCONV_UNROLL
      for (int im = 0; im < images; ++im) {
        if (!decltype(full)::value && im >= count) continue;
        T* const image = own + im * geo::image_elements;
        DSCONV_UNROLL
        for (int j = 0; j < each; ++j)
          if (has[j]) pf::shared_store(reinterpret_cast<unsigned*>(image + to[j]), next[B][im][j]);
      }
    };
    // Tile i of the block's walk (the warp's where i < run.count), from buffer B = i % 2, which
    // then fetches tile i + 2.
    const auto step = [&](int i, auto buffer) {
      constexpr int B = decltype(buffer)::value;
      const int group = next_group, c = next_c, count = next_images[B];
      const bool mine = i < run.count;
      if (++next_group == groups) next_group = 0, ++next_c;
      pf::sync_threads();  // (the previous tile's fragment loads are done)
      if (mine && count == images)
        stage(buffer, count, std::true_type{});
      else if (mine)
        stage(buffer, count, std::false_type{});
      pf::sync_threads();
      if (i + 2 < run.count) fetch(buffer);
      if (mine) products_and_store(group, c, count);
    };

    using first = std::integral_constant<int, 0>;
    using second = std::integral_constant<int, 1>;
    if (run.count > 0) fetch(first{});
    if (run.count > 1) fetch(second{});
    for (int i = 0; i < run.block_count; i += 2) {
      step(i, first{});
      if (i + 1 < run.block_count) step(i + 1, second{});
    }
  };
  // Stride 1: a tile's planes copied as whole 32-bit words, word `lane` of each image's plane (at
  // most 32: 64 elements), into a ring of ring_stages tiles of such raw planes, ring_stages - 1
  // tiles ahead of the products (no register holds them in flight); then, the tile's copies
  // landed, each lane moves its word of each image to the places of its two elements in the
  // staging (GB 4, rows of an even width: as one word; GB 2, odd: element by element, a plane then
  // starting at an odd element or an even one). An odd plane's words reach one element before it
  // or past it, into the previous or the next plane; past the tensor's last element (an odd count
  // of them) the last word copies its first element only.
  const auto ring_walk = [&](auto granule) {
    constexpr int GB = decltype(granule)::value;
    unsigned* const raw = ring + warp * ring_words;
    const auto slot = [&](int stage, int tensor, int im) { return raw + ((stage * tensors + tensor) * images + im) * slot_words + lane; };
    // The places in an image's staging of the plane's elements 2 lane and 2 lane + 1 (-1: not in
    // the plane), the division once, before the walk; whether the lane copies a word (the plane's
    // words, (plane_in + 1) / 2, start at it, or at the element before where it is odd).
    int at[2];
    DSCONV_UNROLL
    for (int e = 0; e < 2; ++e) {
      const int x = 2 * lane + e, y = x / s.w;
      at[e] = x < plane_in ? geo::row_at(y + geo::P) * geo::pitch + geo::window_lead + (x - y * s.w) : -1;
    }
    const bool copies = 2 * lane < plane_in;
    // Whether consecutive images' planes start at elements of different parities (an odd
    // number of channels of odd planes), and the parity of tile (group, c)'s first plane.
    const int alternates = s.c & plane_in & 1;
    const auto first_parity = [&](int group, int c) {
      return static_cast<int>(((static_cast<index_t>(group) * images * s.c + c) * plane_in) & 1);
    };
    int copy_group = from % groups, copy_c = from / groups;  // the next tile to copy
    const bool odd_tensor = (static_cast<index_t>(s.n) * s.c * plane_in) % 2 != 0;
    // Tile (copy_group, copy_c)'s words into stage `stage`, its images' that exist: the word
    // `lane` from the one that holds a plane's first element. Full: all its images exist; Uniform:
    // its planes' first elements all of one parity (no alternates), so that one image's words lie
    // image_in bytes (a multiple of 4) from the one before's; Tail: the tile holds the last plane
    // of a tensor of an odd number of elements, whose last word reaches past it (only its first
    // element copied).
    const auto copy = [&](int stage, auto full, auto uniform, auto tail) {
      const int n0 = copy_group * images, have = s.n - n0 < images ? s.n - n0 : images, c = copy_c;
      if (++copy_group == groups) copy_group = 0, ++copy_c;
      if (!copies) return;
      const index_t first = (static_cast<index_t>(n0) * s.c + c) * plane_in;
      // (the tensors are 4-byte aligned: a plane's first word holds its first element)
      const auto words_of = [&](const T* plane) {
        return reinterpret_cast<const unsigned*>(reinterpret_cast<std::uintptr_t>(plane) & ~std::uintptr_t{3}) + lane;
      };
      const unsigned* src = words_of(input + first);
      [[maybe_unused]] const unsigned* saved_src = gated ? words_of(static_cast<const T*>(gate.saved) + first) : nullptr;
      DSCONV_UNROLL
      for (int im = 0; im < images; ++im) {
        if (!decltype(full)::value && im >= have) continue;  // (nothing of a missing image is copied or staged)
        const auto copy_word = [&](int tensor, const unsigned* word, const T* tensor_start) {
          if constexpr (!decltype(uniform)::value) {
            const T* const plane = tensor_start + first + static_cast<index_t>(im) * plane_in * s.c;
            word = words_of(plane);
          }
          if (decltype(tail)::value && im == have - 1 && 2 * lane + 1 == plane_in)  // (the tensor's last element)
            pf::async_copy_bytes<4>(slot(stage, tensor, im), word, 2);
          else
            pf::async_copy_whole<4>(slot(stage, tensor, im), word, true);
        };
        copy_word(0, src, input);
        if constexpr (gated) copy_word(1, saved_src, static_cast<const T*>(gate.saved));
        if constexpr (decltype(uniform)::value) {
          src = advanced(src, image_in, std::bool_constant<!gated>{});
          if constexpr (gated) saved_src = advanced(saved_src, image_in, std::false_type{});
        }
      }
    };
    const auto copy_next = [&](int stage) {
      using yes = std::true_type;
      using no = std::false_type;
      if (odd_tensor && copy_c == s.c - 1 && copy_group == groups - 1)
        copy(stage, no{}, no{}, yes{});
      else if (alternates)
        copy(stage, no{}, no{}, no{});
      else if (s.n - copy_group * images >= images)
        copy(stage, yes{}, yes{}, no{});
      else
        copy(stage, no{}, yes{}, no{});
    };
    // Stage `stage`'s words (tile (group, c), `count` images) to their places in the staging:
    // GB 4, rows of an even width, the lane's word as one; GB 2, its elements 2 lane and 2 lane +
    // 1 from the halves where an odd start put them. Full: all the tile's images exist.
    const auto unpack = [&](int stage, int group, int c, int count, auto full) {
      [[maybe_unused]] const int parity = first_parity(group, c);
      DSCONV_UNROLL
      for (int im = 0; im < images; ++im) {
        if (!decltype(full)::value && im >= count) continue;
        T* const image = own + im * geo::image_elements;
        if constexpr (GB == 4) {
          unsigned v = pf::shared_load(slot(stage, 0, im));
          if constexpr (gated) v = detail::gated_word<T, G>(v, pf::shared_load(slot(stage, 1, im)), gate);
          if (at[0] >= 0) pf::shared_store(reinterpret_cast<unsigned*>(image + at[0]), v);
        } else {
          const int odd = parity ^ (alternates & im);
          const auto pair = [&](int tensor) {
            const T* const e = reinterpret_cast<const T*>(slot(stage, tensor, im)) + odd;
            return detail::element_bits(pf::shared_load(e)) | detail::element_bits(pf::shared_load(e + 1)) << 16;
          };
          unsigned v = pair(0);
          if constexpr (gated) v = detail::gated_word<T, G>(v, pair(1), gate);
          if (at[0] >= 0) pf::shared_store(image + at[0], T::from_bits(static_cast<unsigned short>(v)));
          if (at[1] >= 0) pf::shared_store(image + at[1], T::from_bits(static_cast<unsigned short>(v >> 16)));
        }
      }
    };

    DSCONV_UNROLL
    for (int k = 0; k + 1 < ring_stages; ++k) {
      if (k < run.count) copy_next(k);
      pf::async_copy_commit();  // (a group each, empty or not: the waits count groups)
    }
    for (int i = 0; i < run.block_count; ++i) {
      const int group = next_group, c = next_c, n0 = group * images;
      const int count = s.n - n0 < images ? s.n - n0 : images;
      const bool mine = i < run.count;
      if (++next_group == groups) next_group = 0, ++next_c;
      pf::async_copy_wait_pending<ring_stages - 2>();  // (this lane's copies of tile i have landed)
      pf::sync_threads();  // (every lane's; and the previous tile's fragment loads are done)
      if (mine && count == images)
        unpack(i % ring_stages, group, c, count, std::true_type{});
      else if (mine)
        unpack(i % ring_stages, group, c, count, std::false_type{});
      pf::sync_threads();
      if (i + ring_stages - 1 < run.count) copy_next((i + ring_stages - 1) % ring_stages);  // (the stage tile i - 1 left)
      pf::async_copy_commit();
      if (mine) products_and_store(group, c, count);
    }
  };

  // (Stride 2 takes even input widths only: its element walk, eight items a lane an image,
  // spilled 8 bytes for 5x5 filters on sm_90; no network has such a layer.)
  if constexpr (S == 1) {
    t.granule == 4 ? ring_walk(std::integral_constant<int, 4>{}) : ring_walk(std::integral_constant<int, 2>{});
  } else {
    static_assert(!gated, "stride 2 is the forward pass's only (the data gradient of stride 2 has kernels of its own)");
    walk();
  }
}

}  // namespace kernels
}  // namespace dsconv
