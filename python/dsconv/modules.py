"""dsconv layers as ``torch.nn`` modules, and ``convert``, which puts them into a model.

A converted layer keeps the ``weight`` and ``bias`` Parameter objects of the ``nn.Conv2d`` it
replaces, under the same names, so ``state_dict`` keys, optimizers that already hold the
parameters, and checkpoints keep working.
"""

import torch
from torch import nn

from . import functional

# The activation modules convert(fuse_activation=True) folds into the convolution before them.
_FUSIBLE_ACTIVATIONS = {nn.ReLU: "relu", nn.ReLU6: "relu6", nn.SiLU: "silu", nn.Sigmoid: "sigmoid",
                        nn.Hardswish: "hardswish"}


class DepthwiseConv2d(nn.Module):
    """A depthwise convolution (groups = in_channels) run by dsconv, with an optional fused activation."""

    def __init__(self, in_channels, weight, bias, stride, padding, dilation, activation="none"):
        super().__init__()
        self.in_channels = in_channels
        self.weight = weight
        self.bias = bias
        self.stride, self.padding, self.dilation = tuple(stride), tuple(padding), tuple(dilation)
        self.activation = activation

    @classmethod
    def from_conv(cls, conv):
        return cls(conv.in_channels, conv.weight, conv.bias, conv.stride, conv.padding, conv.dilation)

    def forward(self, x):
        return functional.depthwise_conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                                           self.activation)

    def extra_repr(self):
        return (f"{self.in_channels} -> {self.weight.shape[0]}, kernel={tuple(self.weight.shape[2:])}, "
                f"stride={self.stride}, padding={self.padding}, dilation={self.dilation}, activation={self.activation}")


class PointwiseConv2d(nn.Module):
    """A 1x1 convolution (stride 1, one group) run by dsconv, with an optional fused activation."""

    def __init__(self, weight, bias, activation="none"):
        super().__init__()
        self.weight = weight
        self.bias = bias
        self.activation = activation

    @classmethod
    def from_conv(cls, conv):
        return cls(conv.weight, conv.bias)

    def forward(self, x):
        return functional.pointwise_conv2d(x, self.weight, self.bias, self.activation)

    def extra_repr(self):
        return f"{self.weight.shape[1]} -> {self.weight.shape[0]}, activation={self.activation}"


def _plain_zero_padded(conv):
    return type(conv) is nn.Conv2d and conv.padding_mode == "zeros" and not isinstance(conv.padding, str)


def is_depthwise(conv):
    """An nn.Conv2d that dsconv's depthwise operation computes: groups == in_channels (any multiplier)."""
    return _plain_zero_padded(conv) and conv.groups == conv.in_channels and conv.out_channels % conv.in_channels == 0


def is_pointwise(conv):
    """An nn.Conv2d that dsconv's 1x1 operation computes: 1x1, stride 1, no padding, one group."""
    return (_plain_zero_padded(conv) and conv.groups == 1 and tuple(conv.kernel_size) == (1, 1)
            and tuple(conv.stride) == (1, 1) and tuple(conv.padding) == (0, 0))


def _replacement(module):
    if isinstance(module, nn.Conv2d):
        if is_pointwise(module):  # (before depthwise: a 1x1 conv of one input channel is both)
            return PointwiseConv2d.from_conv(module)
        if is_depthwise(module):
            return DepthwiseConv2d.from_conv(module)
    return None


def convert(model, fuse_activation=False):
    """Replaces, in place, every depthwise and every 1x1 ``nn.Conv2d`` of `model` (or `model`
    itself) by its dsconv layer, and returns the model. Every other layer stays as it was.

    With ``fuse_activation``, an activation module (ReLU, ReLU6, SiLU, Sigmoid, Hardswish) that
    directly follows a converted layer in an ``nn.Sequential`` is applied in the layer's
    epilogue and replaced by ``nn.Identity``. (In torchvision's MobileNetV2 and EfficientNet a
    batch norm sits between the two, so nothing fuses there while it does.)
    """
    replacement = _replacement(model)
    if replacement is not None:
        return replacement
    for name, child in list(model.named_children()):
        new = _replacement(child)
        if new is not None:
            setattr(model, name, new)
        else:
            convert(child, fuse_activation)
    if fuse_activation and isinstance(model, nn.Sequential):
        children = list(model.named_children())
        for (_, layer), (name, after) in zip(children, children[1:]):
            kind = _FUSIBLE_ACTIVATIONS.get(type(after))
            if kind and isinstance(layer, (DepthwiseConv2d, PointwiseConv2d)) and layer.activation == "none":
                layer.activation = kind
                setattr(model, name, nn.Identity())
    return model
