"""Shared helpers of the package's tests: random data and comparison with float64 PyTorch."""

import pytest
import torch
import torch.nn.functional as F

import dsconv

# The devices whose kernels the tests run: the CPU (dsconv's host platform) always, and CUDA
# where PyTorch has a GPU and the package its CUDA kernels.
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() and dsconv.has_cuda_kernels() else [])

ACTIVATION_FUNCTIONS = {
    "none": lambda t: t,
    "relu": F.relu,
    "relu6": F.relu6,
    "silu": F.silu,
    "sigmoid": torch.sigmoid,
    "hardswish": F.hardswish,
}


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)


@pytest.fixture(params=DEVICES)
def device(request):
    return torch.device(request.param)


def assert_close_to_reference(actual, reference, what, reduction, dtype=torch.float32):
    """actual (any dtype) against a float64 reference: within the rounding of `dtype` over a
    sum of `reduction` terms, relative to the reference's largest magnitude."""
    unit = {torch.float32: 2.0 ** -23, torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}[dtype]
    scale = max(reference.abs().max().item(), 1e-30)
    # fp32 accumulation of `reduction` products, then one rounding to `dtype` of the output.
    tolerance = scale * (unit * 2 + 2.0 ** -23 * 4 * reduction ** 0.5) * 4
    error = (actual.detach().double().cpu() - reference.cpu()).abs().max().item()
    assert error <= tolerance, f"{what}: max error {error:.3g} > {tolerance:.3g} (scale {scale:.3g})"
