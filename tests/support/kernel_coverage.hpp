#pragma once
// Proof that the test suite executes every kernel the library compiles. Each test process
// (one per test case under ctest) writes where the registered kernels ran (warp width,
// device profile, thread schedules) into a directory; a final ctest run of the suite binary
// with --check-coverage reads all of it and fails, naming them, if some kernel never ran at
// a warp width where it can run, or ran there under fewer than two thread schedules.

#include <string>
#include <vector>

#include <dsconv/dsconv.hpp>

namespace dsconv_test {

#if defined(DSCONV_PLATFORM_HOST)
// What ran in this process, appended to a file of its own in `dir`.
void write_kernel_runs(const std::string& dir);

// Every kernel run recorded in `dir`.
std::vector<dsconv::host::kernel_run> read_kernel_runs(const std::string& dir);

// The warp widths a compiled kernel must run at on the host: a kernel only one vendor's GPU
// builds compile, or a matrix-unit kernel, at its vendor's; other SIMT kernels at both.
std::vector<int> warp_widths_for(const dsconv::host::compiled_kernel& k);

// One line for each compiled kernel and warp width where it can run but did not, or ran
// under fewer than `min_schedules` thread schedules; empty when everything is covered.
std::vector<std::string> coverage_gaps(const std::vector<dsconv::host::compiled_kernel>& compiled,
                                       const std::vector<dsconv::host::kernel_run>& runs, int min_schedules = 2);

// The --check-coverage command: prints a summary and the gaps; 0 when there are none.
int check_kernel_coverage(const std::string& dir);
#endif

}  // namespace dsconv_test
