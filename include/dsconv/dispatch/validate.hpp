#pragma once
// Validation of a problem and its buffers, before anything is launched. Each failure returns
// its own status, and last_error_detail() names the offending value.

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "../config.hpp"
#include "../kernels/common/activation.hpp"
#include "../params.hpp"
#include "../platform/error_detail.hpp"
#include "../platform/float16.hpp"
#include "../status.hpp"

namespace dsconv {
namespace detail {

template <class T>
inline constexpr bool is_element_type =
    std::is_same<T, float>::value || std::is_same<T, half>::value || std::is_same<T, bfloat16>::value;
// The forward layers' references also take double tensors (the block's reference composes them
// without rounding between layers); the library's calls never do.
template <class T>
inline constexpr bool is_reference_type = is_element_type<T> || std::is_same<T, double>::value;

// The byte extent of one buffer.
struct buffer {
  const void* ptr;
  index_t bytes;
};

inline status invalid(status s, const char* op, const std::string& what) {
  return platform::fail(s, std::string(op) + ": " + what);
}

// Multiplies extents (each already known to be positive) and the element size in 64-bit
// arithmetic; false when the byte count does not fit index_t.
inline bool byte_count(std::initializer_list<index_t> extents, std::size_t element_bytes, index_t& bytes) {
  index_t r = static_cast<index_t>(element_bytes);
  for (index_t e : extents)
    if (__builtin_mul_overflow(r, e, &r)) return false;
  bytes = r;
  return true;
}

inline bool wraps_address_space(const buffer& b) {
  std::uintptr_t end;
  return __builtin_add_overflow(reinterpret_cast<std::uintptr_t>(b.ptr), static_cast<std::uintptr_t>(b.bytes), &end);
}

inline bool overlap(const buffer& a, const buffer& b) {
  if (!a.ptr || !b.ptr) return false;
  const auto a0 = reinterpret_cast<std::uintptr_t>(a.ptr), b0 = reinterpret_cast<std::uintptr_t>(b.ptr);
  return a0 < b0 + static_cast<std::uintptr_t>(b.bytes) && b0 < a0 + static_cast<std::uintptr_t>(a.bytes);
}

// Checks the buffers of a problem whose sizes are valid: non-null where required, no
// address-space wrap, and a written buffer (`written`: the output, or a workspace) that
// overlaps none of the others.
inline status check_buffers(const char* op, const buffer& output, std::initializer_list<std::pair<const char*, buffer>> inputs,
                            std::initializer_list<const char*> optional, const std::string& written = "output") {
  if (!output.ptr) return invalid(status::null_pointer, op, written + " is null");
  for (const auto& in : inputs) {
    bool may_be_null = false;
    for (const char* name : optional) may_be_null = may_be_null || std::string(name) == in.first;
    if (!in.second.ptr && !may_be_null) return invalid(status::null_pointer, op, std::string(in.first) + " is null");
  }
  if (wraps_address_space(output)) return invalid(status::size_overflow, op, written + " range wraps the address space");
  for (const auto& in : inputs) {
    if (in.second.ptr && wraps_address_space(in.second))
      return invalid(status::size_overflow, op, std::string(in.first) + " range wraps the address space");
    if (overlap(output, in.second)) return invalid(status::overlapping_buffers, op, written + " overlaps " + in.first);
  }
  return status::success;
}

inline status check_enums(const char* op, layout l, activation a) {
  if (!is_valid(l)) return invalid(status::invalid_layout, op, "layout value " + std::to_string(static_cast<int>(l)));
  if (!is_valid(a)) return invalid(status::invalid_activation, op, "activation value " + std::to_string(static_cast<int>(a)));
  return status::success;
}

inline status check_positive(const char* op, status s, std::initializer_list<std::pair<const char*, int>> values, int minimum) {
  for (const auto& v : values)
    if (v.second < minimum)
      return invalid(s, op, std::string(v.first) + " = " + std::to_string(v.second) + " (must be >= " + std::to_string(minimum) + ")");
  return status::success;
}

// Everything about a depthwise problem that does not involve its buffers, for elements of
// `element_bytes` bytes.
inline status validate_params(const depthwise_params& p, std::size_t element_bytes) {
  const char* op = "depthwise";
  status s = check_enums(op, p.data_layout, p.act);
  if (s == status::success) s = check_positive(op, status::invalid_size, {{"n", p.n}, {"c", p.c}, {"h", p.h}, {"w", p.w}}, 1);
  if (s == status::success) s = check_positive(op, status::invalid_kernel_size, {{"kernel_h", p.kernel_h}, {"kernel_w", p.kernel_w}}, 1);
  if (s == status::success) s = check_positive(op, status::invalid_stride, {{"stride_h", p.stride_h}, {"stride_w", p.stride_w}}, 1);
  if (s == status::success)
    s = check_positive(op, status::invalid_dilation, {{"dilation_h", p.dilation_h}, {"dilation_w", p.dilation_w}}, 1);
  if (s == status::success) s = check_positive(op, status::invalid_padding, {{"pad_h", p.pad_h}, {"pad_w", p.pad_w}}, 0);
  if (s == status::success) s = check_positive(op, status::invalid_multiplier, {{"multiplier", p.multiplier}}, 1);
  if (s != status::success) return s;
  const long long oh = conv_out_extent(p.h, p.kernel_h, p.stride_h, p.pad_h, p.dilation_h);
  const long long ow = conv_out_extent(p.w, p.kernel_w, p.stride_w, p.pad_w, p.dilation_w);
  if (oh == 0 || ow == 0)
    return invalid(status::invalid_output_size, op,
                   "output " + std::to_string(oh) + "x" + std::to_string(ow) + ": the dilated kernel exceeds the padded input");
  // Kernels compute coordinates in int: every padded extent must fit one (which bounds the
  // output extents and the dilated kernel spans too).
  const long long int_max = 2147483647LL;
  if (p.h + 2LL * p.pad_h > int_max || p.w + 2LL * p.pad_w > int_max || p.out_c() > int_max)
    return invalid(status::size_overflow, op, "a padded input extent or the output channel count does not fit an int");
  index_t bytes;
  if (!byte_count({p.n, p.c, p.h, p.w}, element_bytes, bytes) || !byte_count({p.n, p.out_c(), oh, ow}, element_bytes, bytes) ||
      !byte_count({p.out_c(), p.kernel_h, p.kernel_w}, element_bytes, bytes))
    return invalid(status::size_overflow, op, "a tensor's byte count exceeds the 64-bit index type");
  return status::success;
}

// The byte extents of a depthwise problem's tensors (for params that passed validate_params).
struct depthwise_extents {
  index_t input, output, weight, bias;
  template <class T>
  static depthwise_extents of(const depthwise_params& p) {
    const index_t e = sizeof(T);
    return {e * p.n * p.c * p.h * p.w, e * p.n * p.out_c() * p.out_h() * p.out_w(), e * p.out_c() * p.kernel_h * p.kernel_w,
            e * p.out_c()};
  }
};

// The tensor a forward writes for its backward where asked (its options): z (pre_activation) or
// act'(z) (activation_derivative), not both.
struct forward_saved {
  void* pre_activation = nullptr;
  void* derivative = nullptr;
  template <class Options>
  static forward_saved of(const Options& o) { return {o.pre_activation, o.activation_derivative}; }
  template <class T>
  T* written() const { return static_cast<T*>(derivative ? derivative : pre_activation); }
  bool writes_derivative() const { return derivative != nullptr; }
  const char* name() const { return derivative ? "activation_derivative" : "pre_activation"; }
};

inline status check_forward_saved(const char* op, forward_saved saved) {
  if (saved.pre_activation && saved.derivative)
    return invalid(status::conflicting_activation_tensors, op, "pre_activation and activation_derivative both given");
  return status::success;
}

// The tensor the forward saves (optional, from depthwise_options) is written too: it must
// overlap no tensor.
template <class T>
status validate(const depthwise_params& p, const T* input, const T* weight, const T* bias, const T* output,
                forward_saved saved = {}) {
  static_assert(is_reference_type<T>, "element type must be float, dsconv::half or dsconv::bfloat16");
  status s = validate_params(p, sizeof(T));
  if (s == status::success) s = check_forward_saved("depthwise", saved);
  if (s != status::success) return s;
  const depthwise_extents x = depthwise_extents::of<T>(p);
  const buffer in{input, x.input}, w{weight, x.weight}, b{bias, x.bias}, out{output, x.output};
  s = check_buffers("depthwise", out, {{"input", in}, {"weight", w}, {"bias", b}}, {"bias"});
  if (s != status::success || !saved.written<T>()) return s;
  return check_buffers("depthwise", buffer{saved.written<T>(), x.output},
                       {{"input", in}, {"weight", w}, {"bias", b}, {"output", out}}, {"bias"}, saved.name());
}

// The tensors a backward call may be given for its fused activation's gate: the one the forward
// saved (activation_saved) or act'(z) (activation_derivative); one of them where act is not none.
struct activation_tensors {
  const void* saved = nullptr;
  const void* derivative = nullptr;
  // The one the gate reads (nullptr: none; the activation none reads none), and its name.
  const void* read(activation act) const { return act == activation::none ? nullptr : derivative ? derivative : saved; }
  const char* name() const { return derivative ? "activation_derivative" : "activation_saved"; }
  // The activation the gate applies to what it reads: saved_derivative (one multiply) where it
  // reads the derivative, else the layer's.
  activation gate(activation act) const { return act != activation::none && derivative ? saved_derivative : act; }
};

// The tensors of a backward call's options (depthwise_backward_options, pointwise_backward_options).
template <class Options>
activation_tensors gates_of(const Options& o) {
  return {o.activation_saved, o.activation_derivative};
}

inline status check_activation_saved(const char* op, activation act, activation_tensors gates) {
  if (act == activation::none) return status::success;
  if (gates.saved && gates.derivative)
    return invalid(status::conflicting_activation_tensors, op, "activation_saved and activation_derivative both given");
  if (!gates.saved && !gates.derivative)
    return invalid(status::missing_activation_tensor, op,
                   std::string("activation ") + to_string(act) +
                       " needs the tensor its forward saved (activation_saved) or its derivative (activation_derivative)");
  return status::success;
}

// Every buffer that a call writes (a gradient, the optional bias gradient, a block's output,
// a workspace) overlaps none of the other buffers of the call, written or read.
inline status check_backward_buffers(const char* op, std::initializer_list<std::pair<const char*, buffer>> written,
                                     std::initializer_list<std::pair<const char*, buffer>> read,
                                     std::initializer_list<const char*> optional) {
  for (const auto& out : written) {
    bool may_be_null = false;
    for (const char* name : optional) may_be_null = may_be_null || std::string(name) == out.first;
    if (!out.second.ptr && may_be_null) continue;
    std::vector<std::pair<const char*, buffer>> others(read);
    for (const auto& other : written)
      if (other.first != out.first) others.push_back(other);
    for (const auto& other : others) {
      // check_buffers takes its inputs as an initializer list: check them one at a time.
      const status s = check_buffers(op, out.second, {other}, optional, out.first);
      if (s != status::success) return s;
    }
    if (others.empty()) {
      const status s = check_buffers(op, out.second, {}, optional, out.first);
      if (s != status::success) return s;
    }
  }
  return status::success;
}

inline status validate_params(const pointwise_params& p, std::size_t element_bytes) {
  const char* op = "pointwise";
  status s = check_enums(op, p.data_layout, p.act);
  if (s == status::success)
    s = check_positive(op, status::invalid_size, {{"n", p.n}, {"c_in", p.c_in}, {"c_out", p.c_out}, {"h", p.h}, {"w", p.w}}, 1);
  if (s != status::success) return s;
  index_t bytes;
  if (!byte_count({p.n, p.c_in, p.h, p.w}, element_bytes, bytes) || !byte_count({p.n, p.c_out, p.h, p.w}, element_bytes, bytes) ||
      !byte_count({p.c_out, p.c_in}, element_bytes, bytes))
    return invalid(status::size_overflow, op, "a tensor's byte count exceeds the 64-bit index type");
  return status::success;
}

struct pointwise_extents {
  index_t input, output, weight, bias;
  template <class T>
  static pointwise_extents of(const pointwise_params& p) {
    const index_t e = sizeof(T);
    return {e * p.n * p.c_in * p.h * p.w, e * p.n * p.c_out * p.h * p.w, e * p.c_out * p.c_in, e * p.c_out};
  }
};

// `workspace` and the tensor the forward saves (optional, from pointwise_options) are written
// too: they must overlap no tensor.
template <class T>
status validate(const pointwise_params& p, const T* input, const T* weight, const T* bias, const T* residual,
                const T* output, buffer workspace = {nullptr, 0}, forward_saved saved = {}) {
  static_assert(is_reference_type<T>, "element type must be float, dsconv::half or dsconv::bfloat16");
  status s = validate_params(p, sizeof(T));
  if (s == status::success) s = check_forward_saved("pointwise", saved);
  if (s != status::success) return s;
  const pointwise_extents x = pointwise_extents::of<T>(p);
  const buffer in{input, x.input}, w{weight, x.weight}, bi{bias, x.bias}, res{residual, x.output}, out{output, x.output};
  s = check_buffers("pointwise", out, {{"input", in}, {"weight", w}, {"bias", bi}, {"residual", res}},
                    {"bias", "residual"});
  if (s != status::success) return s;
  const buffer pre{saved.written<T>(), x.output};
  return check_backward_buffers("pointwise", {{"workspace", workspace}, {saved.name(), pre}},
                                {{"input", in}, {"weight", w}, {"bias", bi}, {"residual", res}, {"output", out}},
                                {"bias", "residual", "workspace", saved.name()});
}

// The byte extents and the names of a problem's backward calls, for the checks they share.
template <class T>
depthwise_extents extents_of(const depthwise_params& p) {
  return depthwise_extents::of<T>(p);
}
template <class T>
pointwise_extents extents_of(const pointwise_params& p) {
  return pointwise_extents::of<T>(p);
}
inline const char* backward_name(const depthwise_params&, bool weight) {
  return weight ? "depthwise backward weight" : "depthwise backward data";
}
inline const char* backward_name(const pointwise_params&, bool weight) {
  return weight ? "pointwise backward weight" : "pointwise backward data";
}

// A backward data call of either operation: grad_input from grad_output (gated by
// the activation's derivative from `gates`) and the weight; `workspace` (optional) is written too.
template <class T, class Params>
status validate_backward_data(const Params& p, const T* grad_output, const T* weight, const T* grad_input,
                              activation_tensors gates, buffer workspace = {nullptr, 0}) {
  static_assert(is_element_type<T>, "element type must be float, dsconv::half or dsconv::bfloat16");
  const char* op = backward_name(p, false);
  status s = validate_params(p, sizeof(T));
  if (s == status::success) s = check_activation_saved(op, p.act, gates);
  if (s != status::success) return s;
  const auto x = extents_of<T>(p);
  const void* saved = gates.read(p.act);
  // Named buffers, not temporaries inside the braced lists: nvcc's front end miscompiles the
  // latter in these templates.
  const buffer gi{grad_input, x.input}, go{grad_output, x.output}, w{weight, x.weight}, act{saved, x.output};
  return check_backward_buffers(op, {{"grad_input", gi}, {"workspace", workspace}},
                                {{"grad_output", go}, {"weight", w}, {gates.name(), act}}, {gates.name(), "workspace"});
}

// A backward weight call of either operation: grad_weight and the optional grad_bias from the
// input and grad_output; `workspace` (optional) is written too.
template <class T, class Params>
status validate_backward_weight(const Params& p, const T* input, const T* grad_output, const T* grad_weight,
                                const T* grad_bias, activation_tensors gates, buffer workspace = {nullptr, 0}) {
  static_assert(is_element_type<T>, "element type must be float, dsconv::half or dsconv::bfloat16");
  const char* op = backward_name(p, true);
  status s = validate_params(p, sizeof(T));
  if (s == status::success) s = check_activation_saved(op, p.act, gates);
  if (s != status::success) return s;
  const auto x = extents_of<T>(p);
  const void* saved = gates.read(p.act);
  const buffer gw{grad_weight, x.weight}, gb{grad_bias, x.bias}, in{input, x.input}, go{grad_output, x.output},
      act{saved, x.output};
  return check_backward_buffers(op, {{"grad_weight", gw}, {"grad_bias", gb}, {"workspace", workspace}},
                                {{"input", in}, {"grad_output", go}, {gates.name(), act}},
                                {"grad_bias", "workspace", gates.name()});
}

}  // namespace detail
}  // namespace dsconv
