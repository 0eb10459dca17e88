#pragma once
// Runs one inverted-residual block through dsconv on device buffers, with a given variant, and
// checks it against the double-precision composition of the reference layers: the work of
// the main job's block check (--kind block), per block and variant.

#include <cmath>
#include <random>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "blocks.hpp"
#include "layer_check.hpp"

namespace dsconv_bench {

// A block's tensors on the host, weights scaled by 1 / sqrt(fan-in) so that every layer's
// outputs keep the inputs' magnitude, as trained networks' do.
template <class T>
struct block_data {
  std::vector<T> input, we, be, wd, bd, rw, rb, xw, xb, wp, bp;

  block_data(const dsconv::inverted_residual_params& p, std::mt19937& gen) {
    const std::size_t x = p.expanded, se = p.se_channels;
    auto scaled = [&](std::size_t count, int fan_in, bool present) {
      std::vector<T> v = present ? random_values<T>(count, gen) : std::vector<T>();
      for (T& e : v) e = T(dsconv::to_float(e) / std::sqrt(static_cast<float>(fan_in)));
      return v;
    };
    input = random_values<T>(static_cast<std::size_t>(p.n) * p.c_in * p.h * p.w, gen);
    we = scaled(x * p.c_in, p.c_in, p.has_expand()), be = scaled(x, 1, p.has_expand());
    wd = scaled(x * p.kernel * p.kernel, p.kernel * p.kernel, true), bd = scaled(x, 1, true);
    rw = scaled(se * x, p.expanded, se > 0), rb = scaled(se, 1, se > 0);
    xw = scaled(x * se, p.se_channels, se > 0), xb = scaled(x, 1, se > 0);
    wp = scaled(static_cast<std::size_t>(p.c_out) * x, p.expanded, true), bp = scaled(p.c_out, 1, true);
  }
  template <class Ptr>
  static dsconv::inverted_residual_weights<T> weights_of(Ptr at, const block_data& d) {
    return {at(d.we), at(d.be), at(d.wd), at(d.bd), at(d.rw), at(d.rb), at(d.xw), at(d.xb), at(d.wp), at(d.bp)};
  }
};

// `variant` on `p`, with the workspace the library asks for; `ref` is the reference
// composition's output. The result names the variant the planner chooses with that workspace.
template <class T>
layer_result check_block(const dsconv::inverted_residual_params& p, dsconv::block_variant variant, const block_data<T>& d,
                         const std::vector<double>& ref, bool count_traffic) {
  layer_result r;
  const std::size_t out_n = ref.size();
  dsconv::inverted_residual_options options;
  options.variant = variant;
  options.workspace_bytes = dsconv::inverted_residual_workspace_size<T>(p);
  std::vector<dsconv::device_buffer<T>> held(11);
  std::size_t next = 0;
  bool uploaded = true;
  auto up = [&](const std::vector<T>& v) -> const T* {
    if (v.empty()) return nullptr;
    dsconv::device_buffer<T>& b = held[next++];
    uploaded = uploaded && b.upload(v) == dsconv::status::success;
    return b.data();
  };
  const T* input = up(d.input);
  const dsconv::inverted_residual_weights<T> w = block_data<T>::weights_of(up, d);
  dsconv::device_buffer<char> workspace;
  dsconv::device_buffer<T> out;
  if (!uploaded || workspace.allocate(options.workspace_bytes) != dsconv::status::success ||
      out.upload(std::vector<T>(out_n, T(std::nanf("")))) != dsconv::status::success) {
    r.status = dsconv::status::out_of_memory;
    return r;
  }
  options.workspace = workspace.data();
  r.variant = dsconv::to_string(dsconv::select_variant<T>(p, options));
  r.status = detail::run_measured(r, count_traffic, [&] { return dsconv::inverted_residual_forward(p, options, w, input, out.data()); });
  if (r.status == dsconv::status::success) detail::finish(r, {&out}, {&ref});
  return r;
}

// The reference composition's output for `d`.
template <class T>
std::vector<double> block_reference(const dsconv::inverted_residual_params& p, const block_data<T>& d) {
  std::vector<double> ref(static_cast<std::size_t>(p.n) * p.c_out * p.out_h() * p.out_w());
  auto at = [](const std::vector<T>& v) { return v.empty() ? nullptr : v.data(); };
  if (dsconv::reference::inverted_residual_forward(p, block_data<T>::weights_of(at, d), d.input.data(), ref.data()) !=
      dsconv::status::success)
    throw std::runtime_error(std::string("block reference: ") + dsconv::last_error_detail());
  return ref;
}

}  // namespace dsconv_bench
