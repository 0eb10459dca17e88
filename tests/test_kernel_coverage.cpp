// The registry of compiled kernels and the coverage check built on it
// (support/kernel_coverage.hpp): a kernel that a launcher names is registered at program
// start even if it never runs, its launches are recorded with warp width, device profile and
// thread schedules, and the check names every kernel left out.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "support/kernel_coverage.hpp"

#if defined(DSCONV_PLATFORM_HOST)

namespace pf = dsconv::platform;
using dsconv::status;

namespace coverage_test_kernels {
DSCONV_KERNEL void registered_and_launched(int* out) { pf::store(out + pf::thread_idx().x, 1); }
DSCONV_KERNEL void registered_before_launch(int* out) { pf::store(out + pf::thread_idx().x, 2); }
}  // namespace coverage_test_kernels

namespace {

// Names both kernels; launches the second only when asked.
status launch_test_kernels(int* out, bool second) {
  pf::launch_config cfg;
  cfg.grid = pf::dims{3, 1, 1};
  cfg.block = pf::dims{32, 1, 1};
  if (second) return pf::launch(pf::registered<coverage_test_kernels::registered_before_launch>(), cfg, out);
  return pf::launch(pf::registered<coverage_test_kernels::registered_and_launched>(), cfg, out);
}

bool has_kernel(const std::vector<dsconv::host::compiled_kernel>& kernels, const std::string& part) {
  return std::any_of(kernels.begin(), kernels.end(), [&](const auto& k) { return k.name.find(part) != std::string::npos; });
}

}  // namespace

TEST_CASE("kernels are registered when compiled, and their launches recorded", "[coverage]") {
  const auto compiled = dsconv::host::compiled_kernels();
  // Registered at start-up, before any launch (the suite's coverage check wants them run, so
  // both are launched below).
  CHECK(has_kernel(compiled, "registered_before_launch"));
  CHECK(has_kernel(compiled, "registered_and_launched"));
  // Every kernel of the library for the three element types (see instantiations.hpp).
  CHECK(has_kernel(compiled, "depthwise_nchw_tiled<bfloat16, 7, 2>"));
  CHECK(has_kernel(compiled, "pointwise_split_k_reduce<half>"));

  std::vector<int> out(32, 0);
  REQUIRE(launch_test_kernels(out.data(), false) == status::success);
  const pf::device_properties dev = dsconv::host::device();
  bool recorded = false;
  for (const auto& r : dsconv::host::kernel_runs())
    if (r.kernel.find("registered_and_launched") != std::string::npos) {
      recorded = true;
      CHECK(r.warp_size == dev.warp_size);
      CHECK(r.device == dev.name);
      CHECK(r.launches >= 1);
      CHECK(r.schedules != 0u);
    }
  CHECK(recorded);
  REQUIRE(launch_test_kernels(out.data(), true) == status::success);
}

TEST_CASE("the coverage check names every kernel that did not run where it can", "[coverage]") {
  using dsconv::host::compiled_kernel;
  using dsconv::host::kernel_run;
  const std::vector<compiled_kernel> compiled = {{"simt<float>", pf::matrix_unit::none, 0},
                                                 {"mma<half>", pf::matrix_unit::mma_sync, 0},
                                                 {"mfma<half>", pf::matrix_unit::mfma, 0},
                                                 {"amd_simt<float>", pf::matrix_unit::none, 64}};
  const unsigned two = 0b00011, one = 0b00100;
  std::vector<kernel_run> runs = {{"simt<float>", 32, "sm80", two, 4},     {"simt<float>", 64, "gfx90a", one, 1},
                                  {"simt<float>", 64, "gfx906", 0b01000, 1}, {"mma<half>", 32, "sm80", two, 2},
                                  {"amd_simt<float>", 64, "gfx90a", two, 1}};
  // simt ran at both widths under two schedules (its runs at 64 add up); mma only needs 32,
  // and a SIMT kernel only AMD's builds compile only 64; mfma never ran.
  std::vector<std::string> gaps = dsconv_test::coverage_gaps(compiled, runs);
  REQUIRE(gaps.size() == 1);
  CHECK(gaps[0] == "mfma<half> at warp 64: never ran");

  // A kernel added without a test that runs it fails the check by name.
  std::vector<compiled_kernel> grown = compiled;
  grown.push_back({"new_kernel<bfloat16, 9, 1>", pf::matrix_unit::none, 0});
  runs.push_back({"mfma<half>", 64, "gfx90a", two, 1});
  gaps = dsconv_test::coverage_gaps(grown, runs);
  REQUIRE(gaps.size() == 2);
  CHECK(gaps[0] == "new_kernel<bfloat16, 9, 1> at warp 32: never ran");
  CHECK(gaps[1] == "new_kernel<bfloat16, 9, 1> at warp 64: never ran");

  // One schedule is not enough.
  runs.push_back({"new_kernel<bfloat16, 9, 1>", 32, "sm80", one, 1});
  runs.push_back({"new_kernel<bfloat16, 9, 1>", 64, "gfx90a", two, 1});
  gaps = dsconv_test::coverage_gaps(grown, runs);
  REQUIRE(gaps.size() == 1);
  CHECK(gaps[0] == "new_kernel<bfloat16, 9, 1> at warp 32: ran under 1 thread schedule(s) only");
}

#endif  // DSCONV_PLATFORM_HOST
