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
#include "dispatch/pointwise.hpp"

// `prefix` is `template` (an explicit instantiation) or `extern template` (a declaration
// that one exists elsewhere).
#define DSCONV_INSTANTIATE_DEPTHWISE(prefix, T)                                                                   \
  namespace dsconv {                                                                                            \
  prefix status depthwise_forward<T>(const depthwise_params&, const depthwise_options&, const T*, const T*,      \
                                     const T*, T*, stream_t);                                                   \
  prefix status depthwise_forward<T>(const depthwise_params&, const T*, const T*, const T*, T*, stream_t);        \
  prefix status can_implement<T>(depthwise_variant, const depthwise_params&);                                   \
  prefix depthwise_variant select_variant<T>(const depthwise_params&);                                          \
  }

#define DSCONV_INSTANTIATE_POINTWISE(prefix, T)                                                                   \
  namespace dsconv {                                                                                            \
  prefix status pointwise_forward<T>(const pointwise_params&, const pointwise_options&, const T*, const T*,      \
                                     const T*, const T*, T*, stream_t);                                         \
  prefix status pointwise_forward<T>(const pointwise_params&, const T*, const T*, const T*, const T*, T*,        \
                                     stream_t);                                                                 \
  prefix status can_implement<T>(pointwise_variant, const pointwise_params&);                                   \
  prefix pointwise_variant select_variant<T>(const pointwise_params&, const pointwise_options&);                \
  prefix std::size_t pointwise_workspace_size<T>(const pointwise_params&);                                      \
  }

#if defined(DSCONV_EXTERN_TEMPLATES)
DSCONV_INSTANTIATE_DEPTHWISE(extern template, float)
DSCONV_INSTANTIATE_DEPTHWISE(extern template, ::dsconv::half)
DSCONV_INSTANTIATE_DEPTHWISE(extern template, ::dsconv::bfloat16)
DSCONV_INSTANTIATE_POINTWISE(extern template, float)
DSCONV_INSTANTIATE_POINTWISE(extern template, ::dsconv::half)
DSCONV_INSTANTIATE_POINTWISE(extern template, ::dsconv::bfloat16)
#endif
