#pragma once
// Which cases dsconv_bench registers, from its own options (the main job's names), each also
// read from an environment variable:
//   --model all|mobilenet_v2|efficientnet_b0   DSCONV_MODEL
//   --input 224|32                             DSCONV_INPUT   (default 224)
//   --kind all|dw|pw|block                     DSCONV_KIND    (dw: dw, dwbd and dwbw; pw likewise;
//                                                              block: the block cases only)
//   --pass forward|backward|all                DSCONV_PASS    (backward: the data and weight
//                                                              gradients, no block cases;
//                                                              default all)
//   --batch 1,8,16,32,64,128                   DSCONV_BATCH
//   --type float,half,bfloat16                 DSCONV_TYPE
//   --layout nchw,nhwc                         DSCONV_LAYOUT
//   --all                                      DSCONV_BENCH_ALL=1
//   --legacy                                   DSCONV_BENCH_LEGACY=1 (CUDA: cuDNN's legacy API as
//                                              an extra baseline column, cudnn_legacy)
// and ones that change what runs (not the grid):
//   --cudnn_configs N                          DSCONV_CUDNN_CONFIGS (engine configurations of
//                                              cuDNN's graph API timed per graph, default 10 as
//                                              PyTorch's benchmark_limit)
//   --variant NAME                             DSCONV_VARIANT (every dsconv case forces that
//                                              variant, e.g. gemm_small; a case whose operation
//                                              has no such variant, or that the variant cannot
//                                              run, reports an error)
// Without any of them every case is registered. On the host platform a run (not a listing)
// without them and without --benchmark_filter covers only the default host slice, because
// emulated kernels are slow; --all runs everything.

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "../support/options.hpp"
#include "block_cases.hpp"
#include "cases.hpp"

namespace dsconv_bench {

// Batch 1 in float, both layouts, every pass, dsconv and the reference: a few minutes on two
// cores.
inline constexpr const char* host_default_filter = "/b1/float/";

struct selection {
  std::string model = "all", kind = "all", pass = "all";
  int input = 224;
  std::vector<std::string> batches, types, layouts;  // empty: all
  bool all = false;
  bool legacy = false;  // the platform's extra baseline too, where it has one
  bool narrowed = false;  // some option or variable above restricts the grid

  bool matches(const bench_case& c) const {
    const bool pass_selected = pass == "all" || (pass == "forward") == c.forward();
    return (kind == "all" || c.l.kind == kind) && pass_selected && matches_grid(c.l.model, c);
  }
  // Block cases are forward passes.
  bool matches(const block_case& c) const {
    return (kind == "all" || kind == "block") && pass != "backward" && matches_grid(c.block.model, c);
  }

 private:
  template <class Case>
  bool matches_grid(const std::string& case_model, const Case& c) const {
    auto listed = [](const std::vector<std::string>& list, const std::string& v) {
      return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
    };
    return (model == "all" || case_model == model) && listed(batches, std::to_string(c.batch)) &&
           listed(types, to_string(c.type)) && listed(layouts, dsconv::to_string(c.data_layout));
  }
};

inline const char* const selection_options[] = {"model",  "input",  "kind",          "pass",       "batch", "type",
                                                "layout", "all",    "variant",       "legacy",     "cudnn_configs",
                                                "case_table"};

inline selection parse_selection(const options& opt) {
  selection s;
  const std::string model = opt.get("model", "DSCONV_MODEL", ""), kind = opt.get("kind", "DSCONV_KIND", ""),
                    pass = opt.get("pass", "DSCONV_PASS", ""), input = opt.get("input", "DSCONV_INPUT", ""),
                    batch = opt.get("batch", "DSCONV_BATCH", ""), type = opt.get("type", "DSCONV_TYPE", ""),
                    lay = opt.get("layout", "DSCONV_LAYOUT", "");
  s.narrowed =
      !(model.empty() && kind.empty() && pass.empty() && input.empty() && batch.empty() && type.empty() && lay.empty());
  if (!model.empty()) s.model = model;
  if (!kind.empty()) s.kind = kind;
  if (!pass.empty()) s.pass = pass;
  if (!input.empty()) s.input = std::stoi(input);
  s.batches = options::split(batch);
  s.types = options::split(type);
  s.layouts = options::split(lay);
  s.all = opt.get("all", "DSCONV_BENCH_ALL", "0") != "0";
  s.legacy = opt.get("legacy", "DSCONV_BENCH_LEGACY", "0") != "0";
  if (s.model != "all" && s.model != "mobilenet_v2" && s.model != "efficientnet_b0")
    throw std::runtime_error("--model must be all, mobilenet_v2 or efficientnet_b0 (got " + s.model + ")");
  if (s.kind != "all" && s.kind != "dw" && s.kind != "pw" && s.kind != "block")
    throw std::runtime_error("--kind must be all, dw, pw or block (got " + s.kind + ")");
  if (s.pass != "all" && s.pass != "forward" && s.pass != "backward")
    throw std::runtime_error("--pass must be forward, backward or all (got " + s.pass + ")");
  return s;
}

}  // namespace dsconv_bench
