"""Builds and installs the dsconv PyTorch package: ``pip install --no-build-isolation ./python``
(from the checkout, so that ../include is there), against the PyTorch already installed.

It always builds ``dsconv._C`` (the operators' schemas and their CPU kernels, dsconv's host
platform) and, where PyTorch has CUDA and a CUDA compiler is found (or ``DSCONV_CUDA=1``),
``dsconv._C_cuda`` (the CUDA kernels) for ``TORCH_CUDA_ARCH_LIST`` (e.g. "9.0" for an H100).
``DSCONV_CUDA=0`` leaves CUDA out. Each library is its own module: the host and the CUDA
builds of dsconv's functions share names (csrc/ops.hpp).

The CUDA kernels need no PyTorch: ``DSCONV_PREBUILT_CUDA`` may name a static library of them
built beforehand (scripts/gpu_check.sh torch-prebuild, on any machine with nvcc), with its
manifest beside it (the same path + ".json": nvcc release, architectures). Where the manifest's
nvcc release is this machine's and it has every architecture of TORCH_CUDA_ARCH_LIST, only
csrc/ops_cuda.cu compiles here and links it (about a minute); else the kernels compile here too,
and the build says why.
"""

import json
import os
import re
import subprocess

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


ROOT = os.path.dirname(HERE)


def instantiation_sources(suffix):
    """One source per operation and element type that compiles its kernels (from
    cmake/instantiate.cpp.in, as the CMake build does), so that the extension's kernels build
    in parallel (MAX_JOBS) instead of in one translation unit; the operators' source then
    declares them extern (DSCONV_EXTERN_TEMPLATES)."""
    with open(os.path.join(ROOT, "cmake", "instantiate.cpp.in")) as f:
        template = f.read()
    out_dir = os.path.join("build", "instantiations")
    os.makedirs(os.path.join(HERE, out_dir), exist_ok=True)
    sources = []
    for operation in ("depthwise", "pointwise"):
        for type_name, spelled in (("float", "float"), ("half", "::dsconv::half"), ("bfloat16", "::dsconv::bfloat16")):
            text = (template.replace("@DSCONV_OPERATION@", operation).replace("@DSCONV_TYPE@", spelled)
                    .replace("@DSCONV_OPERATION_MACRO@", operation.upper()).replace("cmake/dsconv_backend.cmake", "python/setup.py"))
            # (distinct stems per platform: the object files of both extensions share a folder)
            path = os.path.join(out_dir, f"{operation}_{type_name}_{suffix}.{suffix}")
            full = os.path.join(HERE, path)
            if not os.path.isfile(full) or open(full).read() != text:  # (unchanged files keep their objects)
                with open(full, "w") as f:
                    f.write(text)
            sources.append(path)
    return sources


def _nvcc_release():
    """"major.minor" of the nvcc that builds the CUDA extension here, or None."""
    home = cpp_extension.CUDA_HOME
    nvcc = os.path.join(home, "bin", "nvcc") if home else "nvcc"
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else None


def _requested_architectures():
    """The compute capabilities of TORCH_CUDA_ARCH_LIST as "90", "80", ... (None: not set)."""
    text = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if not text:
        return None
    return sorted({a.split("+")[0].replace(".", "") for a in re.split(r"[;\s]+", text.strip()) if a})


def prebuilt_cuda_kernels():
    """The prebuilt kernels' library where it fits this build (module docstring), else None."""
    library = os.environ.get("DSCONV_PREBUILT_CUDA")
    if not library:
        return None
    try:
        with open(library + ".json") as f:
            manifest = json.load(f)
    except OSError as e:
        print("dsconv: DSCONV_PREBUILT_CUDA without its manifest (%s): compiling the kernels here" % e)
        return None
    release, wanted = _nvcc_release(), _requested_architectures()
    if manifest.get("nvcc") != release:
        print("dsconv: the prebuilt kernels come from nvcc %s, this machine has %s: compiling them here" % (
            manifest.get("nvcc"), release))
        return None
    if wanted is None or not set(wanted) <= set(manifest.get("architectures", [])):
        print("dsconv: the prebuilt kernels are for sm_%s, TORCH_CUDA_ARCH_LIST asks for %s: compiling them here" % (
            ", sm_".join(manifest.get("architectures", [])), wanted))
        return None
    print("dsconv: linking the prebuilt CUDA kernels %s (nvcc %s, sm_%s)" % (
        library, release, ", sm_".join(manifest["architectures"])))
    return library


def cxx_standard():
    """C++17, dsconv's own, unless PyTorch's headers ask for more: newer releases' ATen refuses
    to compile below C++20 (dsconv compiles as either; prebuilt kernels stay C++17, which links)."""
    aten = os.path.join(os.path.dirname(torch.__file__), "include", "ATen", "ATen.h")
    try:
        with open(aten) as f:
            return "c++20" if "C++20 or later" in f.read() else "c++17"
    except OSError:
        return "c++17"


STANDARD = cxx_standard()
cxx_flags = ["-O2", "-std=" + STANDARD, "-fvisibility=hidden", "-DDSCONV_EXTERN_TEMPLATES=1"]
# The CUDA kernels' flags (cuda_flags.txt, one a line), which scripts/gpu_check.sh torch-prebuild
# reads too for the prebuilt kernels (at C++17: they link with bindings of either standard).
with open(os.path.join(HERE, "cuda_flags.txt")) as _flags:
    nvcc_flags = ["-std=" + STANDARD] + [line.strip() for line in _flags if line.strip()]
extensions = [cpp_extension.CppExtension("dsconv._C", ["csrc/ops_cpu.cpp"] + instantiation_sources("cpp"),
                                         include_dirs=[INCLUDE], extra_compile_args={"cxx": cxx_flags})]
if _want_cuda():
    # dsconv's half types are its own: PyTorch's -D__CUDA_NO_HALF_OPERATORS__ and friends do
    # not concern it. --expt-relaxed-constexpr as dsconv's CMake build passes it.
    prebuilt = prebuilt_cuda_kernels()
    extensions.append(cpp_extension.CUDAExtension(
        "dsconv._C_cuda", ["csrc/ops_cuda.cu"] + ([] if prebuilt else instantiation_sources("cu")), include_dirs=[INCLUDE],
        extra_compile_args={"cxx": cxx_flags, "nvcc": nvcc_flags},
        extra_link_args=["-Wl,--whole-archive", prebuilt, "-Wl,--no-whole-archive"] if prebuilt else []))

setup(
    name="dsconv",
    version="0.1.0",
    description="Depthwise and 1x1 convolutions with dsconv's GPU kernels, for PyTorch",
    packages=["dsconv"],
    ext_modules=extensions,
    cmdclass={"build_ext": cpp_extension.BuildExtension},
    python_requires=">=3.8",
)
