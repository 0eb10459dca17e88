"""The block cases of dsconv_bench in scripts/report.py's report: benchmarks named
block/<shape>/b<batch>/<type>/<layout>/<implementation>, the implementation dsconv_fused,
dsconv_unfused or the baseline's name (its layer sequence). Per block case the three times, the
variant that dsconv's planner picks (from the dsconv cases' labels, "planner picks X"), and the
speedup of the planner's choice over the baseline (GPU) or the global-memory traffic of both
variants against the minimum (host platform); a summary per network, batch, type and layout;
and a CSV."""

import csv
import math
import re

PICK = re.compile(r"planner picks (\w+)")
VARIANT_SLOTS = {"dsconv_fused": "fused", "dsconv_unfused": "unfused"}


def split_blocks(results):
    """Removes the block cases (op "block") from `results` ({(op, shape, batch, type, layout,
    impl): BenchResult}); returns ({(shape, batch, type, layout): {"fused"|"unfused"|"baseline":
    BenchResult}}, the baseline's name or None)."""
    blocks, baseline = {}, None
    for key in [k for k in results if k[0] == "block"]:
        r = results.pop(key)
        _, shape, batch, dtype, lay, impl = key
        slot = VARIANT_SLOTS.get(impl)
        if slot is None:
            slot, baseline = "baseline", impl
        blocks.setdefault((shape, batch, dtype, lay), {})[slot] = r
    return blocks, baseline


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


def planner_speedup(entry):
    """Baseline time / the time of the variant the planner picks."""
    pick = planner_pick(entry)
    ours, base = timed(entry.get(pick)) if pick else None, timed(entry.get("baseline"))
    return base / ours if ours and base else None


def ordered_keys(blocks, types, layouts):
    shapes = []
    for shape, _, _, _ in blocks:
        if shape not in shapes:
            shapes.append(shape)

    def rank(value, preferred):
        return (preferred.index(value), "") if value in preferred else (len(preferred), value)

    return sorted(blocks, key=lambda k: (shapes.index(k[0]), k[1], rank(k[2], types), rank(k[3], layouts)))


def markdown_lines(blocks, baseline, on_gpu, types, layouts, fmt, cell_time, network_of):
    """The report's block section (empty without block cases); fmt, cell_time and network_of
    are report.py's."""
    if not blocks:
        return []
    base = baseline or "baseline"
    keys = ordered_keys(blocks, types, layouts)
    lines = ["", "## Blocks: dsconv's fused and unfused variants against %s (the block's layers in sequence)" % base, ""]
    if on_gpu:
        lines += ["Whole inverted-residual blocks (forward). Speedup = %s time / the time of the variant dsconv's "
                  "planner picks (what inverted_residual_forward runs by default)." % base, ""]
        summary = {}
        for key in keys:
            s = planner_speedup(blocks[key])
            if s:
                summary.setdefault((network_of(key[0])[0], key[1], key[2], key[3]), []).append(s)
        if summary:
            lines += ["| network | batch | type | layout | blocks | geomean speedup | worst | dsconv faster |",
                      "|---|---|---|---|---|---|---|---|"]
            for (net, batch, dtype, lay), values in sorted(summary.items()):
                geo = math.exp(sum(math.log(v) for v in values) / len(values))
                lines.append("| %s | %d | %s | %s | %d | %.2fx | %.2fx | %d of %d |" % (
                    net, batch, dtype, lay, len(values), geo, min(values), sum(1 for v in values if v > 1),
                    len(values)))
            lines.append("")
        lines += ["| block | batch | type | layout | fused (us) | unfused (us) | %s (us) | planner picks | speedup |" % base,
                  "|---|---|---|---|---|---|---|---|---|"]
    else:
        lines += ["Host platform: CPU times of the emulation; the evidence is the traffic of each variant "
                  "against the block's minimum (input, weights and output once).", "",
                  "| block | batch | type | layout | fused (us) | unfused (us) | %s (us) | planner picks | "
                  "fused traffic / minimum | unfused traffic / minimum |" % base,
                  "|---|---|---|---|---|---|---|---|---|---|"]
    for key in keys:
        shape, batch, dtype, lay = key
        e = blocks[key]
        head = "| %s | %d | %s | %s | %s | %s | %s | %s |" % (
            shape, batch, dtype, lay, cell_time(e.get("fused")), cell_time(e.get("unfused")),
            cell_time(e.get("baseline")), planner_pick(e) or "-")
        if on_gpu:
            s = planner_speedup(e)
            lines.append("%s %s |" % (head, fmt(s, ".2f") + ("x" if s else "")))
        else:
            traffic = [e[v].counters.get("traffic/min") if v in e else None for v in ("fused", "unfused")]
            lines.append("%s %s | %s |" % (head, fmt(traffic[0], ".2f"), fmt(traffic[1], ".2f")))
    return lines


def write_csv(path, blocks, types, layouts):
    """One line per block case: the three times, the planner's pick and its speedup, labels and errors."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["block", "batch", "type", "layout", "fused_us", "unfused_us", "baseline_us", "planner_picks",
                    "speedup", "fused_traffic_per_minimum", "unfused_traffic_per_minimum", "baseline_label",
                    "errors"])

        def num(v, spec):
            return "" if v is None else format(v, spec)

        for key in ordered_keys(blocks, types, layouts):
            e = blocks[key]
            get = {slot: e.get(slot) for slot in ("fused", "unfused", "baseline")}
            errors = "; ".join("%s: %s" % (slot, r.error) for slot, r in get.items() if r is not None and r.error)
            w.writerow(list(key) + [num(timed(get[s]), ".3f") for s in ("fused", "unfused", "baseline")] + [
                planner_pick(e) or "", num(planner_speedup(e), ".4f"),
                num(get["fused"].counters.get("traffic/min") if get["fused"] else None, ".3f"),
                num(get["unfused"].counters.get("traffic/min") if get["unfused"] else None, ".3f"),
                get["baseline"].label if get["baseline"] else "", errors])
