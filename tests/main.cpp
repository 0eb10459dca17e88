// Test runner. On the host platform `--warp-size N` sets the emulated warp width (ctest
// runs the suite at 32 and at 64). On a GPU build without a usable device the suite exits
// with 77, which ctest reports as skipped.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include <dsconv/dsconv.hpp>

int main(int argc, char* argv[]) {
  Catch::Session session;
  int warp_size = 0;
  using Catch::clara::Opt;
  session.cli(session.cli() | Opt(warp_size, "width")["--warp-size"]("emulated warp width of the host platform"));
  if (const int rc = session.applyCommandLine(argc, argv)) return rc;
  const bool listing = session.config().listTestNamesOnly() || session.config().listTests() || session.config().listTags();
#if defined(DSCONV_PLATFORM_HOST)
  if (warp_size && dsconv::host::set_warp_size(warp_size) != dsconv::status::success) {
    std::fprintf(stderr, "invalid --warp-size %d\n", warp_size);
    return 2;
  }
#else
  if (!listing) {
    dsconv::platform::device_properties dev;
    if (dsconv::platform::get_device_properties(dev) != dsconv::status::success) {
      std::printf("no usable GPU (%s): skipping the device tests\n", dsconv::last_error_detail());
      return 77;
    }
  }
#endif
  (void)listing;
  return session.run();
}
