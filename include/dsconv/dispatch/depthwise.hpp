#pragma once
// dsconv::depthwise_forward: validate -> choose a variant -> launch.

#include <string>

#include "../kernels/depthwise/direct.hpp"
#include "../platform/platform.hpp"
#include "../problem.hpp"
#include "depthwise_matrix_plan.hpp"
#include "depthwise_nchw_matrix_plan.hpp"
#include "depthwise_nchw_register_plan.hpp"
#include "depthwise_plan.hpp"
#include "depthwise_register_column_plan.hpp"
#include "depthwise_register_plan.hpp"
#include "depthwise_small_map_plan.hpp"
#include "launch_shape.hpp"
#include "prepare.hpp"
#include "tuning/variant_choice.hpp"
#include "validate.hpp"
#include "variants.hpp"

namespace dsconv {
namespace detail {

// Whether `variant` is one of the kernels that run the forward of the specialised filters and,
// on the transposed problem, the data gradient of stride 1 (nhwc_register, nchw_register,
// nhwc_matrix, nchw_matrix).
constexpr bool register_family(depthwise_variant variant) {
  return variant == depthwise_variant::nhwc_register || variant == depthwise_variant::nchw_register ||
         variant == depthwise_variant::nhwc_matrix || variant == depthwise_variant::nchw_matrix;
}

// The layout's tensor-core variant where the rule prefers it for the forward `p` (its tiles at
// least half used: matrix_preferred, nchw_matrix_preferred), else automatic (none).
inline depthwise_variant preferred_matrix(const depthwise_params& p) {
  if (p.data_layout == layout::nchw)
    return nchw_matrix_preferred(p) ? depthwise_variant::nchw_matrix : depthwise_variant::automatic;
  return matrix_preferred(p) ? depthwise_variant::nhwc_matrix : depthwise_variant::automatic;
}

// Why `variant` of the register family cannot run the forward of `p` with elements of type T on
// `dev` (gated: the data gradient's kernel), to follow the variant's name (empty: it can).
template <class T>
std::string register_refusal(depthwise_variant variant, const depthwise_params& p, const platform::device_properties& dev,
                             bool gated = false) {
  if (variant == depthwise_variant::nhwc_matrix) {
    const std::string limit = matrix_limits<T>(p, dev);
    if (!limit.empty()) return " " + limit;
    matrix_plan plan;
    return plan_nhwc_matrix<T>(p, dev, plan) ? "" : ": the grid is too large";
  }
  if (variant == depthwise_variant::nchw_matrix) {
    const std::string limit = nchw_matrix_limits<T>(p, dev);
    if (!limit.empty()) return " " + limit;
    nchw_matrix_plan plan;
    return plan_nchw_matrix<T>(p, dev, nullptr, nullptr, plan) ? "" : ": the grid is too large";
  }
  const bool nhwc = variant == depthwise_variant::nhwc_register;
  const std::string limit = nhwc ? register_limits(p, sizeof(T)) : nchw_register_limits(p);
  if (!limit.empty()) return " " + limit;
  const auto fits = [&] {  // (the plan of the kernel that would run)
    if (const int side = small_map_side<T>(p)) {
      register_plan plan;
      return plan_small_map<T>(p, side, dev, nullptr, nullptr, nullptr, nullptr, plan);
    }
    if (!nhwc) {
      nchw_register_plan plan;
      return plan_nchw_register<T>(p, dev, nullptr, nullptr, nullptr, plan, gated);
    }
    if (runs_column<T>(gated)) {
      register_column_plan plan;
      return plan_nhwc_register_column(p, dev, nullptr, nullptr, nullptr, plan);
    }
    register_plan plan;
    return plan_nhwc_register<T>(p, dev, nullptr, nullptr, nullptr, plan, gated);
  };
  return fits() ? "" : ": the grid is too large";
}

}  // namespace detail

// Whether `variant` can run problem `p` with elements of type T on the current device (a
// host-only check; no buffers involved). unsupported_variant names the reason in
// last_error_detail().
template <class T = float>
status can_implement(depthwise_variant variant, const depthwise_params& p) {
  if (!is_valid(variant))
    return detail::invalid(status::invalid_variant, "depthwise", "variant value " + std::to_string(static_cast<int>(variant)));
  status s = detail::validate_params(p, sizeof(T));
  if (s != status::success) return s;
  if (variant == depthwise_variant::automatic || variant == depthwise_variant::direct) return status::success;
  platform::device_properties dev;
  s = platform::get_device_properties(dev);
  if (s != status::success) return s;
  if (detail::register_family(variant)) {
    const std::string refusal = detail::register_refusal<T>(variant, p, dev);
    return refusal.empty() ? status::success
                           : detail::invalid(status::unsupported_variant, "depthwise", to_string(variant) + refusal);
  }
  detail::depthwise_plan plan;
  const T* aligned = nullptr;  // the plan's feasibility does not depend on the pointer
  const bool nchw = variant == depthwise_variant::nchw_tiled;
  if (p.data_layout != (nchw ? layout::nchw : layout::nhwc))
    return detail::invalid(status::unsupported_variant, "depthwise",
                           std::string(to_string(variant)) + " needs the " + (nchw ? "nchw" : "nhwc") + " layout");
  if (p.multiplier != 1)
    return detail::invalid(status::unsupported_variant, "depthwise", std::string(to_string(variant)) + " needs multiplier 1");
  const bool fits = nchw ? detail::plan_nchw_tiled(p, dev, aligned, plan) : detail::plan_nhwc_tiled(p, dev, aligned, plan);
  if (!fits)
    return detail::invalid(status::unsupported_variant, "depthwise",
                           std::string(to_string(variant)) + ": even one output row's input exceeds shared memory, or the grid is too large");
  return status::success;
}

namespace detail {

// The variant that `automatic` runs for `p` with elements of type T on the current device:
// the variant a GPU of the device's architecture measured fastest on this layer where it can run
// `p` (`tables`: tuning/variant_choice.hpp); else, by rule, the fewest instructions per DRAM byte
// by count (scripts/sass_budget.py): the layout's tensor-core kernel (16-bit) where it applies and
// the rule prefers it (preferred_matrix), else the layout's register-blocked kernel where it
// applies, else the shared-memory tiled kernel of the layout where it applies, else the direct
// kernel.
template <class T>
depthwise_variant select_depthwise(const depthwise_params& p, const tuning::variant_table* tables,
                                   std::size_t table_count) {
  const bool nchw = p.data_layout == layout::nchw;
  const std::string detail = last_error_detail();  // a refusal here is a choice, not an error to report
  platform::device_properties dev;
  const tuning::variant_row* row =
      platform::get_device_properties(dev) == status::success ? tuning::measured_depthwise<T>(dev.arch, p, tables, table_count)
                                                              : nullptr;
  const depthwise_variant measured = row ? tuning::variant_named(row->variant, all_depthwise_variants) : depthwise_variant::automatic;
  depthwise_variant v = depthwise_variant::automatic;
  for (depthwise_variant candidate : {measured, preferred_matrix(p),
                                      nchw ? depthwise_variant::nchw_register : depthwise_variant::nhwc_register,
                                      nchw ? depthwise_variant::nchw_tiled : depthwise_variant::nhwc_tiled})
    if (v == depthwise_variant::automatic && candidate != depthwise_variant::automatic &&
        can_implement<T>(candidate, p) == status::success)
      v = candidate;
  platform::error_detail_slot() = detail;
  return v == depthwise_variant::automatic ? depthwise_variant::direct : v;
}

}  // namespace detail

template <class T = float>
depthwise_variant select_variant(const depthwise_params& p) {
  return detail::select_depthwise<T>(p, detail::tuning::variant_tables, detail::tuning::variant_table_count);
}

namespace detail {

// Launches the forward tiled kernel of the layout that `plan` was made for: the forward of
// shape `s` (the layer's, or the transposed problem of a stride-1 data gradient: grad_output
// through its gate, the filter rotated).
template <class T>
status launch_forward_tiled(const depthwise_params& p, const depthwise_shape& s, const depthwise_plan& plan, const T* input,
                            gate_tensor<T> gate, const T* weight, const T* bias, T* output, T* pre_activation,
                            stream_t stream) {
  if (p.data_layout == layout::nchw)
    return platform::launch(tiled_kernel<nchw_tiled_family, T>(p), plan.launch("depthwise_nchw_tiled", stream), s, plan.tile,
                            input, gate, weight, bias, output, pre_activation);
  return platform::launch(tiled_kernel<nhwc_tiled_family, T>(p), plan.launch("depthwise_nhwc_tiled", stream), s, plan.tile,
                          input, gate, weight, bias, output, pre_activation);
}

// Launches the kernel of `variant` of the register family for the forward of shape `s` (the
// layer's, or, G != none, the transposed problem `p` of a stride-1 data gradient: grad_output
// through the gate, the filter rotated; nhwc_register's for float on the column kernel,
// runs_column; the small-map kernel on maps of 1, 2 or 4 outputs a side, small_map_side).
// Accesses are as wide as every tensor's alignment
// allows, the gate's saved tensor included; the tensor-core kernels, whose accesses are 16-byte
// vectors (nhwc_matrix) or words (nchw_matrix), run as their layout's register kernel (the same
// operation) where a tensor is not aligned to that.
template <class T, gate_kind G>
status launch_forward_register(depthwise_variant variant, const depthwise_params& p, const depthwise_shape& s,
                               const platform::device_properties& dev, const T* input, register_gate gate, const T* weight,
                               const T* bias, T* output, T* pre_activation, stream_t stream) {
  if (variant == depthwise_variant::nhwc_matrix) {
    if (all_aligned(16, {input, gate.saved, output, pre_activation}))
      return launch_matrix<T, G>(p, s, dev, input, gate, weight, bias, output, pre_activation, stream);
    variant = depthwise_variant::nhwc_register;
  }
  if (variant == depthwise_variant::nchw_matrix) {
    if constexpr (sizeof(T) == 2 && platform::compiles_mma_sync) {
      if (all_aligned(4, {input, gate.saved, output, pre_activation})) {
        nchw_matrix_plan mp;
        if (!plan_nchw_matrix<T>(p, dev, input, gate.saved, mp))
          return invalid(status::unsupported_variant, "depthwise", "nchw_matrix: the grid exceeds the device's limits");
        return platform::launch(nchw_matrix_kernel<T, G>(p, mp.plane), mp.launch(stream), s, mp.tile, input, gate, weight, bias, output,
                                pre_activation);
      }
    }
    variant = depthwise_variant::nchw_register;
  }
  if (const int side = small_map_side<T>(p)) {  // (maps of 1, 2 or 4 outputs a side, either layout)
    register_plan sp;
    if (plan_small_map<T>(p, side, dev, input, gate.saved, output, pre_activation, sp))
      return platform::launch(small_map_kernel<T, G>(p, side), sp.launch(stream, "depthwise_small_map"), s, sp.tile, input,
                              gate, weight, bias, output, pre_activation);
    return invalid(status::unsupported_variant, "depthwise", "no launch plan for the chosen variant");
  }
  const T* least = least_aligned(input, gate.saved);
  if (variant == depthwise_variant::nhwc_register) {
    if constexpr (runs_column<T>(G != gate_kind::none)) {
      register_column_plan cp;
      if (plan_nhwc_register_column(p, dev, input, gate.saved, output, cp))
        return platform::launch(register_column_kernel<G>(p, cp.tile), cp.launch(stream), s, cp.tile, input, gate, weight,
                                output);
    } else {
      register_plan rp;
      if (plan_nhwc_register<T>(p, dev, least, output, pre_activation, rp, G != gate_kind::none))
        return platform::launch(register_kernel<T, G>(p), rp.launch(stream), s, rp.tile, input, gate, weight, bias,
                                output, pre_activation);
    }
  } else {
    nchw_register_plan rp;
    if (plan_nchw_register<T>(p, dev, least, output, pre_activation, rp, G != gate_kind::none))
      return platform::launch(nchw_register_kernel<T, G>(p), rp.launch(stream), s, rp.tile, input, gate, weight,
                              bias, output, pre_activation);
  }
  return invalid(status::unsupported_variant, "depthwise", "no launch plan for the chosen variant");
}

}  // namespace detail

template <class T>
status depthwise_forward(const depthwise_params& p, const depthwise_options& options, const T* input, const T* weight,
                         const T* bias, T* output, stream_t stream = {}) {
  const detail::forward_saved saved = detail::forward_saved::of(options);
  platform::device_properties dev;
  depthwise_variant variant = depthwise_variant::automatic;
  const status s = detail::prepare_launch(
      detail::validate(p, input, weight, bias, output, saved), options.variant,
      [&] { return can_implement<T>(options.variant, p); }, [&] { return select_variant<T>(p); }, dev, variant);
  if (s != status::success) return s;
  detail::depthwise_shape shape = detail::make_shape(p);
  T* pre = saved.written<T>();
  shape.save_derivative = saved.writes_derivative();
  detail::depthwise_plan plan;
  switch (variant) {
    case depthwise_variant::nchw_tiled:
    case depthwise_variant::nhwc_tiled: {
      const bool nchw = variant == depthwise_variant::nchw_tiled;
      if (!(nchw ? detail::plan_nchw_tiled(p, dev, input, plan) : detail::plan_nhwc_tiled(p, dev, input, plan))) break;
      return detail::launch_forward_tiled(p, shape, plan, input, detail::gate_tensor<T>{nullptr, activation::none}, weight,
                                          bias, output, pre, stream);
    }
    case depthwise_variant::nhwc_matrix:
    case depthwise_variant::nchw_matrix:
    case depthwise_variant::nhwc_register:
    case depthwise_variant::nchw_register:
      return detail::launch_forward_register<T, detail::gate_kind::none>(variant, p, shape, dev, input,
                                                                       detail::register_gate{nullptr, 0.f, 0u},
                                                       weight, bias, output, pre, stream);
    case depthwise_variant::automatic:
    case depthwise_variant::direct:
      return platform::launch(platform::registered<kernels::depthwise_direct<T>>(),
                              detail::grid_stride_launch(shape.output_elements(), detail::grid_stride_block_threads, dev,
                                                         stream, "depthwise_direct"),
                              shape, input, weight, bias, output, pre);
  }
  return detail::invalid(status::unsupported_variant, "depthwise", "no launch plan for the chosen variant");
}

// input [n,c,h,w] (nchw) or [n,h,w,c] (nhwc); weight [c*multiplier, kernel_h, kernel_w];
// bias [c*multiplier] or nullptr; output [n, c*multiplier, out_h, out_w] in the input's
// layout. output = act(conv + bias). Queued on `stream`; nothing is launched or written
// unless the result is success.
template <class T>
status depthwise_forward(const depthwise_params& p, const T* input, const T* weight, const T* bias, T* output,
                         stream_t stream = {}) {
  return depthwise_forward(p, depthwise_options{}, input, weight, bias, output, stream);
}

}  // namespace dsconv
