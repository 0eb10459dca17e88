#!/usr/bin/env bash
# The main job: every depthwise and 1x1 layer of MobileNetV2 and EfficientNet-B0 through
# dsconv, each checked against the double-precision reference (dsconv_layers), then a report.
#
# With an NVIDIA GPU (a driver that nvidia-smi reaches, and nvcc): builds for CUDA, checks the
# layers on the GPU, then benchmarks dsconv against cuDNN's graph API with dsconv_bench and
# against PyTorch with bench/torch_baseline.py (where DSCONV_PYTHON or python3 has PyTorch with
# CUDA) over the full grid (every unique layer shape x batch 1-128 x float/half/bfloat16 x
# NCHW/NHWC; tens of minutes,
# one progress line per benchmark) and turns its JSON into results/bench.md, speedup.png and
# roofline.png.
# Without one: the kernels on the host platform (CPU) at batch 1 with the 224x224 input, with
# the global-memory traffic against the minimum (a few minutes on 2 cores), charted in
# results/layers_traffic.png.
# Either way the layer check writes results/layers.md and results/layers.csv, and then the
# model check (scripts/model_check.py) compares torchvision's MobileNetV2 and EfficientNet-B0
# converted to dsconv with the unconverted networks (outputs, every gradient) and, on a GPU,
# times their forward and training step against plain PyTorch at batch 1-128 (results/models.md).
# On a GPU it needs a python3 whose PyTorch has CUDA (DSCONV_PYTHON names another), where it
# installs the package with pip; --no-models skips it.
#
# Usage: scripts/main_job.sh [--model all|mobilenet_v2|efficientnet_b0] [--input 224|32]
#                            [--kind all|dw|pw] [--batch 1,8] [--type float,half,bfloat16]
#                            [--layout nchw,nhwc] [--pass forward|backward|all] [--out DIR]
#                            [--device sm80|sm90|sm75|gfx906|gfx90a]  (host platform: the GPU
#                            whose plans and limits the kernels run with; default sm80)
# --pass backward checks and measures the data and weight gradients of every layer instead of
# the forward (all: both; default forward); without a GPU the report gives their traffic
# against the targets. On a GPU the benchmark covers all three passes unless --pass is given.
# --kind block runs the inverted-residual blocks instead (dsconv_blocks): every block of both
# networks unfused and fused, checked against the composition of the reference layers, with the
# planner's choice and (host platform) the global-memory bytes of each; batch 8, float, NHWC
# unless --batch/--type/--layout say otherwise; writes results/blocks.csv, blocks.md and
# blocks_traffic.png, with the summary per network and why the planner chose each block's
# variant (dispatch/tuning/block_fusion.hpp: measured times, not bytes). On a GPU it then
# times every distinct block fused, unfused and as cuDNN's layer sequence (dsconv_bench --kind
# block; batch 1, 8, 32 and 128 unless --batch says otherwise) into results/bench.md's block
# section and results/bench_blocks.csv.
# (the same settings as environment variables: DSCONV_MODEL, DSCONV_INPUT, DSCONV_KIND,
# DSCONV_BATCH, DSCONV_TYPE, DSCONV_LAYOUT, DSCONV_PASS, DSCONV_RESULTS). On a GPU they narrow the
# benchmark as well; without them it covers the full grid, while the layer check runs batch 1.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh cmake g++ make libbenchmark-dev python3-matplotlib
jobs=$(nproc)
out=${DSCONV_RESULTS:-results}
check_args=()  # for dsconv_layers
bench_args=()  # for dsconv_bench, which has no --traffic (a host-platform option)
models=1
blocks=0
while [ $# -gt 0 ]; do
  case "$1" in
    --kind) if [ "$2" = block ]; then blocks=1; else check_args+=("$1" "$2"); bench_args+=("$1" "$2"); fi; shift 2 ;;
    --kind=block) blocks=1; shift ;;
    --out) out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    --no-models) models=0; shift ;;
    --traffic|--device) check_args+=("$1" "$2"); shift 2 ;;
    --traffic=*|--device=*) check_args+=("$1"); shift ;;
    *) check_args+=("$1"); bench_args+=("$1"); shift ;;
  esac
done
mkdir -p "$out"
# python3-matplotlib is installed for the distribution's interpreter, which another python3
# earlier on PATH may not see.
python=/usr/bin/python3
[ -x "$python" ] || python=python3

status=0
# PyTorch's baselines (bench/torch_baseline.py) for the cases dsconv_bench lists with the same
# options, where a python3 with PyTorch and CUDA is at hand (DSCONV_PYTHON names another).
torch_baselines() {  # build out.json dsconv_bench-options...
  local build=$1 json=$2 torch_python=${DSCONV_PYTHON:-python3}
  shift 2
  if ! "$torch_python" -c "import torch, torchvision; assert torch.cuda.is_available()" 2>/dev/null; then
    echo "PyTorch's baselines skipped: no python3 with PyTorch (CUDA) and torchvision (set DSCONV_PYTHON)"
    return 0
  fi
  echo
  echo "benchmark: PyTorch's baselines for the same cases (JSON in $json)"
  "$build/bench/dsconv_bench" --case_table="$json.cases" "$@" &&
    "$torch_python" bench/torch_baseline.py --cases "$json.cases" --out "$json" || status=1
}
if [ "$blocks" = 1 ]; then
  # The blocks: on the GPU where there is one (no traffic counted there), else the host platform.
  gpu=0
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    gpu=1
    build=build-main-cuda
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDSCONV_BACKEND=cuda -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc \
      -DCMAKE_CUDA_ARCHITECTURES=native -DDSCONV_BUILD_TESTS=OFF -DDSCONV_BUILD_EXAMPLES=OFF >/dev/null
  else
    build=build-main
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDSCONV_BUILD_TESTS=OFF -DDSCONV_BUILD_EXAMPLES=OFF \
      -DDSCONV_BUILD_PYTHON=OFF >/dev/null
  fi
  cmake --build "$build" -j "$jobs" --target dsconv_blocks
  "$build/bench/dsconv_blocks" --out "$out" "${check_args[@]}" || status=$?
  "$python" scripts/blocks_chart.py "$out/blocks.csv" --out "$out" || status=$?
  if [ "$gpu" = 1 ]; then
    cmake --build "$build" -j "$jobs" --target dsconv_bench
    batch_given=0
    for a in "${bench_args[@]}"; do case "$a" in --batch|--batch=*) batch_given=1 ;; esac; done
    [ "$batch_given" = 1 ] || bench_args+=(--batch 1,8,32,128)
    echo
    echo "benchmark: every distinct block, fused and unfused, against cuDNN's layer sequence (JSON in $out/bench_blocks.json)"
    "$build/bench/dsconv_bench" --kind block "${bench_args[@]}" --benchmark_out="$out/bench_blocks.json" \
      --benchmark_out_format=json | tee "$out/bench_blocks.txt" || status=$?
    torch_baselines "$build" "$out/torch_blocks.json" --kind block "${bench_args[@]}"
    "$python" scripts/report.py "$out/bench_blocks.json" $([ -s "$out/torch_blocks.json" ] && echo "$out/torch_blocks.json") \
      --out "$out" || status=$?
  fi
  exit "$status"
fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "NVIDIA GPU found: building for CUDA"
  build=build-main-cuda
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDSCONV_BACKEND=cuda \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_CUDA_ARCHITECTURES=native \
    -DDSCONV_BUILD_TESTS=OFF -DDSCONV_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$build" -j "$jobs" --target dsconv_layers dsconv_bench
  "$build/bench/dsconv_layers" --out "$out" "${check_args[@]}" || status=$?
  echo
  echo "benchmark: dsconv against cuDNN's graph API (JSON in $out/bench.json)"
  "$build/bench/dsconv_bench" "${bench_args[@]}" --benchmark_out="$out/bench.json" --benchmark_out_format=json \
    | tee "$out/bench.txt" || status=$?
  torch_baselines "$build" "$out/torch.json" "${bench_args[@]}"
  "$python" scripts/report.py "$out/bench.json" $([ -s "$out/torch.json" ] && echo "$out/torch.json") \
    "$out/layers.csv" --out "$out" || status=$?
  torch_python=${DSCONV_PYTHON:-python3}
  if [ "$models" = 1 ] && "$torch_python" -c "import torch, torchvision; assert torch.cuda.is_available()" 2>/dev/null; then
    echo
    echo "model check: the PyTorch package built with its CUDA kernels, against plain PyTorch"
    (cd python && MAX_JOBS=$jobs "$torch_python" -m pip install --no-build-isolation --no-deps -q .) || status=$?
    "$torch_python" scripts/model_check.py --out "$out" || status=$?
  elif [ "$models" = 1 ]; then
    echo "model check skipped: no python3 with PyTorch (CUDA) and torchvision (set DSCONV_PYTHON)"
  fi
else
  echo "no GPU found: running the kernels on the host platform (CPU)"
  build=build-main
  [ "$models" = 1 ] && scripts/install_deps.sh python3-torch python3-torchvision libtorch-dev
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDSCONV_BUILD_TESTS=OFF -DDSCONV_BUILD_EXAMPLES=OFF \
    -DDSCONV_BUILD_PYTHON=$([ "$models" = 1 ] && echo ON || echo OFF) >/dev/null
  cmake --build "$build" -j "$jobs" --target dsconv_layers $([ "$models" = 1 ] && echo dsconv_torch_ops)
  "$build/bench/dsconv_layers" --out "$out" "${check_args[@]}" || status=$?
  "$python" scripts/report.py "$out/layers.csv" --out "$out" || status=$?
  if [ "$models" = 1 ]; then
    echo
    echo "model check: converted networks against PyTorch's, on the host platform"
    PYTHONPATH=python "$python" scripts/model_check.py --out "$out" --device cpu || status=$?
  fi
fi
exit "$status"
