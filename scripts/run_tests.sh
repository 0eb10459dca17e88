#!/usr/bin/env bash
# The test command: installs what the build needs, builds the tests, examples and benchmarks
# for the host platform (kernels run on the CPU) in Release, and runs ctest: the whole suite
# at emulated warp widths 32 and 64, the ucontext build of the emulator, the examples, the
# README example, a plain `g++ -I include` build, and the PyTorch package (python/): its CPU
# operators built from the same kernel objects and its pytest suite.
# Usage: scripts/run_tests.sh [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scripts/install_deps.sh cmake g++ make catch2 libbenchmark-dev python3-torch python3-torchvision libtorch-dev \
  python3-pytest
jobs=$(nproc)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDSCONV_WERROR=ON
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs"
