"""Loads dsconv's compiled operators into ``torch.ops.dsconv``.

The operators live in two shared libraries built from ``python/csrc``: ``_C`` (the schemas and
the CPU kernels, which run dsconv's host platform) and, where PyTorch has CUDA, ``_C_cuda``.
They are looked for beside this file, where the project's test build (scripts/run_tests.sh)
and ``pip install ./python`` put them. Where none there loads (nothing built yet, or built
against another PyTorch), ``_C`` is compiled once into a cache directory
(``$DSCONV_CACHE_DIR``, default ``~/.cache/dsconv/torch-<version>``) from the sources of the
checkout this package sits in.
"""

import glob
import os

import torch

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_SOURCE_ROOT = os.path.dirname(os.path.dirname(_PACKAGE_DIR))  # the checkout, where run from one


def _built(name):
    """The shared libraries called `name` beside this file (e.g. _C.so, _C.cpython-311-x86_64-linux-gnu.so)."""
    return sorted(glob.glob(os.path.join(_PACKAGE_DIR, name + ".so")) +
                  glob.glob(os.path.join(_PACKAGE_DIR, name + ".*.so")))


def _build_in_cache():
    """Compiles _C from the checkout's sources into the cache and returns its path."""
    from torch.utils import cpp_extension

    include = os.path.join(_SOURCE_ROOT, "include")
    source = os.path.join(_SOURCE_ROOT, "python", "csrc", "ops_cpu.cpp")
    if not (os.path.isdir(include) and os.path.isfile(source)):
        raise ImportError("dsconv: no compiled operators beside " + _PACKAGE_DIR + " and no dsconv checkout to build "
                          "them from; install the package with `pip install --no-build-isolation ./python`")
    cache = os.environ.get("DSCONV_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "dsconv", "torch-" + torch.__version__.split("+")[0])
    os.makedirs(cache, exist_ok=True)
    print("dsconv: compiling the operators for the CPU into " + cache + " (once; a few minutes)", flush=True)
    cpp_extension.load(name="dsconv_C", sources=[source], extra_include_paths=[include],
                       extra_cflags=["-O2", "-std=c++17", "-fvisibility=hidden"], build_directory=cache,
                       is_python_module=False, verbose=False)
    return os.path.join(cache, "dsconv_C.so")


def _load_first(paths):
    """Loads the first of `paths` that loads; returns it, or None with the errors seen."""
    errors = []
    for path in paths:
        try:
            torch.ops.load_library(path)
            return path, errors
        except OSError as e:  # built against another PyTorch, or for another machine
            errors.append(f"{path}: {e}")
    return None, errors


def load():
    """Loads the operators once; returns the paths of the libraries loaded."""
    cpu, errors = _load_first(_built("_C"))
    if cpu is None:
        try:
            cpu = _build_in_cache()
        except Exception as e:
            raise ImportError("dsconv: could not load or build its operators: " + "; ".join(errors + [str(e)])) from e
        torch.ops.load_library(cpu)
    loaded = [cpu]
    if torch.cuda.is_available():
        cuda, _ = _load_first(_built("_C_cuda"))
        if cuda:
            loaded.append(cuda)
    return loaded


LIBRARIES = load()


def has_cuda_kernels():
    """True where the CUDA kernels of the operators are loaded."""
    return len(LIBRARIES) > 1
