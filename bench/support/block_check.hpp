#pragma once
// Runs one inverted-residual block through dsconv on device buffers, with a given variant, and
// checks it against the double-precision composition of the reference layers: the work of
// the main job's block check (--kind block), per block and variant.

#include <cmath>
#include <random>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "block_tensors.hpp"
#include "blocks.hpp"
#include "layer_check.hpp"

namespace dsconv_bench {

// A block's tensors on the host, random, weights scaled by 1 / sqrt(fan-in) so that every
// layer's outputs keep the inputs' magnitude, as trained networks' do.
template <class T>
block_tensors<T> random_block(const dsconv::inverted_residual_params& p, std::mt19937& gen) {
  return block_tensors<T>(p, [&](std::size_t count, int fan_in, bool) {
    std::vector<T> v = random_values<T>(count, gen);
    for (T& e : v) e = T(dsconv::to_float(e) / std::sqrt(static_cast<float>(fan_in)));
    return v;
  });
}

// `variant` on `p`, with the workspace the library asks for; `ref` is the reference
// composition's output. The result names the variant the planner chooses with that workspace.
template <class T>
layer_result check_block(const dsconv::inverted_residual_params& p, dsconv::block_variant variant, const block_tensors<T>& d,
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
  const dsconv::inverted_residual_weights<T> w = d.weights(up);
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
std::vector<double> block_reference(const dsconv::inverted_residual_params& p, const block_tensors<T>& d) {
  std::vector<double> ref(static_cast<std::size_t>(p.n) * p.c_out * p.out_h() * p.out_w());
  if (dsconv::reference::inverted_residual_forward(p, d.weights(), d.input.data(), ref.data()) !=
      dsconv::status::success)
    throw std::runtime_error(std::string("block reference: ") + dsconv::last_error_detail());
  return ref;
}

}  // namespace dsconv_bench
