"""`bcd bench`: both strategies on one model and budget, the paper's metric, and its outputs."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from bcd_core.bench import BenchReport, format_report, load_report, machine_probe_ms, speedup_at_equal_latency


def test_speedup_is_the_time_to_reach_the_baselines_final_estimate() -> None:
    baseline = [(10.0, 5.0), (20.0, 4.0), (30.0, 3.0), (40.0, 3.0)]  # (elapsed s, estimate)
    bcd = [(12.0, 4.5), (15.0, 2.9), (50.0, 2.0)]
    assert speedup_at_equal_latency(baseline, bcd) == (3.0, 30.0, 15.0, 2.0)
    assert speedup_at_equal_latency(baseline, [(12.0, 3.5)]) == (3.0, 30.0, None, None)  # never reached
    assert speedup_at_equal_latency([], bcd) == (None, None, None, None)


def report_with_probes(probes: dict[str, float]) -> BenchReport:
    return BenchReport(
        model="m.onnx", target="llvm", trials_per_task=8, trials_per_round=4, baseline_final_s=None,
        baseline_time_s=None, bcd_time_s=None, speedup=None, onnxruntime_ms=probes.get("after both", 1.0),
        threads=2, results={}, machine_probes_ms=probes,
    )  # fmt: skip


def test_a_machine_that_slowed_down_during_the_bench_is_reported() -> None:
    steady = report_with_probes({"before metaschedule": 4.0, "before bcd": 4.2, "after both": 4.1})
    assert steady.machine_drift == pytest.approx(0.05)
    assert "spread 5%" in format_report(steady) and "warning" not in format_report(steady)

    noisy = report_with_probes({"before metaschedule": 5.7, "before bcd": 10.9, "after both": 6.0})
    assert noisy.machine_drift == pytest.approx(10.9 / 5.7 - 1)
    assert "warning: the machine ran 91% slower at times" in format_report(noisy)

    assert report_with_probes({"after both": 4.0}).machine_drift is None  # one probe: no spread


def one_node_model(op_type: str, domain: str = "") -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node(op_type, ["x"], ["y"], domain=domain)], "g", [x], [y])
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets)


def test_the_machine_probe_is_a_diagnostic_that_never_stops_a_bench() -> None:
    inputs = {"x": np.ones((2, 3), dtype="float32")}
    probe = machine_probe_ms(one_node_model("Relu"), inputs)
    assert probe is not None and probe > 0
    assert machine_probe_ms(one_node_model("NoSuchOp", domain="com.example"), inputs) is None


@pytest.mark.slow
def test_bench_runs_both_strategies_and_writes_timelines_plot_and_report(tiny_mlp: Path, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    command = [sys.executable, "-m", "bcd_core", "bench", str(tiny_mlp), "--trials-per-task", "8"]
    command += ["--trials-per-round", "4", "--runs", "3", "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "speedup" in result.stdout

    report = json.loads((out / "tiny_mlp-bench.json").read_text())
    baseline_estimates = [estimate for _, estimate in report["results"]["metaschedule"]["timeline"]]
    assert report["baseline_final_s"] == min(baseline_estimates)
    assert report["onnxruntime_ms"] > 0
    assert set(report["machine_probes_ms"]) == {"before metaschedule", "before bcd", "after both"}
    assert all(latency > 0 for latency in report["machine_probes_ms"].values())
    assert "machine speed (onnxruntime)" in result.stdout and "in measured trials" in result.stdout
    assert report["baseline_trials"] == min(
        trials for trials, estimate in report["results"]["metaschedule"]["trial_timeline"]
        if estimate <= report["baseline_final_s"]
    )  # fmt: skip
    for strategy in ("metaschedule", "bcd"):
        tuned = report["results"][strategy]
        assert tuned["trials"] > 0 and tuned["final_estimate_s"] > 0 and tuned["measured_latency_ms"] > 0
        assert 0 <= tuned["bookkeeping_s"] < tuned["elapsed_s"]
        trials = [trials for trials, _ in tuned["trial_timeline"]]
        assert trials == sorted(trials) and 0 < trials[-1] <= tuned["trials"]
        assert [e for _, e in tuned["trial_timeline"]] == [e for _, e in tuned["timeline"]]
        timeline = (out / f"tiny_mlp-{strategy}-timeline.csv").read_text().splitlines()
        assert timeline[0] == "elapsed_s,estimated_latency_ms" and len(timeline) > 1
        assert (out / f"tiny_mlp-{strategy}.so").is_file()
        # Both stores were closed: their write-ahead logs are folded into the files, which
        # can be copied (or committed) on their own.
        assert (out / f"{strategy}.db").is_file() and not (out / f"{strategy}.db-wal").exists()
    assert (out / "tiny_mlp-bench.png").read_bytes().startswith(b"\x89PNG")
    assert load_report(out / "tiny_mlp-bench.json").machine_probes_ms == report["machine_probes_ms"]
