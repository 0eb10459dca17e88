"""torch.compile through dsconv's operators (torch >= 2.4, where the package registers them with
torch.library, fake kernels and autograd included): a converted MobileNetV2 compiles without a
graph break (torch._dynamo's own counter), forward and a training step, and gives what the
uncompiled converted network gives. Debian's torch 1.13 has no torch.library registrations:
there these tests cannot run (pytest says so); the GPU machine's PyTorch runs them."""

import pytest
import torch

import dsconv

pytestmark = pytest.mark.skipif(not dsconv.functional.REGISTERED_AUTOGRAD,
                                reason="torch.compile through custom operators needs torch >= 2.4")


def converted_network(device):
    torchvision = pytest.importorskip("torchvision")
    model = torchvision.models.mobilenet_v2(num_classes=10)
    return dsconv.convert(model).to(device)


def graph_breaks():
    import torch._dynamo.utils
    return sum(torch._dynamo.utils.counters["graph_break"].values())


def test_compiled_forward_has_no_graph_break(device):
    import torch._dynamo
    torch._dynamo.reset()
    model = converted_network(device).eval()
    x = torch.randn(2, 3, 32, 32, device=device)
    with torch.no_grad():
        expected = model(x)
        compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
        got = compiled(x)
    assert graph_breaks() == 0
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


def test_compiled_training_step_has_no_graph_break(device):
    import torch._dynamo
    torch._dynamo.reset()
    model = converted_network(device).train()
    reference = converted_network(device).train()
    reference.load_state_dict(model.state_dict())
    for net in (model, reference):  # (the classifier's dropout: random, so the two would differ)
        for m in net.modules():
            if isinstance(m, torch.nn.Dropout):
                m.eval()
    x = torch.randn(2, 3, 32, 32, device=device)
    target = torch.randint(0, 10, (2,), device=device)

    # The network compiled whole (fullgraph: a graph break would raise), its backward the graph
    # AOTAutograd derives through the operators' registered autograd; loss.backward() outside
    # (Dynamo does not trace Tensor.backward by default).
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    loss = torch.nn.functional.cross_entropy(compiled(x), target)
    loss.backward()
    expected = torch.nn.functional.cross_entropy(reference(x), target)
    expected.backward()
    assert graph_breaks() == 0
    torch.testing.assert_close(loss, expected, rtol=1e-4, atol=1e-4)
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-4, msg="gradient of " + name)
