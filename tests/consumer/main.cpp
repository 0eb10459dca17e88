// Consumer smoke test: a depthwise and a pointwise call on the host platform, checked
// against the reference.
#include <cmath>
#include <cstdio>
#include <vector>

#include <dsconv/dsconv.hpp>

int main() {
  dsconv::depthwise_params dp;
  dp.n = 1, dp.c = 4, dp.h = 6, dp.w = 6, dp.pad_h = dp.pad_w = 1;
  std::vector<float> x(4 * 36), w(4 * 9), y(4 * 36), ref(4 * 36);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::cos(static_cast<float>(i));
  if (dsconv::depthwise_forward<float>(dp, x.data(), w.data(), nullptr, y.data()) != dsconv::status::success) return 1;
  dsconv::reference::depthwise_forward<float, float>(dp, x.data(), w.data(), nullptr, ref.data());
  for (std::size_t i = 0; i < y.size(); ++i)
    if (std::fabs(y[i] - ref[i]) > 1e-5f) return 2;

  dsconv::pointwise_params pp;
  pp.n = 1, pp.c_in = 4, pp.c_out = 3, pp.h = 6, pp.w = 6;
  std::vector<float> pw(12, 0.5f), py(3 * 36), pref(3 * 36);
  if (dsconv::pointwise_forward<float>(pp, x.data(), pw.data(), nullptr, nullptr, py.data()) != dsconv::status::success)
    return 3;
  dsconv::reference::pointwise_forward<float, float>(pp, x.data(), pw.data(), nullptr, nullptr, pref.data());
  for (std::size_t i = 0; i < py.size(); ++i)
    if (std::fabs(py[i] - pref[i]) > 1e-5f) return 4;
  std::printf("consumer: dsconv %d.%d.%d works\n", dsconv::version_major, dsconv::version_minor, dsconv::version_patch);
  return 0;
}
