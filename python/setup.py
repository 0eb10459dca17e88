"""Builds and installs the dsconv PyTorch package: ``pip install --no-build-isolation ./python``
(from the checkout, so that ../include is there), against the PyTorch already installed.

It always builds ``dsconv._C`` (the operators' schemas and their CPU kernels, dsconv's host
platform) and, where PyTorch has CUDA and a CUDA compiler is found (or ``DSCONV_CUDA=1``),
``dsconv._C_cuda`` (the CUDA kernels) for ``TORCH_CUDA_ARCH_LIST`` (e.g. "9.0" for an H100).
``DSCONV_CUDA=0`` leaves CUDA out. Each library is its own module: the host and the CUDA
builds of dsconv's functions share names (csrc/ops.hpp).
"""

import os

from setuptools import setup
import torch
from torch.utils import cpp_extension

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE = os.path.join(os.path.dirname(HERE), "include")
if not os.path.isfile(os.path.join(INCLUDE, "dsconv", "dsconv.hpp")):
    raise RuntimeError("dsconv: build the package from a dsconv checkout (" + INCLUDE + " is missing)")


def _want_cuda():
    choice = os.environ.get("DSCONV_CUDA", "auto")
    if choice in ("0", "1"):
        return choice == "1"
    return torch.version.cuda is not None and cpp_extension.CUDA_HOME is not None


cxx_flags = ["-O2", "-std=c++17", "-fvisibility=hidden"]
extensions = [cpp_extension.CppExtension("dsconv._C", ["csrc/ops_cpu.cpp"], include_dirs=[INCLUDE],
                                         extra_compile_args={"cxx": cxx_flags})]
if _want_cuda():
    # dsconv's half types are its own: PyTorch's -D__CUDA_NO_HALF_OPERATORS__ and friends do
    # not concern it. --expt-relaxed-constexpr as dsconv's CMake build passes it.
    extensions.append(cpp_extension.CUDAExtension(
        "dsconv._C_cuda", ["csrc/ops_cuda.cu"], include_dirs=[INCLUDE],
        extra_compile_args={"cxx": cxx_flags, "nvcc": ["-O3", "-std=c++17", "--expt-relaxed-constexpr",
                                                        "-Xcompiler=-fvisibility=hidden"]}))

setup(
    name="dsconv",
    version="0.1.0",
    description="Depthwise and 1x1 convolutions with dsconv's GPU kernels, for PyTorch",
    packages=["dsconv"],
    ext_modules=extensions,
    cmdclass={"build_ext": cpp_extension.BuildExtension},
    python_requires=">=3.8",
)
