"""Shared helpers of the package's tests: random data and comparison with float64 PyTorch."""

import pytest
import torch
import torch.nn.functional as F

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


def assert_close_to_reference(actual, reference, what, reduction, dtype=torch.float32):
    """actual (any dtype) against a float64 reference: within the rounding of `dtype` over a
    sum of `reduction` terms, relative to the reference's largest magnitude."""
    unit = {torch.float32: 2.0 ** -23, torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}[dtype]
    scale = max(reference.abs().max().item(), 1e-30)
    # fp32 accumulation of `reduction` products, then one rounding to `dtype` of the output.
    tolerance = scale * (unit * 2 + 2.0 ** -23 * 4 * reduction ** 0.5) * 4
    error = (actual.double() - reference).abs().max().item()
    assert error <= tolerance, f"{what}: max error {error:.3g} > {tolerance:.3g} (scale {scale:.3g})"
