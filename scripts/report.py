#!/usr/bin/env python3
"""Turns dsconv's benchmark results into a Markdown table and PNG charts.

Inputs (one or more, recognised by content):
  - the JSON of dsconv_bench (--benchmark_out=FILE --benchmark_out_format=json, or
    --benchmark_format=json on stdout) and of bench/torch_baseline.py (PyTorch's baselines, the
    same name form), plain or gzipped; several files (the chunks of one run, as
    scripts/gpu_check.sh writes them, and PyTorch's file) make one report, merged by case name,
    a benchmark found twice taken from the later file. Names read
    op/shape/b<batch>/type/layout/implementation: dsconv, or a baseline (BASELINES below:
    PyTorch's bare convolution and eager layer, cuDNN's graph and legacy APIs, MIOpen, the CPU
    reference). Operations: dw and pw (forward), dwbd and pwbd (data gradient), dwbw and pwbw
    (weight gradient, with the bias gradient); any other op of the same name form is listed
    after them. Every case is compared with its best baseline (the fastest that computes the
    same thing) and with each baseline alone. Writes <out>/bench.md (summaries per operation,
    type and layout and per operation, network and batch against the best baseline, with
    dsconv's and the best baseline's share of the copy bandwidth; dsconv against each baseline;
    per layer and batch every implementation's time; the block cases (scripts/report_blocks.py);
    benchmarks of other name forms), <out>/bench.csv, <out>/bench_blocks.csv, <out>/run.json (the
    run's devices and versions, for the ledger), and, from a GPU run, per pass (forward: no
    suffix; _backward_data, _backward_weight), <out>/speedup<suffix>.png (the ratio against the
    best baseline per layer per batch), <out>/bandwidth<suffix>.png (dsconv's and the best
    baseline's percent of the copy bandwidth) and <out>/roofline<suffix>.png (achieved
    throughput of both against the copy-bandwidth roof); from a host-platform run, where times
    are those of the CPU emulation, <out>/traffic<suffix>.png (global-memory traffic against
    the minimum).
  - the main job's results/layers.csv (dsconv_layers). Writes <out>/layers_traffic.png:
    traffic against the minimum per layer, from the host platform's counters.
Options: --notes FILE (Markdown included in bench.md after its header; repeatable),
--clocks FILE (nvidia-smi samples as scripts/gpu_check.sh writes them: summarised in bench.md),
--ledger FILE (results/gpu/ledger.csv, scripts/ledger.py: its progress chart, progress.png, and
its summary per run go into the report).

Usage: scripts/report.py INPUT [INPUT ...] [--out DIR] [--notes FILE] [--clocks FILE] [--ledger FILE]
(default DIR: the first input's folder). Needs Python 3; the charts need matplotlib (Debian:
python3-matplotlib), without which only the tables are written.
"""

import argparse
import csv
import gzip
import json
import math
import os
import re
import statistics
import sys

import ledger
import report_blocks

try:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt  # noqa: E402  (must follow the backend choice)
except ImportError:  # tables only (a GPU machine may have no matplotlib)
    matplotlib = plt = None

TIME_UNIT_TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
TYPES = ["float", "half", "bfloat16"]
LAYOUTS = ["nchw", "nhwc"]
# dsconv_bench's operations in report order, each with its pass; an op of the same name form
# that is not listed here (a new one) follows them, charted as a pass of its own.
OPS = {"dw": "forward", "dwbd": "backward data", "dwbw": "backward weight",
       "pw": "forward", "pwbd": "backward data", "pwbw": "backward weight"}
PASSES = ["forward", "backward data", "backward weight"]
# The baselines in column order: PyTorch's (bench/torch_baseline.py), cuDNN's graph API and its
# legacy API (dsconv_bench on CUDA), MIOpen (HIP), the CPU reference (host platform); any other
# implementation follows them.
BASELINES = ["torch_conv", "torch_eager", "torch_block", "cudnn_graph", "cudnn_legacy", "torch_conv_tf32", "miopen",
             "reference"]
# Baselines shown in their column but never the best baseline: they compute something else
# (TF32 rounds float's operands to 10-bit mantissas; dsconv's float is fp32 throughout).
NOT_COMPARED = {"torch_conv_tf32"}
BASELINE_TEXT = {
    "torch_conv": "PyTorch's bare convolution (no bias, no activation; for gradients that gradient alone)",
    "torch_eager": "the layer in eager PyTorch (conv with bias, residual, activation; autograd for gradients)",
    "torch_block": "torchvision's block in eval mode, batch norm folded",
    "cudnn_graph": "cuDNN's graph API, fastest engine configuration, epilogue fused where cuDNN accepts it",
    "cudnn_legacy": "cuDNN's legacy API (cudnnFind*, separate bias and activation kernels)",
    "torch_conv_tf32": "PyTorch's bare convolution with TF32 allowed (shown, not compared)",
    "miopen": "MIOpen", "reference": "dsconv's CPU reference"}


def op_order(op):
    """Sort key of an operation: the listed ones first, in OPS order, then the others by name."""
    ops = list(OPS)
    return (ops.index(op), "") if op in OPS else (len(ops), op)


def pass_of(op):
    return OPS.get(op, op)


def chart_path(out_dir, chart, pass_name):
    """<out_dir>/<chart>.png for the forward pass, e.g. <out_dir>/<chart>_backward_data.png for
    another."""
    suffix = "" if pass_name == "forward" else "_" + re.sub(r"[^A-Za-z0-9]+", "_", pass_name)
    return os.path.join(out_dir, "%s%s.png" % (chart, suffix))


# ---------------------------------------------------------------------------------------
# dsconv_bench JSON


class BenchResult:
    """One benchmark (op/shape/batch/type/layout/implementation): median time and counters."""

    def __init__(self, key, name=""):
        self.key = key
        self.name = name
        self.time_us = None
        self.counters = {}
        self.label = ""
        self.error = None


def parse_name(name):
    """op/shape/b<batch>/type/layout/impl[/manual_time] -> tuple, or None for other names."""
    parts = name.split("/")
    if parts and parts[-1] == "manual_time":
        parts = parts[:-1]
    if len(parts) != 6 or not parts[2].startswith("b") or not parts[2][1:].isdigit():
        return None
    op, shape, batch, dtype, lay, impl = parts
    return op, shape, int(batch[1:]), dtype, lay, impl


COUNTER_KEYS = ("bytes", "flops", "GB/s", "GFLOP/s", "bw_pct", "sectors", "sectors/req", "traffic/min")


def open_text(path):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def load_one_bench_json(data):
    """{run name: BenchResult} of one dsconv_bench JSON document.

    The median aggregate of a benchmark is used where there is one (runs with repetitions);
    otherwise the median over its iteration entries."""
    runs, medians, results = {}, {}, {}
    for b in data.get("benchmarks", []):
        name = b.get("run_name", b.get("name", ""))
        r = results.setdefault(name, BenchResult(parse_name(name) or name, name))
        if b.get("error_occurred"):
            r.error = b.get("error_message", "error")
            continue
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                medians[name] = b
        else:
            runs.setdefault(name, []).append(b)
    for name, r in results.items():
        entries = [medians[name]] if name in medians else runs.get(name, [])
        if not entries:
            continue
        times = [e["real_time"] * TIME_UNIT_TO_US.get(e.get("time_unit", "ns"), 1e-3) for e in entries]
        r.time_us = statistics.median(times)
        for c in COUNTER_KEYS:
            values = [e[c] for e in entries if c in e]
            if values:
                r.counters[c] = statistics.median(values)
        r.label = entries[0].get("label", "")
    return results


def load_bench_json(paths):
    """Returns (context, {key: BenchResult}, {name: BenchResult}, blocks) over the files `paths`:
    keys (op, shape, batch, type, layout, impl) for the layer benchmarks of every implementation
    (dsconv and each baseline), run names for benchmarks of other name forms, and the block
    cases (report_blocks.split_blocks). The context is that of the first file of dsconv_bench
    (PyTorch's baseline files, bench/torch_baseline.py, add their versions as torch_* keys), with
    the copy bandwidth the median of dsconv_bench's files (and dsconv_copy_bandwidth_range, their
    range, where they differ). Results without a bandwidth counter (PyTorch's) get one from their
    bytes, their time and that copy bandwidth."""
    context, torch_context, results, others, copies = {}, {}, {}, {}, []
    for path in paths:
        with open_text(path) as f:
            data = json.load(f)
        ctx = data.get("context", {})
        if ctx.get("dsconv_platform") == "torch":
            for k, v in ctx.items():
                if k.startswith(("torch_", "cudnn_", "cuda_")):
                    torch_context.setdefault(k, v)
        else:
            for k, v in ctx.items():
                context.setdefault(k, v)
            copy = float(ctx.get("dsconv_copy_bandwidth_GBps", 0) or 0)
            if copy > 0:
                copies.append(copy)
        for name, r in load_one_bench_json(data).items():
            if isinstance(r.key, tuple):
                results[r.key] = r
            else:
                others[name] = r
    context.update({k: v for k, v in torch_context.items() if k not in context})
    copy_gbps = statistics.median(copies) if copies else 0.0
    if copies:
        context["dsconv_copy_bandwidth_GBps"] = "%.1f" % copy_gbps
        if max(copies) > min(copies):
            context["dsconv_copy_bandwidth_range"] = "%.1f to %.1f over %d runs" % (min(copies), max(copies), len(copies))
    for r in list(results.values()) + list(others.values()):
        add_bandwidth(r, copy_gbps)
    blocks = report_blocks.split_blocks(results)
    return context, results, others, blocks


def add_bandwidth(r, copy_gbps):
    """GB/s, GFLOP/s and % of the copy bandwidth from a result's bytes, FLOPs and time, where its
    program did not count them."""
    if r.error or not r.time_us or "bytes" not in r.counters:
        return
    seconds = r.time_us * 1e-6
    r.counters.setdefault("GB/s", r.counters["bytes"] / seconds * 1e-9)
    if "flops" in r.counters:
        r.counters.setdefault("GFLOP/s", r.counters["flops"] / seconds * 1e-9)
    if copy_gbps > 0:
        r.counters.setdefault("bw_pct", 100.0 * r.counters["GB/s"] / copy_gbps)


def ordered(values, preferred):
    return [v for v in preferred if v in values] + sorted(v for v in values if v not in preferred)


def split_results(results):
    """Per (op, shape, batch, type, layout) the results of every implementation ({impl: result}),
    in table order; the shapes in order; the baselines present, in BASELINES order."""
    cases, shapes, baselines = {}, [], set()
    for key, r in results.items():
        op, shape, batch, dtype, lay, impl = key
        if (op, shape) not in shapes:
            shapes.append((op, shape))
        cases.setdefault((op, shape, batch, dtype, lay), {})[impl] = r
        if impl != "dsconv":
            baselines.add(impl)
    shapes.sort(key=lambda s: op_order(s[0]))  # operations in OPS order, network order kept within each
    order = {s: i for i, s in enumerate(shapes)}
    types = ordered({k[3] for k in cases}, TYPES)
    layouts = ordered({k[4] for k in cases}, LAYOUTS)
    keys = sorted(cases, key=lambda k: (order[(k[0], k[1])], k[2], types.index(k[3]), layouts.index(k[4])))
    return [(k, cases[k]) for k in keys], shapes, ordered(baselines, BASELINES)


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def timed(r):
    return r.time_us if r is not None and not r.error and r.time_us else None


def best_baseline(entry):
    """(name, result) of the fastest baseline of a case that computes what dsconv computes (every
    baseline but those in NOT_COMPARED), or (None, None)."""
    candidates = [(timed(r), impl) for impl, r in entry.items()
                  if impl != "dsconv" and impl not in NOT_COMPARED and timed(r)]
    if not candidates:
        return None, None
    _, impl = min(candidates)
    return impl, entry[impl]


def speed_ratio(entry, baseline=None):
    """Baseline time / dsconv time (> 1: dsconv faster) against `baseline`, or the best one."""
    if baseline is None:
        baseline = best_baseline(entry)[0]
    d, b = timed(entry.get("dsconv")), timed(entry.get(baseline)) if baseline else None
    return b / d if d and b else None


def error_text(message, limit=120):
    text = " ".join(message.split()).replace("|", "/")
    return text if len(text) <= limit else text[:limit - 3] + "..."


def cell_time(r):
    if r is None:
        return "-"
    if r.error:
        return "error: " + error_text(r.error)
    return fmt(r.time_us, ".2f")


def network_of(shape):
    """(network, input) of a shape name model_input_index:..., e.g. ("mobilenet_v2", "224")."""
    m = re.match(r"^(.*)_(\d+)_(\d+):", shape)
    return (m.group(1), m.group(2)) if m else (shape.split(":")[0], "")


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summary_per_network(rows):
    """Per (op, network, batch): the speed ratios against the best baseline and dsconv's and the
    best baseline's % of the copy bandwidth of every case (types and layouts together), with the
    case of the worst ratio."""
    groups = {}
    for (op, shape, batch, dtype, lay), entry in rows:
        g = groups.setdefault((op, network_of(shape)[0], batch), {"ratios": [], "bw": [], "best_bw": [], "worst": None})
        s = speed_ratio(entry)
        if s:
            g["ratios"].append(s)
            if g["worst"] is None or s < g["worst"][0]:
                g["worst"] = (s, "%s %s %s vs %s" % (shape.split(":")[-1], dtype, lay, best_baseline(entry)[0]))
        for slot, r in (("bw", entry.get("dsconv")), ("best_bw", best_baseline(entry)[1])):
            if r is not None and not r.error and "bw_pct" in r.counters:
                g[slot].append(r.counters["bw_pct"])
    return groups


def summary_lines(rows, baselines):
    """Markdown summaries of the speed ratios against the best baseline: per op, type and layout,
    and per op, network and batch; then dsconv against each baseline alone, per op and batch."""
    summary = {}
    for (op, shape, batch, dtype, lay), entry in rows:
        s = speed_ratio(entry)
        if s:
            summary.setdefault((op, dtype, lay), []).append(s)
    if not summary:
        return []
    compared = [b for b in baselines if b not in NOT_COMPARED]
    lines = ["## Summary: dsconv against the best baseline", "",
             "Speed ratio = the fastest baseline's time / dsconv's time for each case (> 1: dsconv faster), the "
             "baselines being %s%s." % (", ".join(compared), "" if compared == baselines else
                                         " (%s: a column only, not the same arithmetic)" % ", ".join(
                                             b for b in baselines if b in NOT_COMPARED)), "",
             "| op | type | layout | cases | geomean ratio | median ratio | worst ratio | dsconv faster |",
             "|---|---|---|---|---|---|---|---|"]
    for (op, dtype, lay), values in sorted(summary.items(), key=lambda kv: (op_order(kv[0][0]),) + kv[0][1:]):
        faster = sum(1 for v in values if v > 1)
        lines.append("| %s | %s | %s | %d | %.2fx | %.2fx | %.2fx | %d of %d |" % (
            op, dtype, lay, len(values), geomean(values), statistics.median(values), min(values), faster, len(values)))
    lines += ["", "## Summary per network and batch: against the best baseline, and the share of the copy bandwidth",
              "", "Every type and layout of the network's layers together; a shape that both networks have is "
              "counted under MobileNetV2.", "",
              "| op | network | batch | cases | median ratio | worst ratio (case) | best ratio | dsconv faster | "
              "dsconv median % bw | best baseline median % bw | dsconv best % bw |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (op, net, batch), g in sorted(summary_per_network(rows).items(),
                                      key=lambda kv: (op_order(kv[0][0]), kv[0][1], kv[0][2])):
        sp, bw, best_bw = g["ratios"], g["bw"], g["best_bw"]
        if not sp:
            continue
        lines.append("| %s | %s | %d | %d | %.2fx | %.2fx (%s) | %.2fx | %d of %d | %s | %s | %s |" % (
            op, net, batch, len(sp), statistics.median(sp), g["worst"][0], g["worst"][1], max(sp),
            sum(1 for v in sp if v > 1), len(sp), fmt(statistics.median(bw) if bw else None, ".1f"),
            fmt(statistics.median(best_bw) if best_bw else None, ".1f"), fmt(max(bw) if bw else None, ".1f")))
    per_baseline = {}
    for (op, shape, batch, dtype, lay), entry in rows:
        for b in baselines:
            s = speed_ratio(entry, b)
            if s:
                per_baseline.setdefault((op, batch), {}).setdefault(b, []).append(s)
    lines += ["", "## dsconv against each baseline", "",
              "Median speed ratio (that baseline's time / dsconv's time) per op and batch, and in how many cases "
              "dsconv is faster.", "",
              "| op | batch | " + " | ".join(baselines) + " |", "|---|---|" + "---|" * len(baselines)]
    for (op, batch), by in sorted(per_baseline.items(), key=lambda kv: (op_order(kv[0][0]), kv[0][1])):
        cells = []
        for b in baselines:
            v = by.get(b)
            cells.append("%.2fx (%d of %d)" % (statistics.median(v), sum(1 for x in v if x > 1), len(v)) if v else "-")
        lines.append("| %s | %d | %s |" % (op, batch, " | ".join(cells)))
    lines.append("")
    return lines


def clock_lines(path):
    """A summary of nvidia-smi samples (phase, then the queried fields) taken during the run."""
    with open(path, newline="") as f:
        table = [[c.strip() for c in row] for row in csv.reader(f) if row]
    if len(table) < 2:
        return []
    # (a sample with fewer fields than the header, nvidia-smi's output cut short, is left out)
    head, samples = table[0], [r for r in table[1:] if len(r) >= len(table[0])]
    col = {name: i for i, name in enumerate(head)}
    load = [r for r in samples if r[0].startswith("load")]

    def values(field, rows):
        i = col.get(field)
        out = []
        for r in rows:
            try:
                out.append(float(r[i]))
            except (TypeError, ValueError, IndexError):
                pass
        return out

    lines = ["## GPU clocks", "",
             "nvidia-smi samples: %d while benchmarks ran (every 2 s), %d before, between and after." % (
                 len(load), len(samples) - len(load))]
    for field, label, unit in (("clocks.sm", "SM clock", "MHz"), ("clocks.mem", "memory clock", "MHz"),
                               ("temperature.gpu", "temperature", "C"), ("power.draw", "power", "W")):
        v = values(field, load)
        if v:
            lines.append("- %s under load: min %.0f, median %.0f, max %.0f %s" % (
                label, min(v), statistics.median(v), max(v), unit))
    for field in ("clocks.max.sm", "clocks.max.mem"):
        v = values(field, samples)
        if v:
            lines.append("- %s: %.0f MHz" % (field, max(v)))
    for field in ("clocks_event_reasons.active", "clocks_throttle_reasons.active"):
        i = col.get(field)
        if i is not None:
            seen = sorted({r[i] for r in load if i < len(r)} - {"0x0000000000000000"})
            lines.append("- %s under load: %s" % (field, ", ".join(seen) if seen else "none (0x0)"))
    idle = [r for r in samples if not r[0].startswith("load")]
    if idle:
        lines.append("- samples outside the benchmarks (phase: SM / memory clock MHz): " + "; ".join(
            "%s: %s / %s" % (r[0], r[col["clocks.sm"]] if "clocks.sm" in col else "?",
                             r[col["clocks.mem"]] if "clocks.mem" in col else "?") for r in idle))
    lines.append("")
    return lines


def context_lines(context):
    lines = []
    for label, key in (("Platform", "dsconv_platform"), ("Device", "dsconv_device"), ("Baseline", "dsconv_baseline"),
                       ("PyTorch", "torch_version"), ("PyTorch's cuDNN", "cudnn_version"),
                       ("PyTorch's device", "torch_device"),
                       ("Copy bandwidth (GB/s)", "dsconv_copy_bandwidth_GBps"),
                       ("Copy bandwidth range (GB/s)", "dsconv_copy_bandwidth_range"), ("Date", "date")):
        if key in context:
            lines.append("- %s: %s" % (label, context[key]))
    return lines


def write_bench_markdown(path, context, rows, baselines, on_gpu, others=None, notes=(), clocks=None, blocks=None,
                         ledger=None):
    lines = ["# dsconv_bench results", ""] + context_lines(context) + [""]
    for note in notes:
        with open(note) as f:
            lines += [f.read().rstrip("\n"), ""]
    if clocks:
        lines += clock_lines(clocks)
    if on_gpu:
        lines.append("Times are per launch in microseconds (median over repetitions, device events, inputs rotating "
                     "over copies larger than the L2); ratio = the best baseline's time / dsconv's time; % bw = "
                     "minimum bytes / time against the measured device-to-device copy bandwidth. Baselines: "
                     + "; ".join("`%s` %s" % (b, BASELINE_TEXT.get(b, "")) for b in baselines) + ".")
    else:
        lines.append("Host platform: times are CPU wall times of the emulated kernels and of the CPU reference, "
                     "not GPU performance; the evidence is dsconv's traffic against the minimum "
                     "(32-byte sectors moved x 32 / minimum bytes) and sectors per request.")
    lines.append("")
    if ledger:
        lines += ledger
    if on_gpu:
        lines += summary_lines(rows, baselines)
    lines.append("## Per layer and batch")
    lines.append("")
    if on_gpu:
        lines += ["| op | shape | batch | type | layout | dsconv (us) | " +
                  " | ".join("%s (us)" % b for b in baselines) +
                  " | best | ratio | dsconv % bw | best % bw | best's setup |",
                  "|---|---|---|---|---|---|" + "---|" * len(baselines) + "---|---|---|---|---|"]
    else:
        base = baselines[0] if baselines else "baseline"
        lines += ["| op | shape | batch | type | layout | dsconv (us) | %s (us) | traffic / minimum | sectors / request |"
                  % base,
                  "|---|---|---|---|---|---|---|---|---|"]
    for (op, shape, batch, dtype, lay), entry in rows:
        d = entry.get("dsconv")
        head = "| %s | %s | %d | %s | %s | %s |" % (op, shape, batch, dtype, lay, cell_time(d))
        if on_gpu:
            name, best = best_baseline(entry)
            s = speed_ratio(entry)
            lines.append("%s %s | %s | %s | %s | %s | %s |" % (
                head, " | ".join(cell_time(entry.get(b)) for b in baselines), name or "-",
                fmt(s, ".2f") + ("x" if s else ""), fmt(d.counters.get("bw_pct") if d else None, ".1f"),
                fmt(best.counters.get("bw_pct") if best else None, ".1f"),
                error_text(best.label, 100) if best else ""))
        else:
            b = entry.get(baselines[0]) if baselines else None
            lines.append("%s %s | %s | %s |" % (head, cell_time(b), fmt(d.counters.get("traffic/min") if d else None, ".3f"),
                                               fmt(d.counters.get("sectors/req") if d else None, ".2f")))
    lines += report_blocks.markdown_lines(blocks or {}, on_gpu, TYPES, LAYOUTS, fmt, cell_time, network_of)
    if others:
        lines += ["", "## Other benchmarks", "",
                  "Benchmarks whose names are not of the form op/shape/b<batch>/type/layout/implementation.", "",
                  "| benchmark | time (us) | % bw | GB/s | label |", "|---|---|---|---|---|"]
        for name in sorted(others):
            r = others[name]
            lines.append("| %s | %s | %s | %s | %s |" % (
                name.replace("|", "/"), cell_time(r), fmt(r.counters.get("bw_pct"), ".1f"),
                fmt(r.counters.get("GB/s"), ".1f"), r.label.replace("|", "/")))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_bench_csv(path, rows, baselines, others):
    """One line per case: every implementation's median, the best baseline, dsconv's speed ratio
    against it, both shares of the copy bandwidth, the labels and the errors."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["op", "shape", "batch", "type", "layout", "dsconv_us"] + ["%s_us" % b for b in baselines] +
                   ["best_baseline", "best_us", "speed_ratio", "dsconv_bw_pct", "best_bw_pct", "dsconv_label",
                    "best_label", "errors"])

        def num(v, spec):
            return "" if v is None else format(v, spec)

        for (op, shape, batch, dtype, lay), entry in rows:
            d = entry.get("dsconv")
            name, best = best_baseline(entry)
            errors = "; ".join("%s: %s" % (impl, r.error) for impl, r in sorted(entry.items()) if r.error)
            w.writerow([op, shape, batch, dtype, lay, num(timed(d), ".3f")] +
                       [num(timed(entry.get(b)), ".3f") for b in baselines] +
                       [name or "", num(timed(best), ".3f"), num(speed_ratio(entry), ".4f"),
                        num(d.counters.get("bw_pct") if d else None, ".2f"),
                        num(best.counters.get("bw_pct") if best else None, ".2f"),
                        d.label if d else "", best.label if best else "", errors])
        for name in sorted(others or {}):
            r = others[name]
            w.writerow([name, "", "", "", "", num(r.time_us, ".3f")] + [""] * len(baselines) +
                       ["", "", "", num(r.counters.get("bw_pct"), ".2f"), "", r.label, "", r.error or ""])


def chart_heatmap(path, rows, shapes, series, cmap, norm, cell, colorbar_label, title):
    """Heat maps, layer x batch, one per type and layout, and one row of them per (value, name)
    of `series` (value(key, entry), None: an empty cell); `norm` maps the values to colours,
    `cell` formats a value for its cell."""
    combos = ordered({(k[3], k[4]) for k, _ in rows}, [(t, l) for t in TYPES for l in LAYOUTS])
    batches = sorted({k[2] for k, _ in rows})
    if not combos or not batches:
        return False
    height = 1.2 + 0.24 * len(shapes)
    fig, axes = plt.subplots(len(series), len(combos), squeeze=False,
                             figsize=(2.2 + 2.6 * len(combos), (height + 0.6) * len(series)),
                             gridspec_kw={"hspace": 0.6 / height + 0.25})
    image = None
    for axes_row, (value, name) in zip(axes, series):
        values = {k: value(k, e) for k, e in rows}
        for ax, (dtype, lay) in zip(axes_row, combos):
            grid = []
            for op, shape in shapes:
                row = []
                for batch in batches:
                    v = values.get((op, shape, batch, dtype, lay))
                    row.append(float("nan") if v is None else v)
                grid.append(row)
            image = ax.imshow(grid, cmap=plt.get_cmap(cmap), norm=norm, aspect="auto")
            for i, row in enumerate(grid):
                for j, v in enumerate(row):
                    if not math.isnan(v):
                        ax.text(j, i, cell(v), ha="center", va="center", fontsize=6)
            ax.set_title("%s%s %s" % (name + ": " if name else "", dtype, lay), fontsize=9)
            ax.set_xticks(range(len(batches)))
            ax.set_xticklabels([str(b) for b in batches], fontsize=7)
            ax.set_xlabel("batch", fontsize=8)
            ax.set_yticks(range(len(shapes)))
            ax.set_yticklabels(["%s %s" % s for s in shapes] if ax is axes_row[0] else [], fontsize=6)
    fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.6, label=colorbar_label)
    fig.suptitle(title, y=1.0 + 0.4 / (height * len(series)))  # above the panels' titles however few the rows
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True


def chart_speedup(path, rows, shapes, what):
    """Heat maps of the speed ratio against the best baseline (its time / dsconv's), layer x batch,
    one per type and layout; `what` names the pass in the title."""
    def log_ratio(key, entry):
        s = speed_ratio(entry)
        return math.log2(s) if s else None

    return chart_heatmap(path, rows, shapes, [(log_ratio, "")], "RdYlGn",
                         matplotlib.colors.TwoSlopeNorm(vmin=-2.0, vcenter=0.0, vmax=2.0),  # 1/4x .. 4x
                         lambda v: "%.2f" % (2 ** v), "log2 ratio (green: dsconv faster)",
                         "dsconv against the best baseline (its time / dsconv time), %s" % what)


def chart_bandwidth(path, rows, shapes, copy_gbps, what):
    """Heat maps of the achieved bandwidth (minimum bytes / time) in % of the copy bandwidth: a row
    for dsconv and a row for the best baseline of each case."""
    def bw_of(pick):
        def bw_pct(key, entry):
            r = pick(entry)
            return r.counters.get("bw_pct") if r is not None and not r.error else None
        return bw_pct

    series = [(bw_of(lambda e: e.get("dsconv")), "dsconv"), (bw_of(lambda e: best_baseline(e)[1]), "best baseline")]
    series = [(v, n) for v, n in series if any(v(k, e) is not None for k, e in rows)]
    if not series:
        return False
    return chart_heatmap(path, rows, shapes, series, "viridis", matplotlib.colors.Normalize(vmin=0.0, vmax=100.0),
                         lambda v: "%.0f" % v, "% of copy bandwidth",
                         "minimum bytes / time, in %% of the measured copy bandwidth (%.0f GB/s): dsconv and the best "
                         "baseline, %s" % (copy_gbps, what))


def chart_roofline(path, rows, copy_gbps, what):
    """Achieved GFLOP/s against arithmetic intensity of dsconv and of the best baseline, under the
    roof of the copy bandwidth; False (no chart) when no result has both counters."""
    def has_counters(r):
        return r is not None and not r.error and "flops" in r.counters and "GFLOP/s" in r.counters

    picks = (("dsconv", "o", lambda e: e.get("dsconv")), ("best baseline", "x", lambda e: best_baseline(e)[1]))
    if not any(has_counters(pick(entry)) for _, entry in rows for _, _, pick in picks):
        return False
    types = ordered({k[3] for k, _ in rows}, TYPES)
    fig, axes = plt.subplots(1, len(types), figsize=(5.5 * len(types), 4.8), squeeze=False)
    for ax, dtype in zip(axes[0], types):
        intensities = []
        for name, marker, pick in picks:
            xs, ys = [], []
            for k, entry in rows:
                r = pick(entry)
                if k[3] != dtype or not has_counters(r):
                    continue
                xs.append(r.counters["flops"] / r.counters["bytes"])
                ys.append(r.counters["GFLOP/s"])
            intensities += xs
            if xs:
                ax.scatter(xs, ys, s=10, marker=marker, alpha=0.6, label=name)
        if intensities and copy_gbps > 0:
            lo, hi = min(intensities) / 1.5, max(intensities) * 1.5
            ax.plot([lo, hi], [copy_gbps * lo, copy_gbps * hi], "k--", linewidth=1,
                    label="copy bandwidth roof (%.0f GB/s)" % copy_gbps)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP / minimum byte)")
        ax.set_ylabel("achieved GFLOP/s")
        ax.set_title(dtype)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Achieved throughput against the memory roof (every shape, batch and layout), %s" % what)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True


def chart_bench_traffic(path, rows, shapes, what):
    """Host platform: dsconv's traffic / minimum and sectors per request, per shape."""
    series = ordered({(k[2], k[3], k[4]) for k, e in rows if e.get("dsconv") and "traffic/min" in e["dsconv"].counters},
                     [])
    if not series:
        return False
    fig, axes = plt.subplots(2, 1, figsize=(max(10, 0.32 * len(shapes) * max(1, len(series)) / 2), 8), sharex=True)
    width = 0.8 / len(series)
    for i, (batch, dtype, lay) in enumerate(series):
        ratio, spr = [], []
        for op, shape in shapes:
            entry = dict(rows).get((op, shape, batch, dtype, lay), {})
            d = entry.get("dsconv")
            ratio.append(d.counters.get("traffic/min", float("nan")) if d else float("nan"))
            spr.append(d.counters.get("sectors/req", float("nan")) if d else float("nan"))
        xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(shapes))]
        axes[0].bar(xs, ratio, width, label="b%d %s %s" % (batch, dtype, lay))
        axes[1].bar(xs, spr, width)
    axes[0].axhline(1.0, color="k", linewidth=0.8)
    axes[0].set_ylabel("traffic / minimum")
    axes[0].set_yscale("log")
    axes[0].legend(fontsize=7, ncol=4)
    axes[1].set_ylabel("sectors per request")
    axes[1].set_xticks(range(len(shapes)))
    axes[1].set_xticklabels(["%s %s" % s for s in shapes], rotation=90, fontsize=6)
    fig.suptitle("dsconv global-memory traffic on the host platform (1.0 = every byte moved once), %s" % what)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True


def split_passes(rows, shapes):
    """[(pass, its rows, its shapes)] in PASSES order (other ops' passes after them)."""
    passes = ordered({pass_of(op) for op, _ in shapes}, PASSES)
    return [(p, [(k, e) for k, e in rows if pass_of(k[0]) == p], [s for s in shapes if pass_of(s[0]) == p])
            for p in passes]


def report_bench(paths, out_dir, notes=(), clocks=None, ledger_path=None):
    context, results, others, blocks = load_bench_json(paths)
    source = paths[0] if len(paths) == 1 else "%d files (%s ...)" % (len(paths), paths[0])
    if not results and not others and not blocks:
        print("%s: no dsconv_bench results" % source, file=sys.stderr)
        return False
    rows, shapes, baselines = split_results(results)
    on_gpu = context.get("dsconv_platform", "host") != "host"
    copy_gbps = float(context.get("dsconv_copy_bandwidth_GBps", 0) or 0)
    written = [os.path.join(out_dir, "bench.md"), os.path.join(out_dir, "bench.csv")]
    ledger_section = []
    if ledger_path:
        runs = ledger.read(ledger_path)
        ledger_section = ledger.markdown_lines(runs)
        progress = os.path.join(out_dir, "progress.png")
        if plt is not None and ledger.chart_progress(progress, runs, plt):
            written.append(progress)
    write_bench_markdown(written[0], context, rows, baselines, on_gpu, others, notes, clocks, blocks, ledger_section)
    write_bench_csv(written[1], rows, baselines, others)
    with open(os.path.join(out_dir, "run.json"), "w") as f:  # the run's versions, for the ledger
        json.dump({k: v for k, v in context.items() if isinstance(v, str)}, f, indent=1, sort_keys=True)
    if blocks:
        written.append(os.path.join(out_dir, "bench_blocks.csv"))
        report_blocks.write_csv(written[-1], blocks, TYPES, LAYOUTS)
    if plt is None:
        print("matplotlib is not installed: no charts (tables only)", file=sys.stderr)
    # One set of charts per pass: the passes' rows together would make charts three times as tall.
    for pass_name, pass_rows, pass_shapes in ([] if plt is None else split_passes(rows, shapes)):
        what = "%s (%s)" % (pass_name, ", ".join(ordered({op for op, _ in pass_shapes}, list(OPS))))
        speedup, bandwidth, roofline, traffic = (chart_path(out_dir, c, pass_name)
                                                 for c in ("speedup", "bandwidth", "roofline", "traffic"))
        if on_gpu:
            if chart_speedup(speedup, pass_rows, pass_shapes, what):
                written.append(speedup)
            if chart_bandwidth(bandwidth, pass_rows, pass_shapes, copy_gbps, what):
                written.append(bandwidth)
            if chart_roofline(roofline, pass_rows, copy_gbps, what):
                written.append(roofline)
        elif chart_bench_traffic(traffic, pass_rows, pass_shapes, what):
            written.append(traffic)
    block_results = [r for entry in blocks.values() for r in entry.values()]
    errors = sum(1 for r in list(results.values()) + list(others.values()) + block_results if r.error)
    print("%s: %d benchmarks (%d with errors, %d block cases, %d of other name forms) -> %s" % (
        source, len(results) + len(others) + len(block_results), errors, len(block_results), len(others),
        ", ".join(written)))
    if on_gpu:
        for line in summary_lines(rows, baselines):
            if line.startswith("|") and not line.startswith("|---"):
                print("  " + line)
    return True


# ---------------------------------------------------------------------------------------
# The main job's layers.csv


def report_layers(path, out_dir):
    if plt is None:
        print("%s: matplotlib is not installed: no traffic chart" % path, file=sys.stderr)
        return True
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f)]
    rows = [r for r in rows if float(r.get("traffic_ratio") or -1) >= 0]
    if not rows:
        print("%s: no traffic counts (a GPU run, or --traffic 0): no chart" % path)
        return True
    models = ordered({r["layer"].split("/")[0] for r in rows}, ["mobilenet_v2", "efficientnet_b0"])
    # One bar series per pass (forward, data and weight gradients), batch, type and layout.
    series = ordered({(r.get("pass", "forward"), r["batch"], r["type"], r["layout"]) for r in rows}, [])
    fig, axes = plt.subplots(len(models), 1, squeeze=False,
                             figsize=(max(10, 0.2 * max(len([r for r in rows if r["layer"].startswith(m)]) for m in models)),
                                      4.2 * len(models)))
    width = 0.8 / len(series)
    for ax, model in zip(axes[:, 0], models):
        layers = []
        for r in rows:
            if r["layer"].startswith(model + "/") and r["layer"] not in [l for l, _ in layers]:
                layers.append((r["layer"], r["shape"]))
        for i, (ps, batch, dtype, lay) in enumerate(series):
            ratio = {r["layer"]: float(r["traffic_ratio"]) for r in rows
                     if (r.get("pass", "forward"), r["batch"], r["type"], r["layout"]) == (ps, batch, dtype, lay)}
            xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(layers))]
            ax.bar(xs, [ratio.get(l, float("nan")) for l, _ in layers], width,
                   label="%sb%s %s %s" % ("" if ps == "forward" else ps + " ", batch, dtype, lay))
        ax.axhline(1.0, color="k", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_ylabel("traffic / minimum")
        ax.set_title(model)
        ax.set_xticks(range(len(layers)))
        ax.set_xticklabels(["%s %s" % (l.split("/")[-1], s) for l, s in layers], rotation=90, fontsize=6)
        ax.legend(fontsize=7)
    fig.suptitle("dsconv global-memory traffic per layer, host platform counters (1.0 = every byte once)")
    fig.tight_layout()
    out = os.path.join(out_dir, "layers_traffic.png")
    fig.savefig(out, dpi=110)
    plt.close(fig)
    worst = max(rows, key=lambda r: float(r["traffic_ratio"]))
    print("%s: %d layer runs, worst traffic / minimum %.2fx (%s) -> %s"
          % (path, len(rows), float(worst["traffic_ratio"]), worst["layer"], out))
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("inputs", nargs="+", help="dsconv_bench JSON and/or the main job's layers.csv")
    parser.add_argument("--out", help="folder for the report (default: the first input's folder)")
    parser.add_argument("--notes", action="append", default=[], help="Markdown to include in bench.md (repeatable)")
    parser.add_argument("--clocks", help="nvidia-smi samples (CSV, first column the phase) to summarise in bench.md")
    parser.add_argument("--ledger", help="results/gpu/ledger.csv: its progress chart and summary go into the report")
    args = parser.parse_args()
    out_dir = args.out or os.path.dirname(os.path.abspath(args.inputs[0]))
    os.makedirs(out_dir, exist_ok=True)
    ok = True
    bench = []
    for path in args.inputs:
        with open_text(path) as f:
            if f.read(1) == "{":
                bench.append(path)
            else:
                ok = report_layers(path, out_dir) and ok
    if bench:
        ok = report_bench(bench, out_dir, args.notes, args.clocks, args.ledger) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
