#!/usr/bin/env bash
# dsconv on a real NVIDIA GPU: build, test, sanitize, benchmark against PyTorch and cuDNN, report.
#
# Made for a GPU machine without network or package manager that has the driver, nvcc (CUDA
# 13), CMake, Python 3 with PyTorch 2.x (whose pip wheels bring cuDNN 9 under
# site-packages/nvidia/cudnn), compute-sanitizer and Nsight Compute, and nothing else:
# Catch2 and Google Benchmark come from deps/, gathered beforehand on a development machine by
# scripts/gather_gpu_deps.sh (an ignored folder that travels with the source tree). Each step
# is a separate command that fits in 10 minutes on a 16-core machine (bench and sanitize keep
# to a time budget, and bench continues where it stopped when run again); together they took
# about 25 minutes before the backward cases, which triple the bench step's work (run bench
# again until every chunk is done, or narrow it with --pass forward).
#
# Usage: scripts/gpu_check.sh STEP [options]
# Steps:
#   env       what was found: GPU and its architecture, nvcc, cuDNN, deps, tools (also
#             written to OUT/environment.md; every other step records it too)
#   build     configure and build the tests, examples and benchmarks as CUDA for the GPU's own
#             architecture (nvidia-smi's compute capability; else CMake's "native")
#   test      dsconv_tests on the GPU (every variant of every operation against the reference;
#             each test case a process, --jobs at a time), and the examples where built
#   sanitize  compute-sanitizer memcheck, racecheck and synccheck, in parallel, over test
#             cases chosen by tag (one Catch2 test case per process, in the order of --tags,
#             while the budget lasts); fails on any report
#   bench     dsconv_bench against cuDNN's graph API over every case it lists for --batch/--type/
#             --layout/--pass (every layer of both networks: the forward pass, the data gradient,
#             the weight and bias gradients; every distinct inverted-residual block, dsconv's
#             fused and unfused variants against cuDNN running the block's layers in sequence), in
#             chunks of at most 128 benchmarks of one op, batch and type, each chunk's JSON kept
#             gzipped in OUT/bench/ (--kind runs only the chunks of dw, pw or block cases); a
#             warm-up first, GPU clocks sampled before, during and after, the copy bandwidth
#             measured by dsconv_bench itself. Then, with the part of the budget it left
#             (--torch-share of it is kept for them), PyTorch's baselines for the cases of the
#             chunks done (bench/torch_baseline.py with PYTHON: the bare convolution, the eager
#             layer, torchvision's block) into OUT/bench/torch.json.gz. Run it again to finish
#             chunks the budget left out (PyTorch's baselines run again for every chunk done).
#   report    OUT/bench.md (tables), bench.csv, speedup.png, bandwidth.png (percent of the
#             copy bandwidth), roofline.png for the forward pass and the same charts with
#             _backward_data and _backward_weight for the gradients, from OUT/bench/*.json.gz
#             (scripts/report.py; needs no GPU; without matplotlib only the tables)
#   torch     the PyTorch package with its CUDA kernels: `pip install --no-build-isolation
#             ./python` into PYTHON's environment (for the GPU's architecture, --jobs compiles
#             at once; with the kernels torch-prebuild left beside PACK where they fit, only the
#             bindings compile), its pytest suite on CPU and CUDA tensors (OUT/pytest.txt:
#             torch.library's opcheck, torch.compile without graph breaks, forward and a
#             training step), and scripts/model_check.py: the converted networks against
#             PyTorch on the GPU, and their forward and training-step times against plain
#             PyTorch, both memory formats (OUT/models.md; the times appended to the ledger
#             OUT/ledger.csv as op "model" cases of the lease's run). Within --budget (default 540 s).
#   torch-prebuild  (development machine) the PyTorch package's CUDA kernels, which need no
#             PyTorch, compiled with nvcc for --arch (default 80,90) into a static library
#             beside PACK (torch-kernels.a.xz and its manifest torch-kernels.a.json: nvcc
#             release, architectures, commit), so that the torch step builds in about a minute
#   all       build, test, sanitize, bench (until every chunk is done), sweep, report
#   lease     the GPU checks of one short lease (a task may be lent 15 minutes of a device, a
#             command at most 10), in priority order while --budget lasts (default 540 s), into
#             a folder of this run, OUT/<date>-<GPU>-<commit>: unpack the carried programs where
#             the build is missing, env, test (at most 75 s), then the yardstick at batch 8 and
#             128, float and half, each in a folder of its own (bench with cuDNN's graph API and
#             PyTorch's baselines): forward/ (every layer, both layouts), backward/ (both
#             gradients of every layer), blocks/ (every block, NHWC); their reports; every case
#             appended to the ledger OUT/ledger.csv (scripts/ledger.py) and its progress chart;
#             and the run folder's lease.tar.gz, the run and the ledger in one file (a lease
#             brings back few files). The torch step is a lease command of its own (its pip
#             build takes minutes).
#   experiments  the open issues' prepared GPU questions, the second command of a lease, within
#             --budget (default 540 s), into OUT/<the lease's run>/experiments/ (the latest run
#             folder with a forward/bench.csv, or --run-dir): ncu.csv, Nsight Compute
#             (--clock-control none) on the fused block kernel of two blocks at batch 32 (half
#             and float), then on the forward cases at batch 128 furthest behind their
#             best baseline in that run (five of each op) (DRAM throughput, issue-slot use, achieved occupancy,
#             the warps' stall reasons), a kernel launch each; then sweep/, every depthwise and
#             1x1 variant forced on every forward case at batch 8 and 128, float and half, both
#             layouts (the variant table: scripts/tuning_tables.py variants); then blocks/,
#             every block fused and unfused at batch 1, 8, 32 and 128, float and half, NHWC, with
#             torchvision's blocks (the fusion table: scripts/tuning_tables.py blocks); reports,
#             the two planner tables generated for this GPU's architecture (variant_tables.hpp,
#             block_fusion_tables.hpp: copy them to include/dsconv/dispatch/tuning/), and
#             experiments.tar.gz
#   sweep     every variant of each operation forced in turn (dsconv_bench --variant) on every
#             case of --batch/--type/--layout/--pass, dsconv alone (no baseline: fast), each
#             variant's JSON gzipped in OUT/sweep/; the report step then sets them beside
#             bench.csv in OUT/sweep.md (scripts/sweep_report.py): where the heuristic's choice
#             is not the fastest variant. Keeps to --budget (default 240 s) and continues
#             where it stopped when run again
#   pack      (development machine, after `build --arch NN` there: nvcc builds for any GPU
#             without one) the programs the GPU steps run, dsconv_tests and dsconv_bench with
#             the build's CMakeCache.txt, compressed into PACK (default gpu-pack/programs.tar.xz,
#             ignored by git; it travels with deps/), so that a GPU lease spends no time
#             building; checks that the travelling tree stays under 64 MiB
#   unpack    (GPU machine) PACK into the build folder; then run test, sanitize, bench, report
# Options (environment variables in brackets):
#   --out DIR            results folder [DSCONV_GPU_OUT], default results/gpu
#   --build DIR          build folder [DSCONV_GPU_BUILD], default build-gpu
#   --deps DIR           gathered Catch2 and Google Benchmark [DSCONV_GPU_DEPS], default deps
#   --arch LIST          CMAKE_CUDA_ARCHITECTURES, e.g. 90 [DSCONV_CUDA_ARCH], default: detected
#   --jobs N             parallel build jobs [DSCONV_GPU_JOBS], default: all cores
#   --cmake-arg ARG      one more argument for the configuration (repeatable) [DSCONV_GPU_CMAKE_ARGS]
#   --budget SECONDS     time budget of sanitize (the tools run in parallel, each within it; default
#                        300), bench (480) and test (ctest's timeout, 540); 0: none [DSCONV_GPU_BUDGET]
#   --batch LIST --type LIST --layout LIST   benchmark grid, default 1,8,32,128 / float,half / nchw,nhwc
#   --pass forward|backward|all              benchmark passes, default all
#   --kind all|dw|pw|block                   bench: the chunks it runs (of the same list, so that
#                                            runs of different kinds continue one another), default all
#   --legacy             bench: cuDNN's legacy API too (an extra baseline column, cudnn_legacy)
#   --no-torch           bench: no PyTorch baselines
#   --torch-share F      bench: the share of the budget kept for PyTorch's baselines, default 0.4
#   --repetitions N      benchmark repetitions (the report takes the median), default 3
#   --min-time SECONDS   benchmark time per repetition, default 0.02
#   --fresh              bench: discard earlier chunks instead of continuing them
#   --pack FILE          pack, unpack: the archive [DSCONV_GPU_PACK], default gpu-pack/programs.tar.xz
#   --tools LIST         sanitize: compute-sanitizer tools, default memcheck,racecheck,synccheck
#   --run-dir DIR        experiments: the run whose yardstick picks the cases for ncu
#   --tags LIST          sanitize: Catch2 tags in priority order, default
#                        shapes,platform,tf32,split_k,misaligned,epilogue,network
# cuDNN is looked for in CUDNN_ROOT, then in the Python packages (nvidia.cudnn, as PyTorch's
# wheels install it; PYTHON selects the interpreter), then in the CUDA toolkit.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
script_args=("$@")

step=${1:-}
case "$step" in
  env|build|test|sanitize|bench|sweep|report|torch|torch-prebuild|all|lease|experiments|pack|unpack) shift ;;
  -h|--help|help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "usage: scripts/gpu_check.sh env|build|test|sanitize|bench|sweep|report|torch|torch-prebuild|all|lease|experiments|pack|unpack [options] (--help)" >&2
     exit 2 ;;
esac

out=${DSCONV_GPU_OUT:-results/gpu}
build=${DSCONV_GPU_BUILD:-build-gpu}
deps=${DSCONV_GPU_DEPS:-deps}
arch=${DSCONV_CUDA_ARCH:-}
jobs=${DSCONV_GPU_JOBS:-$(nproc)}
budget=${DSCONV_GPU_BUDGET:-}
read -r -a cmake_extra <<< "${DSCONV_GPU_CMAKE_ARGS:-}"
batches=1,8,32,128
types=float,half
layouts=nchw,nhwc
passes=all
kind=all
repetitions=3
min_time=0.02
fresh=0
run_dir=""
legacy=0
torch_baselines=1
torch_share=0.4
tools=memcheck,racecheck,synccheck
tags=shapes,platform,tf32,split_k,misaligned,epilogue,network
chunk_cap=128
pack=${DSCONV_GPU_PACK:-gpu-pack/programs.tar.xz}
while [ $# -gt 0 ]; do
  opt=$1
  case "$opt" in
    --fresh) fresh=1; shift; continue ;;
    --legacy) legacy=1; shift; continue ;;
    --no-torch) torch_baselines=0; shift; continue ;;
    --*=*) set -- "${opt%%=*}" "${opt#*=}" "${@:2}"; opt=$1 ;;
  esac
  [ $# -ge 2 ] || { echo "gpu_check: $opt needs a value" >&2; exit 2; }
  case "$opt" in
    --out) out=$2 ;;
    --build) build=$2 ;;
    --deps) deps=$2 ;;
    --arch) arch=$2 ;;
    --jobs) jobs=$2 ;;
    --cmake-arg) cmake_extra+=("$2") ;;
    --budget) budget=$2 ;;
    --batch) batches=$2 ;;
    --type) types=$2 ;;
    --layout) layouts=$2 ;;
    --pass) passes=$2 ;;
    --kind) kind=$2 ;;
    --torch-share) torch_share=$2 ;;
    --run-dir) run_dir=$2 ;;
    --repetitions) repetitions=$2 ;;
    --min-time) min_time=$2 ;;
    --tools) tools=$2 ;;
    --tags) tags=$2 ;;
    --pack) pack=$2 ;;
    *) echo "gpu_check: unknown option $opt" >&2; exit 2 ;;
  esac
  shift 2
done
if [ -z "$budget" ]; then
  case "$step" in sanitize) budget=300 ;; bench) budget=480 ;; sweep) budget=240 ;; *) budget=540 ;; esac
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
case "$build" in /*) ;; *) build=$root/$build ;; esac
case "$deps" in /*) ;; *) deps=$root/$deps ;; esac
case "$pack" in /*) ;; *) pack=$root/$pack ;; esac
logs=$build/gpu_check_logs
[ "$step" = report ] || [ "$step" = env ] || mkdir -p "$logs"
python=${PYTHON:-python3}

t0=$(date +%s)
now() { date +%s; }
say() { printf '[gpu_check %s +%ds] %s\n' "$step" $(($(now) - t0)) "$*"; }
die() { say "error: $*" >&2; exit 1; }

# One line per step in OUT/steps.md (the latest run of each), for the report.
record_step() {  # name result detail
  local f=$out/steps.tsv s
  touch "$f"
  grep -v "^$1	" "$f" > "$f.new" || true
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$(($(now) - t0)) s" "$3" >> "$f.new"
  mv "$f.new" "$f"
  {
    echo "## Steps of scripts/gpu_check.sh"
    echo
    echo "| step | result | time | detail |"
    echo "|---|---|---|---|"
    for s in build test sanitize bench sweep torch; do
      awk -F'\t' -v s="$s" '$1 == s { printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }' "$f"
    done
  } > "$out/steps.md"
}

# --- what the machine has ---------------------------------------------------------------

have_gpu() { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }
require_gpu() { have_gpu || die "no NVIDIA GPU visible (nvidia-smi -L fails): the $step step needs one"; }

find_nvcc() {
  if [ -n "${CUDACXX:-}" ] && [ -x "$CUDACXX" ]; then echo "$CUDACXX"
  elif [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; then echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc"
  elif command -v nvcc >/dev/null 2>&1; then command -v nvcc
  else return 1
  fi
}

cuda_home() { local n; n=$(find_nvcc) && dirname "$(dirname "$(readlink -f "$n")")"; }

find_tool() {  # name: on PATH, else in the CUDA toolkit
  if command -v "$1" >/dev/null 2>&1; then command -v "$1"; return; fi
  local home p
  home=$(cuda_home) || return 1
  for p in "$home/bin/$1" "$home/$1/$1" "$home"/nsight-compute*/"$1"; do
    [ -x "$p" ] && { echo "$p"; return; }
  done
  return 1
}

# cuDNN's folder (with include/cudnn.h and lib/ or lib64/): CUDNN_ROOT, else PyTorch's pip
# wheel (nvidia.cudnn, found by importing it or below site-packages), else the CUDA toolkit.
find_cudnn_root() {
  if [ -n "${CUDNN_ROOT:-}" ] && [ -f "$CUDNN_ROOT/include/cudnn.h" ]; then echo "$CUDNN_ROOT"; return; fi
  local found
  if found=$("$python" - 2>/dev/null <<'EOF'
import glob, os, site, sys

def ok(p):
    return os.path.isfile(os.path.join(p, "include", "cudnn.h"))

try:
    import nvidia.cudnn as m
    paths = list(getattr(m, "__path__", []))
    if getattr(m, "__file__", None):
        paths.append(os.path.dirname(m.__file__))
    for p in paths:
        if ok(p):
            print(os.path.abspath(p))
            sys.exit(0)
except Exception:
    pass
roots = list(sys.path)
try:
    roots += site.getsitepackages() + [site.getusersitepackages()]
except Exception:
    pass
for r in roots:
    for p in sorted(glob.glob(os.path.join(r, "nvidia", "cudnn*"))):
        if ok(p):
            print(os.path.abspath(p))
            sys.exit(0)
sys.exit(1)
EOF
  ); then echo "$found"; return; fi
  local home
  home=$(cuda_home) && [ -f "$home/include/cudnn.h" ] && { echo "$home"; return; }
  return 1
}

# The library file to link: the wheel has libcudnn.so.9 and no unversioned libcudnn.so.
find_cudnn_library() {  # root
  local d f
  for d in "$1/lib" "$1/lib64" "$1/targets/x86_64-linux/lib"; do
    for f in "$d/libcudnn.so" "$d"/libcudnn.so.[0-9]*; do
      [ -f "$f" ] && { echo "$f"; return; }
    done
  done
  return 1
}

cudnn_version() {  # root
  awk '/#define CUDNN_(MAJOR|MINOR|PATCHLEVEL)[ \t]/ { v[$2] = $3 }
       END { if (v["CUDNN_MAJOR"] != "") printf "%s.%s.%s", v["CUDNN_MAJOR"], v["CUDNN_MINOR"], v["CUDNN_PATCHLEVEL"] }' \
    "$1/include/cudnn_version.h" 2>/dev/null || true
}

gpu_value() { nvidia-smi --query-gpu="$1" --format=csv,noheader,nounits -i 0 2>/dev/null | head -1 | sed 's/^ *//; s/ *$//'; }

detect_arch() {
  if [ -n "$arch" ]; then echo "$arch"; return; fi
  local cc=""
  have_gpu && cc=$(gpu_value compute_cap)
  if [[ "$cc" =~ ^[0-9]+\.[0-9]+$ ]]; then echo "${cc/./}"; else echo native; fi
}

# The nvidia-smi fields the clock samples take (newer drivers renamed the throttle reasons),
# found on the first sample.
clock_fields=""
sample_clocks() {  # phase: one line into OUT/clocks.csv
  local f=$out/clocks.csv base q
  if [ -z "$clock_fields" ]; then
    base="timestamp,pstate,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,temperature.gpu,power.draw,utilization.gpu"
    for q in "$base,clocks_event_reasons.active" "$base,clocks_throttle_reasons.active" "$base"; do
      if nvidia-smi --query-gpu="$q" --format=csv,noheader -i 0 >/dev/null 2>&1; then clock_fields=$q; break; fi
    done
    [ -n "$clock_fields" ] || clock_fields="timestamp,clocks.sm,clocks.mem"
  fi
  [ -s "$f" ] || echo "phase,$clock_fields" > "$f"
  nvidia-smi --query-gpu="$clock_fields" --format=csv,noheader,nounits -i 0 2>/dev/null | sed "s/^/$1, /" >> "$f" || true
}

# The commit the programs were built from: the pack's record (a GPU machine's copy of the tree may
# have no git history), else the checkout's; "-dirty" where the work tree had local changes.
source_commit() {
  local c
  if [ -s "$(dirname "$pack")/commit.txt" ]; then cat "$(dirname "$pack")/commit.txt"; return; fi
  c=$(git -C "$root" rev-parse --short HEAD 2>/dev/null) || { echo unknown; return; }
  git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | grep -q . && c="$c-dirty"
  echo "$c"
}

write_environment() {
  local f=$out/environment.md nvcc_path cudnn="" lib="" line
  {
    echo "## Machine and toolchain"
    echo
    echo "- Date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "- Source: commit $(source_commit)"
    if have_gpu; then
      echo "- GPU: $(gpu_value name), compute capability $(gpu_value compute_cap), $(gpu_value memory.total) MiB," \
        "driver $(gpu_value driver_version)$(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | head -1 | sed 's/^/, /')"
      echo "- GPU limits: SM clock up to $(gpu_value clocks.max.sm) MHz, memory clock $(gpu_value clocks.max.mem) MHz," \
        "power limit $(gpu_value power.limit) W, persistence mode $(gpu_value persistence_mode)," \
        "$(nvidia-smi -L | wc -l) GPU(s) visible"
    else
      echo "- GPU: none visible (nvidia-smi -L fails)"
    fi
    echo "- CPU: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')"
    if nvcc_path=$(find_nvcc); then
      echo "- nvcc: $nvcc_path ($("$nvcc_path" --version | grep -o 'release.*' || true))"
    else
      echo "- nvcc: not found"
    fi
    # What the build in $build used, where there is one; else what a build would use.
    line=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
    [ -n "$line" ] && line="$line in $build, "
    echo "- CUDA architectures: ${line}detected $(detect_arch)"
    lib=$(sed -n 's/^DSCONV_CUDNN_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
    if [ -n "$lib" ]; then
      echo "- cuDNN: $(cudnn_version "$(dirname "$(dirname "$lib")")") (headers), $lib (in $build)"
    elif cudnn=$(find_cudnn_root); then
      echo "- cuDNN: $(cudnn_version "$cudnn") (headers), $(find_cudnn_library "$cudnn" || echo "no library")"
    else
      echo "- cuDNN: not found"
    fi
    line=$("$python" -c 'import torch; print("PyTorch %s (CUDA %s, cuDNN %s)" % (torch.__version__, torch.version.cuda, torch.backends.cudnn.version()))' 2>/dev/null || true)
    [ -n "$line" ] && echo "- Python: $("$python" --version 2>&1), $line"
    echo "- CMake: $(cmake --version 2>/dev/null | head -1 | sed 's/cmake version //'), Ninja: $(ninja --version 2>/dev/null || echo none)"
    line=$(find_tool compute-sanitizer) && echo "- compute-sanitizer: $("$line" --version 2>/dev/null | grep -i version | tail -1)"
    line=$(find_tool ncu) && echo "- Nsight Compute: $("$line" --version 2>/dev/null | tail -1)"
    if [ -f "$deps/MANIFEST.txt" ]; then
      echo "- Catch2 and Google Benchmark: $deps/ ($(grep -E '^  (catch2|libbenchmark-dev) ' "$deps/MANIFEST.txt" | sed 's/^ *//' | paste -sd, | sed 's/,/, /g'))"
    else
      echo "- Catch2 and Google Benchmark: the system's ($deps/ not gathered)"
    fi
  } > "$f"
  cat "$f"
}

# --- steps --------------------------------------------------------------------------------

step_env() {
  write_environment
  have_gpu || say "no GPU here: build and report work, test, sanitize and bench need one"
}

# The architectures as machine code only ("90" -> "90-real"; "native" and explicit forms as
# given): the programs run on the GPU they were built for, and the PTX nvcc embeds besides, for
# other GPUs to compile at load time, is as large as the machine code: with it the pack of the
# two programs had passed the 64 MiB a GPU run carries.
real_architectures() {
  local out="" x list
  IFS=';' read -ra list <<< "$1"
  for x in "${list[@]}"; do
    [[ "$x" =~ ^[0-9]+[af]?$ ]] && x="$x-real"
    out="${out:+$out;}$x"
  done
  echo "$out"
}

step_build() {
  local nvcc cudnn lib a generator=()
  nvcc=$(find_nvcc) || die "nvcc not found (CUDACXX, CUDA_HOME/bin, /usr/local/cuda/bin or PATH)"
  cudnn=$(find_cudnn_root) || die "cuDNN not found (CUDNN_ROOT, the nvidia.cudnn Python package or the CUDA toolkit)"
  lib=$(find_cudnn_library "$cudnn") || die "no libcudnn.so* under $cudnn"
  [ -d "$deps" ] || say "warning: $deps/ is missing (scripts/gather_gpu_deps.sh): relying on an installed Catch2 and Google Benchmark"
  a=$(detect_arch)
  write_environment >/dev/null
  command -v ninja >/dev/null 2>&1 && [ ! -f "$build/CMakeCache.txt" ] && generator=(-G Ninja)
  say "configuring $build: CUDA architectures $a, nvcc $nvcc, cuDNN $cudnn"
  # -lineinfo: source lines in compute-sanitizer's and Nsight Compute's reports (the code is
  # the same without it).
  cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DDSCONV_BACKEND=cuda \
    -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="$(real_architectures "$a")" -DCMAKE_CUDA_FLAGS=-lineinfo \
    -DCMAKE_PREFIX_PATH="$deps" \
    -DDSCONV_CUDNN_INCLUDE_DIR="$cudnn/include" -DDSCONV_CUDNN_LIBRARY="$lib" \
    "${cmake_extra[@]}" > "$logs/configure.log" 2>&1 || { tail -40 "$logs/configure.log"; die "configuration failed"; }
  grep -E '^(Catch2_DIR|benchmark_DIR|DSCONV_CUDNN_LIBRARY|DSCONV_CUDNN_INCLUDE_DIR)[:=]' "$build/CMakeCache.txt" | sed 's/^/  /'
  # The tests first, so that a benchmark that cannot link (a C++ runtime older than the
  # gathered Google Benchmark's) leaves them usable.
  say "building the tests and examples ($jobs jobs)"
  cmake --build "$build" -j "$jobs" --target dsconv_tests readme_example quick_start mobilenet_v2_block \
    > "$logs/build.log" 2>&1 || { tail -60 "$logs/build.log"; record_step build failed "tests did not build"; die "build failed"; }
  say "building the benchmarks"
  cmake --build "$build" -j "$jobs" >> "$logs/build.log" 2>&1 ||
    { tail -60 "$logs/build.log"; record_step build failed "benchmarks did not build"; die "build failed"; }
  # The programs start (libraries found at run time) without touching the GPU.
  runtime_env
  local cases
  cases=$("$build/tests/dsconv_tests" --list-test-names-only || true)
  [ -n "$cases" ] || die "dsconv_tests does not start"
  "$build/bench/dsconv_bench" --benchmark_list_tests > "$logs/bench_list.txt" ||
    { ldd "$build/bench/dsconv_bench" | grep -i 'not found' || true; die "dsconv_bench does not start"; }
  say "built: $(grep -c . "$logs/bench_list.txt") benchmarks listed, $(grep -c . <<< "$cases") test cases"
  record_step build ok "CUDA architectures $a, cuDNN $(cudnn_version "$cudnn")"
}

require_built() {
  [ -x "$build/$1" ] || die "$build/$1 is missing: run scripts/gpu_check.sh build first"
}

# The programs find the cuDNN they were built with first (else the one this machine has, for
# a build made elsewhere), Google Benchmark in the gathered folder, then the CUDA toolkit's
# runtime (where the system's loader configuration lacks it).
runtime_env() {
  local lib dir="" home root multiarch
  lib=$(sed -n 's/^DSCONV_CUDNN_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
  if [ -n "$lib" ] && [ -e "$lib" ]; then
    dir=$(dirname "$lib")
  elif root=$(find_cudnn_root) && lib=$(find_cudnn_library "$root"); then
    dir=$(dirname "$lib")
  fi
  multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
  [ -d "$deps/lib/$multiarch" ] && dir="${dir:+$dir:}$deps/lib/$multiarch"
  home=$(cuda_home || true)
  export LD_LIBRARY_PATH="${dir:+$dir:}${home:+$home/lib64:$home/lib:}${LD_LIBRARY_PATH:-}"
}

# One test program's Catch2 test cases, one process each, $jobs at a time (the references run
# on the host, so the cases share the cores while the GPU takes their kernels); a line per case
# (result, seconds, name) in $logs/test/cases.tsv, the output of the failed ones in failed.log.
run_test_cases() {  # program deadline
  local program=$1 deadline=$2 dir=$logs/test name i=0 running=0
  rm -rf "$dir"
  mkdir -p "$dir/parts"
  { "$program" --list-test-names-only || true; } | awk 'NF' > "$dir/cases.txt"  # Catch2 2 exits with the count
  [ -s "$dir/cases.txt" ] || die "$program lists no test case"
  while IFS= read -r name; do
    i=$((i + 1))
    if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
    (
      start=$(now) rc=0 result=passed
      left=$((deadline - start))
      if [ "$budget" -gt 0 ] && [ "$left" -lt 5 ]; then
        printf 'not run (budget)\t0\t%s\n' "$name" > "$dir/parts/$i.tsv"; exit 0
      fi
      timeout -k 10 "$((budget > 0 ? left : 3600))" "$program" --use-colour no --warn NoTests \
        "$(catch_spec "$name")" > "$dir/parts/$i.out" 2>&1 || rc=$?
      case $rc in
        0) ;;
        124|137) result="stopped (budget)" ;;
        77) result="no GPU" ;;
        *) result="FAILED (exit $rc)" ;;
      esac
      printf '%s\t%s\t%s\n' "$result" "$(($(now) - start))" "$name" > "$dir/parts/$i.tsv"
      [ "$result" = passed ] && rm -f "$dir/parts/$i.out"
    ) &
    running=$((running + 1))
  done < "$dir/cases.txt"
  wait
  cat $(ls "$dir"/parts/*.tsv | sort -V) > "$dir/cases.tsv"
  : > "$dir/failed.log"
  for i in $(ls "$dir"/parts/*.out 2>/dev/null | sort -V); do
    { echo "### $(cut -f3 "${i%.out}.tsv")"; tail -n 120 "$i"; } >> "$dir/failed.log"
  done
}

step_test() {
  require_gpu
  require_built tests/dsconv_tests
  write_environment >/dev/null
  runtime_env
  local rc=0 ex log=$logs/test.log deadline passed total
  say "dsconv_tests on $(gpu_value name): each test case a process, $jobs at a time"
  deadline=$(($(now) + budget))
  run_test_cases "$build/tests/dsconv_tests" "$deadline"
  total=$(grep -c . "$logs/test/cases.tsv" || true)
  passed=$(cut -f1 "$logs/test/cases.tsv" | grep -c '^passed$' || true)
  {
    echo "# dsconv_tests on $(gpu_value name)"
    echo
    cut -f1 "$logs/test/cases.tsv" | sort | uniq -c | sed 's/^ */- /'
    echo
    echo "| test case | seconds | result |"
    echo "|---|---|---|"
    awk -F'\t' '{ printf "| %s | %s | %s |\n", $3, $2, $1 }' "$logs/test/cases.tsv"
  } > "$out/test.md"
  [ "$passed" -eq "$total" ] || rc=1
  cat "$logs/test/failed.log" > "$log"
  for ex in tests/readme_example examples/quick_start examples/mobilenet_v2_block; do
    if [ ! -x "$build/$ex" ]; then
      echo "=== $ex: not built here (not run)" >> "$log"
      continue
    fi
    echo "=== $ex" >> "$log"
    "$build/$ex" >> "$log" 2>&1 || { echo "$ex exited with $?" >> "$log"; rc=1; }
  done
  head -c 400000 "$log" > "$out/test.log"
  say "$passed of $total test cases passed"
  if [ "$rc" -ne 0 ]; then
    grep -h '^### \|exited with' "$log" | head -20
    record_step test failed "$passed of $total test cases passed; see test.md, test.log"
    die "tests failed (log: $out/test.log)"
  fi
  record_step test ok "$passed of $total test cases passed"
  say "tests passed"
}

# A Catch2 test name as a test spec: commas, brackets and backslashes escaped.
catch_spec() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//,/\\,}
  s=${s//[/\\[}
  s=${s//]/\\]}
  printf '%s' "$s"
}

# One tool over the listed test cases, one process each, until the deadline; a line per case
# (result, seconds, name) in $logs/sanitize/<tool>.tsv, the output of the runs that were not
# clean in <tool>.log.
sanitize_tool() {  # tool sanitizer names-file deadline worker workers
  local tool=$1 sanitizer=$2 names=$3 deadline=$4 worker=$5 workers=$6
  local tsv=$logs/sanitize/parts/$1.$5.tsv log=$logs/sanitize/parts/$1.$5.log name start rc result case_log
  local -a extra
  read -r -a extra <<< "${DSCONV_SANITIZER_ARGS:-}"
  : > "$tsv"
  : > "$log"
  local i=0
  while IFS= read -r name; do
    i=$((i + 1))
    [ $((i % workers)) -eq "$worker" ] || continue  # this worker's share of the cases
    start=$(now)
    if [ "$budget" -gt 0 ] && [ $((deadline - start)) -lt 15 ]; then
      printf 'not run (budget)\t0\t%s\n' "$name" >> "$tsv"
      continue
    fi
    case_log=$logs/sanitize/$tool-$i.out
    rc=0
    timeout -k 10 "$((budget > 0 ? deadline - start : 3600))" \
      "$sanitizer" --tool "$tool" --print-limit 50 "${extra[@]}" \
      "$build/tests/dsconv_tests" --use-colour no --warn NoTests "$(catch_spec "$name")" > "$case_log" 2>&1 || rc=$?
    if grep -qE 'ERROR SUMMARY: [1-9][0-9]* error|RACECHECK SUMMARY: [1-9][0-9]* hazard' "$case_log"; then
      result=REPORTED
    elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      result="stopped (budget)"
    elif [ "$rc" -eq 77 ]; then
      result="no GPU"
    elif [ "$rc" -ne 0 ]; then
      result="FAILED (exit $rc)"
    elif ! grep -qE 'ERROR SUMMARY|RACECHECK SUMMARY' "$case_log"; then
      result="FAILED (no sanitizer summary)"
    else
      result=clean
    fi
    printf '%s\t%s\t%s\n' "$result" "$(($(now) - start))" "$name" >> "$tsv"
    if [ "$result" != clean ]; then
      { echo "### $tool: $name: $result"; head -n 150 "$case_log"; } >> "$log"
    fi
  done < "$names"
}

step_sanitize() {
  require_gpu
  require_built tests/dsconv_tests
  local sanitizer dir=$logs/sanitize names tag tool deadline pids=() failed=0 skipped clean workers w
  local -a tool_list
  read -r -a tool_list <<< "${tools//,/ }"
  sanitizer=$(find_tool compute-sanitizer) || die "compute-sanitizer not found (PATH or the CUDA toolkit)"
  runtime_env
  rm -rf "$dir"
  mkdir -p "$dir/parts"
  names=$dir/cases.txt
  # The test cases of each tag, in the order of the tags, each once.
  for tag in ${tags//,/ }; do
    "$build/tests/dsconv_tests" --list-test-names-only "[$tag]" >> "$names.all" || true
  done
  awk 'NF && !seen[$0]++' "$names.all" > "$names"
  [ -s "$names" ] || die "no test case has the tags $tags"
  deadline=$(($(now) + budget))
  say "$(wc -l < "$names") test cases (tags $tags) under ${tool_list[*]} in parallel, budget $budget s"
  # Several processes per tool where there are cores for them (the tools are slow on the
  # host side), each taking every workers-th case.
  workers=$((jobs / ${#tool_list[@]}))
  [ "$workers" -ge 1 ] || workers=1
  say "$workers processes per tool"
  for tool in "${tool_list[@]}"; do
    for ((w = 0; w < workers; w++)); do
      sanitize_tool "$tool" "$sanitizer" "$names" "$deadline" "$w" "$workers" &
      pids+=($!)
    done
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  for tool in "${tool_list[@]}"; do
    cat "$dir/parts/$tool".*.tsv > "$dir/$tool.tsv"
    cat "$dir/parts/$tool".*.log > "$dir/$tool.log"
  done
  {
    echo "# compute-sanitizer over dsconv_tests on $(gpu_value name)"
    echo
    echo "One process per Catch2 test case of the tags $tags, budget $budget s per tool;" \
      "$("$sanitizer" --version 2>/dev/null | grep -io 'version [0-9.]*' | tail -1 | sed 's/^/compute-sanitizer /')."
    echo
    for tool in "${tool_list[@]}"; do
      awk -F'\t' -v t="$tool" '{ n[$1]++; s += $2 } END {
        printf "- %s: %d s;", t, s; for (r in n) printf " %s %d;", r, n[r]; printf "\n" }' "$dir/$tool.tsv"
    done
    echo
    echo "| tool | test case | seconds | result |"
    echo "|---|---|---|---|"
    for tool in "${tool_list[@]}"; do
      awk -F'\t' -v t="$tool" '{ printf "| %s | %s | %s | %s |\n", t, $3, $2, $1 }' "$dir/$tool.tsv"
    done
  } > "$out/sanitize.md"
  rm -f "$out"/sanitize-*.log
  for tool in "${tool_list[@]}"; do
    [ -s "$dir/$tool.log" ] && head -c 200000 "$dir/$tool.log" > "$out/sanitize-$tool.log"
  done
  grep '^- ' "$out/sanitize.md" | sed 's/^/  /'
  cut -f1 "$dir"/*.tsv | grep -qvE '^(clean|not run \(budget\)|stopped \(budget\))$' && failed=1
  skipped=$(cut -f1 "$dir"/*.tsv | grep -cE '^(not run|stopped) \(budget\)' || true)
  clean=$(cut -f1 "$dir"/*.tsv | grep -c '^clean' || true)
  [ "$skipped" -gt 0 ] && say "warning: $skipped runs (tool x test case) did not fit the budget (--budget, --tags)"
  [ "$clean" -gt 0 ] || failed=1
  if [ "$failed" -ne 0 ]; then
    grep -h '^### ' "$dir"/*.log | head -20
    record_step sanitize failed "reports or failures: see sanitize.md"
    die "compute-sanitizer found problems (summary: $out/sanitize.md)"
  fi
  record_step sanitize ok "$clean clean runs, $skipped not run (budget)"
  say "no sanitizer reports"
}

# Whether chunk `key` (NNN-op-bN-type, plan_chunks' names) holds cases of --kind: dw (dw, dwbd,
# dwbw), pw likewise, block, or all.
chunk_of_kind() {  # key
  local op=${1#*-}
  op=${op%%-*}
  case "$kind" in
    all) return 0 ;;
    block) [ "$op" = block ] ;;
    dw|pw) [ "${op#"$kind"}" != "$op" ] ;;
    *) die "--kind must be all, dw, pw or block (got $kind)" ;;
  esac
}

# Splits the listed benchmarks into chunks (by the name's first part, batch and type where it
# has them; at most chunk_cap each) and writes each chunk's names and exact-match filter.
plan_chunks() {  # list-file plan-dir
  "$python" - "$1" "$2" "$chunk_cap" <<'EOF'
import os, re, sys
names = [l.strip() for l in open(sys.argv[1]) if l.strip()]
plan, cap = sys.argv[2], int(sys.argv[3])
groups = {}
for n in names:
    parts = n.split("/")
    key = [parts[0]]
    for i, p in enumerate(parts[1:], 1):
        if re.fullmatch(r"b\d+", p):
            key += [p] + parts[i + 1:i + 2]
            break
    groups.setdefault(re.sub(r"[^A-Za-z0-9_.-]", "_", "-".join(key)), []).append(n)


def exact(part):
    return "^(" + "|".join(re.sub(r"([.\[\]()*+?{}|^$\\])", r"\\\1", n) for n in part) + ")$"

with open(os.path.join(plan, "warmup.filter"), "w") as f:
    f.write(exact(names[:4]))
index = 0
for key, members in groups.items():
    for start in range(0, len(members), cap):
        part = members[start:start + cap]
        stem = os.path.join(plan, "%03d-%s" % (index, key))
        index += 1
        with open(stem + ".names", "w") as f:
            f.write("\n".join(part) + "\n")
        with open(stem + ".filter", "w") as f:
            f.write(exact(part))
EOF
}

# PyTorch's baselines (bench/torch_baseline.py) for the cases of every chunk done, within what is
# left of the budget, into DIR/torch.json.gz.
run_torch_baselines() {  # dsconv_bench bench-dir bench-start
  local bin=$1 dir=$2 left rc=0
  "$bin" --case_table="$logs/cases.json" "${sel[@]}" || { say "dsconv_bench wrote no case table"; return 1; }
  cat "$dir"/*.names > "$logs/torch_names.txt"
  # A continued bench keeps the baselines of the chunks done before (the first lease measured
  # them all again: 159 s of its 286).
  rm -f "$logs/torch_kept.json"
  [ -s "$dir/torch.json.gz" ] && gzip -dc "$dir/torch.json.gz" > "$logs/torch_kept.json"
  left=0
  [ "$budget" -gt 0 ] && left=$(($3 + budget - $(now) - 10))
  if [ "$budget" -gt 0 ] && [ "$left" -lt 20 ]; then say "no time left for PyTorch's baselines"; return 0; fi
  say "PyTorch's baselines for $(grep -c . "$logs/torch_names.txt") benchmarks' cases$([ "$left" -gt 0 ] && echo ", within $left s")"
  timeout -k 15 "$([ "$left" -gt 0 ] && echo $((left + 30)) || echo 86400)" "$python" "$root/bench/torch_baseline.py" \
    --cases "$logs/cases.json" --names "$logs/torch_names.txt" --out "$logs/torch.json" --budget "$left" \
    --repetitions "$repetitions" --min-time "$min_time" --keep "$logs/torch_kept.json" > "$logs/torch_baseline.log" 2>&1 || rc=$?
  tail -1 "$logs/torch_baseline.log"
  if [ "$rc" -ne 0 ] || [ ! -s "$logs/torch.json" ]; then
    say "bench/torch_baseline.py failed (exit $rc); last lines:"; tail -8 "$logs/torch_baseline.log"; return 1
  fi
  gzip -9 -c "$logs/torch.json" > "$dir/torch.json.gz"
}

step_bench() {
  require_gpu
  require_built bench/dsconv_bench
  write_environment >/dev/null
  runtime_env
  local bin=$build/bench/dsconv_bench dir=$out/bench plan=$logs/bench_plan start deadline
  local sel=("--batch=$batches" "--type=$types" "--layout=$layouts" "--pass=$passes")
  [ "$legacy" = 1 ] && sel+=(--legacy)
  local listed stem key count remaining est rc chunk_start secs errors done_secs=0 done_count=0
  local total=0 finished=0 failed=0 sampler with_torch=0
  mkdir -p "$dir"
  start=$(now)
  deadline=$((start + budget))
  # PyTorch's baselines get their share of the budget after the chunks.
  if [ "$torch_baselines" = 1 ] && "$python" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    with_torch=1
    [ "$budget" -gt 0 ] && deadline=$((start + budget - $(awk -v b="$budget" -v s="$torch_share" 'BEGIN { printf "%d", b * s }')))
  elif [ "$torch_baselines" = 1 ]; then
    say "warning: $python has no PyTorch with CUDA: no PyTorch baselines (PYTHON names another interpreter)"
  fi
  "$bin" --benchmark_list_tests "${sel[@]}" > "$logs/bench_list.txt" || die "dsconv_bench cannot list its benchmarks"
  listed=$(grep -c . "$logs/bench_list.txt" || true)
  [ "$listed" -gt 0 ] || die "dsconv_bench lists no benchmark for --batch $batches --type $types --layout $layouts --pass $passes"
  if [ "$fresh" -eq 1 ] || ! cmp -s "$logs/bench_list.txt" "$dir/list.txt"; then
    [ -f "$dir/list.txt" ] && say "starting afresh (--fresh, or another list of benchmarks than the earlier run's)"
    rm -f "$dir"/*.json.gz "$dir"/*.names "$out/clocks.csv"
    cp "$logs/bench_list.txt" "$dir/list.txt"
  fi
  rm -rf "$plan"
  mkdir -p "$plan"
  plan_chunks "$dir/list.txt" "$plan"
  for stem in "$plan"/*.names; do
    key=$(basename "$stem" .names)
    chunk_of_kind "$key" || { rm -f "$stem"; continue; }
    total=$((total + 1))
    [ -f "$dir/$key.json.gz" ] && cmp -s "$stem" "$dir/$key.names" && finished=$((finished + 1))
  done
  [ "$total" -gt 0 ] || die "no chunk of kind $kind among the listed benchmarks"
  say "$listed benchmarks; $total chunks$([ "$kind" != all ] && echo " of kind $kind"), $finished done before; $repetitions repetitions of $min_time s, budget ${budget} s"
  [ "$finished" -eq "$total" ] && { say "every chunk is done (--fresh to run them again)"; return 0; }

  sample_clocks before
  say "warm-up"
  "$bin" "${sel[@]}" "--benchmark_filter=$(cat "$plan/warmup.filter")" --benchmark_min_time=0.5 \
    --benchmark_repetitions=1 > "$logs/bench_warmup.log" 2>&1 || true
  grep -m2 'ERROR OCCURRED' "$logs/bench_warmup.log" | sed 's/^/  warm-up: /' || true
  sample_clocks after-warmup

  for stem in "$plan"/*.names; do
    key=$(basename "$stem" .names)
    [ -f "$dir/$key.json.gz" ] && cmp -s "$stem" "$dir/$key.names" && continue
    count=$(grep -c . "$stem")
    remaining=$((deadline - $(now)))
    if [ "$budget" -gt 0 ]; then
      est=$((done_count > 0 ? done_secs * count * 5 / done_count / 4 : 0))  # 1.25 x the rate so far
      if [ "$remaining" -lt 20 ] || [ "$est" -gt "$remaining" ]; then break; fi
    else
      remaining=86400
    fi
    chunk_start=$(now)
    ( while :; do sample_clocks "load $key"; sleep 2; done ) > /dev/null 2>&1 &
    sampler=$!
    rc=0
    timeout -k 15 "$remaining" "$bin" "${sel[@]}" "--benchmark_filter=$(cat "$plan/$key.filter")" \
      --benchmark_repetitions="$repetitions" --benchmark_min_time="$min_time" \
      --benchmark_display_aggregates_only=true \
      --benchmark_out="$logs/$key.json" --benchmark_out_format=json > "$logs/$key.log" 2>&1 || rc=$?
    kill "$sampler" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    secs=$(($(now) - chunk_start))
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      say "$key: stopped by the budget after $secs s (run the bench step again to redo it)"
      rm -f "$logs/$key.json"
      break
    fi
    if ! errors=$("$python" -c '
import json, sys
b = json.load(open(sys.argv[1])).get("benchmarks", [])
names = {x.get("run_name") for x in b}
print(len(names), sum(1 for x in b if x.get("error_occurred")))' "$logs/$key.json" 2>/dev/null); then
      say "$key: dsconv_bench exited with $rc and no complete JSON after $secs s; last lines:"
      tail -15 "$logs/$key.log"
      [ "$rc" -eq 77 ] && die "dsconv_bench found no usable GPU"
      failed=1
      continue
    fi
    gzip -9 -c "$logs/$key.json" > "$dir/$key.json.gz"
    cp "$stem" "$dir/$key.names"
    finished=$((finished + 1))
    done_secs=$((done_secs + secs))
    done_count=$((done_count + count))
    say "[$finished/$total] $key: ${errors% *} of $count benchmarks in $secs s, ${errors#* } with errors$([ "$rc" -ne 0 ] && echo ", exit $rc")"
    if [ "${errors#* }" != 0 ]; then
      "$python" -c '
import json, sys
for x in json.load(open(sys.argv[1])).get("benchmarks", []):
    if x.get("error_occurred"):
        print("   ", x.get("run_name"), ":", x.get("error_message", "")[:200]); break' "$logs/$key.json" || true
    fi
    [ "$rc" -ne 0 ] && failed=1
  done
  sample_clocks after
  [ "$with_torch" = 1 ] && [ "$finished" -gt 0 ] && { run_torch_baselines "$bin" "$dir" "$start" || failed=1; }
  record_step bench "$([ "$failed" -ne 0 ] && echo failed || { [ "$finished" -eq "$total" ] && echo ok || echo incomplete; })" \
    "$finished of $total chunks ($listed benchmarks), $repetitions x $min_time s$([ "$with_torch" = 1 ] && echo ", PyTorch's baselines")"
  [ "$failed" -ne 0 ] && die "dsconv_bench failed on some chunk (logs in $logs)"
  if [ "$finished" -lt "$total" ]; then
    say "incomplete: $finished of $total chunks done; run the bench step again to continue"
    exit 3
  fi
  say "all $total chunks done: results in $dir"
}

# The variants dsconv_bench --variant takes (dsconv::to_string of each), as kind:variant, in the
# order the sweep runs them: the open questions first, so that a budget that runs out leaves the
# variants measured before (the 1x1 tensor-core and SIMT GEMMs, float's included; the tensor-core
# and register depthwise kernels), the ones that lost every measured case last.
sweep_variants() {
  echo pw:mma_small pw:gemm_small pw:split_k pw:mma_stream pw:mma_large pw:warp_dot \
    dw:nhwc_matrix dw:nchw_matrix dw:nhwc_register dw:nchw_register dw:nhwc_tiled dw:nchw_tiled dw:direct pw:direct pw:gemm_large
}

step_sweep() {
  require_gpu
  require_built bench/dsconv_bench
  write_environment >/dev/null
  runtime_env
  local bin=$build/bench/dsconv_bench dir=$out/sweep kv kind v f start deadline rc done_count=0 left=0
  local sel=("--batch=$batches" "--type=$types" "--layout=$layouts" "--pass=$passes")
  mkdir -p "$dir"
  start=$(now)
  deadline=$((start + budget))
  # A sweep of another grid starts afresh.
  printf '%s\n' "${sel[@]}" > "$logs/sweep_selection.txt"
  if [ "$fresh" -eq 1 ] || ! cmp -s "$logs/sweep_selection.txt" "$dir/selection.txt"; then
    rm -f "$dir"/*.json.gz
    cp "$logs/sweep_selection.txt" "$dir/selection.txt"
  fi
  for kv in $(sweep_variants); do
    kind=${kv%%:*} v=${kv#*:}
    f=$dir/$kind-$v.json.gz
    [ -f "$f" ] && { done_count=$((done_count + 1)); continue; }
    if [ "$budget" -gt 0 ] && [ $((deadline - $(now))) -lt 20 ]; then left=$((left + 1)); continue; fi
    rc=0
    timeout -k 10 "$((budget > 0 ? deadline - $(now) : 3600))" "$bin" "${sel[@]}" --kind="$kind" --variant="$v" \
      --benchmark_filter=/dsconv/ --benchmark_repetitions="$repetitions" --benchmark_min_time="$min_time" \
      --benchmark_display_aggregates_only=true --benchmark_out="$logs/sweep.json" --benchmark_out_format=json \
      > "$logs/sweep-$kind-$v.log" 2>&1 || rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then left=$((left + 1)); continue; fi
    # A forced variant that cannot run a case reports an error for that case: expected.
    "$python" -c 'import json, sys; json.load(open(sys.argv[1]))' "$logs/sweep.json" 2>/dev/null ||
      { tail -5 "$logs/sweep-$kind-$v.log"; die "dsconv_bench --variant=$v wrote no complete JSON (exit $rc)"; }
    gzip -9 -c "$logs/sweep.json" > "$f"
    done_count=$((done_count + 1))
    say "$kind $v done ($(($(now) - start)) s)"
  done
  record_step sweep "$([ "$left" -eq 0 ] && echo ok || echo incomplete)" "$done_count variants swept, $left left"
  if [ "$left" -gt 0 ]; then
    say "incomplete: $left variants left; run the sweep step again to continue"
    exit 3
  fi
  say "every variant swept: $dir"
}

step_report() {
  local py="" p files=()
  for p in "${PYTHON:-}" python3 /usr/bin/python3; do
    [ -n "$p" ] && "$p" -c 'import matplotlib' 2>/dev/null && { py=$p; break; }
  done
  [ -n "$py" ] || { py=$python; say "no matplotlib: tables only (run the report step again where matplotlib is)"; }
  shopt -s nullglob
  files=("$out"/bench/*.json.gz "$out"/bench/*.json)
  shopt -u nullglob
  [ ${#files[@]} -gt 0 ] || die "no benchmark results in $out/bench (run the bench step)"
  local notes=()
  [ -f "$out/environment.md" ] && notes+=(--notes "$out/environment.md")
  [ -f "$out/steps.md" ] && notes+=(--notes "$out/steps.md")
  [ -f "$out/clocks.csv" ] && notes+=(--clocks "$out/clocks.csv")
  [ -f "$out/ledger.csv" ] && notes+=(--ledger "$out/ledger.csv")
  "$py" scripts/report.py "${files[@]}" --out "$out" "${notes[@]}"
  shopt -s nullglob
  files=("$out"/sweep/*.json.gz)
  shopt -u nullglob
  if [ ${#files[@]} -gt 0 ]; then
    "$py" scripts/sweep_report.py "${files[@]}" --bench-csv "$out/bench.csv" --out "$out/sweep.md" > /dev/null
    say "variant sweep: $out/sweep.md"
  fi
  say "report: $out/bench.md; the folder holds $(du -sh "$out" | cut -f1) in $(find "$out" -type f | wc -l) files"
}

# The programs the GPU steps run, and the cache that names the cuDNN they were linked with
# (runtime_env falls back to the GPU machine's own where that path does not exist there).
packed_programs=(CMakeCache.txt tests/dsconv_tests bench/dsconv_bench)

step_pack() {
  local f tree_bytes deps_bytes pack_bytes
  for f in "${packed_programs[@]}"; do
    [ -f "$build/$f" ] || die "$build/$f is missing: run scripts/gpu_check.sh build --arch NN here first"
  done
  grep -q '^DSCONV_BACKEND:[A-Z]*=cuda$' "$build/CMakeCache.txt" || die "$build is not a CUDA build"
  mkdir -p "$(dirname "$pack")"
  git -C "$root" check-ignore -q "$pack" || say "warning: $pack is not ignored by git (.gitignore)"
  say "packing ${packed_programs[*]} of $build (CUDA architectures $(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt"))"
  # One xz stream with a 64 MiB dictionary (-9, one thread: -T0 would cut the input into
  # independent blocks): the test and benchmark programs carry the same kernels' cubins, and
  # only a window that spans the first program finds them again in the second (half the bytes
  # of -6, whose 8 MiB window does not reach).
  tar cf - -C "$build" "${packed_programs[@]}" | xz -9 -T1 > "$pack.tmp"
  mv "$pack.tmp" "$pack"
  rm -f "$(dirname "$pack")/commit.txt"
  source_commit > "$(dirname "$pack")/commit.txt.new" && mv "$(dirname "$pack")/commit.txt.new" "$(dirname "$pack")/commit.txt"
  tree_bytes=$(git -C "$root" ls-files -z --cached --others --exclude-standard |
    (cd "$root" && xargs -0 -r stat -c %s -- 2>/dev/null) | awk '{ s += $1 } END { print s + 0 }')
  deps_bytes=$(find "$deps" -type f -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
  pack_bytes=$(stat -c %s "$pack")
  [ -f "$torch_kernels.xz" ] && pack_bytes=$((pack_bytes + $(stat -c %s "$torch_kernels.xz")))
  awk -v t="$tree_bytes" -v d="$deps_bytes" -v p="$pack_bytes" 'BEGIN {
    m = 1048576
    printf "travelling tree: %.1f MiB (sources %.1f, deps %.1f, pack %.1f), limit 64 MiB\n", (t + d + p) / m, t / m, d / m, p / m
  }'
  [ $((tree_bytes + deps_bytes + pack_bytes)) -le $((64 * 1048576)) ] || die "the tree that travels exceeds 64 MiB"
  say "packed into $pack: carry it and deps/ to the GPU machine, run the unpack step there"
}

step_unpack() {
  [ -f "$pack" ] || die "$pack is missing: run scripts/gpu_check.sh pack on the development machine"
  mkdir -p "$build"
  xz -dc "$pack" | tar xf - -C "$build"
  runtime_env
  "$build/tests/dsconv_tests" --list-test-names-only > /dev/null || true
  "$build/bench/dsconv_bench" --benchmark_list_tests > /dev/null ||
    { ldd "$build/bench/dsconv_bench" | grep -i 'not found' || true; die "dsconv_bench does not start here"; }
  say "unpacked into $build: programs for CUDA architectures" \
    "$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt") (this GPU: $(detect_arch))"
}

# The PyTorch package's CUDA kernels as torch-prebuild leaves them beside the pack.
torch_kernels=$(dirname "$pack")/torch-kernels.a

# pip installs ./python with its CUDA kernels for sm_ARCH (the environment assignments after it,
# DSCONV_PREBUILT_CUDA=..., passed on), and the package must load them.
install_torch_package() {  # arch [VAR=value...]
  local a=$1
  shift
  (cd "$root/python" && env "$@" TORCH_CUDA_ARCH_LIST="${a%?}.${a: -1}" MAX_JOBS=$jobs DSCONV_CUDA=1 \
     "$python" -m pip install --no-build-isolation --no-deps --no-index -v .) > "$logs/torch_install.log" 2>&1 || return 1
  grep -m1 '^dsconv: ' "$logs/torch_install.log" | sed 's/^/  /' || true
  (cd "$out" && "$python" -c "import dsconv; assert dsconv.has_cuda_kernels()") >> "$logs/torch_install.log" 2>&1 ||
    { echo "the package loaded without its CUDA kernels" >> "$logs/torch_install.log"; return 1; }
}

step_torch() {
  require_gpu
  "$python" -c "import torch, torchvision; assert torch.cuda.is_available()" 2>/dev/null ||
    die "$python has no PyTorch with CUDA and torchvision (PYTHON names another interpreter)"
  local a rc=0 failed="" prebuilt=()
  a=$(detect_arch)
  [[ "$a" =~ ^[0-9]+$ ]] || die "no compute capability from nvidia-smi (--arch 90 names one)"
  if [ -f "$torch_kernels.xz" ] && [ -f "$torch_kernels.json" ]; then
    xz -dc "$torch_kernels.xz" > "$logs/torch-kernels.a" && cp "$torch_kernels.json" "$logs/torch-kernels.a.json" &&
      prebuilt=(DSCONV_PREBUILT_CUDA="$logs/torch-kernels.a")
  fi
  say "installing the package with its CUDA kernels for sm_$a$([ ${#prebuilt[@]} -gt 0 ] && echo ", the prebuilt ones where they fit")"
  if ! install_torch_package "$a" "${prebuilt[@]}"; then
    # (objects from another machine's compilers may not link or load here: then every kernel
    # compiles on this one, minutes more)
    [ ${#prebuilt[@]} -gt 0 ] || { record_step torch failed "pip install (gpu_check_logs/torch_install.log)"; die "pip install failed: $logs/torch_install.log"; }
    say "the prebuilt kernels did not install or load (gpu_check_logs/torch_install.log): compiling them here"
    mv "$logs/torch_install.log" "$logs/torch_install_prebuilt.log"
    install_torch_package "$a" ||
      { record_step torch failed "pip install (gpu_check_logs/torch_install.log)"; die "pip install failed: $logs/torch_install.log"; }
  fi
  say "pytest (CPU and CUDA tensors)"
  (cd "$out" && timeout -k 10 "$((budget > 0 ? budget / 2 : 3600))" "$python" -m pytest -q -p no:cacheprovider \
     "$root/python/tests") > "$out/pytest.txt" 2>&1 || { rc=1; failed="pytest"; }
  tail -3 "$out/pytest.txt"
  say "model check: converted networks against PyTorch, and their times"
  "$python" "$root/scripts/model_check.py" --out "$out" --device cuda || { rc=1; failed="$failed model_check"; }
  if [ -s "$out/models/bench.csv" ]; then
    "$python" "$root/scripts/ledger.py" append --ledger "$out/ledger.csv" --report "$out/models" \
      --run "$(run_name "$(source_commit)")" --commit "$(source_commit)" --driver "$(gpu_value driver_version)" ||
      { rc=1; failed="$failed ledger"; }
  fi
  record_step torch "$([ "$rc" = 0 ] && echo passed || echo failed)" "${failed:-pytest, model_check (models.md)}"
  return "$rc"
}

# The operations and element types of the package's CUDA kernels (python/setup.py:
# instantiation_sources), and nvcc's flags for them (setup.py: nvcc_flags, and -fPIC for a
# shared library).
step_torch-prebuild() {
  local nvcc arches="${arch:-80,90}" gencode=() src op ty spelled objects=() release commit
  local flags=()  # the package's CUDA flags (python/setup.py reads the same file)
  mapfile -t flags < <(grep -v '^[[:space:]]*$' "$root/python/cuda_flags.txt")
  nvcc=$(find_nvcc) || die "nvcc not found"
  release=$("$nvcc" --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
  for a in ${arches//,/ }; do gencode+=("-gencode=arch=compute_$a,code=sm_$a"); done
  mkdir -p "$logs/torch-prebuild" "$(dirname "$pack")"
  for op in depthwise pointwise; do
    for ty in float half bfloat16; do
      spelled=$ty
      [ "$ty" = float ] || spelled="::dsconv::$ty"
      src=$logs/torch-prebuild/${op}_$ty.cu
      sed -e "s/@DSCONV_OPERATION@/$op/g" -e "s/@DSCONV_TYPE@/$spelled/g" \
        -e "s/@DSCONV_OPERATION_MACRO@/$(echo "$op" | tr a-z A-Z)/g" "$root/cmake/instantiate.cpp.in" > "$src"
      objects+=("${src%.cu}.o")
      say "nvcc $op $ty for sm_${arches//,/, sm_}"
      "$nvcc" -std=c++17 "${flags[@]}" -Xcompiler=-fPIC "${gencode[@]}" -I "$root/include" -c "$src" -o "${src%.cu}.o" &
      # (two at a time: each takes gigabytes and minutes)
      [ "$(jobs -r | wc -l)" -lt "$(( jobs > 1 ? 2 : 1 ))" ] || wait -n
    done
  done
  wait
  for o in "${objects[@]}"; do [ -s "$o" ] || die "nvcc left no $o"; done
  rm -f "$logs/torch-kernels.a"
  ar rcs "$logs/torch-kernels.a" "${objects[@]}"
  xz -6 -T0 -c "$logs/torch-kernels.a" > "$torch_kernels.xz"
  commit=$(source_commit)
  printf '{"nvcc": "%s", "architectures": [%s], "commit": "%s"}\n' "$release" \
    "$(echo "$arches" | sed 's/\([0-9]*\)/"\1"/g')" "$commit" > "$torch_kernels.json"
  say "the package's CUDA kernels for sm_${arches//,/, sm_} (nvcc $release): $torch_kernels.xz ($(du -h "$torch_kernels.xz" | cut -f1))"
}

step_all() {
  local status=0 s rc
  for s in build test sanitize bench sweep report; do
    rc=0
    if [ "$s" = bench ] || [ "$s" = sweep ]; then
      "$root/scripts/gpu_check.sh" "$s" "${script_args[@]:1}" --budget 0 || rc=$?
    else
      "$root/scripts/gpu_check.sh" "$s" "${script_args[@]:1}" || rc=$?
    fi
    if [ "$rc" -ne 0 ]; then
      status=1
      [ "$s" = build ] && exit 1
    fi
  done
  exit "$status"
}

# A lease's run, as the ledger names it: date, GPU and commit (the torch step's network timings
# join the run of the same day, GPU and commit).
run_name() {  # commit
  echo "$(date -u +%Y-%m-%d)-$(gpu_value name | sed 's/^NVIDIA //' | tr ' ' '-' | tr -cd 'A-Za-z0-9._-')-$1"
}

step_lease() {
  local deadline=$(($(now) + budget)) left rc status=0 dir run run_dir commit
  # A step of this lease with the time that is left (less a reserve for the reports, the ledger
  # and the bundle), at most `cap` seconds; skipped when under a minute is left.
  run_within() {  # cap step args...
    local cap=$1 s
    shift
    left=$((deadline - $(now) - 45))
    [ "$left" -gt "$cap" ] && left=$cap
    if [ "$left" -lt 60 ]; then say "skipped for the budget: $*"; return 0; fi
    rc=0
    "$root/scripts/gpu_check.sh" "$@" --budget "$left" || rc=$?
    # (bench exits 3 where the budget left chunks out: reported, not a failure)
    [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || { say "$1 exited with $rc"; status=1; }
  }
  require_gpu
  if [ ! -x "$build/bench/dsconv_bench" ] && [ -f "$pack" ]; then "$root/scripts/gpu_check.sh" unpack --build "$build" --pack "$pack"; fi
  require_built bench/dsconv_bench
  # This run's folder, named for the ledger: date, GPU and the programs' commit.
  commit=$(source_commit)
  run=$(run_name "$commit")
  run_dir=$out/$run
  mkdir -p "$run_dir"
  say "run $run: results in $run_dir, the ledger $out/ledger.csv"
  "$root/scripts/gpu_check.sh" env --out "$run_dir" --build "$build" > /dev/null || true
  run_within 75 test --out "$run_dir" --build "$build" --jobs "$jobs"
  # The yardstick at batch 8 and 128: dsconv against cuDNN's graph API and PyTorch, every layer
  # forward, both gradients, and every block. What it costs (H200, 2026-11-27): the tests 54 s;
  # a forward chunk 20 s (76 depthwise benchmarks) to 66 s (128 1x1 benchmarks of half at batch
  # 8: cuDNN's graph API times many engine configurations), about 290 s for the forward's 12;
  # PyTorch's baselines 0.27 s a benchmark, about 220 s for the forward's 816. So one lease
  # measures the forward pass, or most of it; a second continues with the gradients and blocks.
  run_within 330 bench --out "$run_dir/forward" --build "$build" --batch 8,128 --type float,half --layout nchw,nhwc \
    --pass forward --kind all
  run_within 120 bench --out "$run_dir/backward" --build "$build" --batch 8,128 --type float,half --layout nchw,nhwc \
    --pass backward
  run_within 100 bench --out "$run_dir/blocks" --build "$build" --kind block --batch 8,128 --type float,half --layout nhwc \
    --pass forward
  for dir in forward backward blocks; do
    ls "$run_dir/$dir/bench/"*.json.gz > /dev/null 2>&1 || continue
    "$root/scripts/gpu_check.sh" report --out "$run_dir/$dir" > /dev/null || { status=1; continue; }
    "$python" "$root/scripts/ledger.py" append --ledger "$out/ledger.csv" --report "$run_dir/$dir" --run "$run" \
      --commit "$commit" --driver "$(gpu_value driver_version)" || status=1
  done
  "$python" "$root/scripts/ledger.py" chart --ledger "$out/ledger.csv" --out "$run_dir/progress.png" 2>/dev/null ||
    say "no progress chart here (matplotlib): scripts/ledger.py chart makes it on the development machine"
  tar czf "$logs/lease.tar.gz" -C "$out" "$run" $([ -f "$out/ledger.csv" ] && echo ledger.csv) &&
    mv "$logs/lease.tar.gz" "$run_dir/lease.tar.gz"
  say "every result in $run_dir/lease.tar.gz ($(du -h "$run_dir/lease.tar.gz" | cut -f1))"
  return "$status"
}

# The forward cases at batch 128 furthest behind their best baseline in a report's bench.csv,
# five of each op (the ten worst of all were the 1x1 layers alone on the H200 run of
# 2026-11-27), as dsconv_bench's exact names of their dsconv benchmarks.
worst_cases() {  # bench.csv
  "$python" - "$1" <<'EOF'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r.get("batch") == "128" and r.get("speed_ratio")]
rows.sort(key=lambda r: float(r["speed_ratio"]))
for op in sorted({r["op"] for r in rows}):
    for r in [r for r in rows if r["op"] == op][:5]:
        print("%s/%s/b%s/%s/%s/dsconv/manual_time" % (r["op"], r["shape"], r["batch"], r["type"], r["layout"]))
EOF
}

# The fused block cases that the experiments' Nsight Compute step measures (dsconv_bench's names).
fused_block_cases() {
  local type
  for type in half float; do
    echo "block/mobilenet_v2_224_3:ir_c24_x144_k3_s1_co24_h56/b32/$type/nhwc/dsconv_fused/manual_time"
    echo "block/efficientnet_b0_224_5:ir_c40_x240_k5_s1_co40_h28_se10/b32/$type/nhwc/dsconv_fused/manual_time"
  done
}

# The metrics Nsight Compute takes of each case: time, DRAM throughput, issue-slot use, achieved
# occupancy, the warps' stall reasons per issue, and the warp instructions executed and DRAM
# bytes moved (32 x the one over the other: the thread-instructions per DRAM byte that
# scripts/sass_budget.py counts from the SASS, measured).
ncu_metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
ncu_metrics+=,sm__inst_issued.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
ncu_metrics+=,smsp__inst_executed.sum,dram__bytes.sum
for stall in long_scoreboard barrier lg_throttle mio_throttle short_scoreboard math_pipe_throttle wait; do
  ncu_metrics+=,smsp__average_warps_issue_stalled_${stall}_per_issue_active.ratio
done

# The tables of the experiments in DIR, as DIR/variant_tables.hpp (from DIR/sweep/) and
# DIR/block_fusion_tables.hpp (from DIR/blocks/bench_blocks.csv), where those results are.
planner_tables() {  # dir
  local tag cc
  cc=$(gpu_value compute_cap)
  tag="sm_${cc/./}|$(gpu_value name)|$(date -u +%Y-%m-%d), commit $(source_commit)"
  if ls "$1/sweep/"*.json.gz > /dev/null 2>&1; then
    "$python" "$root/scripts/tuning_tables.py" variants --run "$tag|$1/sweep" --out "$1/variant_tables.hpp" || return 1
  fi
  if [ -s "$1/blocks/bench_blocks.csv" ]; then
    "$python" "$root/scripts/tuning_tables.py" blocks --run "$tag|$1/blocks/bench_blocks.csv" \
      --out "$1/block_fusion_tables.hpp" || return 1
  fi
}

step_experiments() {
  require_gpu
  require_built bench/dsconv_bench
  runtime_env
  local deadline=$(($(now) + budget)) left rc status=0 dir ncu case n=0 csv filter
  if [ -z "$run_dir" ]; then
    run_dir=$(ls -td "$out"/*/forward/bench.csv 2>/dev/null | head -1 | xargs -r dirname | xargs -r dirname)
  fi
  [ -n "$run_dir" ] && [ -d "$run_dir" ] || die "no run with a forward/bench.csv in $out (run the lease first, or --run-dir)"
  dir=$run_dir/experiments
  mkdir -p "$dir"
  say "experiments of run $(basename "$run_dir") into $dir"
  # 1. Nsight Compute on the fused block kernel of two blocks at batch 32 in half and float
  # (MobileNetV2's c24 x144 3x3, which projects; EfficientNet-B0's c40 x240 5x5 with
  # squeeze-excitation: whether that kernel is bound by instruction issue, sm__inst_issued, or
  # waits at its barriers, which its SASS counts cannot tell), then on the worst forward cases at
  # batch 128 (five of each op). One launch of dsconv's kernel each, its fourth (after the
  # agreement check's and the calibration's).
  if ncu=$(find_tool ncu) && [ -s "$run_dir/forward/bench.csv" ]; then
    csv=$dir/ncu.csv
    : > "$csv"
    while read -r case; do
      [ -n "$case" ] || continue
      left=$((deadline - $(now)))
      [ "$left" -gt $((budget * 2 / 3)) ] || { say "ncu: stopped for the budget (a third of it) after $n cases"; break; }
      case $case in
        block/*) kernels='inverted_residual_fused' ;;
        *) kernels='(depthwise|pointwise|inverted_residual)' ;;
      esac
      filter="^$(printf '%s' "$case" | sed 's/[][().*+?{}|^$\\]/\\&/g')\$"
      timeout -k 5 60 "$ncu" --clock-control none --csv --target-processes all \
        --kernel-name regex:"$kernels" --launch-skip 3 --launch-count 1 \
        --metrics "$ncu_metrics" "$build/bench/dsconv_bench" "--benchmark_filter=$filter" \
        --benchmark_min_time=0.001 --benchmark_repetitions=1 2> /dev/null |
        sed -n '/^"ID"/,$p' | sed "s|^|\"$case\",|" >> "$csv" || true
      n=$((n + 1))
    done < <(fused_block_cases; worst_cases "$run_dir/forward/bench.csv")
    say "ncu: $n cases into $csv"
  else
    say "ncu or the run's forward/bench.csv not found: no Nsight Compute"
  fi
  # 2. The variant sweep; 3. the blocks, for the fusion table.
  left=$((deadline - $(now) - 60))
  if [ "$left" -gt 60 ]; then
    rc=0
    "$root/scripts/gpu_check.sh" sweep --out "$dir" --build "$build" --batch 8,128 --type float,half --layout nchw,nhwc \
      --pass forward --repetitions 2 --min-time 0.01 --budget $((left * 2 / 3)) || rc=$?
    [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || status=1
    if ls "$dir/sweep/"*.json.gz > /dev/null 2>&1 && [ -s "$run_dir/forward/bench.csv" ]; then
      "$python" "$root/scripts/sweep_report.py" "$dir"/sweep/*.json.gz --bench-csv "$run_dir/forward/bench.csv" \
        --out "$dir/sweep.md" > /dev/null || status=1
    fi
  fi
  left=$((deadline - $(now) - 45))
  if [ "$left" -gt 60 ]; then
    rc=0
    "$root/scripts/gpu_check.sh" bench --out "$dir/blocks" --build "$build" --kind block --batch 1,8,32,128 \
      --type float,half --layout nhwc --pass forward --budget "$left" || rc=$?
    [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || status=1
    if ls "$dir/blocks/bench/"*.json.gz > /dev/null 2>&1; then
      "$root/scripts/gpu_check.sh" report --out "$dir/blocks" > /dev/null || status=1
    fi
  fi
  # 4. The planners' tables of this architecture from 2 and 3 (scripts/tuning_tables.py), for the
  # commit that brings the results home to take as tuning/variant_tables.hpp and
  # tuning/block_fusion_tables.hpp.
  planner_tables "$dir" || status=1
  tar czf "$logs/experiments.tar.gz" -C "$run_dir" experiments && mv "$logs/experiments.tar.gz" "$dir/experiments.tar.gz"
  say "every experiment's result in $dir/experiments.tar.gz ($(du -h "$dir/experiments.tar.gz" | cut -f1))"
  return "$status"
}

"step_$step"
