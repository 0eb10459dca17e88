#pragma once
// The problem description and the weights of an inverted-residual block (MobileNetV2's,
// EfficientNet-B0's MBConv): expand 1x1 (c_in -> expanded, act), depthwise kernel x kernel
// (stride, padding kernel / 2, act), optional squeeze-excitation (global average pool,
// reduce 1x1 to se_channels with act, expand 1x1 back with sigmoid, scale), project 1x1
// (expanded -> c_out, no activation), optional residual add of the block's input.

#include "params.hpp"
#include "types.hpp"

namespace dsconv {

struct inverted_residual_params {
  int n = 0, c_in = 0, h = 0, w = 0;  // the block's input
  layout data_layout = layout::nchw;  // of input and output (and the workspace's tensors)
  int expanded = 0;                   // channels after the expand 1x1; equal to c_in: no expand layer
  int kernel = 3;                     // the depthwise filter (square), padded by kernel / 2
  int stride = 1;
  int se_channels = 0;                // squeeze-excitation's reduced channels; 0: no squeeze-excitation
  int c_out = 0;
  activation act = activation::relu6;  // after expand, depthwise and the squeeze-excitation reduce
  bool residual = false;               // output += input (needs stride 1 and c_out == c_in)
  // float only: lets NVIDIA tensor cores multiply the block's 1x1 layers (the unfused
  // sequence's and the squeeze-excitation path's; the fused kernel keeps float on the SIMT
  // cores there) with operands rounded to TF32, as pointwise_params::allow_tf32 does a layer's.
  // Off by default: the tensor cores then multiply float in two TF32 parts (about fp32's
  // accuracy).
  bool allow_tf32 = false;

  bool has_expand() const { return expanded != c_in; }
  // The depthwise layer's output extent (0 where the parameters are invalid).
  int out_h() const { return depthwise().out_h(); }
  int out_w() const { return depthwise().out_w(); }

  // The block's layers as dsconv's layer problems (what the unfused sequence runs).
  pointwise_params expand() const {
    pointwise_params p;
    p.n = n, p.c_in = c_in, p.c_out = expanded, p.h = h, p.w = w, p.data_layout = data_layout, p.act = act;
    p.allow_tf32 = allow_tf32;
    return p;
  }
  depthwise_params depthwise() const {
    depthwise_params p;
    p.n = n, p.c = expanded, p.h = h, p.w = w, p.kernel_h = p.kernel_w = kernel, p.stride_h = p.stride_w = stride;
    p.pad_h = p.pad_w = kernel > 0 ? kernel / 2 : 0, p.data_layout = data_layout, p.act = act;
    return p;
  }
  // The squeeze-excitation's two 1x1 layers on the pooled [n][expanded] vector (1x1 maps).
  pointwise_params se_reduce() const {
    pointwise_params p;
    p.n = n, p.c_in = expanded, p.c_out = se_channels, p.h = p.w = 1, p.data_layout = data_layout, p.act = act;
    p.allow_tf32 = allow_tf32;
    return p;
  }
  pointwise_params se_expand() const {
    pointwise_params p;
    p.n = n, p.c_in = se_channels, p.c_out = expanded, p.h = p.w = 1, p.data_layout = data_layout,
    p.act = activation::sigmoid, p.allow_tf32 = allow_tf32;
    return p;
  }
  pointwise_params project() const {
    pointwise_params p;
    p.n = n, p.c_in = expanded, p.c_out = c_out, p.h = out_h(), p.w = out_w(), p.data_layout = data_layout,
    p.act = activation::none, p.allow_tf32 = allow_tf32;
    return p;
  }
};

// The block's weights, already folded with their batch norms (fold_batch_norm), in device
// memory. Biases may be null (zero). Layer weights as the layer calls take them.
template <class T>
struct inverted_residual_weights {
  const T* expand_weight = nullptr;     // [expanded][c_in]; unused without an expand layer
  const T* expand_bias = nullptr;       // [expanded]
  const T* depthwise_weight = nullptr;  // [expanded][kernel][kernel]
  const T* depthwise_bias = nullptr;    // [expanded]
  const T* se_reduce_weight = nullptr;  // [se_channels][expanded]; unused without squeeze-excitation
  const T* se_reduce_bias = nullptr;    // [se_channels]
  const T* se_expand_weight = nullptr;  // [expanded][se_channels]
  const T* se_expand_bias = nullptr;    // [expanded]
  const T* project_weight = nullptr;    // [c_out][expanded]
  const T* project_bias = nullptr;      // [c_out]
};

}  // namespace dsconv
