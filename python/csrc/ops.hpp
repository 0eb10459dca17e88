#pragma once
// The dsconv operators of the PyTorch package, written once for every platform: ops_cpu.cpp
// compiles them for the host platform (the CPU dispatch key), ops_cuda.cu for CUDA. Each
// checks what PyTorch hands it (dims, dtypes, devices, contiguity) with TORCH_CHECK, picks the
// layout from the input's memory format (channels_last: NHWC kernels, else NCHW), allocates
// outputs and workspaces with PyTorch's allocator, calls dsconv and turns any status but
// success into an exception that carries dsconv's status name and its detail text.
//
// Schemas (registered in ops_cpu.cpp):
//   depthwise_conv2d(input, weight, bias?, stride[2], padding[2], dilation[2], activation,
//                    save_derivative) -> (output, derivative)
//   depthwise_conv2d_backward(grad_output, input, weight, saved, stride[2], padding[2],
//                             dilation[2], activation, output_mask[3])
//                             -> (grad_input, grad_weight, grad_bias)
//   pointwise_conv2d(input, weight, bias?, activation, save_derivative)
//                    -> (output, derivative)
//   pointwise_conv2d_backward(grad_output, input, weight, saved, activation, output_mask[3])
//                             -> (grad_input, grad_weight, grad_bias)
// activation is one of dsconv's names (none, relu, relu6, silu, sigmoid, hardswish).
// derivative (act'(z), z = conv + bias the activation's input) is written only where asked and
// the activation's gradient needs it (silu, sigmoid, hardswish); otherwise it is an empty tensor.
// It takes the bytes z would, and the backward's gate is then one multiply an element in every
// kernel (dsconv's activation_derivative). `saved` is what the activation's gradient reads: the
// output for relu and relu6, the derivative for the others, ignored for none. grad_output is
// dL/d(output): the backward applies the activation's gradient as it reads it. Masked-out
// gradients come back undefined.
//
// Everything here has internal linkage: the host and CUDA builds of these functions differ,
// and each lives in its own shared library.

#include <ATen/ATen.h>
#include <torch/library.h>

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>

#include <dsconv/dsconv.hpp>

namespace dsconv_torch {
namespace {

using tensor_pair = std::tuple<at::Tensor, at::Tensor>;
using tensor_triple = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

// How the calling platform runs a call: its stream, and whether float 1x1 layers may use
// TF32 tensor cores (PyTorch's convolution setting on CUDA; never on the host platform).
struct device_context {
  dsconv::stream_t stream{};
  bool allow_tf32 = false;
};

void check_status(const char* call, dsconv::status s) {
  TORCH_CHECK(s == dsconv::status::success, "dsconv.", call, ": ", dsconv::to_string(s), ": ", dsconv::last_error_detail());
}

dsconv::activation parse_activation(c10::string_view name) {
  for (dsconv::activation a : {dsconv::activation::none, dsconv::activation::relu, dsconv::activation::relu6,
                               dsconv::activation::silu, dsconv::activation::sigmoid, dsconv::activation::hardswish})
    if (name == dsconv::to_string(a)) return a;
  TORCH_CHECK(false, "dsconv: unknown activation '", std::string(name.data(), name.size()),
              "' (none, relu, relu6, silu, sigmoid, hardswish)");
  return dsconv::activation::none;
}

// The activations whose gradient reads the derivative the forward saved (the others read the
// output).
bool gradient_reads_derivative(dsconv::activation a) {
  return a == dsconv::activation::silu || a == dsconv::activation::sigmoid || a == dsconv::activation::hardswish;
}

int to_int(int64_t v, const char* what) {
  TORCH_CHECK(v >= 0 && v <= std::numeric_limits<int>::max(), "dsconv: ", what, " (", v, ") does not fit in an int");
  return static_cast<int>(v);
}

// Calls f with a null pointer of the dsconv element type of `t`.
template <class F>
auto with_element_type(at::ScalarType t, F&& f) {
  switch (t) {
    case at::kFloat: return f(static_cast<float*>(nullptr));
    case at::kHalf: return f(static_cast<dsconv::half*>(nullptr));
    case at::kBFloat16: return f(static_cast<dsconv::bfloat16*>(nullptr));
    default: break;
  }
  TORCH_CHECK(false, "dsconv: unsupported dtype ", t, " (float32, float16 and bfloat16 are)");
  return f(static_cast<float*>(nullptr));  // (not reached)
}

template <class T>
const T* data(const at::Tensor& t) {
  return t.defined() && t.numel() > 0 ? reinterpret_cast<const T*>(t.data_ptr()) : nullptr;
}
template <class T>
T* mutable_data(at::Tensor& t) {
  return t.defined() && t.numel() > 0 ? reinterpret_cast<T*>(t.data_ptr()) : nullptr;
}

// channels_last input: NHWC kernels; anything else is made contiguous and runs NCHW.
at::MemoryFormat memory_format_of(const at::Tensor& input) {
  return input.suggest_memory_format() == at::MemoryFormat::ChannelsLast ? at::MemoryFormat::ChannelsLast
                                                                         : at::MemoryFormat::Contiguous;
}
dsconv::layout layout_of(at::MemoryFormat f) {
  return f == at::MemoryFormat::ChannelsLast ? dsconv::layout::nhwc : dsconv::layout::nchw;
}

// A 4-d activation tensor of the input's dtype and device (the name says which in errors).
void check_activation_tensor(const char* call, const char* name, const at::Tensor& t, const at::Tensor& input) {
  TORCH_CHECK(t.defined(), "dsconv.", call, ": ", name, " is undefined");
  TORCH_CHECK(t.dim() == 4, "dsconv.", call, ": ", name, " must be 4-d (N, C, H, W), got ", t.dim(), "-d");
  TORCH_CHECK(t.scalar_type() == input.scalar_type(), "dsconv.", call, ": ", name, " is ", t.scalar_type(),
              " but input is ", input.scalar_type());
  TORCH_CHECK(t.device() == input.device(), "dsconv.", call, ": ", name, " is on ", t.device(), " but input is on ",
              input.device());
}

// Weight (and bias) checks shared by both operations: dtype and device of the input, contiguous.
void check_weight(const char* call, const at::Tensor& weight, const c10::optional<at::Tensor>& bias, const at::Tensor& input) {
  TORCH_CHECK(input.dim() == 4, "dsconv.", call, ": input must be 4-d (N, C, H, W), got ", input.dim(), "-d");
  TORCH_CHECK(weight.dim() == 4, "dsconv.", call, ": weight must be 4-d, got ", weight.dim(), "-d");
  TORCH_CHECK(weight.scalar_type() == input.scalar_type(), "dsconv.", call, ": weight is ", weight.scalar_type(),
              " but input is ", input.scalar_type());
  TORCH_CHECK(weight.device() == input.device(), "dsconv.", call, ": weight is on ", weight.device(),
              " but input is on ", input.device());
  TORCH_CHECK(weight.is_contiguous(), "dsconv.", call, ": weight must be contiguous");
  if (bias && bias->defined()) {
    TORCH_CHECK(bias->dim() == 1 && bias->size(0) == weight.size(0), "dsconv.", call, ": bias must have shape [",
                weight.size(0), "], got ", bias->sizes());
    TORCH_CHECK(bias->scalar_type() == input.scalar_type(), "dsconv.", call, ": bias is ", bias->scalar_type(),
                " but input is ", input.scalar_type());
    TORCH_CHECK(bias->device() == input.device(), "dsconv.", call, ": bias is on ", bias->device(),
                " but input is on ", input.device());
    TORCH_CHECK(bias->is_contiguous(), "dsconv.", call, ": bias must be contiguous");
  }
}

void check_pair(const char* call, const char* name, at::IntArrayRef v) {
  TORCH_CHECK(v.size() == 2, "dsconv.", call, ": ", name, " must have 2 values, got ", v.size());
}

// dsconv's description of a depthwise layer from PyTorch's (weight [C * m, 1, kh, kw]).
dsconv::depthwise_params depthwise_problem(const char* call, const at::Tensor& input, const at::Tensor& weight,
                                           at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                                           dsconv::activation act, at::MemoryFormat format) {
  check_pair(call, "stride", stride);
  check_pair(call, "padding", padding);
  check_pair(call, "dilation", dilation);
  const int64_t c = input.size(1);
  TORCH_CHECK(weight.size(1) == 1 && c > 0 && weight.size(0) % c == 0 && weight.size(0) > 0, "dsconv.", call,
              ": a depthwise weight has shape [C * multiplier, 1, kh, kw] for C = ", c, " input channels, got ",
              weight.sizes());
  dsconv::depthwise_params p;
  p.n = to_int(input.size(0), "batch");
  p.c = to_int(c, "channels");
  p.h = to_int(input.size(2), "height");
  p.w = to_int(input.size(3), "width");
  p.kernel_h = to_int(weight.size(2), "kernel height");
  p.kernel_w = to_int(weight.size(3), "kernel width");
  p.stride_h = to_int(stride[0], "stride");
  p.stride_w = to_int(stride[1], "stride");
  p.pad_h = to_int(padding[0], "padding");
  p.pad_w = to_int(padding[1], "padding");
  p.dilation_h = to_int(dilation[0], "dilation");
  p.dilation_w = to_int(dilation[1], "dilation");
  p.multiplier = to_int(weight.size(0) / c, "multiplier");
  p.data_layout = layout_of(format);
  p.act = act;
  return p;
}

// dsconv's description of a 1x1 layer from PyTorch's (weight [C_out, C_in, 1, 1]).
dsconv::pointwise_params pointwise_problem(const char* call, const at::Tensor& input, const at::Tensor& weight,
                                           dsconv::activation act, at::MemoryFormat format, bool allow_tf32) {
  TORCH_CHECK(weight.size(1) == input.size(1) && weight.size(2) == 1 && weight.size(3) == 1, "dsconv.", call,
              ": a 1x1 weight has shape [C_out, ", input.size(1), ", 1, 1], got ", weight.sizes());
  dsconv::pointwise_params p;
  p.n = to_int(input.size(0), "batch");
  p.c_in = to_int(input.size(1), "input channels");
  p.c_out = to_int(weight.size(0), "output channels");
  p.h = to_int(input.size(2), "height");
  p.w = to_int(input.size(3), "width");
  p.data_layout = layout_of(format);
  p.act = act;
  p.allow_tf32 = allow_tf32;
  return p;
}

// A device buffer of `bytes` on `like`'s device for a call's workspace, named in its options;
// the caller keeps the returned tensor alive until the call has been queued (PyTorch's
// allocator orders its reuse after the stream's work).
template <class Options>
at::Tensor attach_workspace(Options& o, std::size_t bytes, const at::Tensor& like) {
  at::Tensor ws = bytes ? at::empty({static_cast<int64_t>(bytes)}, like.options().dtype(at::kByte)) : at::Tensor();
  o.workspace = bytes ? ws.data_ptr() : nullptr;
  o.workspace_bytes = bytes;
  return ws;
}

// The output (and the derivative) of a forward call, allocated in the input's memory format.
struct forward_outputs {
  at::Tensor output, derivative;
  forward_outputs(const at::Tensor& input, at::IntArrayRef sizes, at::MemoryFormat format, dsconv::activation act,
                  bool save_derivative)
      : output(at::empty(sizes, input.options().memory_format(format))),
        derivative(save_derivative && gradient_reads_derivative(act)
                           ? at::empty(sizes, input.options().memory_format(format))
                           : at::empty({0}, input.options())) {}
};

// The gradients a backward call was asked for (grad_weight also where only the bias's is:
// dsconv computes them in one pass).
struct backward_outputs {
  at::Tensor grad_input, grad_weight, grad_bias;
  backward_outputs(const at::Tensor& input, const at::Tensor& weight, at::MemoryFormat format, std::array<bool, 3> mask)
      : grad_input(mask[0] ? at::empty(input.sizes(), input.options().memory_format(format)) : at::Tensor()),
        grad_weight(mask[1] || mask[2] ? at::empty_like(weight, at::MemoryFormat::Contiguous) : at::Tensor()),
        grad_bias(mask[2] ? at::empty({weight.size(0)}, weight.options()) : at::Tensor()) {}
  tensor_triple result(std::array<bool, 3> mask) const {
    return {grad_input, mask[1] ? grad_weight : at::Tensor(), grad_bias};
  }
  // An empty batch's: every gradient asked for is zero (grad_input has no elements).
  tensor_triple zero(std::array<bool, 3> mask) {
    for (at::Tensor* t : {&grad_weight, &grad_bias})
      if (t->defined()) t->zero_();
    return result(mask);
  }
};

// grad_output and the saved tensor, in the forward's layout, checked against its output shape.
struct backward_inputs {
  at::Tensor grad_output, saved;
  backward_inputs(const char* call, const at::Tensor& grad_output_, const at::Tensor& saved_, const at::Tensor& input,
                  at::IntArrayRef out_sizes, dsconv::activation act, at::MemoryFormat format) {
    check_activation_tensor(call, "grad_output", grad_output_, input);
    TORCH_CHECK(grad_output_.sizes() == out_sizes, "dsconv.", call, ": grad_output has shape ", grad_output_.sizes(),
                ", the layer's output ", out_sizes);
    grad_output = grad_output_.contiguous(format);
    if (act != dsconv::activation::none) {
      check_activation_tensor(call, gradient_reads_derivative(act) ? "saved (the derivative)" : "saved (the output)",
                              saved_, input);
      TORCH_CHECK(saved_.sizes() == out_sizes, "dsconv.", call, ": the saved tensor has shape ", saved_.sizes(),
                  ", the layer's output ", out_sizes);
      saved = saved_.contiguous(format);
    }
  }
};

// dsconv's verdict on a layer before anything is allocated: every parameter valid (an empty
// batch, which PyTorch allows and dsconv does not, is judged as a batch of one).
template <class T>
void check_problem(const char* call, dsconv::depthwise_params p) {
  p.n = p.n == 0 ? 1 : p.n;
  check_status(call, dsconv::can_implement<T>(dsconv::depthwise_variant::automatic, p));
}
template <class T>
void check_problem(const char* call, dsconv::pointwise_params p) {
  p.n = p.n == 0 ? 1 : p.n;
  check_status(call, dsconv::can_implement<T>(dsconv::pointwise_variant::automatic, p));
}

// The dsconv calls of each operation's backward, so that one function runs either.
struct depthwise_calls {
  using options = dsconv::depthwise_backward_options;
  template <class T>
  static std::size_t data_workspace_size(const dsconv::depthwise_params&) {
    return 0;  // (the depthwise data gradient uses none)
  }
  template <class T>
  static std::size_t weight_workspace_size(const dsconv::depthwise_params& p) {
    return dsconv::depthwise_backward_weight_workspace_size<T>(p);
  }
  template <class T, class... Args>
  static dsconv::status data(Args... args) {
    return dsconv::depthwise_backward_data<T>(args...);
  }
  template <class T, class... Args>
  static dsconv::status weight(Args... args) {
    return dsconv::depthwise_backward_weight<T>(args...);
  }
};
struct pointwise_calls {
  using options = dsconv::pointwise_backward_options;
  template <class T>
  static std::size_t data_workspace_size(const dsconv::pointwise_params& p) {
    return dsconv::pointwise_backward_data_workspace_size<T>(p);
  }
  template <class T>
  static std::size_t weight_workspace_size(const dsconv::pointwise_params& p) {
    return dsconv::pointwise_backward_weight_workspace_size<T>(p);
  }
  template <class T, class... Args>
  static dsconv::status data(Args... args) {
    return dsconv::pointwise_backward_data<T>(args...);
  }
  template <class T, class... Args>
  static dsconv::status weight(Args... args) {
    return dsconv::pointwise_backward_weight<T>(args...);
  }
};

// The gradients `mask` asks for, of the layer `p` (checked), with `out_sizes` its output's:
// grad_input from the data gradient call, grad_weight and grad_bias from one weight gradient
// call, each with the workspace that lets it spread its sums over the device.
template <class Calls, class T, class Params>
tensor_triple run_backward(const char* call, const Params& p, const at::Tensor& grad_output, const at::Tensor& saved,
                           const at::Tensor& input_, const at::Tensor& weight, at::IntArrayRef out_sizes,
                           at::MemoryFormat format, std::array<bool, 3> mask, const device_context& ctx) {
  check_problem<T>(call, p);
  const at::Tensor input = input_.contiguous(format);
  const backward_inputs in(call, grad_output, saved, input, out_sizes, p.act, format);
  backward_outputs out(input, weight, format, mask);
  if (p.n == 0) return out.zero(mask);  // an empty batch: no contribution to the weight's gradient
  typename Calls::options o;
  (gradient_reads_derivative(p.act) ? o.activation_derivative : o.activation_saved) = data<T>(in.saved);
  if (mask[0]) {
    const at::Tensor ws = attach_workspace(o, Calls::template data_workspace_size<T>(p), input);
    check_status(call, Calls::template data<T>(p, o, data<T>(in.grad_output), data<T>(weight),
                                               mutable_data<T>(out.grad_input), ctx.stream));
  }
  if (mask[1] || mask[2]) {
    const at::Tensor ws = attach_workspace(o, Calls::template weight_workspace_size<T>(p), input);
    check_status(call, Calls::template weight<T>(p, o, data<T>(input), data<T>(in.grad_output),
                                                 mutable_data<T>(out.grad_weight), mutable_data<T>(out.grad_bias),
                                                 ctx.stream));
  }
  return out.result(mask);
}

tensor_pair depthwise_conv2d(const at::Tensor& input_, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                             at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                             c10::string_view activation, bool save_derivative, const device_context& ctx) {
  constexpr const char* call = "depthwise_conv2d";
  check_weight(call, weight, bias, input_);
  const dsconv::activation act = parse_activation(activation);
  const at::MemoryFormat format = memory_format_of(input_);
  const dsconv::depthwise_params p = depthwise_problem(call, input_, weight, stride, padding, dilation, act, format);
  return with_element_type(input_.scalar_type(), [&](auto* type) -> tensor_pair {
    using T = std::remove_pointer_t<decltype(type)>;
    check_problem<T>(call, p);
    const at::Tensor input = input_.contiguous(format);
    forward_outputs out(input, {input.size(0), p.out_c(), p.out_h(), p.out_w()}, format, act, save_derivative);
    if (p.n == 0) return {out.output, out.derivative};  // an empty batch: nothing to compute
    dsconv::depthwise_options o;
    o.activation_derivative = mutable_data<T>(out.derivative);
    check_status(call, dsconv::depthwise_forward<T>(p, o, data<T>(input), data<T>(weight), bias ? data<T>(*bias) : nullptr,
                                                    mutable_data<T>(out.output), ctx.stream));
    return {out.output, out.derivative};
  });
}

tensor_triple depthwise_conv2d_backward(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
                                        const at::Tensor& saved, at::IntArrayRef stride, at::IntArrayRef padding,
                                        at::IntArrayRef dilation, c10::string_view activation, std::array<bool, 3> mask,
                                        const device_context& ctx) {
  constexpr const char* call = "depthwise_conv2d_backward";
  check_weight(call, weight, c10::nullopt, input);
  const at::MemoryFormat format = memory_format_of(input);
  const dsconv::depthwise_params p =
      depthwise_problem(call, input, weight, stride, padding, dilation, parse_activation(activation), format);
  return with_element_type(input.scalar_type(), [&](auto* type) {
    return run_backward<depthwise_calls, std::remove_pointer_t<decltype(type)>>(
        call, p, grad_output, saved, input, weight, {input.size(0), p.out_c(), p.out_h(), p.out_w()}, format, mask, ctx);
  });
}

tensor_pair pointwise_conv2d(const at::Tensor& input_, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                             c10::string_view activation, bool save_derivative, const device_context& ctx) {
  constexpr const char* call = "pointwise_conv2d";
  check_weight(call, weight, bias, input_);
  const dsconv::activation act = parse_activation(activation);
  const at::MemoryFormat format = memory_format_of(input_);
  const dsconv::pointwise_params p = pointwise_problem(call, input_, weight, act, format, ctx.allow_tf32);
  return with_element_type(input_.scalar_type(), [&](auto* type) -> tensor_pair {
    using T = std::remove_pointer_t<decltype(type)>;
    check_problem<T>(call, p);
    const at::Tensor input = input_.contiguous(format);
    forward_outputs out(input, {input.size(0), weight.size(0), input.size(2), input.size(3)}, format, act,
                        save_derivative);
    if (p.n == 0) return {out.output, out.derivative};  // an empty batch: nothing to compute
    dsconv::pointwise_options o;
    const at::Tensor ws = attach_workspace(o, dsconv::pointwise_workspace_size<T>(p), input);
    o.activation_derivative = mutable_data<T>(out.derivative);
    check_status(call, dsconv::pointwise_forward<T>(p, o, data<T>(input), data<T>(weight), bias ? data<T>(*bias) : nullptr,
                                                    nullptr, mutable_data<T>(out.output), ctx.stream));
    return {out.output, out.derivative};
  });
}

tensor_triple pointwise_conv2d_backward(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
                                        const at::Tensor& saved, c10::string_view activation, std::array<bool, 3> mask,
                                        const device_context& ctx) {
  constexpr const char* call = "pointwise_conv2d_backward";
  check_weight(call, weight, c10::nullopt, input);
  const at::MemoryFormat format = memory_format_of(input);
  const dsconv::pointwise_params p =
      pointwise_problem(call, input, weight, parse_activation(activation), format, ctx.allow_tf32);
  return with_element_type(input.scalar_type(), [&](auto* type) {
    return run_backward<pointwise_calls, std::remove_pointer_t<decltype(type)>>(
        call, p, grad_output, saved, input, weight, {input.size(0), weight.size(0), input.size(2), input.size(3)}, format,
        mask, ctx);
  });
}

// The four operators' kernels of one platform, for TORCH_LIBRARY_IMPL: Platform::scope is what
// a call holds while it runs (a device guard, or nothing), Platform::context(input) how it runs.
template <class Platform>
struct platform_kernels {
  static tensor_pair depthwise(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                               at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                               c10::string_view activation, bool save_derivative) {
    const typename Platform::scope scope(input);
    return depthwise_conv2d(input, weight, bias, stride, padding, dilation, activation, save_derivative,
                            Platform::context(input));
  }
  static tensor_triple depthwise_backward(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
                                          const at::Tensor& saved, at::IntArrayRef stride, at::IntArrayRef padding,
                                          at::IntArrayRef dilation, c10::string_view activation, std::array<bool, 3> mask) {
    const typename Platform::scope scope(input);
    return depthwise_conv2d_backward(grad_output, input, weight, saved, stride, padding, dilation, activation, mask,
                                     Platform::context(input));
  }
  static tensor_pair pointwise(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                               c10::string_view activation, bool save_derivative) {
    const typename Platform::scope scope(input);
    return pointwise_conv2d(input, weight, bias, activation, save_derivative, Platform::context(input));
  }
  static tensor_triple pointwise_backward(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
                                          const at::Tensor& saved, c10::string_view activation, std::array<bool, 3> mask) {
    const typename Platform::scope scope(input);
    return pointwise_conv2d_backward(grad_output, input, weight, saved, activation, mask, Platform::context(input));
  }
  static void register_all(torch::Library& m) {
    m.impl("depthwise_conv2d", TORCH_FN(depthwise));
    m.impl("depthwise_conv2d_backward", TORCH_FN(depthwise_backward));
    m.impl("pointwise_conv2d", TORCH_FN(pointwise));
    m.impl("pointwise_conv2d_backward", TORCH_FN(pointwise_backward));
  }
};

}  // namespace
}  // namespace dsconv_torch
