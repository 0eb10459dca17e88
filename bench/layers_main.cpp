// The main job without a GPU benchmark: every depthwise and 1x1 layer of MobileNetV2 and
// EfficientNet-B0 through dsconv, each checked against the double-precision reference, with
// the variant the heuristic chose and (on the host platform) the global-memory traffic
// against the minimum a layer must move. Prints a line per layer and a summary, and writes
// <out>/layers.csv and <out>/layers.md.
//
// Options (or environment variables): --model all|mobilenet_v2|efficientnet_b0 (DSCONV_MODEL),
// --input 224|32 (DSCONV_INPUT), --kind all|dw|pw (DSCONV_KIND), --batch 1,8 (DSCONV_BATCH), --type float,half,bfloat16
// (DSCONV_TYPE), --layout nchw,nhwc (DSCONV_LAYOUT), --traffic 0|1 (host only), --device
// sm80|sm90|sm75|gfx906|gfx90a (host only: the GPU the planners see; DSCONV_HOST_DEVICE),
// --pass forward|backward|all (DSCONV_PASS, default forward: backward runs each layer's data
// and weight gradients, the layer's activation gradient applied from its saved tensor),
// --out DIR (DSCONV_RESULTS, default results).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>
#include <random>

#include "support/backward_check.hpp"
#include "support/device_setup.hpp"
#include "support/layer_check.hpp"
#include "support/options.hpp"

namespace {

using dsconv_bench::layer;
using dsconv_bench::layer_pass;
using dsconv_bench::layer_result;

struct row {
  layer l;
  layer_pass pass_of;
  int batch;
  std::string type, layout;
  layer_result r;
  double tolerance;
  bool pass() const {
    return r.status == dsconv::status::success && r.bad_elements == 0 && r.relative_error <= tolerance;
  }
  double traffic_ratio() const { return r.traffic_bytes < 0 ? -1 : double(r.traffic_bytes) / double(r.minimum_bytes); }
};

std::string shape_of(const layer& l) {
  char buf[96];
  if (l.depthwise())
    std::snprintf(buf, sizeof buf, "dw %dx%d s%d c%d %dx%d", l.k, l.k, l.stride, l.cin, l.h_in, l.h_in);
  else
    std::snprintf(buf, sizeof buf, "pw %d->%d %dx%d%s", l.cin, l.cout, l.h_in, l.h_in, l.residual ? " +res" : "");
  return buf;
}

template <class T>
layer_result run(const layer& l, layer_pass ps, int batch, dsconv::layout lay, bool traffic, std::mt19937& gen) {
  if (ps == layer_pass::forward) return dsconv_bench::check_layer<T>(l, batch, lay, traffic, gen);
  return dsconv_bench::check_layer_backward<T>(l, batch, lay, ps == layer_pass::backward_weight, traffic, gen);
}

layer_result run_typed(const std::string& type, const layer& l, layer_pass ps, int batch, dsconv::layout lay, bool traffic,
                       std::mt19937& gen) {
  if (type == "half") return run<dsconv::half>(l, ps, batch, lay, traffic, gen);
  if (type == "bfloat16") return run<dsconv::bfloat16>(l, ps, batch, lay, traffic, gen);
  return run<float>(l, ps, batch, lay, traffic, gen);
}

double tolerance_of(const std::string& type) { return type == "half" ? 3e-3 : type == "bfloat16" ? 2e-2 : 1e-5; }

// The traffic targets of the backward pass at batch 8, fp32 (global bytes over the minimum:
// every tensor of the call once): depthwise data gradient 1.25 per layer, weight gradient 1.3
// per layer, and each network's sum 1.15. Prints how each network and pass stands; true when
// every target the rows cover holds.
bool report_backward_targets(const std::vector<row>& rows) {
  struct sums {
    double moved = 0, minimum = 0, worst = 0;
    std::string worst_layer;
  };
  std::map<std::pair<std::string, layer_pass>, sums> by_network;
  for (const auto& w : rows)
    if (w.l.depthwise() && w.pass_of != layer_pass::forward && w.batch == 8 && w.type == "float" && w.traffic_ratio() >= 0) {
      sums& s = by_network[{w.l.model, w.pass_of}];
      s.moved += static_cast<double>(w.r.traffic_bytes), s.minimum += static_cast<double>(w.r.minimum_bytes);
      if (w.traffic_ratio() > s.worst) s.worst = w.traffic_ratio(), s.worst_layer = w.l.name() + " " + w.layout;
    }
  if (by_network.empty()) return true;
  bool met = true;
  std::printf("\nbackward traffic targets (depthwise, batch 8, float): worst layer <= 1.25 (data) / 1.3 (weight), "
              "network sum <= 1.15\n");
  for (const auto& n : by_network) {
    const double layer_target = n.first.second == layer_pass::backward_data ? 1.25 : 1.3;
    const double sum = n.second.moved / n.second.minimum;
    const bool ok = n.second.worst <= layer_target && sum <= 1.15;
    met = met && ok;
    std::printf("  %-16s %-6s worst layer %.3fx (%s), sum %.3fx: %s\n", n.first.first.c_str(), to_string(n.first.second),
                n.second.worst, n.second.worst_layer.c_str(), sum, ok ? "met" : "MISSED");
  }
  return met;
}

// Every shared-memory call site of the rows' kernels: how many rows reach it, how many of them
// it takes more than bank_target times its conflict-free wavefronts in, its largest factor,
// and the largest share of a row's shared-memory wavefronts that its conflicts add (what they
// cost: a site of few requests may have a large factor and cost little).
constexpr double bank_target = 1.1;
void write_bank_summary(std::ostream& md, const std::vector<row>& rows) {
  struct site_summary {
    int rows = 0, over = 0;
    double factor = 0, share = 0;
  };
  std::map<std::string, site_summary> sites;  // "load file:line" / "store file:line"
  for (const auto& w : rows)
    for (const auto& site : w.r.shared_sites) {
      site_summary& s = sites[(site.store ? "store " : "load ") + site.name];
      ++s.rows;
      s.over += site.factor > bank_target;
      s.factor = std::max(s.factor, site.factor);
      s.share = std::max(s.share, site.excess_share);
    }
  md << "\n## Shared-memory call sites\n\nBank conflicts per call site over the rows above (the taps of the depthwise "
        "kernels and the GEMMs' fragment loads are their hot loops; the stores stage a block's operands once): rows "
        "reaching it, rows where it takes more than "
     << bank_target << " times its conflict-free wavefronts, its largest factor, and the largest share of a row's "
        "shared-memory wavefronts that its conflicts add.\n\n"
     << "| site | rows | rows above " << bank_target << " | largest factor | largest share of a row's wavefronts |\n"
     << "|---|---|---|---|---|\n";
  for (const auto& s : sites) {
    char text[96];
    std::snprintf(text, sizeof text, " | %d | %d | %.3f | %.1f %% |\n", s.second.rows, s.second.over, s.second.factor,
                  100 * s.second.share);
    md << "| " << s.first << text;
  }
}

void write_reports(const std::string& dir, const std::vector<row>& rows, const std::string& device) {
  std::filesystem::create_directories(dir);  // (throws where it cannot)
  std::ofstream csv(dir + "/layers.csv");
  csv << "layer,shape,pass,batch,type,layout,variant,status,relative_error,max_abs_error,bad_elements,wall_ms,minimum_bytes,"
         "traffic_bytes,traffic_ratio,load_sectors_per_request,store_sectors_per_request,shared_load_conflicts,"
         "shared_store_conflicts,worst_shared_load_site,worst_shared_store_site,resident_blocks,occupancy,"
         "grid_blocks_per_multiprocessor,correct\n";
  for (const auto& w : rows)
    csv << w.l.name() << ',' << shape_of(w.l) << ',' << to_string(w.pass_of) << ',' << w.batch << ',' << w.type << ',' << w.layout << ',' << w.r.variant
        << ',' << dsconv::to_string(w.r.status) << ',' << w.r.relative_error << ',' << w.r.max_abs_error << ','
        << w.r.bad_elements << ',' << w.r.wall_ms << ',' << w.r.minimum_bytes << ',' << w.r.traffic_bytes << ','
        << w.traffic_ratio() << ',' << w.r.load_sectors_per_request << ',' << w.r.store_sectors_per_request << ','
        << w.r.shared_load_conflicts << ',' << w.r.shared_store_conflicts << ',' << w.r.worst_load_site << ','
        << w.r.worst_store_site << ',' << w.r.resident_blocks << ',' << w.r.occupancy << ','
        << w.r.grid_blocks_per_multiprocessor << ','
        << (w.pass() ? 1 : 0) << '\n';
  std::ofstream md(dir + "/layers.md");
  md << "# dsconv layer check\n\nDevice: " << device << "\n\n"
     << "Bank conflicts: shared-memory wavefronts over the conflict-free ideal, for the shared loads / stores of "
        "the layer's kernels (1.00 = none; - = no shared memory). Resident blocks: of a depthwise tiled launch that "
        "fit one multiprocessor by their shared memory and threads, with the warps they keep resident (theoretical "
        "occupancy), and the grid's blocks per multiprocessor.\n\n"
     << "| layer | shape | pass | batch | type | layout | variant | rel. error | traffic / minimum | sectors per load / store "
        "request | bank conflicts, load / store | resident blocks (occupancy) / grid blocks per SM | result |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  const auto factor = [](double f) {
    char text[16] = "-";
    if (f > 0) std::snprintf(text, sizeof text, "%.2f", f);
    return std::string(text);
  };
  for (const auto& w : rows) {
    char err[32], ratio[32] = "-", spr[48] = "-";
    std::string banks = "-", resident = "-";
    if (w.r.resident_blocks > 0)
      resident = std::to_string(w.r.resident_blocks) + " (" + std::to_string(static_cast<int>(w.r.occupancy * 100 + 0.5)) +
                 " %) / " + std::to_string(w.r.grid_blocks_per_multiprocessor);
    std::snprintf(err, sizeof err, "%.2e", w.r.relative_error);
    if (w.traffic_ratio() >= 0) {
      std::snprintf(ratio, sizeof ratio, "%.3f", w.traffic_ratio());
      std::snprintf(spr, sizeof spr, "%.2f / %.2f", w.r.load_sectors_per_request, w.r.store_sectors_per_request);
      banks = factor(w.r.shared_load_conflicts) + " / " + factor(w.r.shared_store_conflicts);
    }
    md << "| " << w.l.name() << " | " << shape_of(w.l) << " | " << to_string(w.pass_of) << " | " << w.batch << " | " << w.type << " | " << w.layout << " | "
       << w.r.variant << " | " << err << " | " << ratio << " | " << spr << " | " << banks << " | " << resident << " | "
       << (w.pass() ? "pass" : "FAIL") << " |\n";
  }
  write_bank_summary(md, rows);
  if (!md.flush() || !csv.flush()) throw std::runtime_error("cannot write the reports in " + dir);
}

}  // namespace

int main(int argc, char** argv) try {
  const dsconv_bench::options opt(argc, argv);
  const std::string model = opt.get("model", "DSCONV_MODEL", "all");
  const int input = std::stoi(opt.get("input", "DSCONV_INPUT", "224"));
  const std::string kind = opt.get("kind", "DSCONV_KIND", "all");
  const auto batches = dsconv_bench::options::split(opt.get("batch", "DSCONV_BATCH", "1"));
  const auto types = dsconv_bench::options::split(opt.get("type", "DSCONV_TYPE", "float"));
  const auto layouts = dsconv_bench::options::split(opt.get("layout", "DSCONV_LAYOUT", "nchw"));
  const std::string out_dir = opt.get("out", "DSCONV_RESULTS", "results");
  const std::string pass_name = opt.get("pass", "DSCONV_PASS", "forward");
  std::vector<layer_pass> passes;
  if (pass_name == "forward" || pass_name == "all") passes.push_back(layer_pass::forward);
  if (pass_name == "backward" || pass_name == "all")
    passes.insert(passes.end(), {layer_pass::backward_data, layer_pass::backward_weight});
  if (passes.empty()) throw std::runtime_error("--pass " + pass_name + ": forward, backward or all");
  bool traffic = false;
  const std::string device = dsconv_bench::setup_device(opt, traffic);
  if (device.empty()) return 77;

  std::vector<layer> selected;
  for (const auto& l : dsconv_bench::all_layers())
    if ((model == "all" || l.model == model) && (kind == "all" || l.kind == kind) && l.input == input) selected.push_back(l);
  if (selected.empty()) throw std::runtime_error("no layer matches --model " + model + " --input " + std::to_string(input));

  std::printf("dsconv %d.%d.%d layer check on %s: %zu layers x %zu pass x %zu batch x %zu type x %zu layout\n",
              dsconv::version_major, dsconv::version_minor, dsconv::version_patch, device.c_str(), selected.size(),
              passes.size(), batches.size(), types.size(), layouts.size());
  std::mt19937 gen(20261122);
  std::vector<row> rows;
  const std::size_t total = selected.size() * passes.size() * batches.size() * types.size() * layouts.size();
  for (const auto& b : batches)
    for (const auto& t : types)
      for (const auto& lay : layouts)
        for (const layer_pass ps : passes)
          for (const auto& l : selected) {
          row w{l, ps, std::stoi(b), t, lay, {}, tolerance_of(t)};
          w.r = run_typed(t, l, ps, w.batch, lay == "nhwc" ? dsconv::layout::nhwc : dsconv::layout::nchw, traffic, gen);
          rows.push_back(w);
          std::printf("[%3zu/%zu] %-34s %-26s %-7s n=%-3d %-8s %s  %-9s err %.1e  traffic %s  %7.1f ms  %s%s%s\n", rows.size(),
                      total, l.name().c_str(), shape_of(l).c_str(), to_string(ps), w.batch, t.c_str(), lay.c_str(),
                      w.r.variant.c_str(),
                      w.r.relative_error,
                      w.traffic_ratio() < 0 ? "-" : (std::to_string(w.traffic_ratio()).substr(0, 6) + "x").c_str(),
                      w.r.wall_ms, w.pass() ? "ok" : "FAIL", w.r.detail.empty() ? "" : ": ", w.r.detail.c_str());
          std::fflush(stdout);
        }

  // Summary per model, kind and pass: layers passed, worst error, traffic against the minimum.
  std::printf("\n%-18s %-4s %-7s %7s %8s %12s %16s\n", "model", "kind", "pass", "layers", "passed", "worst error",
              "traffic/minimum");
  std::map<std::tuple<std::string, std::string, layer_pass>, std::vector<const row*>> groups;
  for (const auto& w : rows) groups[{w.l.model, w.l.kind, w.pass_of}].push_back(&w);
  std::size_t failed = 0;
  for (const auto& g : groups) {
    std::size_t pass = 0;
    double worst = 0, moved = 0, minimum = 0;
    for (const row* w : g.second) {
      pass += w->pass();
      worst = std::max(worst, w->r.relative_error);
      moved += static_cast<double>(w->r.traffic_bytes);
      minimum += static_cast<double>(w->r.minimum_bytes);
    }
    failed += g.second.size() - pass;
    char ratio[32] = "-";
    if (traffic) std::snprintf(ratio, sizeof ratio, "%.2fx", moved / minimum);
    std::printf("%-18s %-4s %-7s %7zu %8zu %12.1e %16s\n", std::get<0>(g.first).c_str(), std::get<1>(g.first).c_str(),
                to_string(std::get<2>(g.first)), g.second.size(), pass, worst, ratio);
  }
  report_backward_targets(rows);
  write_reports(out_dir, rows, device);
  std::printf("\n%s: %zu of %zu layer runs correct; reports in %s/layers.md and %s/layers.csv\n", failed ? "FAILED" : "OK",
              rows.size() - failed, rows.size(), out_dir.c_str(), out_dir.c_str());
  return failed ? 1 : 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 2;
}
