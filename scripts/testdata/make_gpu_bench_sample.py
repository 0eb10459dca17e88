#!/usr/bin/env python3
"""Writes gpu_bench_dw.json.gz, gpu_bench_pw.json.gz and gpu_bench_torch.json.gz beside this
file: a made-up sample of a GPU run for checking scripts/report.py and scripts/ledger.py without a
GPU (CI renders it, scripts/test_report.py checks it): two chunks of dsconv_bench's JSON as
scripts/gpu_check.sh keeps them, and bench/torch_baseline.py's JSON for the same cases. The
times are modelled from the minimum bytes and a copy bandwidth, not measured. It has depthwise
and 1x1 layers of both networks at batch 1 and 32 in float and half, both layouts: dsconv and
cuDNN's graph API with repetitions and aggregates, cuDNN's legacy API at batch 32, PyTorch's
bare convolution and eager layer, a cuDNN error; backward cases (dwbd, dwbw, pwbd, pwbw: one
shape each at batch 1 and 32, float, NCHW); block cases (fused, unfused, cuDNN's layer sequence
and torchvision's block) and a case of another name form. Deterministic: the same bytes on
every run."""
import gzip
import json
import math
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
COPY_GBPS = 2917.4
CONTEXT = {
    "date": "2026-11-24T12:00:00+00:00", "host_name": "gpu-node", "executable": "build-gpu/bench/dsconv_bench",
    "num_cpus": 16, "mhz_per_cpu": 3400, "cpu_scaling_enabled": False,
    "caches": [{"type": "Data", "level": 1, "size": 49152, "num_sharing": 2}],
    "load_avg": [0.5, 0.4, 0.3], "library_build_type": "release",
    "dsconv_baseline": "cuDNN 9.10.2 through its graph API", "dsconv_device": "NVIDIA H100 80GB HBM3, 132 multiprocessors, L2 50 MiB",
    "dsconv_l2_bytes": "52428800", "dsconv_platform": "cuda",
}


# bench/torch_baseline.py's context.
TORCH_CONTEXT = {"date": "2026-11-24T12:03:00", "dsconv_platform": "torch", "torch_version": "2.11.0",
                 "dsconv_baseline": "PyTorch 2.11.0", "torch_device": "NVIDIA H100 80GB HBM3",
                 "cudnn_version": "91900", "cuda_version": "13.0"}


def depthwise(c, h, k, s):
    """(bytes, flops) at batch n and element size b."""
    o = h // s
    return lambda n, b: (b * (n * c * h * h + c * k * k + c + n * c * o * o), 2.0 * n * c * o * o * k * k)


def pointwise(ci, co, h, residual):
    return lambda n, b: (b * (n * h * h * ci + ci * co + co + n * h * h * co * (2 if residual else 1)),
                         2.0 * n * h * h * ci * co)


def backward(forward_size, bias_elements, residual_elements, weight_pass):
    """(bytes, flops) of a backward pass from the forward's: the same products; the data
    gradient moves no bias, neither pass a residual (residual_elements(n) at batch n)."""
    def size(n, b):
        nbytes, flops = forward_size(n, b)
        nbytes -= b * residual_elements(n) + (0 if weight_pass else b * bias_elements)
        return nbytes, flops
    return size


# op, shape, (bytes, flops), activation, dsconv's and cuDNN's fraction of the copy bandwidth
# (PyTorch's bare convolution runs at 1.3 times cuDNN's, its eager layer at 0.8 times)
SHAPES = [
    ("dw", "mobilenet_v2_224_0:c32_h112_k3_s1", depthwise(32, 112, 3, 1), "act=relu6", 0.72, 0.38),
    ("dw", "efficientnet_b0_224_15:c144_h56_k5_s2", depthwise(144, 56, 5, 2), "act=silu", 0.64, 0.30),
    ("pw", "mobilenet_v2_224_7:ci144_co24_h56", pointwise(144, 24, 56, True), "act=none +residual", 0.70, 0.55),
]


class Chunk:
    def __init__(self):
        self.entries = []

    def add(self, name, t_us, counters, label, reps=3, aggregates=True, error=None, only_median=False):
        """A benchmark as Google Benchmark writes it: its repetitions, then its aggregates;
        `counters` maps a name to a function of the time. only_median: the median aggregate alone,
        as bench/torch_baseline.py writes it."""
        base = {"name": name, "family_index": len({e["run_name"] for e in self.entries}),
                "per_family_instance_index": 0, "run_name": name}
        if error:
            self.entries.append(dict(base, run_type="iteration", repetitions=reps, repetition_index=0, threads=1,
                                     iterations=0, real_time=0.0, cpu_time=0.0, time_unit="us",
                                     error_occurred=True, error_message=error))
            return
        runs = [t_us * (1 + random.gauss(0, 0.01)) for _ in range(reps)]
        if only_median:
            t = sorted(runs)[reps // 2]
            e = dict(name=name, run_name=name, run_type="aggregate", aggregate_name="median", repetitions=reps,
                     time_unit="us", real_time=round(t, 4), cpu_time=round(t, 4), label=label)
            e.update({k: v(t) for k, v in counters.items()})
            self.entries.append(e)
            return
        for i, t in enumerate(runs):
            e = dict(base, run_type="iteration", repetitions=reps, repetition_index=i, threads=1,
                     iterations=int(20000 / t) * 8, real_time=round(t, 4), cpu_time=round(t * 1.3, 4), time_unit="us")
            e.update({k: v(t) for k, v in counters.items()}, label=label)
            self.entries.append(e)
        if not aggregates:
            return
        mean = sum(runs) / reps
        sd = math.sqrt(sum((r - mean) ** 2 for r in runs) / (reps - 1))
        for agg, t, unit in (("mean", mean, "time"), ("median", sorted(runs)[reps // 2], "time"),
                             ("stddev", sd, "time"), ("cv", sd / mean, "percentage")):
            e = dict(base, name=name + "_" + agg, run_type="aggregate", repetitions=reps, threads=1,
                     aggregate_name=agg, aggregate_unit=unit, iterations=reps, real_time=round(t, 4),
                     cpu_time=round(t * 1.3, 4), time_unit="us")
            if agg in ("mean", "median"):
                e.update({k: v(t) for k, v in counters.items()})
            e["label"] = label
            self.entries.append(e)

    def write(self, path, context):
        body = ",\n".join("    " + json.dumps(e, separators=(",", ":")) for e in self.entries)
        text = '{\n  "context": %s,\n  "benchmarks": [\n%s\n  ]\n}\n' % (json.dumps(context, separators=(",", ":")), body)
        with gzip.GzipFile(path, "wb", mtime=0) as f:
            f.write(text.encode())


def bandwidth_counters(nbytes, flops=None):
    counters = {"bytes": lambda t: nbytes}
    if flops is not None:
        counters["flops"] = lambda t: flops
    counters["GB/s"] = lambda t: nbytes / t * 1e-3
    if flops is not None:
        counters["GFLOP/s"] = lambda t: flops / t * 1e-3
    counters["bw_pct"] = lambda t: 100 * nbytes / t * 1e-3 / COPY_GBPS
    return counters


def main():
    random.seed(14)
    chunks = {"dw": Chunk(), "pw": Chunk(), "torch": Chunk()}
    for op, shape, size, act, eff_dsconv, eff_cudnn in SHAPES:
        for n in (1, 32):
            for dtype, b in (("float", 4), ("half", 2)):
                for lay in ("nchw", "nhwc"):
                    nbytes, flops = size(n, b)
                    impls = [("dsconv", eff_dsconv), ("cudnn_graph", eff_cudnn), ("torch_conv", 1.3 * eff_cudnn),
                             ("torch_eager", 0.8 * eff_cudnn)] + ([("cudnn_legacy", 0.4 * eff_cudnn)] if n == 32 else [])
                    for impl, eff in impls:
                        eff *= (0.55 if n == 1 else 1.0) * (1.08 if lay == "nhwc" and impl != "dsconv" else 1.0)
                        t = nbytes / (eff * COPY_GBPS * 1e3) + (3.0 if impl == "dsconv" else 5.5)
                        if impl == "cudnn_graph":
                            label = "graph API, conv + bias + %s fused in one graph: engine 5" % act
                        elif impl == "cudnn_legacy":
                            label = "legacy API, algo=IMPLICIT_PRECOMP_GEMM, %s, fused" % act
                        elif impl.startswith("torch"):
                            label = "PyTorch 2.11.0 (cuDNN 91900, cudnn.benchmark): %s" % impl
                        elif op == "dw":
                            label = "variant=%s_tiled, %s" % (lay, act)
                        else:
                            label = "variant=%s, %s" % ("mma_small" if dtype == "half" else "gemm_small", act)
                        error = None
                        if (impl, shape[:12], n, dtype, lay) == ("cudnn_graph", "efficientnet", 1, "half", "nchw"):
                            error = "convolution graph: no engine configuration of cuDNN's graph API finalizes | modelled"
                        chunk = chunks["torch" if impl.startswith("torch") else op]
                        chunk.add("%s/%s/b%d/%s/%s/%s" % (op, shape, n, dtype, lay, impl) +
                                  ("" if impl.startswith("torch") else "/manual_time"), t,
                                  {"bytes": lambda t: nbytes, "flops": lambda t: flops} if impl.startswith("torch")
                                  else bandwidth_counters(nbytes, flops), label, error=error,
                                  reps=3, aggregates=True, only_median=impl.startswith("torch"))
    # Backward cases: the gradients of the layer without activation or residual.
    dw_size, pw_size = SHAPES[0][2], SHAPES[2][2]
    for op, shape, size, eff_dsconv, eff_cudnn, algo in (
            ("dwbd", SHAPES[0][1], backward(dw_size, 32, lambda n: 0, False), 0.66, 0.31, "ALGO_1"),
            ("dwbw", SHAPES[0][1], backward(dw_size, 32, lambda n: 0, True), 0.58, 0.22, "ALGO_0"),
            ("pwbd", SHAPES[2][1], backward(pw_size, 24, lambda n: n * 56 * 56 * 24, False), 0.68, 0.52, "ALGO_1"),
            ("pwbw", SHAPES[2][1], backward(pw_size, 24, lambda n: n * 56 * 56 * 24, True), 0.61, 0.40, "ALGO_1")):
        for n in (1, 32):
            nbytes, flops = size(n, 4)
            for impl, eff in (("dsconv", eff_dsconv), ("cudnn_graph", eff_cudnn)):
                eff *= 0.55 if n == 1 else 1.0
                t = nbytes / (eff * COPY_GBPS * 1e3) + (3.0 if impl == "dsconv" else 5.5)
                if impl == "cudnn_graph":
                    label = "graph API, backward: engine %s (gradients of the layer without activation)" % algo
                else:
                    label = "variant=%s, act=none (gradients of the layer without activation)" % (
                        "nchw_tiled" if op.startswith("dw") else "gemm_small")
                chunks[op[:2]].add("%s/%s/b%d/float/nchw/%s/manual_time" % (op, shape, n, impl), t,
                                   bandwidth_counters(nbytes, flops), label)
    # Block cases: dsconv's fused and unfused variants and cuDNN's layer sequence, for a block
    # without and one with squeeze-excitation (whose fused case fails in NHWC half at batch 32,
    # as a case the device cannot run would), at batch 1 and 32 in half, both layouts (NCHW has
    # no fused case).
    for shape, nbytes, pick in (("mobilenet_v2_224_3:ir_c24_x144_k3_s1_co24_h56", 0.64e6, "fused"),
                                ("efficientnet_b0_224_2:ir_c16_x96_k3_s2_co24_h112_se4", 1.13e6, "unfused")):
        for n in (1, 32):
            for lay in ("nchw", "nhwc"):
                for impl, eff in (("dsconv_fused", 0.45), ("dsconv_unfused", 0.12), ("cudnn_graph", 0.07),
                                  ("torch_block", 0.09)):
                    if impl == "dsconv_fused" and lay == "nchw":
                        continue
                    t = n * nbytes / (eff * COPY_GBPS * 1e3) + (4.0 if impl.startswith("dsconv") else 18.0)
                    variant = impl.split("_")[-1]
                    label = ("layer sequence: expand (graph API, ...); depthwise (...); project (...);"
                             if impl == "cudnn_graph" else "torchvision's block" if impl == "torch_block" else
                             "variant=%s, planner picks %s, act=relu6" % (variant, pick if lay == "nhwc" else "unfused"))
                    error = None
                    if (impl, shape[:12], n, lay) == ("dsconv_fused", "efficientnet", 32, "nhwc"):
                        error = "inverted_residual: fused: no tile fits the device's shared memory and grid | modelled"
                    torch_impl = impl == "torch_block"
                    chunks["torch" if torch_impl else "pw"].add(
                        "block/%s/b%d/half/%s/%s" % (shape, n, lay, impl) + ("" if torch_impl else "/manual_time"), t,
                        {"bytes": lambda t: n * nbytes} if torch_impl else bandwidth_counters(n * nbytes), label,
                        reps=1 if not torch_impl else 3, aggregates=torch_impl, only_median=torch_impl, error=error)
    # A benchmark of another name form.
    chunks["pw"].add("copy/device_to_device/manual_time", 30.2, bandwidth_counters(3.6e6), "copy", reps=1,
                     aggregates=False)
    chunks["dw"].write(os.path.join(HERE, "gpu_bench_dw.json.gz"), dict(CONTEXT, dsconv_copy_bandwidth_GBps="2917.400000"))
    chunks["pw"].write(os.path.join(HERE, "gpu_bench_pw.json.gz"),
                       dict(CONTEXT, dsconv_copy_bandwidth_GBps="2905.100000", date="2026-11-24T12:01:10+00:00"))
    chunks["torch"].write(os.path.join(HERE, "gpu_bench_torch.json.gz"), TORCH_CONTEXT)


if __name__ == "__main__":
    main()
