// dsconv_bench: dsconv against the platform's baseline (cuDNN on CUDA, MIOpen on HIP where
// installed, the CPU reference on the host platform) on every unique depthwise and 1x1 shape
// of MobileNetV2 and EfficientNet-B0, at batch 1, 8, 16, 32, 64 and 128, in float, half and
// bfloat16, NCHW and NHWC, forward and backward; then every distinct inverted-residual block of
// both networks (forward), dsconv's fused and unfused variants against the baseline running
// the block's layers in sequence (kernel_bench/block_cases.hpp). Layer benchmark names read
//   op/model_input_index:shape/b<batch>/type/layout/implementation
// e.g. dw/mobilenet_v2_224_3:c96_h112_k3_s2/b8/float/nchw/dsconv, so --benchmark_filter
// selects any slice. The op is dw or pw for the forward pass (with the layer's activation and
// residual), and for the gradients of the layer without activation or residual (the baselines'
// backward calls fuse none): dwbd and pwbd, the data gradient (grad_input from grad_output and
// the weight), dwbw and pwbw, the weight gradient with the bias gradient (from the input and
// grad_output); the baselines are cuDNN's / MIOpen's backward data and backward filter (weights)
// calls with their backward bias call, and the reference's backward functions. Block benchmark
// names read block/model_input_block:ir_<shape>/b<batch>/type/layout/implementation, the
// implementation dsconv_fused, dsconv_unfused or the baseline's name. Times are per
// launch, from device events (CPU wall time of the emulated run on the host platform); see
// kernel_bench/run_case.hpp for the method and the counters.
//
// Defaults that Google Benchmark flags given on the command line override:
//   --benchmark_min_time=0.05 (every platform), and on a GPU --benchmark_repetitions=5 with
//   --benchmark_display_aggregates_only=true (the JSON output keeps every repetition; the
//   report uses the median); --benchmark_filter=.* (or on the host platform, for a run without
//   selection options, its default slice: kernel_bench/selection.hpp).
// dsconv_bench's own options (kernel_bench/selection.hpp) narrow what is registered:
//   --model, --input, --kind (all|dw|pw|block), --pass (forward|backward|all, default all),
//   --batch, --type, --layout, --all; --variant forces a dsconv variant in every layer case (a
//   variant sweep); --legacy adds cuDNN's legacy API as an extra baseline (CUDA);
//   --cudnn_configs N sets how many engine configurations of cuDNN's graph API are timed per
//   graph (default 10). --case_table=FILE writes the selected cases as JSON for other timers
//   (bench/torch_baseline.py) and exits without running anything (kernel_bench/case_table.hpp).
#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "baselines/baseline.hpp"
#include "kernel_bench/block_cases.hpp"
#include "kernel_bench/block_impl.hpp"
#include "kernel_bench/case_table.hpp"
#include "kernel_bench/cases.hpp"
#include "kernel_bench/dsconv_impl.hpp"
#include "kernel_bench/progress_reporter.hpp"
#include "kernel_bench/run_case.hpp"
#include "kernel_bench/selection.hpp"
#include "support/options.hpp"

namespace {

using dsconv_bench::bench_case;
using dsconv_bench::device_facts;

#if defined(DSCONV_PLATFORM_CUDA)
constexpr const char* platform_name = "cuda";
constexpr bool on_gpu = true;
#elif defined(DSCONV_PLATFORM_HIP)
constexpr const char* platform_name = "hip";
constexpr bool on_gpu = true;
#else
constexpr const char* platform_name = "host";
constexpr bool on_gpu = false;
#endif

template <template <class> class Impl, class Case>
void run_typed(benchmark::State& state, int id, const Case& c, const device_facts& dev) {
  switch (c.type) {
    case dsconv_bench::element_type::f32: return dsconv_bench::run_case<float, Impl<float>>(state, id, c, dev);
    case dsconv_bench::element_type::f16:
      return dsconv_bench::run_case<dsconv::half, Impl<dsconv::half>>(state, id, c, dev);
    case dsconv_bench::element_type::bf16:
      return dsconv_bench::run_case<dsconv::bfloat16, Impl<dsconv::bfloat16>>(state, id, c, dev);
  }
}

bool starts_with(const char* s, const char* prefix) { return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }

// The value of the last --name=value among `args`, or `fallback`.
std::string flag_value(const std::vector<char*>& args, const char* name, const std::string& fallback) {
  const std::string prefix = std::string("--") + name + "=";
  std::string value = fallback;
  for (const char* a : args)
    if (starts_with(a, prefix.c_str())) value = a + prefix.size();
  return value;
}

bool flag_set(const std::vector<char*>& args, const char* name) {
  const std::string bare = std::string("--") + name;
  const std::string v = flag_value(args, name, "");
  for (const char* a : args)
    if (bare == a) return true;
  return !v.empty() && v != "false" && v != "0";
}

}  // namespace

int main(int argc, char** argv) try {
  const dsconv_bench::options opt(argc, argv);
  const dsconv_bench::selection sel = dsconv_bench::parse_selection(opt);
  dsconv_bench::forced_variant() = opt.get("variant", "DSCONV_VARIANT", "");
  std::vector<char*> user(argv + 1, argv + argc);
  const std::string case_table = opt.get("case_table", nullptr, "");
  const bool listing = flag_set(user, "benchmark_list_tests") || !case_table.empty();
#if defined(DSCONV_PLATFORM_CUDA)
  dsconv_bench::cudnn_graph::config_limit() = std::stoi(opt.get("cudnn_configs", "DSCONV_CUDNN_CONFIGS", "10"));
#endif

  // Defaults go first so that the same flags given by the user, parsed later, win.
  std::vector<std::string> defaults = {std::string("--benchmark_min_time=0.05") + DSCONV_BENCH_SECONDS_SUFFIX};
  if (on_gpu) {
    defaults.push_back("--benchmark_repetitions=5");
    defaults.push_back("--benchmark_display_aggregates_only=true");
  }
  const bool host_default_slice =
      !on_gpu && !sel.narrowed && !sel.all && !listing && flag_value(user, "benchmark_filter", "").empty();
  if (host_default_slice)
    defaults.push_back(std::string("--benchmark_filter=") + dsconv_bench::host_default_filter);
  else if (flag_value(user, "benchmark_filter", "").empty())
    // Google Benchmark 1.7 grows its list of selected benchmarks by one family at a time when
    // the filter is ".", its default: quadratic in the benchmarks selected (40 s to list the
    // whole grid). ".*" selects the same names in linear time.
    defaults.push_back("--benchmark_filter=.*");
  std::vector<char*> args = {argv[0]};
  for (auto& d : defaults) args.push_back(d.data());
  args.insert(args.end(), user.begin(), user.end());
  const std::vector<char*> all_args = args;
  args.push_back(nullptr);
  int count = static_cast<int>(args.size()) - 1;
  benchmark::Initialize(&count, args.data());
  // What Google Benchmark left over must be dsconv_bench's own options and their values.
  for (int i = 1; i < count; ++i) {
    if (!starts_with(args[i], "--")) continue;
    const std::string name = std::string(args[i] + 2).substr(0, std::string(args[i] + 2).find('='));
    bool known = false;
    for (const char* o : dsconv_bench::selection_options) known = known || name == o;
    if (!known) {
      std::fprintf(stderr, "dsconv_bench: unknown option %s\n", args[i]);
      return 2;
    }
  }

  if (host_default_slice)
    std::fprintf(stderr, "host platform: running the default slice %s (--all or --benchmark_filter for more)\n",
                 dsconv_bench::host_default_filter);

  static device_facts facts;
  if (!listing) {
    const std::string e = dsconv_bench::measure_device(facts);
    if (!e.empty()) {
      std::fprintf(stderr, "dsconv_bench: no usable device: %s\n", e.c_str());
      return 77;
    }
    benchmark::AddCustomContext("dsconv_platform", platform_name);
    benchmark::AddCustomContext("dsconv_device", facts.description);
    benchmark::AddCustomContext("dsconv_baseline", dsconv_bench::baseline_description());
    if (facts.l2_bytes) benchmark::AddCustomContext("dsconv_l2_bytes", std::to_string(facts.l2_bytes));
    if (facts.copy_gbps > 0) benchmark::AddCustomContext("dsconv_copy_bandwidth_GBps", std::to_string(facts.copy_gbps));
  }

  static std::vector<bench_case> cases;
  const bool extra = sel.legacy && dsconv_bench::has_extra_baseline;
  for (const auto& c : dsconv_bench::all_cases(sel.input, dsconv_bench::has_baseline, extra))
    if (sel.matches(c)) cases.push_back(c);
  static std::vector<dsconv_bench::block_case> blocks;
  if (dsconv_bench::forced_variant().empty())  // the layer variants are no block's
    for (const auto& c : dsconv_bench::all_block_cases(sel.input, dsconv_bench::has_baseline, extra))
      if (sel.matches(c)) blocks.push_back(c);
  if (cases.empty() && blocks.empty()) throw std::runtime_error("no case matches the selection");
  if (!case_table.empty()) {
    const std::string e = dsconv_bench::write_case_table(case_table, cases, blocks);
    if (!e.empty()) throw std::runtime_error(e);
    return 0;
  }
  std::vector<std::string> names;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const bench_case& c = cases[i];
    const int id = static_cast<int>(i);
    names.push_back(c.name(dsconv_bench::baseline_impl<float>::name, dsconv_bench::extra_baseline_impl<float>::name));
    benchmark::RegisterBenchmark(names.back().c_str(),
                                 [id, &c](benchmark::State& state) {
                                   using dsconv_bench::implementation;
                                   if (c.impl == implementation::dsconv)
                                     run_typed<dsconv_bench::dsconv_impl>(state, id, c, facts);
                                   else if (c.impl == implementation::baseline && c.forward())
                                     run_typed<dsconv_bench::baseline_impl>(state, id, c, facts);
                                   else if (c.impl == implementation::baseline)
                                     run_typed<dsconv_bench::backward_baseline_impl>(state, id, c, facts);
                                   else if (c.forward())
                                     run_typed<dsconv_bench::extra_baseline_impl>(state, id, c, facts);
                                   else
                                     run_typed<dsconv_bench::extra_backward_baseline_impl>(state, id, c, facts);
                                 })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    names.back() += "/manual_time";  // the name that the filter sees
  }
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const dsconv_bench::block_case& c = blocks[i];
    const int id = static_cast<int>(cases.size() + i);
    names.push_back(
        c.name(dsconv_bench::block_baseline_impl<float>::name, dsconv_bench::extra_block_baseline_impl<float>::name));
    benchmark::RegisterBenchmark(names.back().c_str(),
                                 [id, &c](benchmark::State& state) {
                                   if (c.impl == dsconv_bench::block_implementation::baseline)
                                     run_typed<dsconv_bench::block_baseline_impl>(state, id, c, facts);
                                   else if (c.impl == dsconv_bench::block_implementation::extra_baseline)
                                     run_typed<dsconv_bench::extra_block_baseline_impl>(state, id, c, facts);
                                   else
                                     run_typed<dsconv_bench::dsconv_block_impl>(state, id, c, facts);
                                 })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    names.back() += "/manual_time";
  }

  const std::string format = flag_value(all_args, "benchmark_format", "console");
  if (listing || format != "console") {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    dsconv_bench::progress_reporter reporter(
        dsconv_bench::count_selected(names, flag_value(all_args, "benchmark_filter", "")),
        isatty(STDOUT_FILENO) && flag_value(all_args, "benchmark_color", "auto") != "false"
            ? benchmark::ConsoleReporter::OO_Color
            : benchmark::ConsoleReporter::OO_None);
    benchmark::RunSpecifiedBenchmarks(&reporter);
  }
  // Device buffers go back while the runtime is still up, not in static destruction.
  dsconv_bench::run_detail::current_case().reset();
  benchmark::Shutdown();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "dsconv_bench: %s\n", e.what());
  return 2;
}
