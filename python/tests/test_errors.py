"""What the functions and operators cannot do raises a Python exception with dsconv's or the
package's text, and never crashes."""

import pytest
import torch

import dsconv


def _depthwise(**changes):
    args = dict(x=torch.randn(2, 4, 6, 6), weight=torch.randn(4, 1, 3, 3), bias=torch.randn(4), stride=1, padding=1,
                dilation=1)
    args.update(changes)
    return dsconv.depthwise_conv2d(args.pop("x"), args.pop("weight"), **args)


def _pointwise(**changes):
    args = dict(x=torch.randn(2, 4, 6, 6), weight=torch.randn(8, 4, 1, 1), bias=None)
    args.update(changes)
    return dsconv.pointwise_conv2d(args.pop("x"), args.pop("weight"), **args)


@pytest.mark.parametrize("changes, message", [
    (dict(x=torch.randn(4, 6, 6)), "input must be 4-d"),
    (dict(weight=torch.randn(4, 3, 3)), "weight must be 4-d"),
    (dict(weight=torch.randn(6, 1, 3, 3), bias=None), "depthwise weight has shape"),
    (dict(weight=torch.randn(4, 2, 3, 3)), "depthwise weight has shape"),
    (dict(weight=torch.randn(4, 1, 3, 3, dtype=torch.float16)), "weight is Half but input is Float"),
    (dict(bias=torch.randn(4, dtype=torch.float64)), "bias is Double"),
    (dict(bias=torch.randn(5)), "bias must have shape"),
    (dict(weight=torch.randn(4, 1, 3, 6)[:, :, :, ::2]), "weight must be contiguous"),
    (dict(x=torch.randn(2, 4, 6, 6, dtype=torch.float64), weight=torch.randn(4, 1, 3, 3, dtype=torch.float64),
          bias=None), "unsupported dtype"),
    (dict(padding=0, x=torch.randn(2, 4, 2, 2)), "invalid output size"),
    (dict(stride=0), "invalid stride"),
    (dict(padding=-1), "padding"),
    (dict(dilation=0), "invalid dilation"),
    (dict(stride=(1, 2, 3)), "stride must be an int or a pair"),
])
def test_depthwise_bad_arguments_raise(changes, message):
    with pytest.raises((RuntimeError, ValueError), match=message):
        _depthwise(**changes)


@pytest.mark.parametrize("changes, message", [
    (dict(weight=torch.randn(8, 5, 1, 1)), "1x1 weight has shape"),
    (dict(weight=torch.randn(8, 4, 3, 3)), "1x1 weight has shape"),
    (dict(weight=torch.randn(8, 4, 1, 1, dtype=torch.bfloat16)), "weight is BFloat16 but input is Float"),
    (dict(weight=torch.randn(4, 8, 1, 1).transpose(0, 1)), "weight must be contiguous"),
    (dict(activation="gelu"), "unknown activation"),
])
def test_pointwise_bad_arguments_raise(changes, message):
    with pytest.raises((RuntimeError, ValueError), match=message):
        _pointwise(**changes)


def test_tensors_on_another_device_raise():
    # A second device here is PyTorch's meta device: a mix of devices is refused by the
    # dispatcher or by the operator's checks (the fake kernels' too, where torch >= 2.4 has them).
    with pytest.raises((RuntimeError, NotImplementedError)):
        _depthwise(weight=torch.randn(4, 1, 3, 3, device="meta"))
    with pytest.raises((RuntimeError, NotImplementedError)):
        _pointwise(weight=torch.randn(8, 4, 1, 1, device="meta"))


def test_meta_tensors_get_shapes_where_fake_kernels_are_registered():
    # On torch >= 2.4 the fake kernels are the operators' meta kernels (shape inference, as
    # torch.compile uses them); before, the meta device has no kernel.
    x, weight = torch.randn(2, 4, 6, 6, device="meta"), torch.randn(8, 4, 1, 1, device="meta")
    if not dsconv.functional.REGISTERED_AUTOGRAD:
        with pytest.raises((RuntimeError, NotImplementedError)):
            _pointwise(x=x, weight=weight)
        return
    y = _pointwise(x=x.contiguous(memory_format=torch.channels_last), weight=weight)
    assert y.device.type == "meta" and y.shape == (2, 8, 6, 6) and y.is_contiguous(memory_format=torch.channels_last)


def test_operator_errors_carry_dsconv_status_and_detail():
    # Straight to the operator, past the Python checks: dsconv's own validation answers.
    with pytest.raises(RuntimeError, match=r"dsconv\.depthwise_conv2d: invalid stride: .*stride_h = 0"):
        torch.ops.dsconv.depthwise_conv2d(torch.randn(1, 2, 5, 5), torch.randn(2, 1, 3, 3), None, [0, 1], [1, 1],
                                          [1, 1], "none", False)
    with pytest.raises(RuntimeError, match="saved"):
        torch.ops.dsconv.pointwise_conv2d_backward(torch.randn(1, 3, 4, 4), torch.randn(1, 2, 4, 4),
                                                   torch.randn(3, 2, 1, 1), torch.empty(0), "relu", [True, True, False])
    with pytest.raises(RuntimeError, match="grad_output has shape"):
        torch.ops.dsconv.depthwise_conv2d_backward(torch.randn(1, 2, 4, 4), torch.randn(1, 2, 5, 5),
                                                   torch.randn(2, 1, 3, 3), torch.empty(0), [1, 1], [1, 1], [1, 1],
                                                   "none", [True, True, True])
