"""dsconv.convert on torchvision's MobileNetV2 and EfficientNet-B0 (the networks' CIFAR-size
input, 32x32): the converted model against the unconverted one in eval mode (outputs), in
train mode (every parameter's gradient), and over a few optimizer steps; what convert
replaces and what it keeps."""

import copy

import pytest
import torch
from torch import nn
import torchvision

import dsconv
from conftest import assert_close_to_reference

NETWORKS = {
    "mobilenet_v2": lambda: torchvision.models.mobilenet_v2(num_classes=10),
    "efficientnet_b0": lambda: torchvision.models.efficientnet_b0(num_classes=10),
}


def _pair(name):
    torch.manual_seed(0)
    reference = NETWORKS[name]()
    converted = dsconv.convert(copy.deepcopy(reference))
    return reference, converted


def _count(model, kinds):
    return sum(isinstance(m, kinds) for m in model.modules())


@pytest.mark.parametrize("name", NETWORKS)
def test_convert_replaces_depthwise_and_1x1_layers_only(name):
    reference, converted = _pair(name)
    convs = [m for m in reference.modules() if isinstance(m, nn.Conv2d)]
    depthwise = sum(m.groups == m.in_channels and m.kernel_size != (1, 1) for m in convs)
    pointwise = sum(m.kernel_size == (1, 1) and m.groups == 1 for m in convs)
    assert depthwise > 10 and pointwise > 20
    assert _count(converted, dsconv.DepthwiseConv2d) == depthwise
    assert _count(converted, dsconv.PointwiseConv2d) == pointwise
    # Only the stem (3x3, stride 2, 3 -> 32 channels) stays an nn.Conv2d.
    assert _count(converted, nn.Conv2d) == len(convs) - depthwise - pointwise == 1
    assert list(converted.state_dict()) == list(reference.state_dict())


def test_convert_keeps_the_parameter_objects():
    model = torchvision.models.mobilenet_v2(num_classes=10)
    before = dict(model.named_parameters())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    dsconv.convert(model)
    after = dict(model.named_parameters())
    assert list(after) == list(before) and all(after[k] is before[k] for k in before)
    assert all(p is after[k] for p, k in zip(optimizer.param_groups[0]["params"], after))


def _train_step_gradients(model, x, target):
    """Every parameter's gradient of one training step (dropout and stochastic depth drawn from
    the same seed for every model)."""
    torch.manual_seed(1)
    model.train()
    model.zero_grad()
    nn.functional.cross_entropy(model(x), target).backward()
    return [p.grad.double() for p in model.parameters()]


# Each network in one memory format (the functional tests cover both formats layer by layer).
@pytest.mark.parametrize("name, fmt", [("mobilenet_v2", torch.contiguous_format), ("efficientnet_b0", torch.channels_last)],
                         ids=["mobilenet_v2-nchw", "efficientnet_b0-nhwc"])
def test_converted_network_matches_in_eval_and_train(name, fmt):
    reference, converted = _pair(name)
    exact = copy.deepcopy(reference).double()
    x = torch.randn(8, 3, 32, 32).contiguous(memory_format=fmt)
    reference.eval(), converted.eval(), exact.eval()
    with torch.no_grad():
        assert_close_to_reference(converted(x), exact(x.double()), "eval output", 2000)

    # Train mode: batch norm over a batch of 8 at these small maps (down to 1x1) is ill-conditioned,
    # so PyTorch's own float32 model is the yardstick: against float64, each gradient of the
    # converted model may be off by at most 10 times as much as PyTorch's float32 one (plus a
    # floor relative to the largest gradient of the model).
    target = torch.arange(8) % 10
    truth = _train_step_gradients(exact, x.double(), target)
    float32 = _train_step_gradients(reference, x, target)
    ours = _train_step_gradients(converted, x, target)
    floor = 1e-5 * max(g.abs().max().item() for g in truth)
    for (pname, _), t, f, o in zip(reference.named_parameters(), truth, float32, ours):
        error, yardstick = (o - t).abs().max().item(), (f - t).abs().max().item()
        assert error <= 10 * yardstick + floor, f"grad of {pname}: error {error:.3g}, PyTorch float32's {yardstick:.3g}"


def test_converted_network_follows_the_same_optimizer_steps():
    # Batch norm frozen (its running statistics, as in fine-tuning): with batch statistics of 8
    # samples at 1x1 maps, training steps here are chaotic, PyTorch's float32 and float64 models
    # part after one step, and no comparison could tell a defect from rounding.
    reference, converted = _pair("mobilenet_v2")
    x, target = torch.randn(4, 3, 32, 32), torch.arange(4)
    losses = {}
    for label, model in (("reference", reference), ("converted", converted)):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
        losses[label] = []
        for step in range(3):
            torch.manual_seed(step)
            model.train()
            for m in model.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.eval()
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x), target)
            loss.backward()
            optimizer.step()
            losses[label].append(loss.item())
    assert losses["reference"][-1] < losses["reference"][0] - 0.01  # (the steps do something)
    assert losses["converted"] == pytest.approx(losses["reference"], rel=1e-4)
    for (pname, p), q in zip(reference.named_parameters(), converted.parameters()):
        assert (q - p).abs().max().item() <= 1e-4 * max(p.abs().max().item(), 1e-3), "parameter " + pname


def test_fuse_activation_folds_a_directly_following_activation():
    model = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.ReLU6(), nn.Conv2d(8, 16, 1), nn.SiLU(),
                          nn.BatchNorm2d(16), nn.ReLU())
    reference = copy.deepcopy(model)
    dsconv.convert(model, fuse_activation=True)
    assert model[0].activation == "relu6" and model[2].activation == "silu"
    assert isinstance(model[1], nn.Identity) and isinstance(model[3], nn.Identity)
    assert isinstance(model[5], nn.ReLU)  # after a batch norm: not fused
    x = torch.randn(2, 8, 7, 7)
    assert_close_to_reference(model.eval()(x), reference.eval().double()(x.double()).detach(), "fused output", 100)


def test_convert_leaves_other_convolutions_alone():
    model = nn.Sequential(nn.Conv2d(4, 4, 3, groups=2), nn.Conv2d(4, 8, 1, stride=2), nn.Conv2d(4, 4, 3, groups=4,
                                                                                                  padding_mode="reflect"))
    dsconv.convert(model)
    assert all(type(m) is nn.Conv2d for m in model)
