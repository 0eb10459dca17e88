#!/usr/bin/env python3
"""Variant sweep report: for each benchmark case, dsconv's time with every variant forced
(dsconv_bench --variant=NAME, one JSON per variant) next to the heuristic's choice and the
baseline from a report's bench.csv (scripts/report.py). Writes a Markdown file with a summary
per op and batch, the large-against-small tile comparison of the 1x1 GEMMs, and a row per case.

Usage: scripts/sweep_report.py SWEEP_JSON... --bench-csv results/gpu/bench.csv --out sweep.md
"""
import argparse
import collections
import csv
import gzip
import json
import math


def load(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        return json.load(f)


def timed_runs(results):
    """The benchmarks of a dsconv_bench JSON that ran, each case once: the median over its
    repetitions (a single repetition has no aggregates: its own time)."""
    runs = results.get("benchmarks", [])
    with_median = {b["run_name"] for b in runs if b.get("aggregate_name") == "median"}
    for b in runs:
        if b.get("error_occurred") or "label" not in b:
            continue
        if b.get("aggregate_name") != "median" and (b["run_name"] in with_median or b.get("run_type") != "iteration"):
            continue
        yield b


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def variant_of(label):
    return label.split(",")[0].split("=", 1)[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="+")
    ap.add_argument("--bench-csv", required=True, help="the heuristic's variant and the baseline, per case")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    forced = collections.defaultdict(dict)  # (op, shape, batch, type, layout) -> variant -> median us
    device = ""
    for path in a.json:
        d = load(path)
        device = device or d.get("context", {}).get("dsconv_device", "")
        for b in timed_runs(d):
            op, shape, batch, typ, lay = b["run_name"].split("/")[:5]
            forced[(op, shape, int(batch[1:]), typ, lay)][variant_of(b["label"])] = b["real_time"]
    chosen = {}
    for r in csv.DictReader(open(a.bench_csv)):
        key = (r["op"], r["shape"], int(r["batch"]), r["type"], r["layout"])
        if not (r["dsconv_us"] and r["best_us"]):
            continue  # a case without dsconv's or any baseline's time
        chosen[key] = (variant_of(r["dsconv_label"]), float(r["dsconv_us"]), float(r["best_us"]))

    keys = sorted(k for k in forced if k in chosen)
    out = ["# Variant sweep", "",
           "Device: %s. Each variant forced in every case (dsconv_bench --variant); medians of the" % (device or "?"),
           "repetitions in microseconds. `heuristic` is the variant the heuristic chose when the",
           "report's benchmarks ran (bench.csv, against the baselines in that same run); `baseline` is",
           "that run's best baseline time (scripts/report.py). best / heuristic > 1 says how much a better choice would gain.", "",
           "## Summary", "",
           "| op | batch | cases | heuristic = best | geomean heuristic time / best | geomean baseline / best | best faster than baseline |",
           "|---|---|---|---|---|---|---|"]
    for op in sorted({k[0] for k in keys}):
        for batch in sorted({k[2] for k in keys if k[0] == op}):
            ks = [k for k in keys if k[0] == op and k[2] == batch]
            best = {k: min(forced[k].values()) for k in ks}
            same = sum(chosen[k][0] == min(forced[k], key=forced[k].get) for k in ks)
            hv = [forced[k].get(chosen[k][0], chosen[k][1]) / best[k] for k in ks]
            out.append("| %s | %d | %d | %d | %.2f | %.2f | %d |" % (
                op, batch, len(ks), same, geomean(hv), geomean([chosen[k][2] / best[k] for k in ks]),
                sum(best[k] < chosen[k][2] for k in ks)))
    pairs = []
    for k in keys:
        fam = "gemm" if k[3] == "float" else "mma"  # float runs SIMT unless TF32 is allowed
        v = forced[k]
        if fam + "_large" in v and fam + "_small" in v:
            pairs.append((v[fam + "_large"] / v[fam + "_small"], k))
    if pairs:
        won = [p for p in pairs if p[0] < 1]
        out += ["", "## Large against small GEMM tiles (1x1 layers)", "",
                "%d cases: the small tile was faster in %d (geometric mean large / small %.2f, at most %.2f);"
                " the large one in %d, by at most %.2fx%s." % (
                    len(pairs), len(pairs) - len(won), geomean([p[0] for p in pairs]), max(pairs)[0], len(won),
                    1 / min(pairs)[0] if won else 1.0,
                    " (" + ", ".join(sorted({"b%d" % p[1][2] for p in won})) + ")" if won else "")]
    variants = sorted({v for k in keys for v in forced[k]})
    out += ["", "## Cases", "", "| op | shape | batch | type | layout | heuristic | " + " | ".join(variants) + " | baseline |",
            "|---|---|---|---|---|---|" + "---|" * (len(variants) + 1)]
    for k in keys:
        v = forced[k]
        best = min(v, key=v.get)
        cells = [("**%.1f**" if n == best else "%.1f") % v[n] if n in v else "-" for n in variants]
        out.append("| %s | %s | %d | %s | %s | %s | %s | %.1f |" % (k[0], k[1], k[2], k[3], k[4], chosen[k][0],
                                                                   " | ".join(cells), chosen[k][2]))
    open(a.out, "w").write("\n".join(out) + "\n")
    print("\n".join(out[:20]))


if __name__ == "__main__":
    main()
