// Instantiates every kernel of the library (all entry points for all element types), so a
// compiler's resource report covers each one. Compiled, never run, by
// scripts/kernel_resources.py, one operation at a time where DSCONV_RESOURCE_OPERATION names
// it (1 depthwise, 2 pointwise, 3 inverted_residual), the other operations declared extern
// (DSCONV_EXTERN_TEMPLATES): smaller compilations, largest first, keep the cores busy to the
// end, where one source per target left one core idle for a third of the step.
// DSCONV_RESOURCE_TYPE (1 float, 2 half, 3 bfloat16) narrows that to one element type (the
// bfloat16 kernels' sm_90 SASS, from a compute_90 PTX of their own: kernel_resources.py).
#include <dsconv/dsconv.hpp>

// M(template, T) for each element type T that DSCONV_RESOURCE_TYPE leaves in.
#if !defined(DSCONV_RESOURCE_TYPE) || DSCONV_RESOURCE_TYPE == 1
#define DSCONV_RESOURCE_FLOAT(M) M(template, float)
#else
#define DSCONV_RESOURCE_FLOAT(M)
#endif
#if !defined(DSCONV_RESOURCE_TYPE) || DSCONV_RESOURCE_TYPE == 2
#define DSCONV_RESOURCE_HALF(M) M(template, ::dsconv::half)
#else
#define DSCONV_RESOURCE_HALF(M)
#endif
#if !defined(DSCONV_RESOURCE_TYPE) || DSCONV_RESOURCE_TYPE == 3
#define DSCONV_RESOURCE_BFLOAT16(M) M(template, ::dsconv::bfloat16)
#else
#define DSCONV_RESOURCE_BFLOAT16(M)
#endif
#define DSCONV_RESOURCE_TYPES(M) DSCONV_RESOURCE_FLOAT(M) DSCONV_RESOURCE_HALF(M) DSCONV_RESOURCE_BFLOAT16(M)

#if !defined(DSCONV_RESOURCE_OPERATION) || DSCONV_RESOURCE_OPERATION == 1
DSCONV_RESOURCE_TYPES(DSCONV_INSTANTIATE_DEPTHWISE)
#endif
#if !defined(DSCONV_RESOURCE_OPERATION) || DSCONV_RESOURCE_OPERATION == 2
DSCONV_RESOURCE_TYPES(DSCONV_INSTANTIATE_POINTWISE)
#endif
#if !defined(DSCONV_RESOURCE_OPERATION) || DSCONV_RESOURCE_OPERATION == 3
DSCONV_RESOURCE_TYPES(DSCONV_INSTANTIATE_INVERTED_RESIDUAL)
#endif

int main() { return 0; }
