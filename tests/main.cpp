// Test runner. On the host platform:
//   --device NAME        the GPU the planners see (sm80, sm90, sm75, gfx906, gfx90a), with its
//                        warp width; ctest runs the suite under several
//   --warp-size N        another emulated warp width
//   --schedule NAME      the thread schedule (default rotate: each block the next fixed order)
//   --coverage-dir DIR   at exit, add where the registered kernels ran to DIR
//   --check-coverage DIR run no tests: check that every compiled kernel ran (support/kernel_coverage.hpp)
// On a GPU build without a usable device the suite exits with 77, which ctest reports as
// skipped.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include <dsconv/dsconv.hpp>

#include "support/kernel_coverage.hpp"

int main(int argc, char* argv[]) {
  Catch::Session session;
  int warp_size = 0;
  std::string device, schedule, coverage_dir, check_coverage;
  using Catch::clara::Opt;
  session.cli(session.cli() | Opt(warp_size, "width")["--warp-size"]("emulated warp width of the host platform") |
              Opt(device, "profile")["--device"]("device profile of the host platform: sm80, sm90, sm75, gfx906, gfx90a") |
              Opt(schedule, "order")["--schedule"]("thread schedule of the host platform (default rotate)") |
              Opt(coverage_dir, "dir")["--coverage-dir"]("record where the compiled kernels ran into this directory") |
              Opt(check_coverage, "dir")["--check-coverage"]("check that every compiled kernel ran, from the records in dir"));
  if (const int rc = session.applyCommandLine(argc, argv)) return rc;
  const bool listing = session.config().listTestNamesOnly() || session.config().listTests() || session.config().listTags();
#if defined(DSCONV_PLATFORM_HOST)
  if (!check_coverage.empty()) return dsconv_test::check_kernel_coverage(check_coverage);
  if (!device.empty() && dsconv::host::set_device(device.c_str()) != dsconv::status::success) {
    std::fprintf(stderr, "invalid --device %s\n", device.c_str());
    return 2;
  }
  if (warp_size && dsconv::host::set_warp_size(warp_size) != dsconv::status::success) {
    std::fprintf(stderr, "invalid --warp-size %d\n", warp_size);
    return 2;
  }
  if (!schedule.empty()) {
    dsconv::host::schedule s;
    if (!dsconv::host::parse_schedule(schedule.c_str(), s)) {
      std::fprintf(stderr, "invalid --schedule %s\n", schedule.c_str());
      return 2;
    }
    dsconv::host::set_schedule(s);
  }
  // Shuffled schedules follow Catch's seed, so --rng-seed reproduces a run.
  dsconv::host::set_seed(session.config().rngSeed());
  const int result = session.run();
  if (!coverage_dir.empty() && !listing) dsconv_test::write_kernel_runs(coverage_dir);
  return result;
#else
  if (!listing) {
    dsconv::platform::device_properties dev;
    if (dsconv::platform::get_device_properties(dev) != dsconv::status::success) {
      std::printf("no usable GPU (%s): skipping the device tests\n", dsconv::last_error_detail());
      return 77;
    }
  }
  (void)warp_size, (void)device, (void)schedule, (void)coverage_dir, (void)check_coverage;
  return session.run();
#endif
}
