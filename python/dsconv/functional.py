"""dsconv's depthwise and 1x1 convolutions as differentiable PyTorch functions.

Both behave like ``torch.nn.functional.conv2d`` (depthwise: ``groups`` = input channels, any
channel multiplier; 1x1: stride 1, no padding, one group) and differentiate with respect to the
input, the weight and the bias through dsconv's backward kernels. Tensors of float32, float16 or
bfloat16; a channels_last input runs dsconv's NHWC kernels, any other its NCHW kernels, and the
output and the gradients come back in the input's memory format. ``activation`` (none, relu,
relu6, silu, sigmoid, hardswish) is applied in the convolution's epilogue, and its gradient as
the backward reads the output's gradient, so training with it needs no separate pass.

Under autocast the functions run in the autocast dtype, as ``conv2d`` does. On torch >= 2.4 the
operators also carry registered autograd and fake (meta) kernels, so that ``torch.compile``
traces through them; on older torch an ``autograd.Function`` calls the same operators.
"""

import torch

from . import _library  # noqa: F401  (loads torch.ops.dsconv)

ACTIVATIONS = ("none", "relu", "relu6", "silu", "sigmoid", "hardswish")
# The activations whose gradient reads the derivative act'(z) the forward saved (z = conv + bias);
# the others read the output.
_READS_DERIVATIVE = ("silu", "sigmoid", "hardswish")

_ops = torch.ops.dsconv
_TORCH_VERSION = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2])
REGISTERED_AUTOGRAD = _TORCH_VERSION >= (2, 4)


def _pair(v, name):
    if isinstance(v, int):
        return [v, v]
    v = [int(x) for x in v]
    if len(v) != 2:
        raise ValueError(f"dsconv: {name} must be an int or a pair, got {v}")
    return v


def _check_activation(activation):
    if activation not in ACTIVATIONS:
        raise ValueError(f"dsconv: unknown activation {activation!r} (one of {', '.join(ACTIVATIONS)})")


def _autocast_dtype(device):
    """The autocast dtype of device type `device`, None where autocast is off for it (or has no
    autocast at all: meta tensors, whose query would raise)."""
    if device not in ("cuda", "cpu"):
        return None
    if hasattr(torch, "get_autocast_dtype"):  # torch >= 2.4 asks by device type (the per-device calls are deprecated)
        return torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else None
    if device == "cuda":
        return torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else None
    return torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else None


def _autocast(*tensors):
    """The tensors in the autocast dtype of their device where autocast is on (None stays None)."""
    dtype = _autocast_dtype(tensors[0].device.type)
    if dtype is None:
        return tensors
    return tuple(t.to(dtype) if t is not None and t.is_floating_point() else t for t in tensors)


def _saved_for_backward(activation, output, derivative):
    """What the activation's gradient reads: nothing, the output, or the derivative act'(z) the
    forward saved (silu, sigmoid, hardswish: the backward's gate is then one multiply)."""
    if activation == "none":
        return output.new_empty(0)
    return derivative if activation in _READS_DERIVATIVE else output


# Autograd of both operators, shared by the registered path (torch >= 2.4) and the
# autograd.Function one: setup saves what the backward operator reads; backward calls it.

def _setup(ctx, x, weight, bias, activation, result):
    output, derivative = result
    ctx.activation = activation
    ctx.has_bias = bias is not None
    ctx.save_for_backward(x, weight, _saved_for_backward(activation, output, derivative))


def _input_mask(ctx):
    needs = ctx.needs_input_grad
    return [bool(needs[0]), bool(needs[1]), bool(needs[2]) and ctx.has_bias]


def _depthwise_setup_context(ctx, inputs, output):
    x, weight, bias, stride, padding, dilation, activation, _ = inputs
    ctx.geometry = (stride, padding, dilation)
    _setup(ctx, x, weight, bias, activation, output)


def _depthwise_backward(ctx, grad_output, _grad_derivative=None):
    x, weight, saved = ctx.saved_tensors
    gx, gw, gb = _ops.depthwise_conv2d_backward(grad_output, x, weight, saved, *ctx.geometry, ctx.activation,
                                                _input_mask(ctx))
    return gx, gw, gb, None, None, None, None, None


def _pointwise_setup_context(ctx, inputs, output):
    x, weight, bias, activation, _ = inputs
    _setup(ctx, x, weight, bias, activation, output)


def _pointwise_backward(ctx, grad_output, _grad_derivative=None):
    x, weight, saved = ctx.saved_tensors
    gx, gw, gb = _ops.pointwise_conv2d_backward(grad_output, x, weight, saved, ctx.activation, _input_mask(ctx))
    return gx, gw, gb, None, None


if REGISTERED_AUTOGRAD:
    from torch._prims_common import suggest_memory_format as _memory_format  # the operators' rule (ops.hpp)

    def _empty(like, shape, fmt):
        # (Tensor.new_empty takes no memory_format)
        return torch.empty(shape, dtype=like.dtype, device=like.device, memory_format=fmt)

    def _same_device(op, x, **tensors):
        # The operators' own device check (csrc/ops.hpp), which the fake kernels repeat: on the
        # meta device they are the only kernel that runs.
        for name, t in tensors.items():
            if t is not None and t.device != x.device:
                raise RuntimeError(f"dsconv.{op}: {name} is on {t.device} but input is on {x.device}")

    def _fake_forward(x, out_channels, out_h, out_w, activation, save_derivative):
        fmt = _memory_format(x)
        out = _empty(x, (x.shape[0], out_channels, out_h, out_w), fmt)
        pre = _empty(x, (x.shape[0], out_channels, out_h, out_w), fmt) \
            if save_derivative and activation in _READS_DERIVATIVE else x.new_empty(0)
        return out, pre

    def _fake_backward(grad_output, x, weight, mask):
        fmt = _memory_format(x)
        return (_empty(x, x.shape, fmt) if mask[0] else None,
                weight.new_empty(weight.shape) if mask[1] else None,
                weight.new_empty(weight.shape[0]) if mask[2] else None)

    @torch.library.register_fake("dsconv::depthwise_conv2d")
    def _(x, weight, bias, stride, padding, dilation, activation, save_derivative):
        _same_device("depthwise_conv2d", x, weight=weight, bias=bias)

        def extent(size, k, s, p, d):
            return (size + 2 * p - d * (k - 1) - 1) // s + 1
        out_h = extent(x.shape[2], weight.shape[2], stride[0], padding[0], dilation[0])
        out_w = extent(x.shape[3], weight.shape[3], stride[1], padding[1], dilation[1])
        return _fake_forward(x, weight.shape[0], out_h, out_w, activation, save_derivative)

    @torch.library.register_fake("dsconv::depthwise_conv2d_backward")
    def _(grad_output, x, weight, saved, stride, padding, dilation, activation, mask):
        _same_device("depthwise_conv2d_backward", x, grad_output=grad_output, weight=weight, saved=saved)
        return _fake_backward(grad_output, x, weight, mask)

    @torch.library.register_fake("dsconv::pointwise_conv2d")
    def _(x, weight, bias, activation, save_derivative):
        _same_device("pointwise_conv2d", x, weight=weight, bias=bias)
        return _fake_forward(x, weight.shape[0], x.shape[2], x.shape[3], activation, save_derivative)

    @torch.library.register_fake("dsconv::pointwise_conv2d_backward")
    def _(grad_output, x, weight, saved, activation, mask):
        _same_device("pointwise_conv2d_backward", x, grad_output=grad_output, weight=weight, saved=saved)
        return _fake_backward(grad_output, x, weight, mask)

    torch.library.register_autograd("dsconv::depthwise_conv2d", _depthwise_backward,
                                    setup_context=_depthwise_setup_context)
    torch.library.register_autograd("dsconv::pointwise_conv2d", _pointwise_backward,
                                    setup_context=_pointwise_setup_context)

    def _depthwise(*args):
        return _ops.depthwise_conv2d(*args)

    def _pointwise(*args):
        return _ops.pointwise_conv2d(*args)
else:
    def _function(op, setup_context, backward):
        """An autograd.Function that calls `op` and differentiates it with `backward`."""
        def forward(ctx, *inputs):
            result = op(*inputs)
            setup_context(ctx, inputs, result)
            ctx.mark_non_differentiable(result[1])
            return result

        return type("_" + op.__name__ + "_function", (torch.autograd.Function,),
                    {"forward": staticmethod(forward), "backward": staticmethod(backward)})

    _depthwise = _function(_ops.depthwise_conv2d, _depthwise_setup_context, _depthwise_backward).apply
    _pointwise = _function(_ops.pointwise_conv2d, _pointwise_setup_context, _pointwise_backward).apply


def _wants_gradient(*tensors):
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def depthwise_conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, activation="none"):
    """A depthwise convolution: ``F.conv2d(x, weight, bias, stride, padding, dilation, groups=C)``
    for an input of C channels and a weight of shape [C * multiplier, 1, kh, kw], followed by
    ``activation``."""
    _check_activation(activation)
    x, weight, bias = _autocast(x, weight, bias)
    save_derivative = activation in _READS_DERIVATIVE and _wants_gradient(x, weight, bias)
    return _depthwise(x, weight, bias, _pair(stride, "stride"), _pair(padding, "padding"), _pair(dilation, "dilation"),
                      activation, save_derivative)[0]


def pointwise_conv2d(x, weight, bias=None, activation="none"):
    """A 1x1 convolution: ``F.conv2d(x, weight, bias)`` for a weight of shape [C_out, C_in, 1, 1],
    followed by ``activation``."""
    _check_activation(activation)
    x, weight, bias = _autocast(x, weight, bias)
    save_derivative = activation in _READS_DERIVATIVE and _wants_gradient(x, weight, bias)
    return _pointwise(x, weight, bias, activation, save_derivative)[0]
