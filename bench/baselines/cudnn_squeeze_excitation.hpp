#pragma once
// The squeeze-excitation's two operations that are no convolutions, as a framework on cuDNN
// runs them in the block baseline (block_sequence.hpp): the global average pool
// (cudnnReduceTensor, AVG over the map, fp32 accumulation) and the scale of the depthwise output
// by the gate (cudnnOpTensor, MUL with the gate broadcast over the map) into a new tensor.

#if defined(DSCONV_PLATFORM_CUDA)

#include <cudnn.h>

#include <string>

#include <dsconv/dsconv.hpp>

#include "cudnn_problem.hpp"

namespace dsconv_bench {
namespace cudnn_detail {

using reduce_descriptor = descriptor<cudnnReduceTensorDescriptor_t, cudnnCreateReduceTensorDescriptor,
                                     cudnnDestroyReduceTensorDescriptor>;
using op_tensor_descriptor =
    descriptor<cudnnOpTensorDescriptor_t, cudnnCreateOpTensorDescriptor, cudnnDestroyOpTensorDescriptor>;

}  // namespace cudnn_detail

template <class T>
class cudnn_squeeze_excitation {
 public:
  // Describes the depthwise output map and the per-channel vectors of `p`; returns an error
  // message, or empty.
  std::string prepare(const dsconv::inverted_residual_params& p) {
    using cudnn_detail::check;
    handle_ = cudnn_detail::handle();
    if (!handle_) return "cudnnCreate failed (no usable GPU or cuDNN library)";
    if (!map_.get() || !vector_.get() || !reduce_.get() || !multiply_.get()) return "cuDNN descriptor creation failed";
    const cudnnTensorFormat_t format = p.data_layout == dsconv::layout::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    const cudnnDataType_t type = cudnn_detail::data_type<T>();
    std::string e = check(cudnnSetTensor4dDescriptor(map_.get(), format, type, p.n, p.expanded, p.out_h(), p.out_w()),
                          "depthwise output descriptor");
    if (e.empty())
      e = check(cudnnSetTensor4dDescriptor(vector_.get(), format, type, p.n, p.expanded, 1, 1), "pooled descriptor");
    if (e.empty())
      e = check(cudnnSetReduceTensorDescriptor(reduce_.get(), CUDNN_REDUCE_TENSOR_AVG, CUDNN_DATA_FLOAT,
                                               CUDNN_NOT_PROPAGATE_NAN, CUDNN_REDUCE_TENSOR_NO_INDICES,
                                               CUDNN_32BIT_INDICES),
                "reduce descriptor");
    if (e.empty())
      e = check(cudnnSetOpTensorDescriptor(multiply_.get(), CUDNN_OP_TENSOR_MUL, CUDNN_DATA_FLOAT,
                                           CUDNN_NOT_PROPAGATE_NAN),
                "op-tensor descriptor");
    std::size_t bytes = 0;
    if (e.empty())
      e = check(cudnnGetReductionWorkspaceSize(handle_, reduce_.get(), map_.get(), vector_.get(), &bytes),
                "reduction workspace size");
    if (e.empty() && workspace_.allocate(bytes) != dsconv::status::success) e = dsconv::last_error_detail();
    label_ = "cudnnReduceTensor AVG, cudnnOpTensor MUL";
    return e;
  }

  const std::string& label() const { return label_; }

  // pooled[n][c] = mean over the map of depthwise[n][c].
  std::string pool(const T* depthwise, T* pooled) const {
    const float one = 1.0f, zero = 0.0f;
    return cudnn_detail::check(cudnnReduceTensor(handle_, reduce_.get(), nullptr, 0, workspace_.data(),
                                                 workspace_.size(), &one, map_.get(), depthwise, &zero,
                                                 vector_.get(), pooled),
                               "cudnnReduceTensor");
  }

  // scaled = depthwise x gate, the gate [n][c] broadcast over the map.
  std::string scale(const T* depthwise, const T* gate, T* scaled) const {
    const float one = 1.0f, zero = 0.0f;
    return cudnn_detail::check(cudnnOpTensor(handle_, multiply_.get(), &one, map_.get(), depthwise, &one,
                                             vector_.get(), gate, &zero, map_.get(), scaled),
                               "cudnnOpTensor");
  }

 private:
  cudnnHandle_t handle_ = nullptr;
  cudnn_detail::tensor_descriptor map_, vector_;
  cudnn_detail::reduce_descriptor reduce_;
  cudnn_detail::op_tensor_descriptor multiply_;
  // Mutable: scratch that every (const) pool writes.
  mutable dsconv::device_buffer<char> workspace_;
  std::string label_;
};

}  // namespace dsconv_bench

#endif
