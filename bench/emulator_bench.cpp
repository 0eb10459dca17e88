// Benchmarks of the host platform itself: what the CPU emulation of a GPU costs, not what
// dsconv's kernels cost. Each emulated thread is a fiber; a block barrier or a warp shuffle
// switches out of every fiber of the block and back, so these numbers bound how fast any
// kernel can run on the host platform.
//
//   block_barrier     ns per emulated thread per __syncthreads (target: <= 50 ns)
//   warp_shfl_xor     ns per emulated thread per shfl_xor, warp 32 and 64
//   empty_launch      launch overhead of an empty kernel
//   copy_traffic      ns per load/store of a coalesced copy, with and without a
//                     traffic_recorder alive
//
// Benchmarks that subtract a baseline launch time both launches in every iteration and
// report the launch under test as the (manual) iteration time, so the baseline is measured
// in the same run, under the same conditions, and never counted in the time column.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <dsconv/memory.hpp>
#include <dsconv/platform/platform.hpp>

namespace pf = dsconv::platform;

namespace {

// ---------------------------------------------------------------------------------------
// Kernels

// R block barriers with a multiply-add between them.
DSCONV_KERNEL void barrier_kernel(float* out, int rounds) {
  const unsigned t = pf::thread_idx().x;
  float acc = static_cast<float>(t);
  for (int r = 0; r < rounds; ++r) {
    acc = acc * 0.5f + 1.0f;
    pf::sync_threads();
  }
  out[pf::block_idx().x * pf::block_dim().x + t] = acc;
}

// R butterfly shuffles over the lanes of the warp (masks 1, 2, 4, ... warp/2, repeated).
DSCONV_KERNEL void shfl_xor_kernel(float* out, int rounds, int log2_warp) {
  const unsigned t = pf::thread_idx().x;
  float v = static_cast<float>(t & 7u);
  for (int r = 0; r < rounds; ++r) v = 0.5f * (v + pf::shfl_xor(v, 1 << (r % log2_warp)));
  out[pf::block_idx().x * pf::block_dim().x + t] = v;
}

DSCONV_KERNEL void empty_kernel() {}

// Coalesced grid-stride copy: on iteration k, the lanes of a warp touch consecutive floats.
DSCONV_KERNEL void copy_kernel(const float* in, float* out, int per_thread) {
  const unsigned stride = pf::grid_dim().x * pf::block_dim().x;
  const unsigned first = pf::block_idx().x * pf::block_dim().x + pf::thread_idx().x;
  for (int k = 0; k < per_thread; ++k) {
    const unsigned i = first + static_cast<unsigned>(k) * stride;
    pf::store(out + i, pf::load(in + i));
  }
}

// ---------------------------------------------------------------------------------------
// Helpers

using seconds_clock = std::chrono::steady_clock;

int default_workers() {
  static const int n = dsconv::host::worker_count();  // read before any benchmark changes it
  return n;
}

// Sets the worker count / warp width for one benchmark and restores it afterwards.
class worker_scope {
 public:
  explicit worker_scope(int workers) : saved_(dsconv::host::worker_count()) { dsconv::host::set_worker_count(workers); }
  ~worker_scope() { dsconv::host::set_worker_count(saved_); }
  worker_scope(const worker_scope&) = delete;
  worker_scope& operator=(const worker_scope&) = delete;

 private:
  int saved_;
};

class warp_scope {
 public:
  explicit warp_scope(int width) : saved_(dsconv::host::warp_size()) { dsconv::host::set_warp_size(width); }
  ~warp_scope() { dsconv::host::set_warp_size(saved_); }
  warp_scope(const warp_scope&) = delete;
  warp_scope& operator=(const warp_scope&) = delete;

 private:
  int saved_;
};

// Device memory (ordinary memory here, but 256-byte aligned like a GPU allocation, which the
// traffic counters' sector arithmetic depends on).
template <class T>
bool allocate(benchmark::State& state, dsconv::device_buffer<T>& buffer, std::size_t count) {
  if (buffer.allocate(count) == dsconv::status::success) return true;
  state.SkipWithError(dsconv::last_error_detail());
  return false;
}

pf::launch_config config(unsigned blocks, unsigned threads, const char* name) {
  pf::launch_config cfg;
  cfg.grid = {blocks};
  cfg.block = {threads};
  cfg.name = name;
  return cfg;
}

// Launches and returns the wall time of the launch in seconds, or a negative value after
// reporting the failure to the benchmark.
template <class... Params, class... Args>
double timed_launch(benchmark::State& state, void (*kernel)(Params...), const pf::launch_config& cfg, Args... args) {
  const auto start = seconds_clock::now();
  const dsconv::status s = pf::launch(kernel, cfg, args...);
  const std::chrono::duration<double> elapsed = seconds_clock::now() - start;
  if (s != dsconv::status::success) {
    const std::string why = std::string(cfg.name) + ": " + dsconv::to_string(s) + " (" + dsconv::last_error_detail() + ")";
    state.SkipWithError(why.c_str());
    return -1.0;
  }
  return elapsed.count();
}

// ---------------------------------------------------------------------------------------
// 1. Block barriers: 1,000,192 threads (3907 blocks of 256), R barriers each.
//    ns_per_thread_barrier = (t(R barriers) - t(0 barriers)) / (threads * R), both launches
//    timed in every iteration; the time column is the R-barrier launch.

void BM_block_barrier(benchmark::State& state) {
  const int rounds = static_cast<int>(state.range(0));
  const worker_scope workers(static_cast<int>(state.range(1)));
  constexpr unsigned blocks = 3907, block = 256;
  constexpr double threads = double(blocks) * block;
  dsconv::device_buffer<float> out;
  if (!allocate(state, out, static_cast<std::size_t>(blocks) * block)) return;
  const pf::launch_config cfg = config(blocks, block, "barrier_kernel");

  // Warm-up: creates the worker pool and every worker's fibers (stacks are mapped once).
  if (timed_launch(state, barrier_kernel, cfg, out.data(), rounds) < 0) return;
  if (timed_launch(state, barrier_kernel, cfg, out.data(), 0) < 0) return;

  double with_barriers = 0, without = 0;
  for (auto _ : state) {
    const double t = timed_launch(state, barrier_kernel, cfg, out.data(), rounds);
    const double t0 = timed_launch(state, barrier_kernel, cfg, out.data(), 0);
    if (t < 0 || t0 < 0) break;
    state.SetIterationTime(t);
    with_barriers += t;
    without += t0;
  }
  if (state.error_occurred()) return;
  benchmark::DoNotOptimize(out.data());
  const double n = static_cast<double>(state.iterations());
  state.counters["ns_per_thread_barrier"] = (with_barriers - without) / n * 1e9 / (threads * rounds);
  state.counters["zero_barrier_ms"] = without / n * 1e3;
  state.counters["ns_per_thread_0bar"] = without / n * 1e9 / threads;
}

// ---------------------------------------------------------------------------------------
// 2. Warp shuffles: 65,536 threads (256 blocks of 256), S shfl_xor each, one worker.
//    ns_per_thread_shfl = (t(S shuffles) - t(0 shuffles)) / (threads * S).

void BM_warp_shfl_xor(benchmark::State& state) {
  const int width = static_cast<int>(state.range(0));
  const int rounds = static_cast<int>(state.range(1));
  const worker_scope workers(static_cast<int>(state.range(2)));
  const warp_scope warp(width);
  int log2_warp = 0;
  while ((1 << log2_warp) < width) ++log2_warp;
  constexpr unsigned blocks = 256, block = 256;
  constexpr double threads = double(blocks) * block;
  dsconv::device_buffer<float> out;
  if (!allocate(state, out, static_cast<std::size_t>(blocks) * block)) return;
  const pf::launch_config cfg = config(blocks, block, "shfl_xor_kernel");

  if (timed_launch(state, shfl_xor_kernel, cfg, out.data(), rounds, log2_warp) < 0) return;
  double with_shfl = 0, without = 0;
  for (auto _ : state) {
    const double t = timed_launch(state, shfl_xor_kernel, cfg, out.data(), rounds, log2_warp);
    const double t0 = timed_launch(state, shfl_xor_kernel, cfg, out.data(), 0, log2_warp);
    if (t < 0 || t0 < 0) break;
    state.SetIterationTime(t);
    with_shfl += t;
    without += t0;
  }
  if (state.error_occurred()) return;
  benchmark::DoNotOptimize(out.data());
  const double n = static_cast<double>(state.iterations());
  state.counters["ns_per_thread_shfl"] = (with_shfl - without) / n * 1e9 / (threads * rounds);
}

// ---------------------------------------------------------------------------------------
// 3. Launch overhead of an empty kernel: one block of `threads` threads; plain wall time.

void BM_empty_launch(benchmark::State& state) {
  const unsigned threads = static_cast<unsigned>(state.range(0));
  const worker_scope workers(static_cast<int>(state.range(1)));
  const pf::launch_config cfg = config(1, threads, "empty_kernel");
  if (pf::launch(empty_kernel, cfg) != dsconv::status::success) {
    state.SkipWithError(dsconv::last_error_detail());
    return;
  }
  for (auto _ : state) {
    if (pf::launch(empty_kernel, cfg) != dsconv::status::success) {
      state.SkipWithError(dsconv::last_error_detail());
      break;
    }
  }
}

// ---------------------------------------------------------------------------------------
// 4. Traffic counting: a coalesced copy of 262,144 floats (64 blocks of 256 threads, 16
//    elements each), one worker. ns_per_access = launch time / (loads + stores). With a
//    recorder alive the same launch is also timed without one in every iteration, and
//    recording_ns_per_access is the difference per access.

void BM_copy_traffic(benchmark::State& state) {
  const bool recording = state.range(0) != 0;
  const worker_scope workers(1);
  constexpr unsigned blocks = 64, block = 256;
  constexpr int per_thread = 16;
  constexpr std::size_t elements = std::size_t(blocks) * block * per_thread;
  constexpr double accesses = 2.0 * elements;
  std::vector<float> host_in(elements), host_out;
  for (std::size_t i = 0; i < elements; ++i) host_in[i] = static_cast<float>(i);
  dsconv::device_buffer<float> in, out;
  if (in.upload(host_in) != dsconv::status::success || !allocate(state, out, elements)) {
    state.SkipWithError(dsconv::last_error_detail());
    return;
  }
  const pf::launch_config cfg = config(blocks, block, "copy_kernel");

  if (timed_launch(state, copy_kernel, cfg, in.data(), out.data(), per_thread) < 0) return;
  double measured = 0, plain = 0;
  dsconv::host::traffic_counters traffic;
  for (auto _ : state) {
    double t = 0;
    if (recording) {
      // Counting is on exactly while a recorder is alive.
      const dsconv::host::traffic_recorder recorder;
      t = timed_launch(state, copy_kernel, cfg, in.data(), out.data(), per_thread);
      traffic += recorder.total();
    } else {
      t = timed_launch(state, copy_kernel, cfg, in.data(), out.data(), per_thread);
    }
    const double t0 = recording ? timed_launch(state, copy_kernel, cfg, in.data(), out.data(), per_thread) : t;
    if (t < 0 || t0 < 0) break;
    state.SetIterationTime(t);
    measured += t;
    plain += t0;
  }
  if (state.error_occurred()) return;
  if (out.download(host_out) != dsconv::status::success || host_out != host_in) {
    state.SkipWithError("copy_kernel copied wrong values");
    return;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["ns_per_access"] = measured / n * 1e9 / accesses;
  if (recording) {
    state.counters["recording_ns_per_access"] = (measured - plain) / n * 1e9 / accesses;
    state.counters["load_sectors_per_request"] = traffic.load_sectors_per_request();
    state.counters["store_sectors_per_request"] = traffic.store_sectors_per_request();
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  const int all = default_workers();
  std::vector<std::int64_t> worker_counts{1};
  if (all != 1) worker_counts.push_back(all);

  benchmark::AddCustomContext("dsconv_context_switch", dsconv::host::context_switch_kind());
  benchmark::AddCustomContext("dsconv_default_workers", std::to_string(all));
  benchmark::AddCustomContext("dsconv_default_warp_size", std::to_string(dsconv::host::warp_size()));
  benchmark::AddCustomContext("dsconv_fiber_stack_kib",
                              std::to_string(pf::host_detail::host_settings().stack_kib.load()));

  benchmark::RegisterBenchmark("block_barrier/1M_threads", BM_block_barrier)
      ->ArgNames({"barriers", "workers"})
      ->ArgsProduct({{16, 64}, worker_counts})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("warp_shfl_xor/65536_threads", BM_warp_shfl_xor)
      ->ArgNames({"warp", "shuffles", "workers"})
      ->ArgsProduct({{32, 64}, {64}, {1}})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("empty_launch/1_block", BM_empty_launch)
      ->ArgNames({"threads", "workers"})
      ->ArgsProduct({{256, 1}, worker_counts})
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("copy_traffic/262144_floats", BM_copy_traffic)
      ->ArgNames({"recorder"})
      ->Arg(0)
      ->Arg(1)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
