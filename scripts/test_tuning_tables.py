"""Tests of scripts/tuning_tables.py variants: the fastest forced variant of each case of a sweep,
as the C++ table's rows (pytest)."""
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tuning_tables  # noqa: E402

DW = "dw/mobilenet_v2_224_3:c96_h112_k3_s2/b8/half/nhwc/dsconv"
PW = "pw/mobilenet_v2_224_1:ci32_co16_h112/b128/float/nchw/dsconv"


def bench(run_name, variant, time, unit="us", aggregate="median", error=False):
    b = {"name": run_name + "_median", "run_name": run_name, "run_type": "aggregate", "aggregate_name": aggregate,
         "real_time": time, "time_unit": unit, "label": "variant=%s, act=relu6" % variant}
    if error:
        b["error_occurred"] = True
    return b


def write_sweep(directory, variant, benchmarks):
    with gzip.open(os.path.join(directory, "sweep-%s.json.gz" % variant), "wt") as f:
        json.dump({"context": {}, "benchmarks": benchmarks}, f)


def test_the_fastest_variant_of_each_case(tmp_path):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    # nhwc_register fastest on the depthwise case (its mean slower: the median decides); the
    # 1x1 case in milliseconds and nanoseconds; a variant that could not run a case left out.
    write_sweep(sweep, "nhwc_tiled", [bench(DW, "nhwc_tiled", 30.0), bench(DW, "nhwc_tiled", 20.0, aggregate="mean")])
    write_sweep(sweep, "nhwc_register", [bench(DW, "nhwc_register", 25.0), bench(DW, "nhwc_register", 90.0, aggregate="mean")])
    write_sweep(sweep, "gemm_small", [bench(PW, "gemm_small", 0.050, unit="ms")])
    write_sweep(sweep, "mma_small", [bench(PW, "mma_small", 40000.0, unit="ns"), bench(DW, "mma_small", 1.0, error=True)])
    out = tmp_path / "variant_tables.hpp"
    tuning_tables.main(["variants", "--run", "sm_90|NVIDIA H200|2026-11-27, commit abc|%s" % sweep, "--out", str(out)])
    text = out.read_text()
    assert "{'d', 96, 96, 3, 2, 112, 8, 'h', 'h', \"nhwc_register\", 25.000}," in text
    assert "{'p', 32, 16, 1, 1, 112, 128, 'f', 'c', \"mma_small\", 40.000}," in text
    assert text.count("{'") == 2
    revision = tuning_tables.revision("variant_choice.hpp", "variant_kernels_revision")
    assert '{"sm_90", "NVIDIA H200", "2026-11-27, commit abc", %d, variants_sm_90,' % revision in text


def test_a_sweep_without_cases_is_refused(tmp_path):
    (tmp_path / "sweep").mkdir()
    try:
        tuning_tables.main(["variants", "--run", "sm_90|GPU|today|%s" % (tmp_path / "sweep"), "--out", str(tmp_path / "t.hpp")])
    except SystemExit as e:
        assert "no depthwise or 1x1 case" in str(e)
    else:
        raise AssertionError("an empty sweep wrote a table")
