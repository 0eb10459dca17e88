#pragma once
// Console output of dsconv_bench: Google Benchmark's console lines, each prefixed with
// "[done/total]" so that a run of thousands of benchmarks shows how far it has got. The
// total is the number of registered benchmarks that the run's filter selects, counted the way
// Google Benchmark selects them (POSIX extended regex; a leading '-' negates; "" and "all"
// select everything).

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

namespace dsconv_bench {

// How many of `names` the filter `spec` selects; -1 when the regex does not compile.
inline long count_selected(const std::vector<std::string>& names, std::string spec) {
  bool negative = false;
  if (!spec.empty() && spec[0] == '-') {
    spec.erase(0, 1);
    negative = true;
  }
  if (spec.empty() || spec == "all") spec = ".";
  try {
    const std::regex re(spec, std::regex::extended);
    long n = 0;
    for (const auto& name : names) n += std::regex_search(name, re) != negative;
    return n;
  } catch (const std::regex_error&) {
    return -1;
  }
}

class progress_reporter : public benchmark::ConsoleReporter {
 public:
  progress_reporter(long total, OutputOptions options) : ConsoleReporter(options), total_(total) {
    const std::string t = total_ < 0 ? std::string("?") : std::to_string(total_);
    prefix_width_ = 2 * t.size() + 4;  // "[" done "/" total "] "
  }

  bool ReportContext(const Context& context) override {
    const bool ok = ConsoleReporter::ReportContext(context);
    name_field_width_ += prefix_width_;
    return ok;
  }

 protected:
  void PrintRunData(const Run& run) override {
    const std::string name = run.run_name.str();
    if (name != last_) {
      last_ = name;
      ++done_;
    }
    const std::string t = total_ < 0 ? std::string("?") : std::to_string(total_);
    char prefix[64];
    std::snprintf(prefix, sizeof prefix, "[%*ld/%s] ", static_cast<int>(t.size()), done_, t.c_str());
    Run shown = run;
    shown.run_name.function_name = prefix + shown.run_name.function_name;
    ConsoleReporter::PrintRunData(shown);
  }

 private:
  long total_;
  long done_ = 0;
  std::size_t prefix_width_ = 0;
  std::string last_;
};

}  // namespace dsconv_bench
