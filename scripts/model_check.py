#!/usr/bin/env python3
"""The main job's model-level check: torchvision's MobileNetV2 and EfficientNet-B0 converted to
dsconv (dsconv.convert) against the unconverted networks, and on a GPU their forward and
training-step times against plain PyTorch (cuDNN).

Checks (every device; the networks' CIFAR-size input, 32x32, batch 8, float32):
  - eval mode: the converted network's output against the unconverted one in float64;
  - train mode: every parameter's gradient of one step against float64, within 10 times the
    error of PyTorch's own float32 network plus a floor (batch norm over 8 samples at maps
    down to 1x1 is ill-conditioned, so PyTorch's float32 error is the yardstick).
Timings (CUDA only; 224x224 input; batches of --batch): forward (eval, no autograd) and one
training step (forward, backward, SGD), median of --repeat after warm-up, float32 and float16,
contiguous and channels_last,
for both networks converted and unconverted, in the same run.

Writes OUT/models.md and OUT/models.csv, and on CUDA OUT/models/ (bench.csv and run.json, the timings as
cases that scripts/ledger.py append takes: op "model", the plain network as the eager baseline).
Exit status 1 where a check fails.
Usage: PYTHONPATH=python /usr/bin/python3 scripts/model_check.py [--out results] [--device cpu|cuda]
                                                                [--batch 1,8,32,128] [--repeat 20]
"""

import argparse
import copy
import csv
import os
import sys

import torch
from torch import nn
import torchvision

import dsconv

NETWORKS = {"mobilenet_v2": torchvision.models.mobilenet_v2, "efficientnet_b0": torchvision.models.efficientnet_b0}


def step_gradients(model, x, target):
    torch.manual_seed(1)  # the same dropout and stochastic depth for every model
    model.train()
    model.zero_grad()
    nn.functional.cross_entropy(model(x), target).backward()
    return [p.grad.detach().double().cpu() for p in model.parameters()]


def check(name, device):
    """(eval relative error, worst gradient error / PyTorch float32's, passed) of one network."""
    torch.manual_seed(0)
    reference = NETWORKS[name](num_classes=10)
    exact = copy.deepcopy(reference).double()
    converted = dsconv.convert(copy.deepcopy(reference)).to(device)
    reference.to(device)
    x = torch.randn(8, 3, 32, 32)
    target = torch.arange(8) % 10
    exact.eval(), converted.eval()
    with torch.no_grad():
        truth = exact(x.double())
        eval_error = ((converted(x.to(device)).double().cpu() - truth).abs().max() / truth.abs().max()).item()
    t = step_gradients(exact, x.double(), target)
    f = step_gradients(reference, x.to(device), target.to(device))
    o = step_gradients(converted, x.to(device), target.to(device))
    floor = 1e-5 * max(g.abs().max().item() for g in t)
    worst, passed = 0.0, True
    for ti, fi, oi in zip(t, f, o):
        error, yardstick = (oi - ti).abs().max().item(), (fi - ti).abs().max().item()
        worst = max(worst, error / max(yardstick, floor))
        passed &= error <= 10 * yardstick + floor
    passed &= eval_error <= 1e-4
    return eval_error, worst, passed


def median_ms(fn, repeat):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


FORMATS = {"nchw": torch.contiguous_format, "nhwc": torch.channels_last}


def timings(name, batch, dtype, layout, repeat):
    """{(variant, pass): ms} for dsconv and PyTorch on one network, batch, dtype and memory
    format (CUDA)."""
    torch.manual_seed(0)
    plain = NETWORKS[name](num_classes=1000).cuda().to(dtype).to(memory_format=FORMATS[layout])
    models = {"pytorch": plain, "dsconv": dsconv.convert(copy.deepcopy(plain))}
    x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=dtype).contiguous(memory_format=FORMATS[layout])
    target = torch.randint(0, 1000, (batch,), device="cuda")
    result = {}
    for variant, model in models.items():
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

        def forward():
            with torch.no_grad():
                model(x)

        def train_step():
            optimizer.zero_grad(set_to_none=True)
            nn.functional.cross_entropy(model(x).float(), target).backward()
            optimizer.step()

        model.eval()
        result[(variant, "forward")] = median_ms(forward, repeat)
        model.train()
        result[(variant, "train_step")] = median_ms(train_step, repeat)
    return result


def ledger_case(network, what, batch, dtype, layout, dsconv_ms, pytorch_ms):
    """One timing as a case of scripts/report.py's bench.csv, for scripts/ledger.py: op "model",
    the plain network as PyTorch's eager baseline."""
    return {"op": "model", "shape": f"{network}:{what}", "batch": batch,
            "type": {torch.float32: "float", torch.float16: "half"}[dtype], "layout": layout,
            "dsconv_us": f"{dsconv_ms * 1e3:.3f}", "torch_eager_us": f"{pytorch_ms * 1e3:.3f}",
            "best_baseline": "torch_eager", "best_us": f"{pytorch_ms * 1e3:.3f}",
            "speed_ratio": f"{pytorch_ms / dsconv_ms:.4f}", "dsconv_label": "variant=converted"}


def write_ledger_report(folder, cases, gpu):
    """The timings as a report folder scripts/ledger.py append takes (bench.csv, run.json)."""
    import datetime
    import json
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "bench.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(cases[0]))
        writer.writeheader()
        writer.writerows(cases)
    with open(os.path.join(folder, "run.json"), "w") as f:
        json.dump({"dsconv_device": gpu or "", "torch_version": torch.__version__, "cuda_version": torch.version.cuda or "",
                   "cudnn_version": str(torch.backends.cudnn.version() or ""),
                   "date": datetime.date.today().isoformat()}, f)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="results")
    parser.add_argument("--device", default="cuda" if dsconv.has_cuda_kernels() else "cpu")
    parser.add_argument("--batch", default="1,8,32,128")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    device = torch.device(args.device)
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else None

    rows, ok = [], True
    lines = ["# Converted networks against PyTorch", "",
             f"torch {torch.__version__}, device: {gpu or 'CPU (dsconv host platform)'}", "",
             "## Correctness (32x32 input, batch 8, float32)", "",
             "| network | eval: max error / max output | train: worst gradient error / PyTorch float32's | |",
             "|---|---|---|---|"]
    for name in NETWORKS:
        eval_error, worst, passed = check(name, device)
        ok &= passed
        rows.append(dict(network=name, check="eval_relative_error", value=f"{eval_error:.3g}"))
        rows.append(dict(network=name, check="gradient_error_ratio", value=f"{worst:.3g}"))
        lines.append(f"| {name} | {eval_error:.2e} | {worst:.2f} | {'pass' if passed else 'FAIL'} |")
        print(f"{name}: eval error {eval_error:.2e}, gradient error ratio {worst:.2f}: {'pass' if passed else 'FAIL'}",
              flush=True)

    if device.type == "cuda":
        lines += ["", "## Time per call, ms (224x224 input, median of %d; speedup = PyTorch / dsconv)" % args.repeat, "",
                  "| network | dtype | layout | batch | forward PyTorch | forward dsconv | speedup | train step PyTorch | "
                  "train step dsconv | speedup |", "|---|---|---|---|---|---|---|---|---|---|"]
        bench = []  # the ledger's cases (models/bench.csv)
        for name in NETWORKS:
            for dtype in (torch.float32, torch.float16):
                for layout in FORMATS:
                    for batch in (int(b) for b in args.batch.split(",")):
                        t = timings(name, batch, dtype, layout, args.repeat)
                        for (variant, what), ms in t.items():
                            rows.append(dict(network=name, value=f"{ms:.4g}",
                                             check=f"{what}_ms_{variant}_{str(dtype)[6:]}_{layout}_b{batch}"))
                        for what in ("forward", "train_step"):
                            bench.append(ledger_case(name, what, batch, dtype, layout, t[("dsconv", what)],
                                                     t[("pytorch", what)]))
                        fp, fd, tp, td = (t[("pytorch", "forward")], t[("dsconv", "forward")],
                                          t[("pytorch", "train_step")], t[("dsconv", "train_step")])
                        lines.append(f"| {name} | {str(dtype)[6:]} | {layout} | {batch} | {fp:.3f} | {fd:.3f} | "
                                     f"{fp / fd:.2f}x | {tp:.3f} | {td:.3f} | {tp / td:.2f}x |")
                        print(lines[-1], flush=True)
        write_ledger_report(os.path.join(args.out, "models"), bench, gpu)
    else:
        lines += ["", "No GPU: the networks are not timed (the host platform's times say nothing about a GPU's)."]

    with open(os.path.join(args.out, "models.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.out, "models.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["network", "check", "value"])
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {args.out}/models.md and models.csv")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
