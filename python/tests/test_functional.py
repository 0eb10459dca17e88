"""dsconv.depthwise_conv2d and dsconv.pointwise_conv2d against torch.nn.functional.conv2d in
float64: forward and every gradient, both memory formats, every activation, odd shapes."""

import itertools

import pytest
import torch
import torch.nn.functional as F

import dsconv
from conftest import ACTIVATION_FUNCTIONS, assert_close_to_reference

FORMATS = {"nchw": torch.contiguous_format, "nhwc": torch.channels_last}

# (n, c, h, w, multiplier, kernel, stride, padding, dilation)
DEPTHWISE_SHAPES = [
    (2, 8, 12, 12, 1, 3, 1, 1, 1),
    (2, 8, 13, 11, 1, 3, 2, 1, 1),   # stride 2, odd sizes
    (1, 16, 9, 9, 1, 5, 1, 2, 1),
    (3, 5, 15, 14, 1, 5, 2, 2, 1),   # stride 2 with 5x5; rows of the input left unused
    (2, 4, 10, 10, 2, 3, 1, 1, 1),   # multiplier 2
    (2, 6, 11, 11, 1, 3, 1, 2, 2),   # dilation 2
    (1, 1, 7, 7, 1, 3, 1, 1, 1),     # one channel
    (2, 24, 1, 1, 1, 3, 1, 1, 1),    # 1x1 maps
    (1, 3, 8, 6, (1), (3, 5), (1, 2), (1, 0), 1),  # rectangular kernel, per-axis stride and padding
]


def _pair(v):
    return v if isinstance(v, tuple) else (v, v)


def _assert_format(t, x, fmt):
    """t is in x's memory format (where x is contiguous in both, as with one channel, either will do)."""
    assert t.is_contiguous(memory_format=FORMATS[fmt]) or x.is_contiguous(), f"not {fmt}"


def _inputs(shape, fmt, out_channels, kernel, device, bias=True, dtype=torch.float32):
    n, c, h, w = shape
    x = torch.randn(n, c, h, w, dtype=dtype, device=device).contiguous(memory_format=FORMATS[fmt]).requires_grad_()
    weight = torch.randn(out_channels, kernel[0], kernel[1], dtype=dtype, device=device)
    return x, weight, (torch.randn(out_channels, dtype=dtype, device=device).requires_grad_() if bias else None)


def _reference_and_grads(fn, tensors, grad_output):
    """fn's output in float64 and its gradients with respect to `tensors` (None where absent)."""
    doubles = [t.detach().cpu().double().requires_grad_() if t is not None else None for t in tensors]
    out = fn(*doubles)
    out.backward(grad_output.cpu().double())
    return out.detach(), [t.grad if t is not None else None for t in doubles]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("shape", DEPTHWISE_SHAPES, ids=lambda s: "x".join(map(str, s)).replace(" ", ""))
def test_depthwise_forward_and_gradients(shape, fmt, device):
    n, c, h, w, m, k, s, p, d = shape
    k, s, p, d = _pair(k), _pair(s), _pair(p), _pair(d)
    x, w2d, bias = _inputs((n, c, h, w), fmt, c * m, k, device)
    weight = w2d.unsqueeze(1).contiguous().requires_grad_()
    y = dsconv.depthwise_conv2d(x, weight, bias, stride=s, padding=p, dilation=d)
    _assert_format(y, x, fmt)
    grad = torch.randn_like(y)
    y.backward(grad)
    ref, (gx, gw, gb) = _reference_and_grads(
        lambda a, b, c_: F.conv2d(a, b, c_, stride=s, padding=p, dilation=d, groups=c), (x, weight, bias), grad)
    taps = k[0] * k[1]
    assert_close_to_reference(y, ref, "output", taps)
    assert_close_to_reference(x.grad, gx, "grad_input", taps)
    _assert_format(x.grad, x, fmt)
    assert_close_to_reference(weight.grad, gw, "grad_weight", n * y.shape[2] * y.shape[3])
    assert_close_to_reference(bias.grad, gb, "grad_bias", n * y.shape[2] * y.shape[3])


# (n, c_in, c_out, h, w)
POINTWISE_SHAPES = [(2, 16, 24, 8, 8), (1, 3, 5, 7, 9), (4, 32, 8, 1, 1), (2, 1, 17, 5, 5), (2, 40, 40, 6, 6)]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("shape", POINTWISE_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_pointwise_forward_and_gradients(shape, fmt, device):
    n, ci, co, h, w = shape
    x, w2d, bias = _inputs((n, ci, h, w), fmt, co, (ci, 1), device)
    weight = w2d.unsqueeze(-1).contiguous().requires_grad_()
    y = dsconv.pointwise_conv2d(x, weight, bias)
    _assert_format(y, x, fmt)
    grad = torch.randn_like(y)
    y.backward(grad)
    ref, (gx, gw, gb) = _reference_and_grads(F.conv2d, (x, weight, bias), grad)
    assert_close_to_reference(y, ref, "output", ci)
    assert_close_to_reference(x.grad, gx, "grad_input", co)
    _assert_format(x.grad, x, fmt)
    assert_close_to_reference(weight.grad, gw, "grad_weight", n * h * w)
    assert_close_to_reference(bias.grad, gb, "grad_bias", n * h * w)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("activation", dsconv.ACTIVATIONS)
def test_fused_activation_forward_and_gradients(activation, fmt, device):
    act = ACTIVATION_FUNCTIONS[activation]
    x, w2d, bias = _inputs((2, 8, 9, 9), fmt, 8, (3, 3), device)
    weight = w2d.unsqueeze(1).contiguous().requires_grad_()
    y = dsconv.depthwise_conv2d(x, weight, bias, padding=1, activation=activation)
    grad = torch.randn_like(y)
    y.backward(grad)
    ref, (gx, gw, gb) = _reference_and_grads(lambda a, b, c: act(F.conv2d(a, b, c, padding=1, groups=8)),
                                             (x, weight, bias), grad)
    assert_close_to_reference(y, ref, "depthwise output", 9)
    assert_close_to_reference(x.grad, gx, "depthwise grad_input", 9)
    assert_close_to_reference(weight.grad, gw, "depthwise grad_weight", 2 * 81)
    assert_close_to_reference(bias.grad, gb, "depthwise grad_bias", 2 * 81)

    x2, w2, b2 = _inputs((2, 8, 5, 5), fmt, 12, (8, 1), device)
    w2 = w2.unsqueeze(-1).contiguous().requires_grad_()
    y2 = dsconv.pointwise_conv2d(x2, w2, b2, activation=activation)
    grad2 = torch.randn_like(y2)
    y2.backward(grad2)
    ref2, (gx2, gw2, gb2) = _reference_and_grads(lambda a, b, c: act(F.conv2d(a, b, c)), (x2, w2, b2), grad2)
    assert_close_to_reference(y2, ref2, "pointwise output", 8)
    assert_close_to_reference(x2.grad, gx2, "pointwise grad_input", 12)
    assert_close_to_reference(w2.grad, gw2, "pointwise grad_weight", 2 * 25)
    assert_close_to_reference(b2.grad, gb2, "pointwise grad_bias", 2 * 25)


@pytest.mark.parametrize("needs", [(True, False, False), (False, True, False), (False, False, True), (True, True, False)])
def test_only_the_gradients_asked_for(needs):
    x = torch.randn(2, 4, 6, 6, requires_grad=needs[0])
    weight = torch.randn(4, 1, 3, 3, requires_grad=needs[1])
    bias = torch.randn(4, requires_grad=needs[2])
    dsconv.depthwise_conv2d(x, weight, bias, padding=1).sum().backward()
    ref_x, ref_w, ref_b = (t.detach().double().requires_grad_() for t in (x, weight, bias))
    F.conv2d(ref_x, ref_w, ref_b, padding=1, groups=4).sum().backward()
    for t, ref, name in ((x, ref_x, "input"), (weight, ref_w, "weight"), (bias, ref_b, "bias")):
        if t.requires_grad:
            assert_close_to_reference(t.grad, ref.grad, "grad " + name, 72)
        else:
            assert t.grad is None


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_16_bit_types_against_float64(dtype, fmt, device):
    x, w2d, bias = _inputs((2, 8, 10, 10), fmt, 8, (3, 3), device, dtype=dtype)
    weight = w2d.unsqueeze(1).contiguous().requires_grad_()
    y = dsconv.depthwise_conv2d(x, weight, bias, stride=2, padding=1)
    assert y.dtype == dtype
    grad = torch.randn_like(y)
    y.backward(grad)
    ref, (gx, gw, gb) = _reference_and_grads(lambda a, b, c: F.conv2d(a, b, c, stride=2, padding=1, groups=8),
                                             (x, weight, bias), grad)
    assert_close_to_reference(y, ref, "depthwise output", 9, dtype)
    assert_close_to_reference(x.grad, gx, "depthwise grad_input", 9, dtype)
    assert_close_to_reference(weight.grad, gw, "depthwise grad_weight", 50, dtype)

    x2, w2, b2 = _inputs((2, 16, 6, 6), fmt, 24, (16, 1), device, dtype=dtype)
    w2 = w2.unsqueeze(-1).contiguous().requires_grad_()
    y2 = dsconv.pointwise_conv2d(x2, w2, b2)
    assert y2.dtype == dtype
    grad2 = torch.randn_like(y2)
    y2.backward(grad2)
    ref2, (gx2, gw2, _) = _reference_and_grads(F.conv2d, (x2, w2, b2), grad2)
    assert_close_to_reference(y2, ref2, "pointwise output", 16, dtype)
    assert_close_to_reference(x2.grad, gx2, "pointwise grad_input", 24, dtype)
    assert_close_to_reference(w2.grad, gw2, "pointwise grad_weight", 72, dtype)


def test_autocast_runs_in_the_autocast_dtype():
    x = torch.randn(2, 8, 6, 6, requires_grad=True)
    weight = torch.randn(8, 1, 3, 3, requires_grad=True)
    pw = torch.randn(4, 8, 1, 1, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = dsconv.pointwise_conv2d(dsconv.depthwise_conv2d(x, weight, padding=1), pw)
    assert y.dtype == torch.bfloat16
    y.float().sum().backward()
    # The gradients reach the float32 leaves through autocast's recorded casts.
    assert x.grad.dtype == weight.grad.dtype == pw.grad.dtype == torch.float32
    ref = F.conv2d(F.conv2d(x.double(), weight.double(), padding=1, groups=8), pw.double())
    assert_close_to_reference(y, ref.detach(), "autocast output", 72, torch.bfloat16)


def test_empty_batch():
    x = torch.randn(0, 4, 5, 5, requires_grad=True)
    weight = torch.randn(4, 1, 3, 3, requires_grad=True)
    y = dsconv.depthwise_conv2d(x, weight, padding=1)
    assert y.shape == (0, 4, 5, 5)
    y.sum().backward()
    assert torch.equal(weight.grad, torch.zeros_like(weight))


def test_results_are_deterministic(device):
    x = torch.randn(4, 16, 14, 14, device=device, requires_grad=True)
    weight = torch.randn(16, 1, 3, 3, device=device, requires_grad=True)
    grads = []
    for _ in range(2):
        x.grad = weight.grad = None
        dsconv.depthwise_conv2d(x, weight, padding=1).pow(2).sum().backward()
        grads.append((x.grad.clone(), weight.grad.clone()))
    assert all(torch.equal(a, b) for a, b in zip(*grads))


@pytest.mark.skipif(not dsconv.functional.REGISTERED_AUTOGRAD, reason="torch.library.opcheck needs torch >= 2.4")
@pytest.mark.parametrize("fmt", FORMATS)
def test_opcheck_registrations(fmt, device):
    x = torch.randn(2, 4, 6, 6, device=device).contiguous(memory_format=FORMATS[fmt]).requires_grad_()
    weight = torch.randn(4, 1, 3, 3, device=device, requires_grad=True)
    bias = torch.randn(4, device=device, requires_grad=True)
    pw = torch.randn(6, 4, 1, 1, device=device, requires_grad=True)
    for activation, save in itertools.product(("none", "relu6", "silu"), (False, True)):
        # Gradients through silu read the derivative the forward saves: only calls that save it take them
        # (the functional API saves it wherever a gradient is needed).
        grad = save or activation != "silu"
        a, w, b, p = (t if grad else t.detach() for t in (x, weight, bias, pw))
        torch.library.opcheck(torch.ops.dsconv.depthwise_conv2d, (a, w, b, [1, 1], [1, 1], [1, 1], activation, save))
        torch.library.opcheck(torch.ops.dsconv.pointwise_conv2d, (a, p, None, activation, save))
