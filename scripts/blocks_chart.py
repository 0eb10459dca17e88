#!/usr/bin/python3
"""Chart of the main job's block check (results/blocks.csv, from dsconv_blocks): per block, the
global-memory bytes of the unfused sequence, of the fused kernel and of the planner's choice
(host platform counters), one panel per network. Writes <out>/blocks_traffic.png."""
import argparse
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("csv")
    ap.add_argument("--out", default="results")
    args = ap.parse_args()
    with open(args.csv) as f:
        rows = [r for r in csv.DictReader(f) if r["traffic_unfused"] not in ("", "-1")]
    if not rows:
        print("blocks_chart: no traffic counted (a GPU run): no chart", file=sys.stderr)
        return 0
    # One panel per network, for the first batch / type / layout of the run.
    first = (rows[0]["batch"], rows[0]["type"], rows[0]["layout"])
    models = sorted({r["model"] for r in rows})
    fig, axes = plt.subplots(len(models), 1, figsize=(11, 3.6 * len(models)), squeeze=False)
    for ax, model in zip(axes[:, 0], models):
        sel = [r for r in rows if r["model"] == model and (r["batch"], r["type"], r["layout"]) == first]
        x = range(len(sel))
        mb = lambda key: [float(r[key]) / 1e6 if r[key] else 0.0 for r in sel]  # noqa: E731
        ax.bar([i - 0.27 for i in x], mb("traffic_unfused"), 0.27, label="unfused")
        ax.bar(list(x), mb("traffic_fused"), 0.27, label="fused (where it runs)")
        ax.bar([i + 0.27 for i in x], mb("traffic_chosen"), 0.27, label="planner's choice")
        chosen = sum(float(r["traffic_chosen"]) for r in sel)
        unfused = sum(float(r["traffic_unfused"]) for r in sel)
        ax.set_title(f"{model}, batch {first[0]}, {first[1]}, {first[2]}: chosen / unfused bytes = {chosen / unfused:.3f}")
        ax.set_xticks(list(x))
        ax.set_xticklabels([r["block"] for r in sel])
        ax.set_xlabel("block")
        ax.set_ylabel("MB moved")
        ax.legend()
    fig.tight_layout()
    path = os.path.join(args.out, "blocks_traffic.png")
    fig.savefig(path, dpi=110)
    print(f"chart: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
