#!/usr/bin/env python3
"""The ledger of GPU runs (results/gpu/ledger.csv): every case of every run, so that progress is
a chart, not a memory.

One row per case and run: when (date), what (commit), where (device, driver, CUDA, cuDNN and
PyTorch versions), the case (op, shape, batch, type, layout), dsconv's time and variant, every
baseline's time (empty where a run did not time it), the best baseline, dsconv's speed ratio
against it (its time / dsconv's: > 1, dsconv faster) and both shares of the copy bandwidth.

  scripts/ledger.py append --ledger results/gpu/ledger.csv --report DIR --run NAME --commit SHA
                           [--driver V] [--date D]
      appends the cases of a report folder (scripts/report.py's bench.csv, bench_blocks.csv and
      run.json) as run NAME (a run may come in several folders: forward, backward, blocks); a
      case the run already has in the ledger is replaced (a report made again).
  scripts/ledger.py chart --ledger results/gpu/ledger.csv --out progress.png
      the progress chart: per op, the median speed ratio against the best baseline of each run,
      one line per batch (scripts/report.py --ledger draws it into a report too).

The functions read, markdown_lines and chart_progress are scripts/report.py's.
"""

import argparse
import csv
import os
import re
import statistics
import sys

BASELINES = ["torch_conv", "torch_eager", "torch_block", "cudnn_graph", "cudnn_legacy", "torch_conv_tf32", "miopen"]
COLUMNS = (["run", "date", "commit", "device", "driver", "cuda", "cudnn", "torch", "op", "shape", "batch", "type",
            "layout", "dsconv_variant", "dsconv_us"] + ["%s_us" % b for b in BASELINES] +
           ["best_baseline", "best_us", "speed_ratio", "dsconv_bw_pct", "best_bw_pct"])
OP_ORDER = ["dw", "pw", "dwbd", "dwbw", "pwbd", "pwbw", "block"]
VARIANT = re.compile(r"variant=(\w+)")


def read(path):
    """The ledger's rows (dicts), in file order; [] where there is no ledger yet."""
    if not path or not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in COLUMNS})


def number(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def runs_in_order(rows):
    """The runs of the ledger, oldest first: (run, date, commit, device)."""
    seen = {}
    for r in rows:
        seen.setdefault(r["run"], (r["date"], r["commit"], r["device"]))
    return sorted(((run,) + v for run, v in seen.items()), key=lambda x: (x[1], x[0]))


def median_ratios(rows):
    """{(run, op, batch): [speed ratios]} over the ledger's rows."""
    out = {}
    for r in rows:
        s = number(r.get("speed_ratio"))
        if s:
            out.setdefault((r["run"], r["op"], int(r["batch"])), []).append(s)
    return out


def baselines_timed(rows):
    """{(run, op, batch): the baselines that run timed}: a ratio means little without them."""
    out = {}
    for r in rows:
        names = out.setdefault((r["run"], r["op"], int(r["batch"])), set())
        names.update(b for b in BASELINES if r.get("%s_us" % b))
    return out


def op_rank(op):
    return (OP_ORDER.index(op), op) if op in OP_ORDER else (len(OP_ORDER), op)


def markdown_lines(rows, last=6):
    """A summary of the ledger's last `last` runs for a report: per run, op and batch, the median
    and worst speed ratio against the best baseline and the cases dsconv wins."""
    if not rows:
        return []
    runs = runs_in_order(rows)[-last:]
    ratios, timed = median_ratios(rows), baselines_timed(rows)
    lines = ["## Progress: the ledger of GPU runs", "",
             "Every GPU run's cases are in `results/gpu/ledger.csv`; `progress.png` charts them. Speed ratio = the "
             "best baseline's time / dsconv's time (> 1: dsconv faster). The last %d runs:" % len(runs), "",
             "| run | date | commit | device | op | batch | cases | median ratio | worst ratio | dsconv faster | "
             "baselines timed |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for run, date, commit, device in runs:
        keys = sorted((k for k in ratios if k[0] == run), key=lambda k: (op_rank(k[1]), k[2]))
        for _, op, batch in keys:
            v = ratios[(run, op, batch)]
            lines.append("| %s | %s | %s | %s | %s | %d | %d | %.2fx | %.2fx | %d of %d | %s |" % (
                run, date, commit[:10], device, op, batch, len(v), statistics.median(v), min(v),
                sum(1 for x in v if x > 1), len(v), ", ".join(b for b in BASELINES if b in timed[(run, op, batch)])))
    return lines + [""]


def chart_progress(path, rows, plt):
    """Per op, the median speed ratio of each run (x: the runs in date order), a line per batch."""
    ratios = median_ratios(rows)
    if not ratios:
        return False
    runs = [r[0] for r in runs_in_order(rows)]
    ops = sorted({k[1] for k in ratios}, key=op_rank)
    fig, axes = plt.subplots(1, len(ops), figsize=(3.2 * len(ops) + 1, 3.8), squeeze=False, sharey=True)
    for ax, op in zip(axes[0], ops):
        for batch in sorted({k[2] for k in ratios if k[1] == op}):
            xs, ys = [], []
            for i, run in enumerate(runs):
                v = ratios.get((run, op, batch))
                if v:
                    xs.append(i)
                    ys.append(statistics.median(v))
            ax.plot(xs, ys, marker="o", label="batch %d" % batch)
        ax.axhline(1.0, color="k", linewidth=0.8)
        ax.set_yscale("log", base=2)
        ax.set_title(op)
        ax.set_xticks(range(len(runs)))
        ax.set_xticklabels(runs, rotation=60, ha="right", fontsize=6)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    axes[0][0].set_ylabel("median speed ratio vs best baseline")
    fig.suptitle("dsconv against the best baseline per GPU run (> 1: dsconv faster)")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return True


def report_rows(report_dir):
    """The ledger's case columns of a report folder: bench.csv's layer cases and bench_blocks.csv's
    block cases (dsconv's time there is the planner's choice)."""
    out = []
    path = os.path.join(report_dir, "bench.csv")
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if not r.get("batch"):
                continue  # a benchmark of another name form
            m = VARIANT.search(r.get("dsconv_label", ""))
            row = {c: r.get(c, "") for c in COLUMNS if c in r}
            row["dsconv_variant"] = m.group(1) if m else ""
            out.append(row)
    path = os.path.join(report_dir, "bench_blocks.csv")
    if os.path.exists(path):
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                row = {c: r.get(c, "") for c in COLUMNS if c in r}
                row.update({"op": "block", "shape": r["block"], "dsconv_variant": r.get("planner_picks", ""),
                            "dsconv_us": r.get("chosen_us", "")})
                out.append(row)
    return out


def case_key(row):
    return tuple(str(row.get(c, "")) for c in ("run", "op", "shape", "batch", "type", "layout"))


def run_facts(report_dir):
    """Device and versions from the report's run.json (scripts/report.py)."""
    import json
    path = os.path.join(report_dir, "run.json")
    ctx = json.load(open(path)) if os.path.exists(path) else {}
    cudnn = re.search(r"cuDNN ([\d.]+)", ctx.get("dsconv_baseline", ""))
    return {"device": ctx.get("dsconv_device", "").split(",")[0], "cuda": ctx.get("cuda_version", ""),
            "cudnn": cudnn.group(1) if cudnn else ctx.get("cudnn_version", ""), "torch": ctx.get("torch_version", ""),
            "date": ctx.get("date", "")[:10]}


def append(ledger_path, report_dir, run, commit, driver="", date=""):
    facts = run_facts(report_dir)
    facts.update({"run": run, "commit": commit, "driver": driver})
    if date:
        facts["date"] = date
    new = [dict(r, **facts) for r in report_rows(report_dir)]
    if not new:
        raise SystemExit("%s: no cases in bench.csv" % report_dir)
    replaced = {case_key(r) for r in new}
    kept = [r for r in read(ledger_path) if case_key(r) not in replaced]
    write(ledger_path, kept + new)
    return len(new)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("append", help="append a report folder's cases as one run")
    a.add_argument("--ledger", required=True)
    a.add_argument("--report", required=True, help="folder with scripts/report.py's bench.csv and run.json")
    a.add_argument("--run", required=True, help="the run's name (unique in the ledger)")
    a.add_argument("--commit", required=True)
    a.add_argument("--driver", default="")
    a.add_argument("--date", default="", help="default: the run's date from run.json")
    c = sub.add_parser("chart", help="the progress chart")
    c.add_argument("--ledger", required=True)
    c.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.command == "append":
        n = append(args.ledger, args.report, args.run, args.commit, args.driver, args.date)
        print("ledger: %d cases of run %s appended to %s" % (n, args.run, args.ledger))
        return 0
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if not chart_progress(args.out, read(args.ledger), plt):
        print("ledger: no speed ratios to chart in %s" % args.ledger, file=sys.stderr)
        return 1
    print("ledger: progress chart %s" % args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
