#pragma once
// Every public entry point returns a status; success is the only value that means
// "work was queued". Each failure names one precise cause.

namespace dsconv {

enum class status {
  success = 0,
  // Problem description errors (nothing launched, nothing written).
  invalid_size,            // n, c, h, w, c_in or c_out is zero or negative
  invalid_kernel_size,     // kernel_h or kernel_w < 1
  invalid_stride,          // stride_h or stride_w < 1
  invalid_dilation,        // dilation_h or dilation_w < 1
  invalid_padding,         // pad_h or pad_w < 0
  invalid_multiplier,      // depthwise channel multiplier < 1
  invalid_output_size,     // the padded input is smaller than the dilated kernel
  invalid_layout,          // a layout value that is not one of dsconv::layout
  invalid_activation,      // an activation value that is not one of dsconv::activation
  invalid_variant,         // an explicit kernel variant value that does not exist
  unsupported_variant,     // an explicit kernel variant that cannot run this problem
  null_pointer,            // input, weight or output is null
  overlapping_buffers,     // the output range overlaps an input, weight, bias or residual range
  size_overflow,           // an element or byte count does not fit the 64-bit index type
  insufficient_workspace,  // the variant needs more workspace than the options provide
  missing_activation_tensor,  // a backward call of a layer with a fused activation has no saved tensor
  conflicting_activation_tensors,  // two saved tensors given where one is read (activation_saved and
                                   // activation_derivative; a forward's pre_activation and activation_derivative)
  invalid_residual,        // a block's residual add with a stride other than 1 or c_out != c_in
  invalid_batch_norm,      // fold_batch_norm: a channel's var + eps is not positive and finite
  // Platform errors.
  no_device,               // no GPU, or no driver for it
  out_of_memory,           // an allocation failed
  invalid_launch_config,   // grid, block or shared memory beyond the device's limits
  launch_failed,           // the runtime refused or aborted a kernel launch
  barrier_divergence,      // host platform: not every thread of a block reached a barrier
  kernel_fault,            // host platform: a kernel thread threw or failed a check
  platform_error,          // any other runtime error; last_error_detail() has its text
};

// Human-readable text for a status; never null, also for values outside the enum.
inline const char* to_string(status s) noexcept {
  switch (s) {
    case status::success: return "success";
    case status::invalid_size: return "invalid size: a tensor dimension is zero or negative";
    case status::invalid_kernel_size: return "invalid kernel size: kernel_h and kernel_w must be >= 1";
    case status::invalid_stride: return "invalid stride: stride_h and stride_w must be >= 1";
    case status::invalid_dilation: return "invalid dilation: dilation_h and dilation_w must be >= 1";
    case status::invalid_padding: return "invalid padding: pad_h and pad_w must be >= 0";
    case status::invalid_multiplier: return "invalid channel multiplier: must be >= 1";
    case status::invalid_output_size: return "invalid output size: the dilated kernel is larger than the padded input";
    case status::invalid_layout: return "invalid layout: not a dsconv::layout value";
    case status::invalid_activation: return "invalid activation: not a dsconv::activation value";
    case status::invalid_variant: return "invalid variant: not a kernel variant of this operation";
    case status::unsupported_variant: return "unsupported variant: the requested kernel variant cannot run this problem";
    case status::null_pointer: return "null pointer: input, weight and output must not be null";
    case status::overlapping_buffers: return "overlapping buffers: the output overlaps an input buffer";
    case status::size_overflow: return "size overflow: an element or byte count exceeds the 64-bit index type";
    case status::insufficient_workspace:
      return "insufficient workspace: the variant needs more workspace than the options provide (pointwise_workspace_size)";
    case status::missing_activation_tensor:
      return "missing activation tensor: the backward of a fused activation needs the tensor the forward saved "
             "(backward options: activation_saved or activation_derivative; plain backward calls take activation::none)";
    case status::conflicting_activation_tensors:
      return "conflicting activation tensors: give one of activation_saved and activation_derivative (a forward: one "
             "of pre_activation and activation_derivative)";
    case status::invalid_residual:
      return "invalid residual: a block adds its input only with stride 1 and c_out == c_in";
    case status::invalid_batch_norm: return "invalid batch norm: a channel's var + eps is not positive and finite";
    case status::no_device: return "no device: no usable GPU or driver was found";
    case status::out_of_memory: return "out of memory: a device allocation failed";
    case status::invalid_launch_config: return "invalid launch configuration: grid, block or shared memory exceeds the device limits";
    case status::launch_failed: return "launch failed: the runtime could not launch or complete the kernel";
    case status::barrier_divergence: return "barrier divergence: not every thread of a block reached the same barrier";
    case status::kernel_fault: return "kernel fault: a kernel thread raised an error";
    case status::platform_error: return "platform error: the GPU runtime reported an error";
  }
  return "unknown status value";
}

}  // namespace dsconv
