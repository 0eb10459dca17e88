"""The block cases in scripts/report.py's report: benchmarks named
block/<shape>/b<batch>/<type>/<layout>/<implementation>, the implementation dsconv_fused,
dsconv_unfused or a baseline (cudnn_graph / cudnn_legacy: that API running the block's layers in
sequence; torch_block: torchvision's block in eval mode, bench/torch_baseline.py). Per block case
every time, the variant that dsconv's planner picks (from the dsconv cases' labels, "planner picks
X"), the fused variant's speed against the unfused one, and the speed of the planner's choice
against the best baseline (GPU) or the global-memory traffic of both variants against the
minimum (host platform); a summary per network, batch, type and layout (the geometric means, and
the network's summed block times against PyTorch's); and a CSV."""

import csv
import math
import re

PICK = re.compile(r"planner picks (\w+)")
VARIANT_SLOTS = {"dsconv_fused": "fused", "dsconv_unfused": "unfused"}
BASELINE_ORDER = ["torch_block", "cudnn_graph", "cudnn_legacy"]


def split_blocks(results):
    """Removes the block cases (op "block") from `results` ({(op, shape, batch, type, layout,
    impl): BenchResult}); returns {(shape, batch, type, layout): {"fused"|"unfused"|baseline
    name: BenchResult}}."""
    blocks = {}
    for key in [k for k in results if k[0] == "block"]:
        r = results.pop(key)
        _, shape, batch, dtype, lay, impl = key
        blocks.setdefault((shape, batch, dtype, lay), {})[VARIANT_SLOTS.get(impl, impl)] = r
    return blocks


def baselines_of(blocks):
    names = {slot for entry in blocks.values() for slot in entry if slot not in ("fused", "unfused")}
    return [b for b in BASELINE_ORDER if b in names] + sorted(names - set(BASELINE_ORDER))


def planner_pick(entry):
    """The variant (fused or unfused) that the planner picks, from a dsconv case's label."""
    for slot in ("fused", "unfused"):
        r = entry.get(slot)
        m = PICK.search(r.label) if r is not None and r.label else None
        if m:
            return m.group(1)
    return None


def timed(r):
    return r.time_us if r is not None and not r.error and r.time_us else None


def chosen_time(entry):
    pick = planner_pick(entry)
    return timed(entry.get(pick)) if pick else None


def best_baseline(entry, baselines):
    """(name, time) of the fastest baseline of a block case, or (None, None)."""
    times = [(timed(entry.get(b)), b) for b in baselines if timed(entry.get(b))]
    return (min(times)[1], min(times)[0]) if times else (None, None)


def planner_ratio(entry, baselines):
    """The best baseline's time / the time of the variant the planner picks (> 1: dsconv faster)."""
    ours, (_, base) = chosen_time(entry), best_baseline(entry, baselines)
    return base / ours if ours and base else None


def fusion_ratio(entry):
    """The unfused variant's time / the fused variant's (> 1: fusion pays)."""
    f, u = timed(entry.get("fused")), timed(entry.get("unfused"))
    return u / f if f and u else None


def ordered_keys(blocks, types, layouts):
    shapes = []
    for shape, _, _, _ in blocks:
        if shape not in shapes:
            shapes.append(shape)

    def rank(value, preferred):
        return (preferred.index(value), "") if value in preferred else (len(preferred), value)

    return sorted(blocks, key=lambda k: (shapes.index(k[0]), k[1], rank(k[2], types), rank(k[3], layouts)))


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summary_lines(blocks, keys, baselines, fmt, network_of):
    """Per network, batch, type and layout: the geometric mean of the planner's ratio against the
    best baseline and of fused / unfused, and the sum of the network's block times (planner's
    choice) against PyTorch's blocks."""
    groups = {}
    for key in keys:
        e = blocks[key]
        g = groups.setdefault((network_of(key[0])[0],) + key[1:], {"ratios": [], "fusion": [], "ours": 0.0,
                                                                   "torch": 0.0, "complete": True})
        r, fr = planner_ratio(e, baselines), fusion_ratio(e)
        if r:
            g["ratios"].append(r)
        if fr:
            g["fusion"].append(fr)
        ours, torch = chosen_time(e), timed(e.get("torch_block"))
        if ours and torch:
            g["ours"] += ours
            g["torch"] += torch
        else:
            g["complete"] = False
    if not any(g["ratios"] or g["fusion"] for g in groups.values()):
        return []
    lines = ["| network | batch | type | layout | blocks | geomean ratio vs best baseline | worst | dsconv faster | "
             "geomean unfused / fused | sum of PyTorch's blocks / sum of dsconv's |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for (net, batch, dtype, lay), g in sorted(groups.items()):
        v = g["ratios"]
        total = g["torch"] / g["ours"] if g["ours"] > 0 and g["complete"] else None
        lines.append("| %s | %d | %s | %s | %d | %s | %s | %s | %s | %s |" % (
            net, batch, dtype, lay, len(v), fmt(geomean(v), ".2f") + ("x" if v else ""),
            fmt(min(v) if v else None, ".2f"), "%d of %d" % (sum(1 for x in v if x > 1), len(v)),
            fmt(geomean(g["fusion"]), ".2f"), fmt(total, ".2f") + ("x" if total else "")))
    return lines + [""]


def markdown_lines(blocks, on_gpu, types, layouts, fmt, cell_time, network_of):
    """The report's block section (empty without block cases); fmt, cell_time and network_of
    are report.py's."""
    if not blocks:
        return []
    baselines = baselines_of(blocks)
    keys = ordered_keys(blocks, types, layouts)
    lines = ["", "## Blocks: dsconv's fused and unfused variants against %s" % (", ".join(baselines) or "no baseline"),
             ""]
    if on_gpu:
        lines += ["Whole inverted-residual blocks (forward). Ratio = the best baseline's time / the time of the "
                  "variant dsconv's planner picks (what inverted_residual_forward runs by default); unfused / fused > 1: "
                  "the fused kernel is the faster variant.", ""]
        lines += summary_lines(blocks, keys, baselines, fmt, network_of)
        lines += ["| block | batch | type | layout | fused (us) | unfused (us) | " +
                  " | ".join("%s (us)" % b for b in baselines) + " | planner picks | unfused / fused | ratio |",
                  "|---|---|---|---|---|---|" + "---|" * len(baselines) + "---|---|---|"]
    else:
        lines += ["Host platform: CPU times of the emulation; the evidence is the traffic of each variant "
                  "against the block's minimum (input, weights and output once).", "",
                  "| block | batch | type | layout | fused (us) | unfused (us) | " +
                  " | ".join("%s (us)" % b for b in baselines) +
                  " | planner picks | fused traffic / minimum | unfused traffic / minimum |",
                  "|---|---|---|---|---|---|" + "---|" * len(baselines) + "---|---|---|"]
    for key in keys:
        shape, batch, dtype, lay = key
        e = blocks[key]
        head = "| %s | %d | %s | %s | %s | %s | %s | %s |" % (
            shape, batch, dtype, lay, cell_time(e.get("fused")), cell_time(e.get("unfused")),
            " | ".join(cell_time(e.get(b)) for b in baselines), planner_pick(e) or "-")
        if on_gpu:
            s, fr = planner_ratio(e, baselines), fusion_ratio(e)
            lines.append("%s %s | %s |" % (head, fmt(fr, ".2f"), fmt(s, ".2f") + ("x" if s else "")))
        else:
            traffic = [e[v].counters.get("traffic/min") if v in e else None for v in ("fused", "unfused")]
            lines.append("%s %s | %s |" % (head, fmt(traffic[0], ".2f"), fmt(traffic[1], ".2f")))
    return lines


def write_csv(path, blocks, types, layouts):
    """One line per block case: every time, the planner's pick, the ratios, labels and errors."""
    baselines = baselines_of(blocks)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["block", "batch", "type", "layout", "fused_us", "unfused_us"] + ["%s_us" % b for b in baselines] +
                   ["planner_picks", "chosen_us", "best_baseline", "best_us", "speed_ratio", "unfused_per_fused",
                    "fused_traffic_per_minimum", "unfused_traffic_per_minimum", "best_label", "errors"])

        def num(v, spec):
            return "" if v is None else format(v, spec)

        for key in ordered_keys(blocks, types, layouts):
            e = blocks[key]
            errors = "; ".join("%s: %s" % (slot, r.error) for slot, r in sorted(e.items()) if r.error)
            best, best_us = best_baseline(e, baselines)
            w.writerow(list(key) + [num(timed(e.get(s)), ".3f") for s in ["fused", "unfused"] + baselines] + [
                planner_pick(e) or "", num(chosen_time(e), ".3f"), best or "", num(best_us, ".3f"),
                num(planner_ratio(e, baselines), ".4f"), num(fusion_ratio(e), ".4f"),
                num(e["fused"].counters.get("traffic/min") if e.get("fused") else None, ".3f"),
                num(e["unfused"].counters.get("traffic/min") if e.get("unfused") else None, ".3f"),
                e[best].label if best else "", errors])
