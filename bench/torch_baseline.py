#!/usr/bin/env python3
"""PyTorch's baselines for dsconv_bench's cases: what a PyTorch user runs instead of dsconv.

For every case of a case table (dsconv_bench --case_table=FILE with the same --batch, --type,
--layout, --pass, --kind as the benchmark run) it times, on the GPU (or on CPU tensors, where
the mechanics are tested):
  - torch_conv: the bare convolution, F.conv2d without bias or activation; for the gradients,
    the data or the weight gradient of that convolution alone
    (torch.ops.aten.convolution_backward with that output mask);
  - torch_eager: the layer as eager PyTorch runs it: the convolution with its bias, the
    residual added, then the activation op; for the gradients, autograd through the
    convolution with bias (the backward cases have no activation, as dsconv_bench's), for
    the data gradient dx, for the weight gradient dw and the bias gradient, as dsconv computes;
  - torch_block: a block case as torchvision runs it: the network's own block module
    (InvertedResidual, MBConv) in eval mode with every batch norm folded into the convolution
    before it, channels_last for NHWC;
  - torch_conv_tf32 (float forward cases, with --tf32): the bare convolution with PyTorch's
    default TF32 setting for cuDNN (allowed).
torch.backends.cudnn.benchmark is on and TF32 is off (but for the column above), as in
../shared's H200 run. Timing follows dsconv_bench (kernel_bench/run_case.hpp): the inputs rotate
over copies of the case's tensors that together exceed three times the L2; each pass of
launches is queued behind a busy kernel (torch.cuda._sleep) that lasts longer than the host
needs to queue the pass, so launch latency stays out; CUDA events time the pass; launches per
pass bring a pass to about 1 ms; each repetition runs passes for --min-time seconds; the median
of --repetitions repetitions is reported. On CPU tensors a pass is timed with the wall clock.

The output is Google Benchmark's JSON form (a median aggregate per benchmark, names
op/shape/b<batch>/type/layout/<implementation>, the counters bytes and flops), which
scripts/report.py merges with dsconv_bench's output by case name.

Usage: bench/torch_baseline.py --cases TABLE.json --out OUT.json [--device cuda|cpu]
       [--repetitions 3] [--min-time 0.02] [--budget SECONDS] [--filter REGEX] [--tf32]
"""

import argparse
import datetime
import json
import math
import os
import re
import statistics
import sys
import time

import torch
import torch.nn.functional as F

L2_MULTIPLE = 3                 # rotated copies together span this many times the L2
TARGET_PASS_SECONDS = 1e-3      # a pass of launches lasts about this long
MAX_LAUNCHES_PER_PASS = 64
PROBE_LEAD_SECONDS = 200e-6
DTYPES = {"float": torch.float32, "half": torch.float16, "bfloat16": torch.bfloat16}
ACTIVATIONS = {"none": lambda x: x, "relu": F.relu, "relu6": F.relu6, "silu": F.silu,
               "sigmoid": torch.sigmoid, "hardswish": F.hardswish}


# ---------------------------------------------------------------------------------------
# Timing


class Timer:
    """Times passes of launches: CUDA events behind a busy lead, or the wall clock on CPU."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"
        self.cycles_per_second = 1e9
        if self.cuda:
            self.start = torch.cuda.Event(enable_timing=True)
            self.stop = torch.cuda.Event(enable_timing=True)
            self.calibrate_spin()

    def calibrate_spin(self):
        """The busy kernel's clock rate, from one long spin between events."""
        cycles = 1 << 22
        torch.cuda._sleep(cycles)  # clocks up
        torch.cuda.synchronize()
        seconds = self.time_pass([lambda: torch.cuda._sleep(cycles)], 1, 0.0)
        self.cycles_per_second = cycles / max(seconds, 1e-9)

    def time_pass(self, launches, count, lead_seconds, first=0):
        """Seconds for `count` launches (launches[i % len] in turn from `first`) after the lead."""
        if not self.cuda:
            t0 = time.perf_counter()
            for i in range(count):
                launches[(first + i) % len(launches)]()
            return time.perf_counter() - t0
        if lead_seconds > 0:
            torch.cuda._sleep(int(lead_seconds * self.cycles_per_second))
        self.start.record()
        for i in range(count):
            launches[(first + i) % len(launches)]()
        self.stop.record()
        self.stop.synchronize()
        return self.start.elapsed_time(self.stop) * 1e-3

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()


def measure(timer, launches, repetitions, min_time):
    """Median over repetitions of the time per launch (seconds), dsconv_bench's method."""
    for fn in launches[:3]:  # warm-up; cudnn.benchmark chooses its algorithm here
        fn()
    timer.sync()
    device, enqueue = [], []
    for i in range(3):
        device.append(timer.time_pass(launches, 1, PROBE_LEAD_SECONDS, i))
        t0 = time.perf_counter()
        launches[i % len(launches)]()
        enqueue.append(time.perf_counter() - t0)
        timer.sync()
    per_launch = max(statistics.median(device), 1e-7)
    count = min(max(int(math.ceil(TARGET_PASS_SECONDS / per_launch)), 1), MAX_LAUNCHES_PER_PASS)
    lead = 1.5 * count * statistics.median(enqueue) + 20e-6 if timer.cuda else 0.0
    results, next_launch = [], 0
    for _ in range(repetitions):
        total, launched = 0.0, 0
        while total < min_time or launched == 0:
            total += timer.time_pass(launches, count, lead, next_launch)
            launched += count
            next_launch += count
        results.append(total / launched)
    return statistics.median(results)


# ---------------------------------------------------------------------------------------
# The problems


def memory_format(case):
    return torch.channels_last if case["layout"] == "nhwc" else torch.contiguous_format


def random_tensor(shape, case, device, requires_grad=False, fmt=None):
    t = torch.empty(shape, dtype=DTYPES[case["type"]], device=device).uniform_(-1, 1)
    t = t.contiguous(memory_format=fmt if fmt is not None else memory_format(case))
    return t.requires_grad_(requires_grad)


def output_size(case):
    k, s, p = case["kernel"], case["stride"], case["pad"]
    return (case["h"] + 2 * p - k) // s + 1, (case["w"] + 2 * p - k) // s + 1


def set_bytes(case):
    """Bytes of one copy of the case's tensors (the rotation unit)."""
    return max(int(case["bytes"]), 1)


def copies(case, l2_bytes):
    return max(2, -(-L2_MULTIPLE * l2_bytes // set_bytes(case))) if l2_bytes else 2


def layer_launches(case, impl, device, count):
    """`count` callables, each one launch of `impl` on its own copy of the case's tensors."""
    n, ci, co, g = case["batch"], case["c_in"], case["c_out"], case["groups"]
    k, stride, pad = case["kernel"], case["stride"], case["pad"]
    oh, ow = output_size(case)
    act = ACTIVATIONS[case["act"]]
    op = case["pass"]
    grad_mode = impl == "torch_eager" and op != "forward"
    launches = []
    for _ in range(count):
        x = random_tensor((n, ci, case["h"], case["w"]), case, device, requires_grad=grad_mode and op == "data")
        w = random_tensor((co, ci // g, k, k), case, device, requires_grad=grad_mode and op == "weight")
        b = random_tensor((co,), case, device, requires_grad=grad_mode and op == "weight",
                          fmt=torch.contiguous_format)
        out_shape = (n, co, oh, ow)
        if op == "forward":
            r = random_tensor(out_shape, case, device) if case["residual"] else None
            if impl in ("torch_conv", "torch_conv_tf32"):
                launches.append(lambda x=x, w=w: F.conv2d(x, w, None, stride, pad, 1, g))
            else:
                def eager(x=x, w=w, b=b, r=r):
                    y = F.conv2d(x, w, b, stride, pad, 1, g)
                    return act(y + r if r is not None else y)
                launches.append(eager)
            continue
        dy = random_tensor(out_shape, case, device)
        if impl == "torch_conv":
            mask = [op == "data", op == "weight", False]
            launches.append(lambda x=x, w=w, dy=dy, mask=mask: torch.ops.aten.convolution_backward(
                dy, x, w, None, [stride, stride], [pad, pad], [1, 1], False, [0, 0], g, mask))
        else:
            y = F.conv2d(x, w, b, stride, pad, 1, g)  # autograd's graph, kept for every backward
            inputs = (x,) if op == "data" else (w, b)
            launches.append(lambda y=y, inputs=inputs, dy=dy: torch.autograd.grad(y, inputs, dy, retain_graph=True))
    return launches


def check_layer_shape(case, launches):
    """The first launch's result has the shape the case describes (a wrong table fails here)."""
    n, ci, co, g, k = case["batch"], case["c_in"], case["c_out"], case["groups"], case["kernel"]
    with torch.no_grad() if case["pass"] == "forward" else torch.enable_grad():
        result = launches[0]()
    want = {"forward": (n, co) + output_size(case), "data": (n, ci, case["h"], case["w"]),
            "weight": (co, ci // g, k, k)}[case["pass"]]
    got = result if isinstance(result, torch.Tensor) else [t for t in result if t is not None][0]
    if tuple(got.shape) != want:
        raise RuntimeError("result shape %s, the case describes %s" % (tuple(got.shape), want))


def torchvision_blocks(model_name):
    """The inverted-residual blocks of torchvision's network, in network order (block 1 first)."""
    import torchvision
    from torchvision.models.efficientnet import MBConv
    from torchvision.models.mobilenetv2 import InvertedResidual
    model = getattr(torchvision.models, model_name)()
    return [m for m in model.modules() if isinstance(m, (InvertedResidual, MBConv))]


def fold_batch_norms(module):
    """Every (Conv2d, BatchNorm2d) pair of a Sequential inside `module` becomes the convolution
    with the batch norm folded in (eval mode) followed by an identity."""
    from torch.nn.utils.fusion import fuse_conv_bn_eval
    for seq in [m for m in module.modules() if isinstance(m, torch.nn.Sequential)]:
        names = list(seq._modules)
        for a, b in zip(names, names[1:]):
            conv, bn = seq._modules[a], seq._modules[b]
            if isinstance(conv, torch.nn.Conv2d) and isinstance(bn, torch.nn.BatchNorm2d):
                seq._modules[a] = fuse_conv_bn_eval(conv, bn)
                seq._modules[b] = torch.nn.Identity()
    return module


_BLOCKS = {}


def block_module(case, device):
    key = (case["model"], case["block"])
    if key not in _BLOCKS:
        blocks = torchvision_blocks(case["model"])
        if not 1 <= case["block"] <= len(blocks):
            raise RuntimeError("%s has %d blocks, not block %d" % (case["model"], len(blocks), case["block"]))
        _BLOCKS[key] = fold_batch_norms(blocks[case["block"] - 1].eval())
    module = _BLOCKS[key]
    convs = [m for m in module.modules() if isinstance(m, torch.nn.Conv2d)]
    if convs[0].in_channels != case["c_in"] or convs[-1].out_channels != case["c_out"]:
        raise RuntimeError("torchvision's block %d of %s maps %d to %d channels, the case %d to %d" % (
            case["block"], case["model"], convs[0].in_channels, convs[-1].out_channels, case["c_in"], case["c_out"]))
    return module.to(device=device, dtype=DTYPES[case["type"]], memory_format=memory_format(case))


def block_launches(case, device, count):
    module = block_module(case, device)
    launches = []
    for _ in range(count):
        x = random_tensor((case["batch"], case["c_in"], case["h"], case["w"]), case, device)
        launches.append(lambda x=x: module(x))
    return launches


def check_block_shape(case, launches):
    s = case["stride"]
    want = (case["batch"], case["c_out"], (case["h"] - 1) // s + 1, (case["w"] - 1) // s + 1)
    with torch.no_grad():
        got = tuple(launches[0]().shape)
    if got != want:
        raise RuntimeError("block output shape %s, the case describes %s" % (got, want))


def implementations(case, tf32):
    if case["op"] == "block":
        return ["torch_block"]
    impls = ["torch_conv", "torch_eager"]
    if tf32 and case["pass"] == "forward" and case["type"] == "float":
        impls.append("torch_conv_tf32")
    return impls


# ---------------------------------------------------------------------------------------
# Running the table


def case_of(benchmark_name):
    """A benchmark's case: its name without the implementation (and /manual_time)."""
    parts = benchmark_name.split("/")
    if parts[-1] == "manual_time":
        parts = parts[:-1]
    return "/".join(parts[:-1])


def kept_entries(path, case_names):
    """The entries of an earlier output (`path`; none where it is not given) for the cases still
    asked for, without those that failed (measured again)."""
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        earlier = json.load(f).get("benchmarks", [])
    return [e for e in earlier if not e.get("error_occurred") and case_of(e["name"]) in case_names]


def set_tf32(allowed):
    torch.backends.cudnn.allow_tf32 = allowed
    torch.backends.cuda.matmul.allow_tf32 = allowed


def run_case(case, impl, device, timer, l2_bytes, repetitions, min_time):
    """One benchmark entry (Google Benchmark's JSON form) for `impl` on `case`."""
    name = case["name"] + "/" + impl
    entry = {"name": name, "run_name": name, "run_type": "aggregate", "aggregate_name": "median",
             "repetitions": repetitions, "time_unit": "us", "bytes": case["bytes"], "flops": case["flops"]}
    set_tf32(impl == "torch_conv_tf32")
    count = copies(case, l2_bytes)
    try:
        grad = case["op"] != "block" and case["pass"] != "forward" and impl == "torch_eager"
        with torch.enable_grad() if grad else torch.no_grad():
            if case["op"] == "block":
                launches = block_launches(case, device, count)
                check_block_shape(case, launches)
            else:
                launches = layer_launches(case, impl, device, count)
                check_layer_shape(case, launches)
            seconds = measure(timer, launches, repetitions, min_time)
    except (RuntimeError, ValueError, NotImplementedError) as e:  # what PyTorch raises for a case it cannot run
        entry.update({"error_occurred": True, "error_message": "%s: %s" % (type(e).__name__, e)})
        return entry
    finally:
        set_tf32(False)
    entry["real_time"] = entry["cpu_time"] = seconds * 1e6
    entry["label"] = label(case, impl, device)
    return entry


def label(case, impl, device):
    backend = "cuDNN %s, cudnn.benchmark" % torch.backends.cudnn.version() if device.type == "cuda" else "CPU"
    what = {"torch_conv": "F.conv2d, no bias or activation" if case.get("pass") == "forward" else
                          "aten.convolution_backward, %s gradient only" % case.get("pass"),
            "torch_eager": "conv with bias%s%s" % (" + residual" if case.get("residual") else "",
                                                   "" if case.get("act") == "none" else ", then " + str(case.get("act")))
                           if case.get("pass") == "forward" else "autograd through conv with bias",
            "torch_block": "torchvision's block, eval, batch norm folded",
            "torch_conv_tf32": "F.conv2d, TF32 allowed"}[impl]
    return "PyTorch %s (%s): %s" % (torch.__version__, backend, what)


def l2_size(device):
    if device.type != "cuda":
        return 0
    props = torch.cuda.get_device_properties(device)
    return int(getattr(props, "L2_cache_size", 0) or 50 << 20)


def context(device):
    ctx = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "dsconv_platform": "torch",
           "torch_version": torch.__version__, "dsconv_baseline": "PyTorch %s" % torch.__version__}
    if device.type == "cuda":
        ctx["torch_device"] = torch.cuda.get_device_name(device)
        ctx["cudnn_version"] = str(torch.backends.cudnn.version())
        ctx["cuda_version"] = str(torch.version.cuda)
    else:
        ctx["torch_device"] = "cpu"
    return ctx


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", required=True, help="dsconv_bench --case_table output")
    parser.add_argument("--out", required=True, help="JSON to write")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--min-time", type=float, default=0.02, help="seconds of passes per repetition")
    parser.add_argument("--budget", type=float, default=0, help="stop starting cases after this many seconds (0: none)")
    parser.add_argument("--filter", default="", help="only cases whose name matches this regular expression")
    parser.add_argument("--names", help="only the cases of these benchmarks (a file of dsconv_bench's names, "
                                        "one a line, as --benchmark_list_tests prints them)")
    parser.add_argument("--tf32", action="store_true", help="also torch_conv_tf32 for float forward cases")
    parser.add_argument("--keep", help="an earlier output of this script (a bench step continued): its entries "
                                       "without errors are kept, and their benchmarks not run again")
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    torch.backends.cudnn.benchmark = True
    set_tf32(False)
    with open(args.cases) as f:
        cases = [c for c in json.load(f)["cases"] if re.search(args.filter, c["name"])]
    if args.names:
        with open(args.names) as f:
            listed = {case_of(line.strip()) for line in f if line.strip()}
        cases = [c for c in cases if c["name"] in listed]
    timer = Timer(device)
    l2 = l2_size(device)
    start = time.monotonic()
    entries, skipped = kept_entries(args.keep, {c["name"] for c in cases}), 0
    measured = {e["name"] for e in entries}
    for case in cases:
        for impl in implementations(case, args.tf32):
            if case["name"] + "/" + impl in measured:
                continue
            if args.budget and time.monotonic() - start > args.budget:
                skipped += 1
                continue
            entries.append(run_case(case, impl, device, timer, l2, args.repetitions, args.min_time))
        if device.type == "cuda":
            torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump({"context": context(device), "benchmarks": entries}, f, indent=1)
    errors = sum(1 for e in entries if e.get("error_occurred"))
    print("torch_baseline: %d benchmarks of %d cases in %.0f s (%d kept from before), %d with errors%s" % (
        len(entries), len(cases), time.monotonic() - start, len(measured), errors,
        ", %d left out by the budget" % skipped if skipped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
