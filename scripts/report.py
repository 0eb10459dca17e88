#!/usr/bin/env python3
"""Turns dsconv's benchmark results into a Markdown table and PNG charts.

Inputs (one or more, recognised by content):
  - the JSON of dsconv_bench (--benchmark_out=FILE --benchmark_out_format=json, or
    --benchmark_format=json on stdout). Writes <out>/bench.md (per layer and batch: dsconv
    time, baseline time, speedup, % of the measured copy bandwidth) and, from a GPU run,
    <out>/speedup.png (speedup per layer per batch) and <out>/roofline.png (achieved
    throughput against the copy-bandwidth roof); from a host-platform run, where times are
    those of the CPU emulation, <out>/traffic.png (global-memory traffic against the minimum).
  - the main job's results/layers.csv (dsconv_layers). Writes <out>/layers_traffic.png:
    traffic against the minimum per layer, from the host platform's counters.

Usage: scripts/report.py INPUT [INPUT ...] [--out DIR]   (default DIR: the first input's folder)
Needs Python 3 and matplotlib (Debian: python3-matplotlib).
"""

import argparse
import csv
import json
import math
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402  (must follow the backend choice)

TIME_UNIT_TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
TYPES = ["float", "half", "bfloat16"]
LAYOUTS = ["nchw", "nhwc"]


# ---------------------------------------------------------------------------------------
# dsconv_bench JSON


class BenchResult:
    """One benchmark (op/shape/batch/type/layout/implementation): median time and counters."""

    def __init__(self, key):
        self.key = key
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


def load_bench_json(path):
    """Returns (context, {key: BenchResult}) with keys (op, shape, batch, type, layout, impl).

    The median aggregate of a benchmark is used where there is one (runs with repetitions);
    otherwise the median over its iteration entries."""
    with open(path) as f:
        data = json.load(f)
    runs, medians, results = {}, {}, {}
    for b in data.get("benchmarks", []):
        key = parse_name(b.get("run_name", b.get("name", "")))
        if key is None:
            continue
        r = results.setdefault(key, BenchResult(key))
        if b.get("error_occurred"):
            r.error = b.get("error_message", "error")
            continue
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                medians[key] = b
        else:
            runs.setdefault(key, []).append(b)
    for key, r in results.items():
        entries = [medians[key]] if key in medians else runs.get(key, [])
        if not entries:
            continue
        times = [e["real_time"] * TIME_UNIT_TO_US.get(e.get("time_unit", "ns"), 1e-3) for e in entries]
        r.time_us = statistics.median(times)
        for c in COUNTER_KEYS:
            values = [e[c] for e in entries if c in e]
            if values:
                r.counters[c] = statistics.median(values)
        r.label = entries[0].get("label", "")
    return data.get("context", {}), results


def ordered(values, preferred):
    return [v for v in preferred if v in values] + sorted(v for v in values if v not in preferred)


def split_results(results):
    """dsconv and baseline results per (op, shape, batch, type, layout), in table order."""
    cases, shapes = {}, []
    baseline = None
    for key, r in results.items():
        op, shape, batch, dtype, lay, impl = key
        if (op, shape) not in shapes:
            shapes.append((op, shape))
        entry = cases.setdefault((op, shape, batch, dtype, lay), {})
        if impl == "dsconv":
            entry["dsconv"] = r
        else:
            entry["baseline"] = r
            baseline = impl
    shapes.sort(key=lambda s: s[0])  # depthwise before 1x1, network order kept within each
    order = {s: i for i, s in enumerate(shapes)}
    types = ordered({k[3] for k in cases}, TYPES)
    layouts = ordered({k[4] for k in cases}, LAYOUTS)
    keys = sorted(cases, key=lambda k: (order[(k[0], k[1])], k[2], types.index(k[3]), layouts.index(k[4])))
    return [(k, cases[k]) for k in keys], shapes, baseline


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def speedup_of(entry):
    d, b = entry.get("dsconv"), entry.get("baseline")
    if d and b and d.time_us and b.time_us:
        return b.time_us / d.time_us
    return None


def cell_time(r):
    if r is None:
        return "-"
    if r.error:
        return "error: " + r.error.replace("|", "/")
    return fmt(r.time_us, ".2f")


def write_bench_markdown(path, context, rows, baseline, on_gpu):
    base = baseline or "baseline"
    lines = ["# dsconv_bench results", ""]
    for label, key in (("Platform", "dsconv_platform"), ("Device", "dsconv_device"), ("Baseline", "dsconv_baseline"),
                       ("Copy bandwidth (GB/s)", "dsconv_copy_bandwidth_GBps")):
        if key in context:
            lines.append("- %s: %s" % (label, context[key]))
    if "date" in context:
        lines.append("- Date: %s" % context["date"])
    lines.append("")
    if on_gpu:
        lines.append("Times are per launch in microseconds (median over repetitions, device events); "
                     "speedup = %s time / dsconv time; %% bw = minimum bytes / time against the measured "
                     "device-to-device copy bandwidth." % base)
    else:
        lines.append("Host platform: times are CPU wall times of the emulated kernels and of the CPU reference, "
                     "not GPU performance; the evidence is dsconv's traffic against the minimum "
                     "(32-byte sectors moved x 32 / minimum bytes) and sectors per request.")
    lines.append("")
    summary = {}
    for (op, shape, batch, dtype, lay), entry in rows:
        s = speedup_of(entry)
        if s:
            summary.setdefault((op, dtype, lay), []).append(s)
    if summary and on_gpu:
        lines += ["## Summary: geometric-mean speedup over %s" % base, "",
                  "| op | type | layout | cases | geomean speedup | dsconv faster |", "|---|---|---|---|---|---|"]
        for (op, dtype, lay), values in sorted(summary.items()):
            geo = math.exp(sum(math.log(v) for v in values) / len(values))
            faster = sum(1 for v in values if v > 1)
            lines.append("| %s | %s | %s | %d | %.2fx | %d of %d |" % (op, dtype, lay, len(values), geo, faster, len(values)))
        lines.append("")
    lines.append("## Per layer and batch")
    lines.append("")
    if on_gpu:
        lines += ["| op | shape | batch | type | layout | dsconv (us) | %s (us) | speedup | dsconv %% bw | %s %% bw | %s setup |"
                  % (base, base, base),
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
    else:
        lines += ["| op | shape | batch | type | layout | dsconv (us) | %s (us) | traffic / minimum | sectors / request |"
                  % base,
                  "|---|---|---|---|---|---|---|---|---|"]
    for (op, shape, batch, dtype, lay), entry in rows:
        d, b = entry.get("dsconv"), entry.get("baseline")
        s = speedup_of(entry)
        head = "| %s | %s | %d | %s | %s | %s | %s |" % (op, shape, batch, dtype, lay, cell_time(d), cell_time(b))
        if on_gpu:
            lines.append("%s %s | %s | %s | %s |" % (
                head, fmt(s, ".2f") + ("x" if s else ""),
                fmt(d.counters.get("bw_pct") if d else None, ".1f"),
                fmt(b.counters.get("bw_pct") if b else None, ".1f"),
                (b.label if b else "").replace("|", "/")))
        else:
            lines.append("%s %s | %s |" % (head, fmt(d.counters.get("traffic/min") if d else None, ".3f"),
                                          fmt(d.counters.get("sectors/req") if d else None, ".2f")))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def chart_speedup(path, rows, shapes, baseline):
    """Heat maps of speedup (baseline time / dsconv time), layer x batch, one per type and layout."""
    combos = ordered({(k[3], k[4]) for k, _ in rows}, [(t, l) for t in TYPES for l in LAYOUTS])
    batches = sorted({k[2] for k, _ in rows})
    if not combos or not batches:
        return False
    speed = {k: speedup_of(e) for k, e in rows}
    fig, axes = plt.subplots(1, len(combos), figsize=(2.2 + 2.6 * len(combos), 1.2 + 0.24 * len(shapes)), squeeze=False)
    cmap = plt.get_cmap("RdYlGn")
    norm = matplotlib.colors.TwoSlopeNorm(vmin=-2.0, vcenter=0.0, vmax=2.0)  # log2 speedup, 1/4x .. 4x
    image = None
    for ax, (dtype, lay) in zip(axes[0], combos):
        grid = []
        for op, shape in shapes:
            row = []
            for batch in batches:
                s = speed.get((op, shape, batch, dtype, lay))
                row.append(math.log2(s) if s else float("nan"))
            grid.append(row)
        image = ax.imshow(grid, cmap=cmap, norm=norm, aspect="auto")
        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                if not math.isnan(v):
                    ax.text(j, i, "%.2f" % (2 ** v), ha="center", va="center", fontsize=6)
        ax.set_title("%s %s" % (dtype, lay), fontsize=9)
        ax.set_xticks(range(len(batches)))
        ax.set_xticklabels([str(b) for b in batches], fontsize=7)
        ax.set_xlabel("batch", fontsize=8)
        ax.set_yticks(range(len(shapes)))
        ax.set_yticklabels(["%s %s" % s for s in shapes] if ax is axes[0][0] else [], fontsize=6)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.6, label="log2 speedup (green: dsconv faster)")
    fig.suptitle("dsconv speedup over %s (%s time / dsconv time)" % (baseline or "baseline", baseline or "baseline"))
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True


def chart_roofline(path, rows, baseline, copy_gbps):
    """Achieved GFLOP/s against arithmetic intensity, under the roof of the copy bandwidth."""
    types = ordered({k[3] for k, _ in rows}, TYPES)
    fig, axes = plt.subplots(1, len(types), figsize=(5.5 * len(types), 4.8), squeeze=False)
    markers = {"dsconv": "o", "baseline": "x"}
    for ax, dtype in zip(axes[0], types):
        intensities = []
        for impl in ("dsconv", "baseline"):
            xs, ys = [], []
            for k, entry in rows:
                r = entry.get(impl)
                if k[3] != dtype or not r or r.error or "flops" not in r.counters or "GFLOP/s" not in r.counters:
                    continue
                ai = r.counters["flops"] / r.counters["bytes"]
                xs.append(ai)
                ys.append(r.counters["GFLOP/s"])
            intensities += xs
            if xs:
                ax.scatter(xs, ys, s=10, marker=markers[impl], alpha=0.6,
                           label="dsconv" if impl == "dsconv" else (baseline or "baseline"))
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
    fig.suptitle("Achieved throughput against the memory roof (every shape, batch and layout)")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def chart_bench_traffic(path, rows, shapes):
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
    fig.suptitle("dsconv global-memory traffic on the host platform (1.0 = every byte moved once)")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True


def report_bench(path, out_dir):
    context, results = load_bench_json(path)
    if not results:
        print("%s: no dsconv_bench results" % path, file=sys.stderr)
        return False
    rows, shapes, baseline = split_results(results)
    on_gpu = context.get("dsconv_platform", "host") != "host"
    written = [os.path.join(out_dir, "bench.md")]
    write_bench_markdown(written[0], context, rows, baseline, on_gpu)
    if on_gpu:
        if chart_speedup(os.path.join(out_dir, "speedup.png"), rows, shapes, baseline):
            written.append(os.path.join(out_dir, "speedup.png"))
        chart_roofline(os.path.join(out_dir, "roofline.png"), rows, baseline,
                       float(context.get("dsconv_copy_bandwidth_GBps", 0) or 0))
        written.append(os.path.join(out_dir, "roofline.png"))
    elif chart_bench_traffic(os.path.join(out_dir, "traffic.png"), rows, shapes):
        written.append(os.path.join(out_dir, "traffic.png"))
    errors = sum(1 for r in results.values() if r.error)
    print("%s: %d benchmarks (%d with errors) -> %s" % (path, len(results), errors, ", ".join(written)))
    return True


# ---------------------------------------------------------------------------------------
# The main job's layers.csv


def report_layers(path, out_dir):
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f)]
    rows = [r for r in rows if float(r.get("traffic_ratio") or -1) >= 0]
    if not rows:
        print("%s: no traffic counts (a GPU run, or --traffic 0): no chart" % path)
        return True
    models = ordered({r["layer"].split("/")[0] for r in rows}, ["mobilenet_v2", "efficientnet_b0"])
    series = ordered({(r["batch"], r["type"], r["layout"]) for r in rows}, [])
    fig, axes = plt.subplots(len(models), 1, squeeze=False,
                             figsize=(max(10, 0.2 * max(len([r for r in rows if r["layer"].startswith(m)]) for m in models)),
                                      4.2 * len(models)))
    width = 0.8 / len(series)
    for ax, model in zip(axes[:, 0], models):
        layers = []
        for r in rows:
            if r["layer"].startswith(model + "/") and r["layer"] not in [l for l, _ in layers]:
                layers.append((r["layer"], r["shape"]))
        for i, (batch, dtype, lay) in enumerate(series):
            ratio = {r["layer"]: float(r["traffic_ratio"]) for r in rows
                     if (r["batch"], r["type"], r["layout"]) == (batch, dtype, lay)}
            xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(layers))]
            ax.bar(xs, [ratio.get(l, float("nan")) for l, _ in layers], width, label="b%s %s %s" % (batch, dtype, lay))
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
    args = parser.parse_args()
    out_dir = args.out or os.path.dirname(os.path.abspath(args.inputs[0]))
    os.makedirs(out_dir, exist_ok=True)
    ok = True
    for path in args.inputs:
        with open(path) as f:
            is_json = f.read(1) == "{"
        ok = (report_bench(path, out_dir) if is_json else report_layers(path, out_dir)) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
