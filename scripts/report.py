#!/usr/bin/env python3
"""Turns dsconv's benchmark results into a Markdown table and PNG charts.

Inputs (one or more, recognised by content):
  - the JSON of dsconv_bench (--benchmark_out=FILE --benchmark_out_format=json, or
    --benchmark_format=json on stdout), plain or gzipped; several files (the chunks of one
    run, as scripts/gpu_check.sh writes them) make one report, a benchmark found twice taken
    from the later file. Operations: dw and pw (forward), dwbd and pwbd (data gradient), dwbw
    and pwbw (weight gradient, with the bias gradient); any other op of the same name form is
    listed after them. Writes <out>/bench.md (per layer and batch: dsconv time, baseline time,
    speedup, % of the measured copy bandwidth; summaries per operation, type and layout and per
    operation, network and batch; the block cases, fused and unfused against the baseline's
    layer sequence (scripts/report_blocks.py); benchmarks of other name forms in a table of
    their own), <out>/bench.csv, <out>/bench_blocks.csv, and, from a GPU run, per pass (forward: no
    suffix; _backward_data, _backward_weight), <out>/speedup<suffix>.png (speedup per layer per
    batch), <out>/bandwidth<suffix>.png (dsconv's percent of the copy bandwidth per layer per
    batch) and <out>/roofline<suffix>.png (achieved throughput against the copy-bandwidth
    roof); from a host-platform run, where times are those of the CPU emulation,
    <out>/traffic<suffix>.png (global-memory traffic against the minimum).
  - the main job's results/layers.csv (dsconv_layers). Writes <out>/layers_traffic.png:
    traffic against the minimum per layer, from the host platform's counters.
Options: --notes FILE (Markdown included in bench.md after its header; repeatable),
--clocks FILE (nvidia-smi samples as scripts/gpu_check.sh writes them: summarised in bench.md).

Usage: scripts/report.py INPUT [INPUT ...] [--out DIR] [--notes FILE] [--clocks FILE]
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
    """Returns (context, {key: BenchResult}, {name: BenchResult}, blocks, block baseline) over the
    files `paths`: keys (op, shape, batch, type, layout, impl) for the layer benchmarks, run names
    for benchmarks of other name forms, and the block cases (report_blocks.split_blocks). The context is the first file's, with the copy bandwidth the median
    of the files' (and dsconv_copy_bandwidth_range, their range, where they differ)."""
    context, results, others, copies = {}, {}, {}, []
    for path in paths:
        with open_text(path) as f:
            data = json.load(f)
        for k, v in data.get("context", {}).items():
            context.setdefault(k, v)
        copy = float(data.get("context", {}).get("dsconv_copy_bandwidth_GBps", 0) or 0)
        if copy > 0:
            copies.append(copy)
        for name, r in load_one_bench_json(data).items():
            if isinstance(r.key, tuple):
                results[r.key] = r
            else:
                others[name] = r
    blocks, block_baseline = report_blocks.split_blocks(results)
    # The baseline is the implementation other than dsconv that most benchmarks have; others
    # (a fused block's variants, say) are listed apart.
    impls = {}
    for key in results:
        if key[5] != "dsconv":
            impls[key[5]] = impls.get(key[5], 0) + 1
    if len(impls) > 1:
        baseline = max(sorted(impls), key=lambda i: impls[i])
        for key in [k for k in results if k[5] not in ("dsconv", baseline)]:
            r = results.pop(key)
            others[r.name] = r
    if copies:
        context["dsconv_copy_bandwidth_GBps"] = "%.1f" % statistics.median(copies)
        if max(copies) > min(copies):
            context["dsconv_copy_bandwidth_range"] = "%.1f to %.1f over %d runs" % (min(copies), max(copies), len(copies))
    return context, results, others, blocks, block_baseline


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
    shapes.sort(key=lambda s: op_order(s[0]))  # operations in OPS order, network order kept within each
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


def summary_per_network(rows):
    """Per (op, network, batch): the speedups and dsconv's % of the copy bandwidth of every
    case (types and layouts together), with the case of the worst speedup."""
    groups = {}
    for (op, shape, batch, dtype, lay), entry in rows:
        g = groups.setdefault((op, network_of(shape)[0], batch), {"speedups": [], "bw": [], "worst": None})
        s = speedup_of(entry)
        if s:
            g["speedups"].append(s)
            if g["worst"] is None or s < g["worst"][0]:
                g["worst"] = (s, "%s %s %s" % (shape.split(":")[-1], dtype, lay))
        d = entry.get("dsconv")
        if d and "bw_pct" in d.counters:
            g["bw"].append(d.counters["bw_pct"])
    return groups


def summary_lines(rows, base):
    """Markdown summaries of the speedups: per op, type and layout, and per network and batch."""
    summary = {}
    for (op, shape, batch, dtype, lay), entry in rows:
        s = speedup_of(entry)
        if s:
            summary.setdefault((op, dtype, lay), []).append(s)
    if not summary:
        return []
    lines = ["## Summary: geometric-mean speedup over %s" % base, "",
             "| op | type | layout | cases | geomean speedup | dsconv faster |", "|---|---|---|---|---|---|"]
    for (op, dtype, lay), values in sorted(summary.items(), key=lambda kv: (op_order(kv[0][0]),) + kv[0][1:]):
        geo = math.exp(sum(math.log(v) for v in values) / len(values))
        faster = sum(1 for v in values if v > 1)
        lines.append("| %s | %s | %s | %d | %.2fx | %d of %d |" % (op, dtype, lay, len(values), geo, faster, len(values)))
    lines += ["", "## Summary per network and batch: per-layer speedup over %s and dsconv's %% of the copy bandwidth" % base,
              "", "Every type and layout of the network's layers together; a shape that both networks have is "
              "counted under MobileNetV2.", "",
              "| op | network | batch | cases | median speedup | worst speedup (case) | best speedup | "
              "dsconv median % bw | dsconv best % bw |",
              "|---|---|---|---|---|---|---|---|---|"]
    for (op, net, batch), g in sorted(summary_per_network(rows).items(),
                                      key=lambda kv: (op_order(kv[0][0]), kv[0][1], kv[0][2])):
        sp, bw = g["speedups"], g["bw"]
        if not sp:
            continue
        lines.append("| %s | %s | %d | %d | %.2fx | %.2fx (%s) | %.2fx | %s | %s |" % (
            op, net, batch, len(sp), statistics.median(sp), g["worst"][0], g["worst"][1], max(sp),
            fmt(statistics.median(bw) if bw else None, ".1f"), fmt(max(bw) if bw else None, ".1f")))
    lines.append("")
    return lines


def clock_lines(path):
    """A summary of nvidia-smi samples (phase, then the queried fields) taken during the run."""
    with open(path, newline="") as f:
        table = [[c.strip() for c in row] for row in csv.reader(f) if row]
    if len(table) < 2:
        return []
    head, samples = table[0], table[1:]
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


def write_bench_markdown(path, context, rows, baseline, on_gpu, others=None, notes=(), clocks=None, blocks=None,
                         block_baseline=None):
    base = baseline or "baseline"
    lines = ["# dsconv_bench results", ""]
    for label, key in (("Platform", "dsconv_platform"), ("Device", "dsconv_device"), ("Baseline", "dsconv_baseline"),
                       ("Copy bandwidth (GB/s)", "dsconv_copy_bandwidth_GBps"),
                       ("Copy bandwidth range (GB/s)", "dsconv_copy_bandwidth_range")):
        if key in context:
            lines.append("- %s: %s" % (label, context[key]))
    if "date" in context:
        lines.append("- Date: %s" % context["date"])
    lines.append("")
    for note in notes:
        with open(note) as f:
            lines += [f.read().rstrip("\n"), ""]
    if clocks:
        lines += clock_lines(clocks)
    if on_gpu:
        lines.append("Times are per launch in microseconds (median over repetitions, device events); "
                     "speedup = %s time / dsconv time; %% bw = minimum bytes / time against the measured "
                     "device-to-device copy bandwidth." % base)
    else:
        lines.append("Host platform: times are CPU wall times of the emulated kernels and of the CPU reference, "
                     "not GPU performance; the evidence is dsconv's traffic against the minimum "
                     "(32-byte sectors moved x 32 / minimum bytes) and sectors per request.")
    lines.append("")
    if on_gpu:
        lines += summary_lines(rows, base)
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
    lines += report_blocks.markdown_lines(blocks or {}, block_baseline, on_gpu, TYPES, LAYOUTS, fmt, cell_time,
                                          network_of)
    if others:
        lines += ["", "## Other benchmarks", "",
                  "Benchmarks whose names are not of the form op/shape/b<batch>/type/layout/implementation, "
                  "or whose implementation is neither dsconv nor the baseline.", "",
                  "| benchmark | time (us) | % bw | GB/s | label |", "|---|---|---|---|---|"]
        for name in sorted(others):
            r = others[name]
            lines.append("| %s | %s | %s | %s | %s |" % (
                name.replace("|", "/"), cell_time(r), fmt(r.counters.get("bw_pct"), ".1f"),
                fmt(r.counters.get("GB/s"), ".1f"), r.label.replace("|", "/")))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_bench_csv(path, rows, others):
    """One line per case: both implementations' medians, the speedup and the % of copy bandwidth."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["op", "shape", "batch", "type", "layout", "dsconv_us", "baseline_us", "speedup",
                    "dsconv_bw_pct", "baseline_bw_pct", "dsconv_label", "baseline_label", "dsconv_error", "baseline_error"])

        def num(v, spec):
            return "" if v is None else format(v, spec)

        for (op, shape, batch, dtype, lay), entry in rows:
            d, b = entry.get("dsconv"), entry.get("baseline")
            w.writerow([op, shape, batch, dtype, lay, num(d.time_us if d else None, ".3f"),
                        num(b.time_us if b else None, ".3f"), num(speedup_of(entry), ".4f"),
                        num(d.counters.get("bw_pct") if d else None, ".2f"),
                        num(b.counters.get("bw_pct") if b else None, ".2f"),
                        d.label if d else "", b.label if b else "", (d.error or "") if d else "",
                        (b.error or "") if b else ""])
        for name in sorted(others or {}):
            r = others[name]
            w.writerow([name, "", "", "", "", num(r.time_us, ".3f"), "", "", num(r.counters.get("bw_pct"), ".2f"), "",
                        r.label, "", r.error or "", ""])


def chart_heatmap(path, rows, shapes, value, cmap, norm, cell, colorbar_label, title):
    """Heat maps of value(key, entry) (None: empty cell), layer x batch, one per type and layout;
    `norm` maps the values to colours, `cell` formats a value for its cell."""
    combos = ordered({(k[3], k[4]) for k, _ in rows}, [(t, l) for t in TYPES for l in LAYOUTS])
    batches = sorted({k[2] for k, _ in rows})
    if not combos or not batches:
        return False
    values = {k: value(k, e) for k, e in rows}
    height = 1.2 + 0.24 * len(shapes)
    fig, axes = plt.subplots(1, len(combos), figsize=(2.2 + 2.6 * len(combos), height), squeeze=False)
    image = None
    for ax, (dtype, lay) in zip(axes[0], combos):
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
        ax.set_title("%s %s" % (dtype, lay), fontsize=9)
        ax.set_xticks(range(len(batches)))
        ax.set_xticklabels([str(b) for b in batches], fontsize=7)
        ax.set_xlabel("batch", fontsize=8)
        ax.set_yticks(range(len(shapes)))
        ax.set_yticklabels(["%s %s" % s for s in shapes] if ax is axes[0][0] else [], fontsize=6)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.6, label=colorbar_label)
    fig.suptitle(title, y=1.0 + 0.4 / height)  # above the panels' titles however few the rows
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True


def chart_speedup(path, rows, shapes, baseline, what):
    """Heat maps of speedup (baseline time / dsconv time), layer x batch, one per type and layout;
    `what` names the pass in the title."""
    def log_speedup(key, entry):
        s = speedup_of(entry)
        return math.log2(s) if s else None

    base = baseline or "baseline"
    return chart_heatmap(path, rows, shapes, log_speedup, "RdYlGn",
                         matplotlib.colors.TwoSlopeNorm(vmin=-2.0, vcenter=0.0, vmax=2.0),  # 1/4x .. 4x
                         lambda v: "%.2f" % (2 ** v), "log2 speedup (green: dsconv faster)",
                         "dsconv speedup over %s (%s time / dsconv time), %s" % (base, base, what))


def chart_bandwidth(path, rows, shapes, copy_gbps, what):
    """Heat maps of dsconv's achieved bandwidth (minimum bytes / time) in % of the copy bandwidth."""
    def bw_pct(key, entry):
        d = entry.get("dsconv")
        return d.counters.get("bw_pct") if d and not d.error else None

    if not any(bw_pct(k, e) is not None for k, e in rows):
        return False
    return chart_heatmap(path, rows, shapes, bw_pct, "viridis", matplotlib.colors.Normalize(vmin=0.0, vmax=100.0),
                         lambda v: "%.0f" % v, "% of copy bandwidth",
                         "dsconv: minimum bytes / time, in %% of the measured copy bandwidth (%.0f GB/s), %s"
                         % (copy_gbps, what))


def chart_roofline(path, rows, baseline, copy_gbps, what):
    """Achieved GFLOP/s against arithmetic intensity, under the roof of the copy bandwidth; False
    (no chart) when no result has both counters."""
    if not any(r and not r.error and "flops" in r.counters and "GFLOP/s" in r.counters
               for _, entry in rows for r in (entry.get("dsconv"), entry.get("baseline"))):
        return False
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


def report_bench(paths, out_dir, notes=(), clocks=None):
    context, results, others, blocks, block_baseline = load_bench_json(paths)
    source = paths[0] if len(paths) == 1 else "%d files (%s ...)" % (len(paths), paths[0])
    if not results and not others and not blocks:
        print("%s: no dsconv_bench results" % source, file=sys.stderr)
        return False
    rows, shapes, baseline = split_results(results)
    on_gpu = context.get("dsconv_platform", "host") != "host"
    copy_gbps = float(context.get("dsconv_copy_bandwidth_GBps", 0) or 0)
    written = [os.path.join(out_dir, "bench.md"), os.path.join(out_dir, "bench.csv")]
    write_bench_markdown(written[0], context, rows, baseline, on_gpu, others, notes, clocks, blocks, block_baseline)
    write_bench_csv(written[1], rows, others)
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
            if chart_speedup(speedup, pass_rows, pass_shapes, baseline, what):
                written.append(speedup)
            if chart_bandwidth(bandwidth, pass_rows, pass_shapes, copy_gbps, what):
                written.append(bandwidth)
            if chart_roofline(roofline, pass_rows, baseline, copy_gbps, what):
                written.append(roofline)
        elif chart_bench_traffic(traffic, pass_rows, pass_shapes, what):
            written.append(traffic)
    block_results = [r for entry in blocks.values() for r in entry.values()]
    errors = sum(1 for r in list(results.values()) + list(others.values()) + block_results if r.error)
    print("%s: %d benchmarks (%d with errors, %d block cases, %d of other name forms) -> %s" % (
        source, len(results) + len(others) + len(block_results), errors, len(block_results), len(others),
        ", ".join(written)))
    if on_gpu:
        for line in summary_lines(rows, baseline or "baseline"):
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
        ok = report_bench(bench, out_dir, args.notes, args.clocks) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
