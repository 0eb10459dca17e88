#!/usr/bin/env bash
# The main job: every depthwise and 1x1 layer of MobileNetV2 and EfficientNet-B0 through
# dsconv, each checked against the double-precision reference, with the chosen kernel
# variant, the error and (on the host platform) the global-memory traffic against the
# minimum. Runs on the GPU when an NVIDIA GPU and driver are present, otherwise on the host
# platform (the kernels on the CPU) at batch 1 with the 224x224 input: a few minutes on 2 cores.
# Reports go to results/ (layers.md, layers.csv).
#
# Usage: scripts/main_job.sh [--model all|mobilenet_v2|efficientnet_b0] [--input 224|32]
#                            [--batch 1,8] [--type float,half,bfloat16] [--layout nchw,nhwc]
# (the same settings as environment variables: DSCONV_MODEL, DSCONV_INPUT, DSCONV_BATCH, ...)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh cmake g++ make libbenchmark-dev
jobs=$(nproc)
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "NVIDIA GPU found: building for CUDA"
  build=build-main-cuda
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDSCONV_BACKEND=cuda \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_CUDA_ARCHITECTURES=native \
    -DDSCONV_BUILD_TESTS=OFF -DDSCONV_BUILD_EXAMPLES=OFF >/dev/null
else
  echo "no GPU found: running the kernels on the host platform (CPU)"
  build=build-main
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDSCONV_BUILD_TESTS=OFF -DDSCONV_BUILD_EXAMPLES=OFF >/dev/null
fi
cmake --build "$build" -j "$jobs" --target dsconv_layers
exec "$build/bench/dsconv_layers" "$@"
