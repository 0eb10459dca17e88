#include "kernel_coverage.hpp"

#if defined(DSCONV_PLATFORM_HOST)

#include <bitset>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include <unistd.h>

namespace dsconv_test {

namespace fs = std::filesystem;

void write_kernel_runs(const std::string& dir) {
  fs::create_directories(dir);
  std::ofstream out(fs::path(dir) / ("runs-" + std::to_string(::getpid()) + ".tsv"), std::ios::app);
  for (const auto& r : dsconv::host::kernel_runs())
    out << r.kernel << '\t' << r.warp_size << '\t' << r.device << '\t' << r.schedules << '\t' << r.launches << '\n';
}

std::vector<dsconv::host::kernel_run> read_kernel_runs(const std::string& dir) {
  std::vector<dsconv::host::kernel_run> runs;
  if (!fs::is_directory(dir)) return runs;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      std::istringstream cells(line);
      dsconv::host::kernel_run r;
      std::string warp, schedules, launches;
      if (std::getline(cells, r.kernel, '\t') && std::getline(cells, warp, '\t') && std::getline(cells, r.device, '\t') &&
          std::getline(cells, schedules, '\t') && std::getline(cells, launches, '\t')) {
        r.warp_size = std::stoi(warp);
        r.schedules = static_cast<unsigned>(std::stoul(schedules));
        r.launches = std::stoull(launches);
        runs.push_back(r);
      }
    }
  }
  return runs;
}

std::vector<int> warp_widths_for(const dsconv::host::compiled_kernel& k) {
  if (k.lanes) return {k.lanes};
  if (k.needs == dsconv::platform::matrix_unit::none) return {32, 64};
  return {dsconv::platform::matrix_unit_lanes(k.needs)};
}

std::vector<std::string> coverage_gaps(const std::vector<dsconv::host::compiled_kernel>& compiled,
                                       const std::vector<dsconv::host::kernel_run>& runs, int min_schedules) {
  std::map<std::pair<std::string, int>, unsigned> schedules;  // (kernel, warp) -> schedules seen
  for (const auto& r : runs) schedules[{r.kernel, r.warp_size}] |= r.schedules;
  std::vector<std::string> gaps;
  for (const auto& k : compiled)
    for (const int warp : warp_widths_for(k)) {
      const auto it = schedules.find({k.name, warp});
      const int seen = it == schedules.end() ? 0 : static_cast<int>(std::bitset<32>(it->second).count());
      if (seen >= min_schedules) continue;
      gaps.push_back(k.name + " at warp " + std::to_string(warp) +
                     (seen ? ": ran under " + std::to_string(seen) + " thread schedule(s) only" : ": never ran"));
    }
  return gaps;
}

int check_kernel_coverage(const std::string& dir) {
  const auto compiled = dsconv::host::compiled_kernels();
  const auto runs = read_kernel_runs(dir);
  std::map<std::string, unsigned long long> launches_per_device;
  for (const auto& r : runs) launches_per_device[r.device + " at warp " + std::to_string(r.warp_size)] += r.launches;
  std::printf("kernel coverage: %zu compiled kernels; launches recorded in %s:\n", compiled.size(), dir.c_str());
  for (const auto& d : launches_per_device) std::printf("  %-20s %llu\n", d.first.c_str(), d.second);
  const auto gaps = coverage_gaps(compiled, runs);
  for (const auto& g : gaps) std::printf("NOT COVERED: %s\n", g.c_str());
  std::printf("%s\n", gaps.empty() ? "every compiled kernel ran at each warp width where it can, under at least two "
                                     "thread schedules"
                                   : "FAILED: kernels above were not executed as required");
  return gaps.empty() ? 0 : 1;
}

}  // namespace dsconv_test

#endif
