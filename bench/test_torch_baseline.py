"""pytest: bench/torch_baseline.py's mechanics on CPU tensors (Debian's torch 1.13 does): the case
table that dsconv_bench writes (DSCONV_BENCH names the program; ctest sets it), the timing loop,
the JSON that scripts/report.py merges with dsconv_bench's by case name."""

import json
import os
import subprocess
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import torch_baseline  # noqa: E402


@pytest.fixture(scope="module")
def case_table(tmp_path_factory):
    bench = os.environ.get("DSCONV_BENCH")
    if not bench:
        pytest.skip("DSCONV_BENCH (dsconv_bench's path) is not set: run through ctest")
    path = str(tmp_path_factory.mktemp("cases") / "cases.json")
    subprocess.run([bench, "--case_table=" + path, "--batch", "1", "--type", "float", "--input", "32"], check=True)
    with open(path) as f:
        return path, json.load(f)["cases"]


def dsconv_names(bench, *selection):
    out = subprocess.run([bench, "--benchmark_list_tests"] + list(selection), check=True, capture_output=True,
                         text=True).stdout
    return [n for n in out.split() if "/dsconv" in n]


def test_the_table_has_every_case_dsconv_bench_lists_once(case_table):
    _, cases = case_table
    names = dsconv_names(os.environ["DSCONV_BENCH"], "--batch", "1", "--type", "float", "--input", "32")
    listed = {torch_baseline.case_of(n) for n in names}
    assert sorted(c["name"] for c in cases) == sorted(listed)
    ops = {c["op"] for c in cases}
    assert ops == {"dw", "pw", "dwbd", "dwbw", "pwbd", "pwbw", "block"}


def test_every_case_and_baseline_is_timed_under_its_dsconv_name(case_table, tmp_path):
    path, cases = case_table
    # One case of each op (the smallest maps: quick on the CPU).
    chosen, seen = [], set()
    for c in cases:
        if c["op"] not in seen and c["h"] <= 16:
            chosen.append(c["name"])
            seen.add(c["op"])
    names = tmp_path / "names.txt"
    names.write_text("\n".join(n + "/dsconv/manual_time" for n in chosen) + "\n")
    out = tmp_path / "torch.json"
    assert torch_baseline.main(["--cases", path, "--names", str(names), "--out", str(out), "--device", "cpu",
                                "--repetitions", "2", "--min-time", "0.001"]) == 0
    data = json.loads(out.read_text())
    assert data["context"]["dsconv_platform"] == "torch"
    got = {b["name"]: b for b in data["benchmarks"]}
    want = set()
    for c in cases:
        if c["name"] in chosen:
            want |= {c["name"] + "/" + impl for impl in torch_baseline.implementations(c, False)}
    assert set(got) == want
    for name, b in got.items():
        assert "error_occurred" not in b, b.get("error_message")
        assert b["real_time"] > 0 and b["time_unit"] == "us" and b["aggregate_name"] == "median"
        assert b["bytes"] == next(c["bytes"] for c in cases if name.startswith(c["name"] + "/"))
    # scripts/report.py reads them as the same cases as dsconv's.
    import report
    r = report.load_one_bench_json(data)
    assert all(isinstance(v.key, tuple) for v in r.values())


def test_a_block_that_is_not_torchvisions_fails_its_case(case_table):
    _, cases = case_table
    block = dict(next(c for c in cases if c["op"] == "block"))
    block["c_in"] += 8
    timer = torch_baseline.Timer(torch.device("cpu"))
    entry = torch_baseline.run_case(block, "torch_block", torch.device("cpu"), timer, 0, 1, 0.001)
    assert entry.get("error_occurred") and "channels" in entry["error_message"]


class CountingTimer:
    """Each launch takes `seconds`; counts which copies ran."""

    cuda = False

    def __init__(self, seconds):
        self.seconds = seconds

    def time_pass(self, launches, count, lead_seconds, first=0):
        for i in range(count):
            launches[(first + i) % len(launches)]()
        return self.seconds * count

    def sync(self):
        pass


def test_the_timing_loop_rotates_the_copies_and_reports_the_time_per_launch():
    ran = []
    launches = [lambda i=i: ran.append(i) for i in range(5)]
    seconds = torch_baseline.measure(CountingTimer(2e-5), launches, repetitions=3, min_time=1e-3)
    assert seconds == pytest.approx(2e-5)
    assert set(ran) == set(range(5))
    # A pass is about 1 ms of launches (50 of 20 us), so each repetition ran at least one.
    assert len(ran) >= 3 + 3 + 3 * 50


def test_the_copies_exceed_three_times_the_l2():
    case = {"bytes": 10 << 20}
    assert torch_baseline.copies(case, 50 << 20) * case["bytes"] >= 3 * (50 << 20)
    assert torch_baseline.copies(case, 0) == 2
    assert torch_baseline.copies({"bytes": 1 << 30}, 50 << 20) == 2
