"""dsconv for PyTorch: depthwise and 1x1 convolutions with dsconv's kernels, differentiable,
and ``convert`` to put them into a model in one line::

    import dsconv
    y = dsconv.depthwise_conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1)
    y = dsconv.pointwise_conv2d(x, weight, bias=None)
    model = dsconv.convert(model)

On CUDA tensors the operators run dsconv's CUDA kernels on PyTorch's current stream. On CPU
tensors they run dsconv's host platform, which executes the very same GPU kernels on the CPU:
it is there for testing and for machines without a GPU, and is much slower than PyTorch's own
CPU convolution.
"""

from . import _library
from .functional import ACTIVATIONS, depthwise_conv2d, pointwise_conv2d
from .modules import DepthwiseConv2d, PointwiseConv2d, convert, is_depthwise, is_pointwise

has_cuda_kernels = _library.has_cuda_kernels

__all__ = ["ACTIVATIONS", "depthwise_conv2d", "pointwise_conv2d", "DepthwiseConv2d", "PointwiseConv2d", "convert",
           "is_depthwise", "is_pointwise", "has_cuda_kernels"]
