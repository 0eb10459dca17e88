#pragma once
// Kernel variants of each operation, and the options that let a caller force one. The
// default, automatic, lets the heuristic choose from the problem and the device.

#include <cstddef>

#include "../params.hpp"
#include "../status.hpp"

namespace dsconv {

enum class depthwise_variant {
  automatic,   // the heuristic's choice
  direct,      // one output per thread; any shape
  nchw_tiled,  // NCHW, multiplier 1: bands of rows (or groups of small planes) staged in shared memory
  nhwc_tiled,  // NHWC, multiplier 1: bands of rows x 32 bytes of channels staged in shared memory
  nhwc_register,  // NHWC forward, multiplier 1, 3x3 and 5x5 filters of stride 1 or 2, channels in whole
                  // 16-byte vectors: a strip of outputs per thread for a vector of channels, inputs
                  // straight from global memory into registers (kernels/depthwise/nhwc_register.hpp)
  nchw_register,  // NCHW forward, multiplier 1, 3x3 and 5x5 filters of stride 1 or 2 with padding kernel / 2:
                  // bands of rows x 16 bytes of outputs of one plane per thread, inputs straight from
                  // global memory into registers (kernels/depthwise/nchw_register.hpp)
  nhwc_matrix,    // NHWC forward, half and bfloat16 on NVIDIA tensor cores, nhwc_register's filters, channels
                  // in whole 16-byte vectors: 16 pixels x 8 channels an mma per pair of taps, the filter as
                  // a block-diagonal operand (kernels/depthwise/nhwc_matrix.hpp)
  nchw_matrix,    // NCHW forward, half and bfloat16 on NVIDIA tensor cores, nchw_register's filters, even row
                  // widths: 16 x 16 outputs of a plane (two images' at stride 1) a warp, a filter row as a
                  // Toeplitz operand (kernels/depthwise/nchw_matrix.hpp); tensors not aligned to 4 bytes
                  // run as nchw_register
};

enum class pointwise_variant {
  automatic,   // the heuristic's choice
  direct,      // one output per thread; any shape
  gemm_large,  // tiled SIMT GEMM, 128x128 tiles, 8x8 outputs per thread
  gemm_small,  // tiled SIMT GEMM, 64x64 tiles, 4x4 outputs per thread (more blocks for small grids)
  warp_dot,    // one warp per output, K split over its lanes: matrix-vector and skinny shapes (GEMM side <= 8)
  mma_large,   // matrix-unit GEMM, 128x128 tiles: NVIDIA sm_80+ tensor cores (half, bfloat16, and float
               // as two TF32 parts, or one with allow_tf32), sm_75 ones (half), AMD gfx90a/gfx94x
               // matrix cores (half, bfloat16, float as fp32)
  mma_small,   // matrix-unit GEMM, 64x64 tiles (more blocks for small grids)
  split_k,     // 64x64 tiles (tensor cores where mma_small runs) with K split over several blocks,
               // partial sums in the caller's workspace, summed in a fixed order (deterministic)
  mma_stream,  // forward, NHWC, half and bfloat16 on NVIDIA tensor cores, c_in and c_out multiples of 8:
               // activations straight from global memory into the mma fragments, the weights of a
               // warp's slice of outputs staged once per block (kernels/pointwise/nhwc_stream.hpp)
};

// The inverted-residual block (dispatch/inverted_residual.hpp).
enum class block_variant {
  automatic,  // the planner's choice: fused where its architecture measured it faster (dispatch/tuning/block_fusion.hpp)
  unfused,    // the layer calls in sequence (expand, depthwise, squeeze-excitation, project) through
              // the caller's workspace: any block
  fused,      // NHWC blocks whose one-pixel tile fits a block's shared memory: without
              // squeeze-excitation (c_out <= 512), expand, depthwise and project in one kernel per
              // output tile, the expanded tensor produced a slice of channels at a time in shared
              // memory and never written to global memory; with it, expand and depthwise in that
              // kernel (the depthwise output and the pool's tile sums written once), then the
              // squeeze-excitation and the project (workspace: inverted_residual_workspace_size)
};

struct depthwise_options {
  depthwise_variant variant = depthwise_variant::automatic;
  // Where set, the forward also writes z = conv + bias, the activation's input, here (shaped
  // like the output, of the call's element type): what the backward of silu, sigmoid and
  // hardswish reads (depthwise_backward_options::activation_saved). It must overlap no tensor.
  void* pre_activation = nullptr;
  // Where set (instead of pre_activation: one of the two), the forward writes act'(z), the
  // activation's derivative at its input, here (shaped like the output, of the call's element
  // type): what the backward multiplies dL/dy by (depthwise_backward_options::
  // activation_derivative), which every data-gradient kernel then does with one multiply an
  // element, for any activation. The same bytes as saving z, and the fastest backward. It must
  // overlap no tensor.
  void* activation_derivative = nullptr;
};

struct pointwise_options {
  pointwise_variant variant = pointwise_variant::automatic;
  // Device memory the split_k variant may use for partial sums (pointwise_workspace_size says
  // how much); without it the heuristic never picks split_k, and forcing it fails with
  // insufficient_workspace. It must not overlap any tensor of the call.
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  // As depthwise_options::pre_activation and activation_derivative: z = conv + bias + residual
  // (act'(z): mma_stream's epilogue writes it; the other variants' write z and a second pass over
  // the tensor turns it into act'(z): kernels/pointwise/derivative_in_place.hpp).
  void* pre_activation = nullptr;
  void* activation_derivative = nullptr;
};

// Options of inverted_residual_forward. The workspace holds the unfused sequence's
// intermediate tensors (inverted_residual_workspace_size says how much; the fused variant
// needs none); automatic never chooses a variant whose workspace it lacks. It must overlap no
// tensor of the call.
struct inverted_residual_options {
  block_variant variant = block_variant::automatic;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// Options of the backward calls (depthwise_backward.hpp, pointwise_backward.hpp).
//   variant           the kernel variant (the forward's variants; automatic: the heuristic's)
//   workspace         device memory for the weight gradient's partial sums (and pointwise
//                     split_k's), sized by the *_workspace_size calls: with it the partial sums of
//                     many blocks are added in a fixed order afterwards (so results are the same
//                     bits on every run), which spreads long reductions over the whole device;
//                     without it each block sums its whole reduction. It must overlap no tensor.
//   activation_saved  for a layer whose forward fused an activation (params.act != none): the
//                     tensor the forward saved, shaped like its output, of the call's element
//                     type: the output y for relu and relu6, the activation's input z (the
//                     forward's pre_activation option) for silu, sigmoid and hardswish. grad_output
//                     is then dL/dy, and the call multiplies it by act'(z) as it reads it, so that
//                     training needs no separate pass over the tensor. Read only when act != none.
//   activation_derivative  instead of activation_saved (one of the two): act'(z) as the forward
//                     wrote it (its activation_derivative option), for any activation: the gate is
//                     one multiply an element, and every data-gradient kernel applies it inline
//                     (from a saved z, silu, sigmoid and hardswish run on the tiled kernels).
struct depthwise_backward_options {
  depthwise_variant variant = depthwise_variant::automatic;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  const void* activation_saved = nullptr;
  const void* activation_derivative = nullptr;
};

struct pointwise_backward_options {
  pointwise_variant variant = pointwise_variant::automatic;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  const void* activation_saved = nullptr;
  const void* activation_derivative = nullptr;
};

constexpr bool is_valid(depthwise_variant v) noexcept {
  return v == depthwise_variant::automatic || v == depthwise_variant::direct || v == depthwise_variant::nchw_tiled ||
         v == depthwise_variant::nhwc_tiled || v == depthwise_variant::nhwc_register ||
         v == depthwise_variant::nchw_register || v == depthwise_variant::nhwc_matrix ||
         v == depthwise_variant::nchw_matrix;
}
constexpr bool is_valid(pointwise_variant v) noexcept {
  return v == pointwise_variant::automatic || v == pointwise_variant::direct || v == pointwise_variant::gemm_large ||
         v == pointwise_variant::gemm_small || v == pointwise_variant::warp_dot || v == pointwise_variant::mma_large ||
         v == pointwise_variant::mma_small || v == pointwise_variant::split_k || v == pointwise_variant::mma_stream;
}

constexpr bool is_valid(block_variant v) noexcept {
  return v == block_variant::automatic || v == block_variant::unfused || v == block_variant::fused;
}

inline const char* to_string(depthwise_variant v) noexcept {
  switch (v) {
    case depthwise_variant::automatic: return "automatic";
    case depthwise_variant::direct: return "direct";
    case depthwise_variant::nchw_tiled: return "nchw_tiled";
    case depthwise_variant::nhwc_tiled: return "nhwc_tiled";
    case depthwise_variant::nhwc_register: return "nhwc_register";
    case depthwise_variant::nchw_register: return "nchw_register";
    case depthwise_variant::nhwc_matrix: return "nhwc_matrix";
    case depthwise_variant::nchw_matrix: return "nchw_matrix";
  }
  return "unknown depthwise variant";
}

inline const char* to_string(pointwise_variant v) noexcept {
  switch (v) {
    case pointwise_variant::automatic: return "automatic";
    case pointwise_variant::direct: return "direct";
    case pointwise_variant::gemm_large: return "gemm_large";
    case pointwise_variant::gemm_small: return "gemm_small";
    case pointwise_variant::warp_dot: return "warp_dot";
    case pointwise_variant::mma_large: return "mma_large";
    case pointwise_variant::mma_small: return "mma_small";
    case pointwise_variant::split_k: return "split_k";
    case pointwise_variant::mma_stream: return "mma_stream";
  }
  return "unknown pointwise variant";
}

inline const char* to_string(block_variant v) noexcept {
  switch (v) {
    case block_variant::automatic: return "automatic";
    case block_variant::unfused: return "unfused";
    case block_variant::fused: return "fused";
  }
  return "unknown block variant";
}

// Every concrete variant (automatic excluded), for tests and benchmarks that force each.
inline constexpr depthwise_variant all_depthwise_variants[] = {depthwise_variant::direct, depthwise_variant::nchw_tiled,
                                                               depthwise_variant::nhwc_tiled,
                                                               depthwise_variant::nhwc_register,
                                                               depthwise_variant::nchw_register,
                                                               depthwise_variant::nhwc_matrix,
                                                               depthwise_variant::nchw_matrix};
inline constexpr pointwise_variant all_pointwise_variants[] = {pointwise_variant::direct, pointwise_variant::gemm_large,
                                                               pointwise_variant::gemm_small, pointwise_variant::warp_dot,
                                                               pointwise_variant::mma_large, pointwise_variant::mma_small,
                                                               pointwise_variant::split_k, pointwise_variant::mma_stream};
inline constexpr block_variant all_block_variants[] = {block_variant::unfused, block_variant::fused};

}  // namespace dsconv
