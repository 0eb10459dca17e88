"""pytest: scripts/report.py and scripts/ledger.py on the sample of a GPU run in testdata/
(make_gpu_bench_sample.py: dsconv_bench's chunks with cuDNN's graph and legacy APIs, and
bench/torch_baseline.py's file), and a ledger of two runs made from it."""

import copy
import gzip
import json
import os
import pathlib
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ledger  # noqa: E402
import report  # noqa: E402

SAMPLES = [os.path.join(HERE, "testdata", f) for f in
           ("gpu_bench_dw.json.gz", "gpu_bench_pw.json.gz", "gpu_bench_torch.json.gz")]
CASE = ("dw", "mobilenet_v2_224_0:c32_h112_k3_s1", 32, "half", "nhwc")


def rows_by_case():
    _, results, _, _ = report.load_bench_json(SAMPLES)
    rows, _, baselines = report.split_results(results)
    return dict(rows), baselines


def test_the_files_merge_by_case_name():
    rows, baselines = rows_by_case()
    entry = rows[CASE]
    assert set(entry) == {"dsconv", "cudnn_graph", "cudnn_legacy", "torch_conv", "torch_eager"}
    assert baselines == ["torch_conv", "torch_eager", "cudnn_graph", "cudnn_legacy"]


def test_the_best_baseline_is_the_fastest_and_the_ratio_its_time_over_dsconvs():
    rows, _ = rows_by_case()
    entry = rows[CASE]
    times = {impl: r.time_us for impl, r in entry.items()}
    name, best = report.best_baseline(entry)
    assert name == min((t, i) for i, t in times.items() if i != "dsconv")[1]
    assert report.speed_ratio(entry) == pytest.approx(best.time_us / times["dsconv"])
    assert report.speed_ratio(entry, "cudnn_legacy") == pytest.approx(times["cudnn_legacy"] / times["dsconv"])


def test_a_failed_baseline_is_not_the_best():
    rows, _ = rows_by_case()
    failed = rows[("dw", "efficientnet_b0_224_15:c144_h56_k5_s2", 1, "half", "nchw")]
    assert failed["cudnn_graph"].error
    assert report.best_baseline(failed)[0] != "cudnn_graph"


def test_tf32_is_shown_but_never_the_best():
    rows, _ = rows_by_case()
    entry = dict(rows[CASE])
    fast = copy.copy(entry["torch_conv"])
    fast.time_us = entry["dsconv"].time_us / 100
    entry["torch_conv_tf32"] = fast
    assert report.best_baseline(entry)[0] != "torch_conv_tf32"


def test_pytorchs_results_get_their_share_of_the_copy_bandwidth():
    context, results, _, _ = report.load_bench_json(SAMPLES)
    r = results[CASE + ("torch_conv",)]
    copy_gbps = float(context["dsconv_copy_bandwidth_GBps"])
    assert r.counters["bw_pct"] == pytest.approx(100 * r.counters["bytes"] / (r.time_us * 1e3) / copy_gbps, rel=1e-4)
    # The copy bandwidth is dsconv_bench's (PyTorch's file has none), its version PyTorch's.
    assert context["dsconv_platform"] == "cuda" and context["torch_version"] == "2.11.0"


def faster_run(tmp_path, factor):
    """The sample with every dsconv time divided by `factor`, reported into tmp_path."""
    os.makedirs(tmp_path, exist_ok=True)
    paths = []
    for path in SAMPLES:
        with gzip.open(path, "rt") as f:
            data = json.load(f)
        for b in data["benchmarks"]:
            if "/dsconv" in b["name"] and "real_time" in b:
                b["real_time"] /= factor
                for k in ("GB/s", "GFLOP/s", "bw_pct"):
                    if k in b:
                        b[k] *= factor
        out = os.path.join(tmp_path, os.path.basename(path)[:-3])
        with open(out, "w") as f:
            json.dump(data, f)
        paths.append(out)
    assert report.report_bench(paths, str(tmp_path))
    return str(tmp_path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The sample reported as it is (run a) and with dsconv twice as fast (run b): each report
    draws its charts, the slow part, so the tests share these two."""
    base = tmp_path_factory.mktemp("runs")
    return faster_run(base / "a", 1.0), faster_run(base / "b", 2.0)


def test_the_report_names_the_best_baseline_per_case(runs):
    tmp_path = pathlib.Path(runs[0])
    md = (tmp_path / "bench.md").read_text()
    assert "## Summary: dsconv against the best baseline" in md
    assert "| op | batch | torch_conv | torch_eager | cudnn_graph | cudnn_legacy |" in md
    header = (tmp_path / "bench.csv").read_text().splitlines()[0].split(",")
    assert header[:6] == ["op", "shape", "batch", "type", "layout", "dsconv_us"]
    assert {"torch_conv_us", "cudnn_graph_us", "best_baseline", "speed_ratio", "best_bw_pct"} <= set(header)
    blocks = (tmp_path / "bench_blocks.csv").read_text()
    assert "torch_block_us" in blocks.splitlines()[0]
    assert json.loads((tmp_path / "run.json").read_text())["torch_version"] == "2.11.0"


def test_a_ledger_of_two_runs(tmp_path, runs):
    book = str(tmp_path / "ledger.csv")
    first, second = runs
    n = ledger.append(book, first, "run-a", "aaaa111", driver="580.1", date="2026-11-24")
    assert ledger.append(book, second, "run-b", "bbbb222", date="2026-11-25") == n
    rows = ledger.read(book)
    assert len(rows) == 2 * n
    assert [r[0] for r in ledger.runs_in_order(rows)] == ["run-a", "run-b"]
    ratios = ledger.median_ratios(rows)
    assert ratios[("run-b", "dw", 32)] == pytest.approx([2 * v for v in ratios[("run-a", "dw", 32)]], rel=1e-3)
    a = next(r for r in rows if r["run"] == "run-a" and r["op"] == "block")
    assert a["dsconv_variant"] in ("fused", "unfused") and a["device"] == "NVIDIA H100 80GB HBM3"
    assert a["commit"] == "aaaa111" and a["driver"] == "580.1" and a["cudnn"] == "9.10.2" and a["torch"] == "2.11.0"
    lines = "\n".join(ledger.markdown_lines(rows))
    assert "| run-a | 2026-11-24 | aaaa111 |" in lines and "| run-b | 2026-11-25 | bbbb222 |" in lines
    # The same run appended again replaces its cases.
    ledger.append(book, second, "run-b", "bbbb222", date="2026-11-25")
    assert len(ledger.read(book)) == 2 * n


def test_the_progress_chart(tmp_path, runs):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    book = str(tmp_path / "ledger.csv")
    ledger.append(book, runs[0], "run-a", "aaaa111", date="2026-11-24")
    ledger.append(book, runs[1], "run-b", "bbbb222", date="2026-11-25")
    out = str(tmp_path / "progress.png")
    assert ledger.chart_progress(out, ledger.read(book), plt)
    assert os.path.getsize(out) > 10000


def test_clock_samples_cut_short_are_left_out(tmp_path):
    clocks = tmp_path / "clocks.csv"
    clocks.write_text("phase,timestamp,clocks.sm,clocks.mem\n"
                      "before, 0, 1980, 3201\n"
                      "load-1, 1, 1755, 3201\n"
                      "after, 0\n")
    text = "\n".join(report.clock_lines(str(clocks)))
    assert "1 while benchmarks ran (every 2 s), 1 before, between and after" in text
    assert "before: 1980 / 3201" in text and "after" not in text.split("phase:")[-1]
