"""scripts/model_check.py's network timings as ledger cases: the folder it writes on CUDA is one
that scripts/ledger.py append takes (op "model", the plain network as PyTorch's eager baseline)."""

import os
import sys

import torch

SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "scripts")
sys.path.insert(0, SCRIPTS)
import ledger  # noqa: E402
import model_check  # noqa: E402


def test_network_timings_append_to_the_ledger_as_model_cases(tmp_path):
    cases = [model_check.ledger_case("mobilenet_v2", "forward", 8, torch.float16, "nhwc", 2.0, 3.0),
             model_check.ledger_case("efficientnet_b0", "train_step", 128, torch.float32, "nchw", 40.0, 30.0)]
    folder = str(tmp_path / "models")
    model_check.write_ledger_report(folder, cases, "NVIDIA H200")
    book = str(tmp_path / "ledger.csv")
    assert ledger.append(book, folder, "run-a", "abc1234") == 2
    rows = {(r["shape"], r["batch"], r["type"], r["layout"]): r for r in ledger.read(book)}
    fast = rows[("mobilenet_v2:forward", "8", "half", "nhwc")]
    assert fast["op"] == "model" and fast["device"] == "NVIDIA H200" and fast["torch"] == torch.__version__
    assert float(fast["dsconv_us"]) == 2000.0 and float(fast["torch_eager_us"]) == 3000.0
    assert float(fast["speed_ratio"]) == 1.5 and fast["best_baseline"] == "torch_eager"
    assert fast["dsconv_variant"] == "converted"
    slow = rows[("efficientnet_b0:train_step", "128", "float", "nchw")]
    assert float(slow["speed_ratio"]) == 0.75  # dsconv slower: the ratio says so
