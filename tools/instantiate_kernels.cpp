// Instantiates every kernel of the library (all entry points for all element types), so a
// compiler's resource report covers each one. Compiled, never run, by
// scripts/kernel_resources.py, one operation at a time where DSCONV_RESOURCE_OPERATION names
// it (1 depthwise, 2 pointwise, 3 inverted_residual), the other operations declared extern
// (DSCONV_EXTERN_TEMPLATES): smaller compilations, largest first, keep the cores busy to the
// end, where one source per target left one core idle for a third of the step.
#include <dsconv/dsconv.hpp>

#if !defined(DSCONV_RESOURCE_OPERATION) || DSCONV_RESOURCE_OPERATION == 1
DSCONV_INSTANTIATE_DEPTHWISE(template, float)
DSCONV_INSTANTIATE_DEPTHWISE(template, ::dsconv::half)
DSCONV_INSTANTIATE_DEPTHWISE(template, ::dsconv::bfloat16)
#endif
#if !defined(DSCONV_RESOURCE_OPERATION) || DSCONV_RESOURCE_OPERATION == 2
DSCONV_INSTANTIATE_POINTWISE(template, float)
DSCONV_INSTANTIATE_POINTWISE(template, ::dsconv::half)
DSCONV_INSTANTIATE_POINTWISE(template, ::dsconv::bfloat16)
#endif
#if !defined(DSCONV_RESOURCE_OPERATION) || DSCONV_RESOURCE_OPERATION == 3
DSCONV_INSTANTIATE_INVERTED_RESIDUAL(template, float)
DSCONV_INSTANTIATE_INVERTED_RESIDUAL(template, ::dsconv::half)
DSCONV_INSTANTIATE_INVERTED_RESIDUAL(template, ::dsconv::bfloat16)
#endif

int main() { return 0; }
