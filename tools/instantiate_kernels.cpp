// Instantiates every kernel of the library (all entry points for all element types), so a
// compiler's resource report covers each one. Compiled, never run, by
// scripts/kernel_resources.py.
#include <dsconv/dsconv.hpp>

DSCONV_INSTANTIATE_DEPTHWISE(template, float)
DSCONV_INSTANTIATE_DEPTHWISE(template, ::dsconv::half)
DSCONV_INSTANTIATE_DEPTHWISE(template, ::dsconv::bfloat16)
DSCONV_INSTANTIATE_POINTWISE(template, float)
DSCONV_INSTANTIATE_POINTWISE(template, ::dsconv::half)
DSCONV_INSTANTIATE_POINTWISE(template, ::dsconv::bfloat16)
DSCONV_INSTANTIATE_INVERTED_RESIDUAL(template, float)
DSCONV_INSTANTIATE_INVERTED_RESIDUAL(template, ::dsconv::half)
DSCONV_INSTANTIATE_INVERTED_RESIDUAL(template, ::dsconv::bfloat16)

int main() { return 0; }
