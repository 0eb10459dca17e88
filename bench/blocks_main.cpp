// The main job's block check (scripts/main_job.sh --kind block): every inverted-residual
// block of MobileNetV2 and EfficientNet-B0 through dsconv::inverted_residual_forward, unfused
// and fused (where the fused kernel runs it), each checked against the double-precision
// composition of the reference layers, with the variant the planner chooses and why (the
// device's measured fusion table, dispatch/tuning/block_fusion.hpp) and, on the host platform,
// the global-memory bytes each moves. Prints a line per block and a summary per network, and
// writes <out>/blocks.csv and <out>/blocks.md.
//
// Options (or environment variables): --model all|mobilenet_v2|efficientnet_b0 (DSCONV_MODEL),
// --input 224|32 (DSCONV_INPUT), --batch 8 (DSCONV_BATCH), --type float,half,bfloat16
// (DSCONV_TYPE), --layout nhwc,nchw (DSCONV_LAYOUT), --traffic 0|1 and --device (host only, as
// for dsconv_layers), --out DIR (DSCONV_RESULTS, default results).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "support/block_check.hpp"
#include "support/device_setup.hpp"
#include "support/options.hpp"

namespace {

using dsconv_bench::layer_result;
using dsconv_bench::network_block;

struct row {
  const network_block* b;
  int batch;
  std::string type, layout;
  std::string chosen;  // the planner's variant
  std::string reason;  // and why it chose it
  layer_result unfused, fused;  // fused.status: unsupported_variant where the fused kernel does not run the block
  bool has_fused() const { return fused.status != dsconv::status::unsupported_variant; }
  const layer_result& chosen_result() const { return chosen == "fused" ? fused : unfused; }
};

// Relative error (||out - ref|| / ||ref||) a correct block stays below: the layers' roundings
// of the type, compounded over the block's four layers.
double tolerance_of(const std::string& type) { return type == "float" ? 1e-5 : type == "half" ? 1e-2 : 5e-2; }

bool correct(const layer_result& r, const std::string& type) {
  return r.status == dsconv::status::success && r.bad_elements == 0 && r.relative_error <= tolerance_of(type);
}

template <class T>
row run(const network_block& b, int batch, const std::string& type, dsconv::layout lay, bool traffic, std::mt19937& gen) {
  const dsconv::inverted_residual_params p = b.at(batch, lay);
  const dsconv_bench::block_tensors<T> d = dsconv_bench::random_block<T>(p, gen);
  const std::vector<double> ref = dsconv_bench::block_reference(p, d);
  row w{&b, batch, type, dsconv::to_string(lay), {}, {}, {}, {}};
  w.unfused = dsconv_bench::check_block<T>(p, dsconv::block_variant::unfused, d, ref, traffic);
  if (dsconv::can_implement<T>(dsconv::block_variant::fused, p) == dsconv::status::success)
    w.fused = dsconv_bench::check_block<T>(p, dsconv::block_variant::fused, d, ref, traffic);
  else
    w.fused.status = dsconv::status::unsupported_variant;
  w.chosen = w.unfused.variant;  // (the planner's choice with the workspace)
  w.reason = dsconv::detail::explain_choice<T>(p, dsconv::inverted_residual_workspace_size<T>(p)).reason;
  return w;
}

row run_typed(const network_block& b, int batch, const std::string& type, dsconv::layout lay, bool traffic,
              std::mt19937& gen) {
  if (type == "half") return run<dsconv::half>(b, batch, type, lay, traffic, gen);
  if (type == "bfloat16") return run<dsconv::bfloat16>(b, batch, type, lay, traffic, gen);
  return run<float>(b, batch, type, lay, traffic, gen);
}

std::string shape_of(const dsconv::inverted_residual_params& p) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%d->%d->%d k%d s%d%s %dx%d%s", p.c_in, p.expanded, p.c_out, p.kernel, p.stride,
                p.se_channels ? (" se" + std::to_string(p.se_channels)).c_str() : "", p.h, p.w, p.residual ? " +res" : "");
  return buf;
}

}  // namespace

int main(int argc, char** argv) try {
  const dsconv_bench::options opt(argc, argv);
  const std::string model = opt.get("model", "DSCONV_MODEL", "all");
  const int input = std::stoi(opt.get("input", "DSCONV_INPUT", "224"));
  const auto batches = dsconv_bench::options::split(opt.get("batch", "DSCONV_BATCH", "8"));
  const auto types = dsconv_bench::options::split(opt.get("type", "DSCONV_TYPE", "float"));
  const auto layouts = dsconv_bench::options::split(opt.get("layout", "DSCONV_LAYOUT", "nhwc"));
  const std::string out_dir = opt.get("out", "DSCONV_RESULTS", "results");
  bool traffic = false;
  const std::string device = dsconv_bench::setup_device(opt, traffic);
  if (device.empty()) return 77;

  std::vector<const network_block*> selected;
  for (const network_block& b : dsconv_bench::all_blocks())
    if ((model == "all" || b.model == model) && b.input == input) selected.push_back(&b);
  if (selected.empty()) throw std::runtime_error("no block matches --model " + model + " --input " + std::to_string(input));
  std::printf("dsconv %d.%d.%d block check on %s: %zu blocks x %zu batch x %zu type x %zu layout\n", dsconv::version_major,
              dsconv::version_minor, dsconv::version_patch, device.c_str(), selected.size(), batches.size(), types.size(),
              layouts.size());
  std::mt19937 gen(20261125);
  std::vector<row> rows;
  bool failed = false;
  for (const auto& bt : batches)
    for (const auto& t : types)
      for (const auto& lay : layouts)
        for (const network_block* b : selected) {
          rows.push_back(run_typed(*b, std::stoi(bt), t, lay == "nchw" ? dsconv::layout::nchw : dsconv::layout::nhwc, traffic, gen));
          const row& w = rows.back();
          const bool ok = correct(w.unfused, t) && (!w.has_fused() || correct(w.fused, t)) &&
                          (!traffic || w.chosen_result().traffic_bytes <= w.unfused.traffic_bytes);
          failed = failed || !ok;
          char fused_error[32] = "-";
          if (w.has_fused()) std::snprintf(fused_error, sizeof fused_error, "%.1e", w.fused.relative_error);
          std::printf("[%2zu] %-28s %-34s n=%-3d %-8s %s  chosen %-7s err %.1e / %s  bytes unfused %lld fused %s%s\n"
                      "     %s\n",
                      rows.size(), w.b->name().c_str(), shape_of(w.b->at(w.batch, dsconv::layout::nhwc)).c_str(), w.batch,
                      t.c_str(), w.layout.c_str(), w.chosen.c_str(), w.unfused.relative_error, fused_error,
                      static_cast<long long>(w.unfused.traffic_bytes),
                      w.has_fused() ? std::to_string(w.fused.traffic_bytes).c_str() : "-", ok ? "" : "  FAILED",
                      w.reason.c_str());
          std::fflush(stdout);
        }

  // Summary per network, batch, type and layout: how many blocks the planner fuses, and the
  // bytes of the chosen variants and of the fused kernel (where it runs) over the unfused ones'.
  std::printf("\n%-18s %-5s %-8s %-6s %7s %8s %22s %22s\n", "model", "batch", "type", "layout", "blocks", "fused",
              "bytes chosen/unfused", "bytes fused/unfused");
  struct sums_of {
    double chosen = 0, unfused = 0, fused = 0, unfused_where_fused = 0;
    int blocks = 0, fused_chosen = 0;
  };
  std::map<std::tuple<std::string, int, std::string, std::string>, sums_of> sums;
  for (const row& w : rows) {
    sums_of& s = sums[std::make_tuple(w.b->model, w.batch, w.type, w.layout)];
    s.chosen += static_cast<double>(w.chosen_result().traffic_bytes);
    s.unfused += static_cast<double>(w.unfused.traffic_bytes);
    if (w.has_fused()) {
      s.fused += static_cast<double>(w.fused.traffic_bytes);
      s.unfused_where_fused += static_cast<double>(w.unfused.traffic_bytes);
    }
    ++s.blocks;
    s.fused_chosen += w.chosen == "fused";
  }
  const auto ratio_text = [&](double a, double b) { return traffic && b > 0 ? std::to_string(a / b).substr(0, 5) : "-"; };
  std::filesystem::create_directories(out_dir);  // (throws where it cannot)
  std::ofstream md(out_dir + "/blocks.md");
  md << "# Inverted-residual blocks: fused against unfused\n\nOn " << device
     << ". The planner fuses a block only where a GPU of the device's architecture measured the fused kernel faster "
        "than the unfused sequence on that block and type (dispatch/tuning/block_fusion.hpp); the reason column says "
        "what decided. Bytes: global-memory traffic counted by the host platform (32-byte sectors), evidence of what "
        "fusion saves, not of its time. error: ||out - ref|| / ||ref|| against the composition of the reference layers "
        "in double.\n\n"
     << "| model | batch | type | layout | blocks | fused | bytes chosen / unfused | bytes fused / unfused (where it runs) "
        "|\n|---|---|---|---|---|---|---|---|\n";
  for (const auto& [key, s] : sums) {
    const auto& [m, batch, type, layout] = key;
    std::printf("%-18s %-5d %-8s %-6s %7d %8d %22s %22s\n", m.c_str(), batch, type.c_str(), layout.c_str(), s.blocks,
                s.fused_chosen, ratio_text(s.chosen, s.unfused).c_str(),
                ratio_text(s.fused, s.unfused_where_fused).c_str());
    md << "| " << m << " | " << batch << " | " << type << " | " << layout << " | " << s.blocks << " | " << s.fused_chosen
       << " | " << ratio_text(s.chosen, s.unfused) << " | " << ratio_text(s.fused, s.unfused_where_fused) << " |\n";
  }
  std::ofstream csv(out_dir + "/blocks.csv");
  csv << "model,block,shape,batch,type,layout,variant,error,error_unfused,error_fused,traffic_unfused,traffic_fused,"
         "traffic_chosen,traffic_ratio,shared_load_conflicts_fused,shared_store_conflicts_fused,status,reason\n";
  md << "\n| model | block | shape | batch | type | layout | variant | reason | error | bytes unfused | bytes fused | ratio |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const row& w : rows) {
    const layer_result& c = w.chosen_result();
    const double ratio = w.unfused.traffic_bytes > 0 ? double(c.traffic_bytes) / double(w.unfused.traffic_bytes) : -1;
    const std::string fused_error = w.has_fused() ? std::to_string(w.fused.relative_error) : "";
    const std::string fused_bytes = w.has_fused() ? std::to_string(w.fused.traffic_bytes) : "";
    csv << w.b->model << ',' << w.b->block << ',' << shape_of(w.b->at(w.batch, dsconv::layout::nhwc)) << ',' << w.batch << ','
        << w.type << ',' << w.layout << ',' << w.chosen << ',' << c.relative_error << ',' << w.unfused.relative_error << ','
        << fused_error << ',' << w.unfused.traffic_bytes << ',' << fused_bytes << ',' << c.traffic_bytes << ',' << ratio << ','
        << (w.has_fused() ? std::to_string(w.fused.shared_load_conflicts) : "") << ','
        << (w.has_fused() ? std::to_string(w.fused.shared_store_conflicts) : "") << ','
        << (correct(w.unfused, w.type) && (!w.has_fused() || correct(w.fused, w.type)) ? "pass" : "FAIL") << ",\""
        << w.reason << "\"\n";
    md << "| " << w.b->model << " | " << w.b->block << " | " << shape_of(w.b->at(w.batch, dsconv::layout::nhwc)) << " | "
       << w.batch << " | " << w.type << " | " << w.layout << " | " << w.chosen << " | " << w.reason << " | "
       << c.relative_error << " | "
       << w.unfused.traffic_bytes << " | " << (w.has_fused() ? fused_bytes : "-") << " | " << ratio << " |\n";
  }
  if (!md.flush() || !csv.flush()) throw std::runtime_error("cannot write the reports in " + out_dir);
  std::printf("\n%s: %zu block runs; reports in %s/blocks.md and %s/blocks.csv\n", failed ? "FAILED" : "OK", rows.size(),
              out_dir.c_str(), out_dir.c_str());
  return failed ? 1 : 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "dsconv_blocks: %s\n", e.what());
  return 2;
}
