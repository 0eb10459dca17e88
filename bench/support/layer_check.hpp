#pragma once
// Runs one network layer through dsconv on device buffers and checks it against the
// double-precision reference: the work of the main job, per layer.

#include <chrono>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "layers.hpp"

namespace dsconv_bench {

struct layer_result {
  std::string variant;
  dsconv::status status = dsconv::status::success;
  std::string detail;              // last_error_detail() when status is not success
  double relative_error = 0;       // ||out - ref|| / ||ref||
  double max_abs_error = 0;
  std::size_t bad_elements = 0;    // non-finite or never written
  double wall_ms = 0;              // host wall time of the call (includes emulation on the host)
  long long minimum_bytes = 0;     // every input, weight, bias, residual and output byte once
  long long traffic_bytes = -1;    // host platform: 32 * sectors moved; -1 when not counted
  double load_sectors_per_request = 0;   // host platform: 32-byte sectors per warp load request
  double store_sectors_per_request = 0;  // and per warp store request
  // Host platform: shared-memory bank wavefronts over the conflict-free ideal (1.0 = no bank
  // conflicts), for the kernel's shared loads and stores; 0 where it uses no shared memory.
  double shared_load_conflicts = 0;
  double shared_store_conflicts = 0;
  // The load and store call sites with the most wavefronts over their ideal ("file:line
  // factor"; empty where none has any), and every call site's own counts.
  std::string worst_load_site, worst_store_site;
  struct shared_site {
    std::string name;  // "file:line" (the file without its folders)
    bool store;
    double factor;       // its wavefronts over its ideal
    double excess_share;  // its wavefronts over its ideal, as a share of all the call's shared wavefronts
  };
  std::vector<shared_site> shared_sites;
  // Host platform, kernels with dynamic shared memory only (the depthwise tiled ones; the
  // GEMMs' is static): blocks of the launch that fit one multiprocessor of the emulated device
  // by its shared memory and threads (registers: results/kernel_resources.md), the warps they
  // keep resident against the multiprocessor's maximum, and the grid's blocks per
  // multiprocessor (fewer leave room unused whatever the plan); 0 where no launch uses
  // dynamic shared memory.
  int resident_blocks = 0;
  double occupancy = 0;
  int grid_blocks_per_multiprocessor = 0;
};

template <class T>
std::vector<T> random_values(std::size_t n, std::mt19937& gen) {
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<T> v(n);
  for (auto& x : v) x = T(d(gen));
  return v;
}

namespace detail {
// The error of the outputs (one or more buffers, each against its reference) as one vector.
template <class T>
void finish(layer_result& r, std::initializer_list<const dsconv::device_buffer<T>*> outs,
            std::initializer_list<const std::vector<double>*> refs) {
  double d2 = 0, r2 = 0;
  auto ref = refs.begin();
  for (const dsconv::device_buffer<T>* out : outs) {
    const std::vector<double>& expected = **ref++;
    std::vector<T> got;
    if (out->download(got) != dsconv::status::success) {
      r.status = dsconv::status::platform_error;
      r.detail = dsconv::last_error_detail();
      return;
    }
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double g = dsconv::to_float(got[i]);
      if (!std::isfinite(g)) {
        ++r.bad_elements;
        continue;
      }
      d2 += (g - expected[i]) * (g - expected[i]);
      r2 += expected[i] * expected[i];
      r.max_abs_error = std::max(r.max_abs_error, std::fabs(g - expected[i]));
    }
  }
  r.relative_error = r2 > 0 ? std::sqrt(d2 / r2) : std::sqrt(d2);
}

#if defined(DSCONV_PLATFORM_HOST)
// "file:line" of a shared-memory call site (the file without its folders).
inline std::string site_name(const dsconv::host::site_bank_counters& s) {
  const std::string file = s.site.file ? s.site.file : "?";
  return file.substr(file.find_last_of('/') + 1) + ":" + std::to_string(s.site.line);
}
// "file:line factor" of a call site; empty for none.
inline std::string site_text(const dsconv::host::site_bank_counters* s) {
  if (!s) return "";
  char factor[32];
  std::snprintf(factor, sizeof factor, " %.2f", s->counts.conflict_factor());
  return site_name(*s) + factor;
}
#endif

// Times `call`, and on the host platform records its memory traffic (global sectors, shared
// bank wavefronts).
template <class Call>
dsconv::status run_measured(layer_result& r, bool count_traffic, Call call) {
  (void)count_traffic;
#if defined(DSCONV_PLATFORM_HOST)
  std::unique_ptr<dsconv::host::traffic_recorder> rec;
  if (count_traffic) rec = std::make_unique<dsconv::host::traffic_recorder>();
#endif
  const auto t0 = std::chrono::steady_clock::now();
  dsconv::status s = call();
  if (s == dsconv::status::success) s = dsconv::synchronize();
  r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
#if defined(DSCONV_PLATFORM_HOST)
  if (rec) {
    const auto t = rec->total();
    r.traffic_bytes = static_cast<long long>(t.sectors() * 32);
    r.load_sectors_per_request = t.load_sectors_per_request();
    r.store_sectors_per_request = t.store_sectors_per_request();
    r.shared_load_conflicts = t.shared_loads.conflict_factor();
    r.shared_store_conflicts = t.shared_stores.conflict_factor();
    r.worst_load_site = site_text(t.shared_sites.worst(false));
    r.worst_store_site = site_text(t.shared_sites.worst(true));
    const double wavefronts = static_cast<double>(t.shared_loads.wavefronts + t.shared_stores.wavefronts);
    for (const auto& site : t.shared_sites.sites)
      r.shared_sites.push_back({site_name(site), site.store, site.counts.conflict_factor(),
                                static_cast<double>(site.counts.wavefronts - site.counts.ideal) / wavefronts});
    const dsconv::platform::device_properties dev = dsconv::host::device();
    for (const auto& launch : rec->launches()) {
      if (launch.shared_bytes == 0) continue;
      const long long threads = static_cast<long long>(launch.block.x) * launch.block.y * launch.block.z;
      const long long blocks = static_cast<long long>(launch.grid.x) * launch.grid.y * launch.grid.z;
      long long resident = dev.max_threads_per_multiprocessor / threads;
      const long long by_shared = static_cast<long long>(dev.shared_memory_per_multiprocessor /
                                                         (launch.shared_bytes + dev.shared_memory_reserved_per_block));
      const long long in_grid = (blocks + dev.multiprocessor_count - 1) / dev.multiprocessor_count;
      resident = std::min(resident, by_shared);
      if (r.resident_blocks == 0 || resident < r.resident_blocks) {
        r.resident_blocks = static_cast<int>(resident);
        r.occupancy = static_cast<double>(resident * threads) / dev.max_threads_per_multiprocessor;
        r.grid_blocks_per_multiprocessor = static_cast<int>(in_grid);
      }
    }
  }
#endif
  if (s != dsconv::status::success) r.detail = dsconv::last_error_detail();
  return s;
}
}  // namespace detail

template <class T>
layer_result check_layer(const layer& l, int batch, dsconv::layout lay, bool count_traffic, std::mt19937& gen) {
  layer_result r;
  if (l.depthwise()) {
    const auto p = l.depthwise_params(batch, lay);
    const std::size_t in_n = static_cast<std::size_t>(batch) * p.c * p.h * p.w;
    const std::size_t out_n = static_cast<std::size_t>(batch) * p.out_c() * p.out_h() * p.out_w();
    const auto x = random_values<T>(in_n, gen), w = random_values<T>(p.out_c() * p.kernel_h * p.kernel_w, gen),
               b = random_values<T>(p.out_c(), gen);
    r.minimum_bytes = static_cast<long long>((x.size() + w.size() + b.size() + out_n) * sizeof(T));
    r.variant = dsconv::to_string(dsconv::select_variant<T>(p));
    dsconv::device_buffer<T> dx, dw, db, dy;
    if (dx.upload(x) != dsconv::status::success || dw.upload(w) != dsconv::status::success ||
        db.upload(b) != dsconv::status::success || dy.upload(std::vector<T>(out_n, T(std::nanf("")))) != dsconv::status::success) {
      r.status = dsconv::status::out_of_memory;
      return r;
    }
    r.status = detail::run_measured(r, count_traffic, [&] {
      return dsconv::depthwise_forward(p, dx.data(), dw.data(), db.data(), dy.data());
    });
    if (r.status != dsconv::status::success) return r;
    std::vector<double> ref(out_n);
    dsconv::reference::depthwise_forward(p, x.data(), w.data(), b.data(), ref.data());
    detail::finish(r, {&dy}, {&ref});
  } else {
    const auto p = l.pointwise_params(batch, lay);
    const std::size_t px = static_cast<std::size_t>(batch) * p.h * p.w;
    const auto x = random_values<T>(px * p.c_in, gen), w = random_values<T>(static_cast<std::size_t>(p.c_out) * p.c_in, gen),
               b = random_values<T>(p.c_out, gen);
    const auto res = l.residual ? random_values<T>(px * p.c_out, gen) : std::vector<T>();
    r.minimum_bytes = static_cast<long long>((x.size() + w.size() + b.size() + res.size() + px * p.c_out) * sizeof(T));
    // The workspace split_k may use, so that the heuristic can choose it as a user would.
    dsconv::pointwise_options options;
    options.workspace_bytes = dsconv::pointwise_workspace_size<T>(p);
    dsconv::device_buffer<float> workspace;
    dsconv::device_buffer<T> dx, dw, db, dr, dy;
    if (dx.upload(x) != dsconv::status::success || dw.upload(w) != dsconv::status::success ||
        db.upload(b) != dsconv::status::success || (l.residual && dr.upload(res) != dsconv::status::success) ||
        dy.upload(std::vector<T>(px * p.c_out, T(std::nanf("")))) != dsconv::status::success ||
        workspace.allocate(options.workspace_bytes / sizeof(float)) != dsconv::status::success) {
      r.status = dsconv::status::out_of_memory;
      return r;
    }
    options.workspace = workspace.data();
    r.variant = dsconv::to_string(dsconv::select_variant<T>(p, options));
    const T* residual = l.residual ? dr.data() : nullptr;
    r.status = detail::run_measured(r, count_traffic, [&] {
      return dsconv::pointwise_forward(p, options, dx.data(), dw.data(), db.data(), residual, dy.data());
    });
    if (r.status != dsconv::status::success) return r;
    std::vector<double> ref(px * p.c_out);
    dsconv::reference::pointwise_forward(p, x.data(), w.data(), b.data(), l.residual ? res.data() : nullptr, ref.data());
    detail::finish(r, {&dy}, {&ref});
  }
  return r;
}

}  // namespace dsconv_bench
