#pragma once
// A block's tensors on the host, for the block checks of the main job (block_check.hpp) and of
// the tests: the input and every weight and bias of a block description (empty where the block
// has none), and the weights as the library takes them, placed anywhere.

#include <cstddef>
#include <vector>

#include <dsconv/dsconv.hpp>

namespace dsconv_bench {

template <class T>
struct block_tensors {
  std::vector<T> input, we, be, wd, bd, rw, rb, xw, xb, wp, bp;

  block_tensors() = default;
  // Every tensor `p` has, from make(count, fan_in, bias): the values of a tensor of `count`
  // elements whose consumer sums `fan_in` of its products per output (1 for the input and the
  // biases), `bias` for a bias (an empty result: none).
  template <class Make>
  block_tensors(const dsconv::inverted_residual_params& p, Make make) {
    const std::size_t x = p.expanded, se = p.se_channels;
    auto made = [&](std::size_t count, int fan_in, bool bias, bool present) {
      return present ? make(count, fan_in, bias) : std::vector<T>();
    };
    input = make(static_cast<std::size_t>(p.n) * p.c_in * p.h * p.w, 1, false);
    we = made(x * p.c_in, p.c_in, false, p.has_expand()), be = made(x, 1, true, p.has_expand());
    wd = made(x * p.kernel * p.kernel, p.kernel * p.kernel, false, true), bd = made(x, 1, true, true);
    rw = made(se * x, p.expanded, false, se > 0), rb = made(se, 1, true, se > 0);
    xw = made(x * se, p.se_channels, false, se > 0), xb = made(x, 1, true, se > 0);
    wp = made(static_cast<std::size_t>(p.c_out) * x, p.expanded, false, true), bp = made(p.c_out, 1, true, true);
  }

  // The weights where at(tensor) placed each tensor (null for an empty one).
  template <class At>
  dsconv::inverted_residual_weights<T> weights(At at) const {
    return {at(we), at(be), at(wd), at(bd), at(rw), at(rb), at(xw), at(xb), at(wp), at(bp)};
  }
  // The weights here, on the host.
  dsconv::inverted_residual_weights<T> weights() const {
    return weights([](const std::vector<T>& v) { return v.empty() ? nullptr : v.data(); });
  }
};

}  // namespace dsconv_bench
