#pragma once
// The body of every dsconv_bench benchmark, layer cases (cases.hpp) and block cases
// (block_cases.hpp) alike. For a case it allocates and fills the rotated
// buffer sets, prepares the implementation (a GPU baseline must first agree with dsconv on
// the same data), warms up, and then times passes of launches with device events (CPU wall time
// on the host platform), each launch on the next buffer set. Google Benchmark gets the time
// per launch as manual time; the counters are the minimum bytes and FLOPs, the achieved GB/s
// and GFLOP/s, the percentage of the device's measured copy bandwidth (GPU), and on the host
// platform dsconv's global-memory traffic (sectors, sectors per request, traffic / minimum).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <benchmark/benchmark.h>

#include <dsconv/dsconv.hpp>

#include "../timing_gpu.hpp"
#include "../timing_host.hpp"
#include "block_buffers.hpp"
#include "block_cases.hpp"
#include "block_impl.hpp"
#include "buffer_sets.hpp"
#include "cases.hpp"
#include "device_facts.hpp"
#include "dsconv_impl.hpp"

namespace dsconv_bench {
namespace run_detail {

// The same data for dsconv and its baseline: one seed for every case.
inline constexpr unsigned long long fill_seed = 20261122;
// Rotated sets together span this many times the L2 size, so a set comes back evicted.
inline constexpr std::size_t l2_multiple = 3;
// A pass of launches between two events lasts about this long (GPU), so that the spin
// before it is amortised over many launches of a short kernel.
inline constexpr double target_pass_seconds = 1e-3;
inline constexpr int max_launches_per_pass = 64;
// Elements of each written tensor compared between a baseline and dsconv.
inline constexpr std::size_t agreement_elements = std::size_t(1) << 22;
#if defined(DSCONV_PLATFORM_HOST)
// The host platform's baseline is the reference, which the tests and the main job already
// check dsconv against; comparing again would double an already slow run.
inline constexpr bool check_baselines = false;
#else
inline constexpr bool check_baselines = true;
#endif

// What differs between the layer and the block cases: their buffer sets, one set's tensors,
// and dsconv's implementation (which a baseline must agree with).
template <class Case, class T>
struct case_traits;
template <class T>
struct case_traits<bench_case, T> {
  using sets = buffer_sets<T>;
  using set = buffer_set<T>;
  using ours = dsconv_impl<T>;
};
template <class T>
struct case_traits<block_case, T> {
  using sets = block_buffer_sets<T>;
  using set = block_buffer_set<T>;
  using ours = dsconv_block_impl<T>;
};

struct traffic_summary {
  double sectors = 0, sectors_per_request = 0, ratio = 0;
};

struct prepared_base {
  virtual ~prepared_base() = default;
};

template <class T, class Impl, class Case>
struct prepared : prepared_base {
  typename case_traits<Case, T>::sets sets;
  Impl impl;
  pass_timer timer;
  std::string error;  // why the case cannot run; empty when it can
  int launches_per_pass = 1;
  double lead_seconds = 0;  // device kept busy this long before each pass, while the host queues it
  int next_set = 0;
  bool has_traffic = false;
  traffic_summary traffic;

  std::string launch_next() { return impl.run(sets[next_set++ % sets.count()]); }
};

// Relative difference (L2 norm over the tensor's norm) allowed between a baseline and dsconv on
// a tensor that a forward pass writes: the rounding of the stored result in T, with room for
// the two sides' different orders of summation (and, in a block, of its intermediates).
template <class T>
double forward_tolerance() {
  if (std::is_same<T, dsconv::half>::value) return 1e-2;
  if (std::is_same<T, dsconv::bfloat16>::value) return 5e-2;
  return 1e-3;
}
template <class T>
double agreement_tolerance(const block_case&) {
  return forward_tolerance<T>();
}

// The same for a tensor that `c`'s pass writes.
template <class T>
double agreement_tolerance(const bench_case& c) {
  const double tolerance = forward_tolerance<T>();
  if (c.pass != layer_pass::backward_weight) return tolerance;
  // Each weight (and bias) gradient element sums a product for every output pixel of every
  // image: K = batch x out_h x out_w terms (1.6 million at batch 128 on 112x112), where the
  // forward's sums have at most a few thousand. Both sides add the same products of the same
  // stored inputs in fp32, in different orders (blocks, split-K, the workspace's fixed-order
  // sum); with these random inputs of either sign the order's rounding error is a random walk
  // of about 2^-24 x sqrt(K) of the result's norm (8e-5 at the largest K). Four times that is
  // added to the forward's bound, so that no reduction fails for its length alone, while a
  // baseline that accumulated a long reduction in half or bfloat16 (an error of 2^-11 or 2^-8 x
  // sqrt(K)) still fails.
  const tensor_sizes s = c.sizes();
  const double k = static_cast<double>(s.output) / static_cast<double>(s.bias);  // outputs per channel
  return tolerance + 4.0 * std::ldexp(1.0, -24) * std::sqrt(k);
}

inline std::string synchronized(std::string e) {
  if (e.empty() && dsconv::synchronize() != dsconv::status::success) e = dsconv::last_error_detail();
  return e;
}

template <class T>
std::string download_prefix(const T* device, std::size_t count, std::vector<float>& out) {
  std::vector<T> host(count);
  if (dsconv::platform::copy_to_host(host.data(), device, count * sizeof(T)) != dsconv::status::success)
    return dsconv::last_error_detail();
  out.resize(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = dsconv::to_float(host[i]);
  return {};
}

template <class T>
struct written_tensor {
  const T* data;
  std::size_t count;
  const char* what;
};

// The tensors that `c`'s pass writes in set `b`: the output, the input (grad_input), or the
// weight and bias (grad_weight, grad_bias).
template <class T>
std::vector<written_tensor<T>> written_tensors(const bench_case& c, const buffer_set<T>& b) {
  const tensor_sizes s = c.sizes();
  switch (c.pass) {
    case layer_pass::forward: return {{b.output, s.output, "output"}};
    case layer_pass::backward_data: return {{b.input, s.input, "input gradient"}};
    case layer_pass::backward_weight:
      return {{b.weight, s.weight, "weight gradient"}, {b.bias, s.bias, "bias gradient"}};
  }
  return {};
}

// The block writes its output.
template <class T>
std::vector<written_tensor<T>> written_tensors(const block_case& c, const block_buffer_set<T>& b) {
  return {{b.output, c.tensor_sizes().back(), "output"}};
}

// A baseline whose result differs from dsconv's on the same data is measuring something else
// (a wrong descriptor, say): it is reported as an error rather than timed. Each tensor that
// the pass writes is compared (at most its first agreement_elements).
template <class T, class Impl, class Case>
std::string check_agreement(const Case& c, const typename case_traits<Case, T>::set& b, const Impl& impl) {
  const std::vector<written_tensor<T>> written = written_tensors(c, b);
  typename case_traits<Case, T>::ours ours;
  std::string e = ours.prepare(c, b);
  if (e.empty()) e = synchronized(ours.run(b));
  std::vector<std::vector<float>> want(written.size()), got(written.size());
  for (std::size_t t = 0; t < written.size() && e.empty(); ++t)
    e = download_prefix(written[t].data, std::min(written[t].count, agreement_elements), want[t]);
  if (e.empty()) e = synchronized(impl.run(b));
  for (std::size_t t = 0; t < written.size() && e.empty(); ++t)
    e = download_prefix(written[t].data, std::min(written[t].count, agreement_elements), got[t]);
  if (!e.empty()) return e;
  for (std::size_t t = 0; t < written.size(); ++t) {
    double d2 = 0, r2 = 0;
    for (std::size_t i = 0; i < want[t].size(); ++i) {
      d2 += double(got[t][i] - want[t][i]) * double(got[t][i] - want[t][i]);
      r2 += double(want[t][i]) * double(want[t][i]);
    }
    const double rel = r2 > 0 ? std::sqrt(d2 / r2) : std::sqrt(d2);
    if (!(rel <= agreement_tolerance<T>(c)))
      return std::string(Impl::name) + " and dsconv disagree on the same data (" + written[t].what +
             "): relative difference " + std::to_string(rel);
  }
  return {};
}

// Launches per pass and the lead that lets the host queue a whole pass before it starts,
// from one launch's device time and host enqueue time (medians of three).
template <class T, class Impl, class Case>
std::string calibrate(prepared<T, Impl, Case>& p) {
  constexpr double probe_lead = 200e-6;
  std::string e;
  for (int i = 0; i < std::min(3, p.sets.count()) && e.empty(); ++i) e = p.launch_next();
  e = synchronized(e);
  // The spin kernel's clock rate again, now that the warm-up has raised the clocks: the lead
  // is a number of its cycles.
  if (e.empty()) e = p.timer.init();
  double device[3] = {}, enqueue[3] = {};
  for (int i = 0; i < 3 && e.empty(); ++i) {
    e = p.timer.time(
        1, probe_lead, [&](int) { return p.launch_next(); }, device[i]);
    const auto t0 = std::chrono::steady_clock::now();
    if (e.empty()) e = p.launch_next();
    enqueue[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    e = synchronized(e);
  }
  if (!e.empty()) return e;
  std::sort(device, device + 3);
  std::sort(enqueue, enqueue + 3);
  const double per_launch = std::max(device[1], 1e-7);
  p.launches_per_pass =
      std::clamp(static_cast<int>(std::ceil(target_pass_seconds / per_launch)), 1, max_launches_per_pass);
  p.lead_seconds = 1.5 * p.launches_per_pass * enqueue[1] + 20e-6;
  return {};
}

// dsconv's global-memory traffic in one launch, counted by the host platform.
template <class T, class Impl, class Case>
std::string count_traffic(prepared<T, Impl, Case>& p, const Case& c) {
#if defined(DSCONV_PLATFORM_HOST)
  dsconv::host::traffic_recorder recorder;
  const std::string e = p.launch_next();
  if (!e.empty()) return e;
  const dsconv::host::traffic_counters t = recorder.total();
  const auto requests = static_cast<double>(t.load_requests + t.store_requests);
  p.traffic.sectors = static_cast<double>(t.sectors());
  p.traffic.sectors_per_request = requests > 0 ? p.traffic.sectors / requests : 0.0;
  p.traffic.ratio = p.traffic.sectors * 32.0 / c.minimum_bytes();
  p.has_traffic = true;
#else
  (void)p;
  (void)c;
#endif
  return {};
}

template <class T, class Impl, class Case>
std::unique_ptr<prepared<T, Impl, Case>> prepare_case(const Case& c, const device_facts& dev) {
  using ours = typename case_traits<Case, T>::ours;
  auto p = std::make_unique<prepared<T, Impl, Case>>();
  const std::size_t set_bytes = case_traits<Case, T>::sets::set_bytes(c);
  const std::size_t rotation = dev.l2_bytes * l2_multiple;
  const int sets =
      dev.l2_bytes ? static_cast<int>(std::max<std::size_t>(2, (rotation + set_bytes - 1) / set_bytes)) : 1;
  if (p->sets.allocate(c, sets, fill_seed) != dsconv::status::success) {
    p->error = std::string("buffers: ") + dsconv::last_error_detail();
    return p;
  }
  std::string e = p->timer.init();
  if (e.empty()) e = p->impl.prepare(c, p->sets[0]);
  if (e.empty()) e = synchronized(std::string());
  if (e.empty() && check_baselines && !std::is_same<Impl, ours>::value)
    e = check_agreement<T>(c, p->sets[0], p->impl);
  // The host platform runs each launch to completion on the CPU: nothing to warm up or queue.
  if (e.empty() && dev.l2_bytes) e = calibrate(*p);
  if (e.empty() && std::is_same<Impl, ours>::value) e = count_traffic(*p, c);
  p->error = e;
  return p;
}

// The case prepared last, kept while Google Benchmark calls the same benchmark again (to
// size its iteration count, and once per repetition); freed when the next case starts.
inline std::unique_ptr<prepared_base>& current_case() {
  static std::unique_ptr<prepared_base> p;
  return p;
}
inline int& current_case_id() {
  static int id = -1;
  return id;
}

}  // namespace run_detail

template <class T, class Impl, class Case>
void run_case(benchmark::State& state, int id, const Case& c, const device_facts& dev) {
  using namespace run_detail;
  if (current_case_id() != id) {
    current_case().reset();
    current_case_id() = -1;
    current_case() = prepare_case<T, Impl>(c, dev);
    current_case_id() = id;
  }
  auto& p = static_cast<prepared<T, Impl, Case>&>(*current_case());
  if (!p.error.empty()) {
    state.SkipWithError(p.error.c_str());
    return;
  }
  double total = 0;
  while (state.KeepRunningBatch(p.launches_per_pass)) {
    double seconds = 0;
    const std::string e = p.timer.time(
        p.launches_per_pass, p.lead_seconds, [&](int) { return p.launch_next(); }, seconds);
    if (!e.empty()) {
      state.SkipWithError(e.c_str());
      continue;
    }
    state.SetIterationTime(seconds);
    total += seconds;
  }
  if (state.error_occurred() || total <= 0 || state.iterations() == 0) return;
  const double per_launch = total / static_cast<double>(state.iterations());
  const double bytes = c.minimum_bytes(), flops = c.minimum_flops();
  state.SetLabel(p.impl.label());
  state.counters["bytes"] = bytes;
  state.counters["flops"] = flops;
  state.counters["GB/s"] = bytes / per_launch * 1e-9;
  state.counters["GFLOP/s"] = flops / per_launch * 1e-9;
  if (dev.copy_gbps > 0) state.counters["bw_pct"] = 100.0 * bytes / per_launch * 1e-9 / dev.copy_gbps;
  if (p.has_traffic) {
    state.counters["sectors"] = p.traffic.sectors;
    state.counters["sectors/req"] = p.traffic.sectors_per_request;
    state.counters["traffic/min"] = p.traffic.ratio;
  }
}

}  // namespace dsconv_bench
