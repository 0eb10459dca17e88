#pragma once
// cuDNN's graph (backend) API, the API through which PyTorch runs its convolutions, in the few
// owned pieces the benchmark's strongest cuDNN baseline needs (cudnn_graph_baseline.hpp):
// descriptors, tensors in logical N,C,H,W order with the layout's strides, the convolution,
// pointwise and reduction operations, and `graph_plan`, which finds the fastest engine
// configuration of an operation graph the way PyTorch's benchmark mode does: heuristics mode A,
// then the fallback list; configurations that down-convert their inputs dropped always, and
// tensor-core ones for float (TF32 stays off, as dsconv's float does by default); every
// configuration that finalizes into a plan (up to a limit, as torch.backends.cudnn.benchmark_limit)
// run once as a warm-up and then timed, the fastest kept. No library beyond cuDNN itself.

#if defined(DSCONV_PLATFORM_CUDA)

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <dsconv/dsconv.hpp>

#include "../timing_gpu.hpp"
#include "cudnn_problem.hpp"

namespace dsconv_bench {
namespace cudnn_graph {

// The first failure of a sequence of backend calls, as a message; later calls are skipped.
class errors {
 public:
  bool ok() const { return first_.empty(); }
  const std::string& message() const { return first_; }
  bool check(cudnnStatus_t s, const std::string& what) {
    if (ok() && s != CUDNN_STATUS_SUCCESS) first_ = what + ": " + cudnnGetErrorString(s);
    return ok();
  }
  void fail(const std::string& what) {
    if (ok()) first_ = what;
  }

 private:
  std::string first_;
};

// An owned backend descriptor whose calls report to an `errors`.
class descriptor {
 public:
  descriptor() = default;
  descriptor(cudnnBackendDescriptorType_t type, const char* what, errors& err) : what_(what), err_(&err) {
    if (err.ok() && !err.check(cudnnBackendCreateDescriptor(type, &d_), std::string("create ") + what)) d_ = nullptr;
  }
  descriptor(descriptor&& o) noexcept : d_(o.d_), what_(o.what_), err_(o.err_) { o.d_ = nullptr; }
  descriptor& operator=(descriptor&& o) noexcept {
    std::swap(d_, o.d_), std::swap(what_, o.what_), std::swap(err_, o.err_);
    return *this;
  }
  descriptor(const descriptor&) = delete;
  descriptor& operator=(const descriptor&) = delete;
  ~descriptor() {
    if (d_) (void)cudnnBackendDestroyDescriptor(d_);
  }

  cudnnBackendDescriptor_t get() const { return d_; }
  // The address of the handle, for attributes whose values are descriptors.
  const cudnnBackendDescriptor_t* ref() const { return &d_; }

  template <class V>
  descriptor& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const V* values,
                  std::int64_t count = 1) {
    if (d_ && err_->ok())
      err_->check(cudnnBackendSetAttribute(d_, name, type, count, values),
                  std::string(what_) + ": attribute " + std::to_string(static_cast<int>(name)));
    return *this;
  }
  descriptor& finalize() {
    if (d_ && err_->ok()) err_->check(cudnnBackendFinalize(d_), std::string("finalize ") + what_);
    return *this;
  }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
  const char* what_ = "";
  errors* err_ = nullptr;
};

// Dimensions and strides in cuDNN's logical order: N, C, H, W for data, K, C/groups, R, S for
// filters; the memory layout lives in the strides alone.
struct tensor_shape {
  std::array<std::int64_t, 4> dims{}, strides{};
};

// An activation tensor of n x c x h x w in NCHW or NHWC.
inline tensor_shape activation_shape(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, bool nhwc) {
  tensor_shape s;
  s.dims = {n, c, h, w};
  s.strides = nhwc ? std::array<std::int64_t, 4>{h * w * c, 1, w * c, c} : std::array<std::int64_t, 4>{c * h * w, h * w, w, 1};
  return s;
}

// A filter of k x c_per_group x r x s, KCRS for NCHW data and KRSC for NHWC. dsconv's weights
// ([k][r][s] depthwise, [k][c] 1x1) are both, since one of c_per_group and r x s is 1.
inline tensor_shape filter_shape(std::int64_t k, std::int64_t cg, std::int64_t r, std::int64_t s, bool nhwc) {
  tensor_shape f;
  f.dims = {k, cg, r, s};
  f.strides = nhwc ? std::array<std::int64_t, 4>{r * s * cg, 1, s * cg, cg}
                   : std::array<std::int64_t, 4>{cg * r * s, r * s, s, 1};
  return f;
}

// A per-channel vector (bias, bias gradient): 1 x k x 1 x 1.
inline tensor_shape channel_shape(std::int64_t k, bool nhwc) { return activation_shape(1, k, 1, 1, nhwc); }

// Every real tensor is bound to 256-byte aligned buffers (buffer_sets.hpp); 16 bytes is what
// the vectorised engines ask for.
inline constexpr std::int64_t tensor_alignment = 16;

inline descriptor tensor(std::int64_t uid, const tensor_shape& s, cudnnDataType_t type, bool is_virtual, const char* what,
                         errors& err) {
  descriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR, what, err);
  const bool v = is_virtual;
  t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type)
      .set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, s.dims.data(), 4)
      .set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, s.strides.data(), 4)
      .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid)
      .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &tensor_alignment)
      .set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &v)
      .finalize();
  return t;
}

// The descriptors of one operation graph: its operations, and every tensor and math
// descriptor they refer to, kept alive as long as the graph and its plan. Room is reserved
// up front, so the address of a kept descriptor stays valid while the graph is assembled.
struct graph_parts {
  std::vector<descriptor> operations, others;

  graph_parts() { others.reserve(capacity); }
  // Keeps `d` and returns it where it now lives.
  const descriptor& keep(descriptor d) {
    if (others.size() == capacity) throw std::logic_error("graph_parts: more descriptors than reserved");
    others.push_back(std::move(d));
    return others.back();
  }
  void add(descriptor op) { operations.push_back(std::move(op)); }

 private:
  static constexpr std::size_t capacity = 32;
};

// Cross-correlation with fp32 accumulation, symmetric padding, no dilation.
inline descriptor convolution(std::int64_t stride, std::int64_t pad, errors& err) {
  descriptor c(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "convolution", err);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const std::int64_t spatial = 2, pads[2] = {pad, pad}, strides[2] = {stride, stride}, dilations[2] = {1, 1};
  c.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &compute)
      .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, &mode)
      .set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, &spatial)
      .set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, pads, 2)
      .set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, pads, 2)
      .set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, dilations, 2)
      .set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, strides, 2)
      .finalize();
  return c;
}

// The three convolution operations: y = conv(x, w); dx from dy and w; dw from x and dy.
enum class convolution_kind { forward, backward_data, backward_filter };

// `a`, `b` and `result` are, per kind: x, w, y (forward); w, dy, dx (data); x, dy, dw (filter).
inline descriptor convolution_operation(convolution_kind kind, const descriptor& a, const descriptor& b,
                                        const descriptor& result, const descriptor& conv, errors& err) {
  static constexpr cudnnBackendDescriptorType_t types[] = {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                                                           CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                                                           CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR};
  // Attribute names per kind: a, b, result, convolution, alpha, beta.
  static constexpr cudnnBackendAttributeName_t names[3][6] = {
      {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA}};
  const auto k = static_cast<int>(kind);
  const float alpha = 1.0f, beta = 0.0f;
  descriptor op(types[k], "convolution operation", err);
  op.set(names[k][0], CUDNN_TYPE_BACKEND_DESCRIPTOR, a.ref())
      .set(names[k][1], CUDNN_TYPE_BACKEND_DESCRIPTOR, b.ref())
      .set(names[k][2], CUDNN_TYPE_BACKEND_DESCRIPTOR, result.ref())
      .set(names[k][3], CUDNN_TYPE_BACKEND_DESCRIPTOR, conv.ref())
      .set(names[k][4], CUDNN_TYPE_FLOAT, &alpha)
      .set(names[k][5], CUDNN_TYPE_FLOAT, &beta)
      .finalize();
  return op;
}

// A pointwise operation in fp32: y = mode(x) or y = mode(x, b). Clips apply to RELU_FWD
// (relu6 is a relu clipped at 6); swish's beta is 1 (silu).
struct pointwise_math {
  cudnnPointwiseMode_t mode = CUDNN_POINTWISE_ADD;
  double upper_clip = 0;  // RELU_FWD only; 0: none
};

inline descriptor pointwise_operation(const pointwise_math& m, const descriptor& x, const descriptor* b,
                                      const descriptor& y, errors& err, graph_parts& parts) {
  descriptor math(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise math", err);
  const cudnnDataType_t precision = CUDNN_DATA_FLOAT;
  math.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &m.mode)
      .set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &precision);
  if (m.mode == CUDNN_POINTWISE_RELU_FWD) {
    const double lower = 0.0;
    math.set(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, CUDNN_TYPE_DOUBLE, &lower);
    if (m.upper_clip > 0) math.set(CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_DOUBLE, &m.upper_clip);
  }
  if (m.mode == CUDNN_POINTWISE_SWISH_FWD) {
    const double beta = 1.0;
    math.set(CUDNN_ATTR_POINTWISE_SWISH_BETA, CUDNN_TYPE_DOUBLE, &beta);
  }
  math.finalize();
  descriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise operation", err);
  op.set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, math.ref())
      .set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, x.ref());
  if (b) op.set(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, b->ref());
  op.set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, y.ref()).finalize();
  parts.keep(std::move(math));
  return op;
}

// y = the sum of x over every dimension where y has size 1, in fp32.
inline descriptor sum_operation(const descriptor& x, const descriptor& y, errors& err, graph_parts& parts) {
  descriptor sum(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction", err);
  const cudnnReduceTensorOp_t op_kind = CUDNN_REDUCE_TENSOR_ADD;
  const cudnnDataType_t precision = CUDNN_DATA_FLOAT;
  sum.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &op_kind)
      .set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &precision)
      .finalize();
  descriptor op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "reduction operation", err);
  op.set(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, x.ref())
      .set(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, y.ref())
      .set(CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, sum.ref())
      .finalize();
  parts.keep(std::move(sum));
  return op;
}

// What an engine configuration's engine says of itself.
struct engine_notes {
  std::int64_t index = -1;  // the engine's global index
  bool tensor_core = false, down_converts = false, runtime_compiled = false;

  std::string text() const {
    return "engine " + std::to_string(index) + (runtime_compiled ? " (runtime-compiled)" : "") +
           (tensor_core ? " (tensor cores)" : "");
  }
};

inline engine_notes notes_of(cudnnBackendDescriptor_t config) {
  engine_notes n;
  errors local;
  descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR, "engine", local);
  std::int64_t count = 0;
  cudnnBackendDescriptor_t e = engine.get();
  if (!e || cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count,
                                     &e) != CUDNN_STATUS_SUCCESS)
    return n;
  (void)cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &count, &n.index);
  cudnnBackendNumericalNote_t numerical[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, numerical) == CUDNN_STATUS_SUCCESS)
    for (std::int64_t i = 0; i < count; ++i) {
      n.tensor_core = n.tensor_core || numerical[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
      n.down_converts = n.down_converts || numerical[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
    }
  cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &count, behavior) == CUDNN_STATUS_SUCCESS)
    for (std::int64_t i = 0; i < count; ++i)
      n.runtime_compiled = n.runtime_compiled || behavior[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
  return n;
}

// The engine configurations that the heuristics of `mode` rank for `graph`, best first.
inline std::vector<descriptor> ranked_configs(const descriptor& graph, cudnnBackendHeurMode_t mode, errors& err) {
  descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "heuristics", err);
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, graph.ref())
      .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode)
      .finalize();
  std::vector<descriptor> configs;
  std::int64_t count = 0;
  if (!err.ok() ||
      !err.check(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
                 "heuristics result count"))
    return configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < count && err.ok(); ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine configuration", err);
    raw.push_back(configs.back().get());
  }
  std::int64_t returned = 0;
  if (err.ok())
    err.check(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                       count, &returned, raw.data()),
              "heuristics results");
  configs.resize(err.ok() ? static_cast<std::size_t>(returned) : 0);
  return configs;
}

// An operation graph with the execution plan of its fastest engine configuration, its
// workspace, and the variant packs (its tensors' pointers) it has run with.
class graph_plan {
 public:
  // The tensors of a graph that buffers are bound to, in the order of `bind`'s pointers.
  std::vector<std::int64_t> uids;

  // Builds the graph of `parts`, the plans of its configurations (at most
  // `config_limit` that finalize), times each on `pointers`, and keeps the fastest. Returns
  // an error message, or empty.
  std::string build(graph_parts parts, const std::vector<void*>& pointers, bool float_data, int config_limit) {
    errors err;
    const cudnnHandle_t handle = cudnn_detail::handle();
    if (!handle) return "cudnnCreate failed (no usable GPU or cuDNN library)";
    parts_ = std::move(parts);
    std::vector<cudnnBackendDescriptor_t> ops;
    for (const descriptor& d : parts_.operations) ops.push_back(d.get());
    graph_ = descriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph", err);
    graph_.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle)
        .set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, ops.data(),
             static_cast<std::int64_t>(ops.size()))
        .finalize();
    if (!err.ok()) return err.message();

    // Mode A's ranking, then the fallback list, as PyTorch's benchmark mode gathers them.
    std::vector<descriptor> configs;
    std::string heuristics_errors;
    for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
      errors local;
      for (descriptor& c : ranked_configs(graph_, mode, local)) configs.push_back(std::move(c));
      if (!local.ok()) heuristics_errors += " " + local.message() + ";";
    }
    std::vector<candidate> plans;
    std::string refused;
    int filtered = 0;
    for (const descriptor& config : configs) {
      if (static_cast<int>(plans.size()) >= config_limit) break;
      const engine_notes notes = notes_of(config.get());
      if (notes.down_converts || (float_data && notes.tensor_core)) {
        ++filtered;
        continue;
      }
      errors local;
      descriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan", local);
      std::int64_t workspace = 0;
      plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, &handle)
          .set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, config.ref())
          .finalize();
      std::int64_t count = 0;
      if (local.ok())
        local.check(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                             &count, &workspace),
                    "plan workspace size");
      if (local.ok() && workspace <= max_workspace)
        plans.push_back({std::move(plan), workspace, notes, 0.0});
      else if (refused.empty())
        refused = local.ok() ? "workspace above 1 GiB" : local.message();
    }
    if (plans.empty())
      return "no engine configuration of cuDNN's graph API finalizes (" + std::to_string(configs.size()) +
             " configurations, " + std::to_string(filtered) + " filtered" + (refused.empty() ? "" : "; " + refused) +
             (heuristics_errors.empty() ? "" : ";" + heuristics_errors) + ")";
    return choose_fastest(plans, pointers, configs.size(), filtered);
  }

  // What ran: the engine and how it was chosen.
  const std::string& label() const { return label_; }

  // Queues the plan on `pointers` (in the order of `uids`). Returns an error message, or empty.
  std::string run(const std::vector<void*>& pointers) const {
    auto it = packs_.find(pointers);
    if (it == packs_.end()) {
      errors err;
      descriptor pack = variant_pack(pointers, err);
      if (!err.ok()) return err.message();
      it = packs_.emplace(pointers, std::move(pack)).first;
    }
    return cudnn_detail::check(cudnnBackendExecute(cudnn_detail::handle(), plan_.get(), it->second.get()),
                               "cudnnBackendExecute");
  }

 private:
  static constexpr std::int64_t max_workspace = std::int64_t(1) << 30;
  static constexpr int timed_runs = 3;

  struct candidate {
    descriptor plan;
    std::int64_t workspace;
    engine_notes notes;
    double seconds;
  };

  descriptor variant_pack(const std::vector<void*>& pointers, errors& err) const {
    descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack", err);
    void* workspace = workspace_.data();
    pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids.data(), static_cast<std::int64_t>(uids.size()))
        .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, pointers.data(),
             static_cast<std::int64_t>(pointers.size()))
        .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace)
        .finalize();
    return pack;
  }

  // One warm-up run and then `timed_runs` timed runs of every plan (a plan that fails to run is
  // skipped); keeps the fastest.
  std::string choose_fastest(std::vector<candidate>& plans, const std::vector<void*>& pointers, std::size_t listed,
                             int filtered) {
    std::int64_t most = 0;
    for (const candidate& c : plans) most = std::max(most, c.workspace);
    if (workspace_.allocate(static_cast<std::size_t>(most)) != dsconv::status::success)
      return std::string("workspace: ") + dsconv::last_error_detail();
    pass_timer timer;
    std::string e = timer.init();
    if (!e.empty()) return e;
    candidate* best = nullptr;
    int ran = 0;
    std::string failure;
    for (candidate& c : plans) {
      plan_ = std::move(c.plan);
      packs_.clear();
      std::string run_error = run(pointers);
      if (run_error.empty() && dsconv::synchronize() != dsconv::status::success)
        run_error = dsconv::last_error_detail();
      if (run_error.empty())
        run_error = timer.time(
            timed_runs, 100e-6, [&](int) { return run(pointers); }, c.seconds);
      c.plan = std::move(plan_);
      if (!run_error.empty()) {
        if (failure.empty()) failure = c.notes.text() + ": " + run_error;
        continue;
      }
      ++ran;
      if (!best || c.seconds < best->seconds) best = &c;
    }
    packs_.clear();
    if (!best) return "no plan of cuDNN's graph API ran (" + failure + ")";
    plan_ = std::move(best->plan);
    label_ = best->notes.text() + ", fastest of " + std::to_string(ran) + " timed (" + std::to_string(listed) +
             " configurations from heuristics A + fallback, " + std::to_string(filtered) + " filtered)";
    return {};
  }

  graph_parts parts_;  // what the graph refers to
  descriptor graph_, plan_;
  mutable dsconv::device_buffer<unsigned char> workspace_;
  // Built the first time a set of pointers runs, outside the timed passes after the first.
  mutable std::map<std::vector<void*>, descriptor> packs_;
  std::string label_;
};

}  // namespace cudnn_graph
}  // namespace dsconv_bench

#endif
