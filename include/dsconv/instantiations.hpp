#pragma once
// Explicit instantiations of the entry points, for programs that compile each kernel once.
// A header-only user needs none of this: every call instantiates what it uses. A project
// that links many programs against the same kernels (dsconv's own tests, benchmarks and
// tools do) defines DSCONV_EXTERN_TEMPLATES for all its sources, so that including
// <dsconv/dsconv.hpp> instantiates nothing, and compiles for each operation and element type
// one source of the form
//   #include <dsconv/dsconv.hpp>
//   DSCONV_INSTANTIATE_POINTWISE(template, float)
// (cmake/instantiate.cpp.in), which the programs link.

#include "dispatch/depthwise.hpp"
#include "dispatch/depthwise_backward.hpp"
#include "dispatch/inverted_residual.hpp"
#include "dispatch/pointwise.hpp"
#include "dispatch/pointwise_backward.hpp"

// `prefix` is `template` (an explicit instantiation) or `extern template` (a declaration
// that one exists elsewhere).
#define DSCONV_INSTANTIATE_DEPTHWISE(prefix, T)                                                                   \
  namespace dsconv {                                                                                            \
  prefix status depthwise_forward<T>(const depthwise_params&, const depthwise_options&, const T*, const T*,      \
                                     const T*, T*, stream_t);                                                   \
  prefix status depthwise_forward<T>(const depthwise_params&, const T*, const T*, const T*, T*, stream_t);        \
  prefix status can_implement<T>(depthwise_variant, const depthwise_params&);                                   \
  prefix depthwise_variant select_variant<T>(const depthwise_params&);                                          \
  prefix status depthwise_backward_data<T>(const depthwise_params&, const depthwise_backward_options&, const T*, \
                                           const T*, T*, stream_t);                                             \
  prefix status depthwise_backward_data<T>(const depthwise_params&, const T*, const T*, T*, stream_t);          \
  prefix status depthwise_backward_weight<T>(const depthwise_params&, const depthwise_backward_options&,         \
                                             const T*, const T*, T*, T*, stream_t);                             \
  prefix status depthwise_backward_weight<T>(const depthwise_params&, const T*, const T*, T*, T*, stream_t);    \
  prefix status can_implement_backward_data<T>(depthwise_variant, const depthwise_params&,                      \
                                               const depthwise_backward_options&);                              \
  prefix status can_implement_backward_weight<T>(depthwise_variant, const depthwise_params&,                    \
                                                 const depthwise_backward_options&);                            \
  prefix depthwise_variant select_backward_data_variant<T>(const depthwise_params&,                             \
                                                           const depthwise_backward_options&);                  \
  prefix depthwise_variant select_backward_weight_variant<T>(const depthwise_params&,                           \
                                                             const depthwise_backward_options&);                \
  prefix std::size_t depthwise_backward_weight_workspace_size<T>(const depthwise_params&, depthwise_variant); \
  }                                                                                                             \
  DSCONV_INSTANTIATE_DEPTHWISE_SELECTORS(prefix, T, ::dsconv::detail::gate_kind::none)                           \
  DSCONV_INSTANTIATE_DEPTHWISE_SELECTORS(prefix, T, ::dsconv::detail::gate_kind::clamp)                          \
  DSCONV_INSTANTIATE_DEPTHWISE_SELECTORS(prefix, T, ::dsconv::detail::gate_kind::scale)

// The selectors of the kernels the tests launch directly (detail::*_kernel, on plans made for a
// device of their own), for gate G: declared extern, the instantiation sources alone compile the
// kernels they name. test_depthwise.cpp had compiled every matrix and register kernel again: 78 s
// of the host build's 593 s of compiling at -O1 (2 cores: 302 s -> 221 s with these).
#define DSCONV_INSTANTIATE_DEPTHWISE_SELECTORS(prefix, T, G)                                                      \
  namespace dsconv {                                                                                            \
  namespace detail {                                                                                            \
  prefix forward_kernel_pointer<T, nchw_register_tile> nchw_register_kernel<T, G>(const depthwise_params&);     \
  prefix transposed_kernel_pointer<T, nchw_register_tile> nchw_register_transposed_kernel<T, G>(                \
      const depthwise_params&, bool);                                                                           \
  prefix transposed_kernel_pointer<T, nhwc_register_tile> register_transposed_kernel<T, G>(                     \
      const depthwise_params&);                                                                                 \
  prefix forward_kernel_pointer<T, nhwc_matrix_tile> matrix_kernel<T, G>(const depthwise_params&, int);         \
  prefix forward_kernel_pointer<T, nchw_matrix_tile> nchw_matrix_kernel<T, G>(const depthwise_params&,        \
                                                                              bool);                            \
  }                                                                                                             \
  }

// The pointwise backward passes run through the forward's GEMM launches (detail::run_gemm), so
// one source per type holds every pointwise kernel.
#define DSCONV_INSTANTIATE_POINTWISE(prefix, T)                                                                   \
  namespace dsconv {                                                                                            \
  namespace detail {                                                                                            \
  prefix status run_gemm<T>(pointwise_variant, const pointwise_params&, const platform::device_properties&,       \
                            stream_t, const gemm_call<T>&, void*, std::size_t);                                 \
  prefix stream_kernel_pointer<T> stream_kernel<T>(const stream_plan&);                                         \
  }                                                                                                             \
  prefix status pointwise_forward<T>(const pointwise_params&, const pointwise_options&, const T*, const T*,      \
                                     const T*, const T*, T*, stream_t);                                         \
  prefix status pointwise_forward<T>(const pointwise_params&, const T*, const T*, const T*, const T*, T*,        \
                                     stream_t);                                                                 \
  prefix status can_implement<T>(pointwise_variant, const pointwise_params&);                                   \
  prefix pointwise_variant select_variant<T>(const pointwise_params&, const pointwise_options&);                \
  prefix std::size_t pointwise_workspace_size<T>(const pointwise_params&);                                      \
  prefix status pointwise_backward_data<T>(const pointwise_params&, const pointwise_backward_options&, const T*, \
                                           const T*, T*, stream_t);                                             \
  prefix status pointwise_backward_data<T>(const pointwise_params&, const T*, const T*, T*, stream_t);          \
  prefix status pointwise_backward_weight<T>(const pointwise_params&, const pointwise_backward_options&,         \
                                             const T*, const T*, T*, T*, stream_t);                             \
  prefix status pointwise_backward_weight<T>(const pointwise_params&, const T*, const T*, T*, T*, stream_t);    \
  prefix status can_implement_backward_data<T>(pointwise_variant, const pointwise_params&);                     \
  prefix status can_implement_backward_weight<T>(pointwise_variant, const pointwise_params&);                   \
  prefix pointwise_variant select_backward_data_variant<T>(const pointwise_params&,                             \
                                                           const pointwise_backward_options&);                  \
  prefix pointwise_variant select_backward_weight_variant<T>(const pointwise_params&,                           \
                                                             const pointwise_backward_options&);                \
  prefix std::size_t pointwise_backward_data_workspace_size<T>(const pointwise_params&);                        \
  prefix std::size_t pointwise_backward_weight_workspace_size<T>(const pointwise_params&);                      \
  }

// The block's own kernels (fused, squeeze-excitation); its unfused sequence calls the layer
// operations' instantiations.
#define DSCONV_INSTANTIATE_INVERTED_RESIDUAL(prefix, T)                                                           \
  namespace dsconv {                                                                                            \
  prefix status inverted_residual_forward<T>(const inverted_residual_params&, const inverted_residual_options&, \
                                             const inverted_residual_weights<T>&, const T*, T*, stream_t);      \
  prefix status inverted_residual_forward<T>(const inverted_residual_params&, const inverted_residual_weights<T>&, \
                                             const T*, T*, stream_t);                                           \
  prefix status can_implement<T>(block_variant, const inverted_residual_params&);                               \
  prefix block_variant select_variant<T>(const inverted_residual_params&, const inverted_residual_options&);     \
  prefix std::size_t inverted_residual_workspace_size<T>(const inverted_residual_params&);                      \
  }

#if defined(DSCONV_EXTERN_TEMPLATES)
DSCONV_INSTANTIATE_DEPTHWISE(extern template, float)
DSCONV_INSTANTIATE_DEPTHWISE(extern template, ::dsconv::half)
DSCONV_INSTANTIATE_DEPTHWISE(extern template, ::dsconv::bfloat16)
DSCONV_INSTANTIATE_POINTWISE(extern template, float)
DSCONV_INSTANTIATE_POINTWISE(extern template, ::dsconv::half)
DSCONV_INSTANTIATE_POINTWISE(extern template, ::dsconv::bfloat16)
DSCONV_INSTANTIATE_INVERTED_RESIDUAL(extern template, float)
DSCONV_INSTANTIATE_INVERTED_RESIDUAL(extern template, ::dsconv::half)
DSCONV_INSTANTIATE_INVERTED_RESIDUAL(extern template, ::dsconv::bfloat16)
#endif
