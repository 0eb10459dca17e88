#!/usr/bin/env bash
# The test command: installs what the build needs, builds the tests, examples and benchmarks
# for the host platform (kernels run on the CPU) in Release at -O1, and runs ctest: the whole suite
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
# -O1: g++ -O3 spends about half of its time on the host platform's kernels unrolling and
# vectorising loops that the emulation hardly runs faster for (fresh 2-core machine, 2026-12-01:
# build 6.0 min at -O1 against 10.5 at -O3, ctest 541 s against 428).
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DDSCONV_WERROR=ON
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs"
