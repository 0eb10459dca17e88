#pragma once
// Launch plan of the register-blocked NCHW depthwise variant (kernels/depthwise/nchw_register.hpp):
// the width of its memory accesses, its threads' strips and bands, and the kernel specialisation.

#include <cstdint>

#include "../config.hpp"
#include "../kernels/depthwise/nchw_register.hpp"
#include "../kernels/depthwise/nchw_register_transposed.hpp"
#include "../params.hpp"
#include "../platform/platform.hpp"
#include "depthwise_register_plan.hpp"
#include "launch_shape.hpp"

namespace dsconv {
namespace detail {

struct nchw_register_plan {
  nchw_register_tile tile{};
  platform::dims grid;
  bool word_windows = false;  // the stride-2 data gradient's: dz windows load as words (nchw_register_transposed.hpp)

  platform::launch_config launch(stream_t stream) const {
    return planned_launch(nchw_register_block_threads, grid, 0, "depthwise_nchw_register", stream);
  }
};

// Why the NCHW register variant cannot take `p` (empty: it can).
inline const char* nchw_register_limits(const depthwise_params& p) {
  if (p.data_layout != layout::nchw) return "needs the nchw layout";
  if (*register_filter_limits(p)) return register_filter_limits(p);
  if (p.pad_h != p.kernel_h / 2 || p.pad_w != p.kernel_w / 2) return "needs padding kernel / 2";
  if (static_cast<long long>(p.h) * p.w >= (1LL << 31)) return "needs planes of fewer than 2^31 elements";
  return "";
}

// The widest access (nchw_register_widest_chunk's 16 or 8 bytes, then 8 or 4, or one element)
// that divides both rows' bytes and the alignment of every pointer given (null: not yet known,
// taken as aligned to an element only).
template <class T>
int nchw_register_chunk(const depthwise_params& p, const void* input, const void* output, const void* pre) {
  const int element = static_cast<int>(sizeof(T));
  int chunk = nchw_register_widest_chunk(p.kernel_h);
  while (chunk > element && ((p.w * element) % chunk != 0 || (p.out_w() * element) % chunk != 0 || !input || !output ||
                             !all_aligned(static_cast<std::uintptr_t>(chunk), {input, output, pre})))
    chunk /= 2;
  return chunk < element ? element : chunk;
}

// The threads' bands of plan.tile's strip_cols x bands a plane: one band per thread where that
// fills the device 8 times over at the kernel's resident blocks; more (up to 8, each thread
// loading its taps once for them, and the forward kernel reading the rows two bands share once)
// where the grid is larger. False where the grid exceeds the device's.
inline bool spread_nchw_bands(const depthwise_params& p, const platform::device_properties& dev, nchw_register_plan& plan,
                              int resident_blocks = nchw_register_resident_blocks) {
  nchw_register_tile& t = plan.tile;
  const long long planes = static_cast<long long>(p.n) * p.c;
  const long long one_each = planes * t.bands * t.strip_cols;
  t.bands_per_thread = walk_length(one_each, dev, resident_blocks, nchw_register_block_threads);
  t.band_groups = (t.bands + t.bands_per_thread - 1) / t.bands_per_thread;
  const long long items = planes * t.band_groups * t.strip_cols;
  if (!item_grid(items, nchw_register_block_threads, dev, plan.grid)) return false;
  t.items = static_cast<int>(items);
  t.strip_col = fast_divmod(static_cast<unsigned>(t.strip_cols));
  t.band_group = fast_divmod(static_cast<unsigned>(t.band_groups));
  t.plane_channel = fast_divmod(static_cast<unsigned>(p.c));
  return true;
}

// The plan for `p` (which nchw_register_limits accepts) with the call's tensors (null: a plan
// for feasibility only, with the narrowest accesses, whose grid is the largest; gated: for the
// data gradient's kernel); false where the grid would exceed the device's.
template <class T>
bool plan_nchw_register(const depthwise_params& p, const platform::device_properties& dev, const void* input,
                        const void* output, const void* pre, nchw_register_plan& plan, bool gated = false) {
  nchw_register_tile& t = plan.tile;
  const int element = static_cast<int>(sizeof(T));
  t.chunk_bytes = nchw_register_chunk<T>(p, input, output, pre);
  const int vo = nchw_register_strip(element, p.kernel_h, t.chunk_bytes);
  const int th = nchw_register_rows(element, p.kernel_h, p.stride_h, t.chunk_bytes, gated);
  t.strip_cols = (p.out_w() + vo - 1) / vo;
  t.bands = (p.out_h() + th - 1) / th;
  return spread_nchw_bands(p, dev, plan);
}

// The stride-2 data gradient's plan (kernels/depthwise/nchw_register_transposed.hpp) for `p` (a
// register filter of stride 2, pad <= kernel - 1) with the call's tensors (null: for feasibility
// only): blocks of nchw_transposed_rows rows (a band) x 16 bytes of columns, stored 16 bytes at a
// time where grad_input's rows and pointer allow, else element by element; dz windows read as
// 32-bit words where the kernel can (nchw_transposed_words; NVIDIA's devices) and dz and the saved tensor allow:
// padding kernel / 2, rows of an even width and pointers 4-byte aligned; the forward's spread at
// the kernel's resident blocks.
template <class T>
bool plan_nchw_register_transposed(const depthwise_params& p, const platform::device_properties& dev, const void* grad_output,
                                   const void* saved, const void* grad_input, nchw_register_plan& plan) {
  nchw_register_tile& t = plan.tile;
  const int element = static_cast<int>(sizeof(T));
  t.chunk_bytes = grad_input && (p.w * element) % 16 == 0 && reinterpret_cast<std::uintptr_t>(grad_input) % 16 == 0 ? 16 : element;
  plan.word_windows = nchw_transposed_words(element, p.kernel_h) && dev.warp_size == platform::mma_warp_lanes &&
                      p.pad_w == p.kernel_w / 2 && p.out_w() % 2 == 0 &&
                   grad_output && all_aligned(4, {grad_output, saved});
  t.strip_cols = (p.w + 16 / element - 1) / (16 / element);
  const int rows = nchw_transposed_rows(plan.word_windows);
  t.bands = (p.h + p.pad_h % 2 + rows - 1) / rows;
  return spread_nchw_bands(p, dev, plan, nchw_transposed_resident_blocks(element, p.kernel_h));
}

// The kernel specialisation for the problem's filter (G != none: the data gradient's, stride 1).
template <class T, gate_kind G = gate_kind::none>
forward_kernel_pointer<T, nchw_register_tile> nchw_register_kernel(const depthwise_params& p) {
  return register_filter_case<G != gate_kind::none>(p, [](auto k, auto s) {
    return platform::registered<kernels::depthwise_nchw_register<T, decltype(k)::value, decltype(s)::value, G>>();
  });
}

// The stride-2 data gradient's kernel for the problem's filter (3x3 or 5x5), gate G and dz loads
// (plan_nchw_register_transposed's word_windows).
template <class T, gate_kind G>
transposed_kernel_pointer<T, nchw_register_tile> nchw_register_transposed_kernel(const depthwise_params& p, bool word_windows) {
  constexpr int E = static_cast<int>(sizeof(T));
  if (p.kernel_h == 3) return platform::registered<kernels::depthwise_nchw_register_transposed<T, 3, G, E>>();
  if constexpr (nchw_transposed_words(E, 5))
    if (word_windows)  // (NVIDIA's builds only: nchw_transposed_words)
      return platform::registered<kernels::depthwise_nchw_register_transposed<T, 5, G, 4>, platform::matrix_unit::none,
                                  platform::mma_warp_lanes>();
  return platform::registered<kernels::depthwise_nchw_register_transposed<T, 5, G, E>>();
}

}  // namespace detail
}  // namespace dsconv
