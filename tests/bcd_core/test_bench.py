"""`bcd bench`: both strategies on one model and budget, the paper's metric, and its outputs."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bcd_core.bench import speedup_at_equal_latency


def test_speedup_is_the_time_to_reach_the_baselines_final_estimate() -> None:
    baseline = [(10.0, 5.0), (20.0, 4.0), (30.0, 3.0), (40.0, 3.0)]  # (elapsed s, estimate)
    bcd = [(12.0, 4.5), (15.0, 2.9), (50.0, 2.0)]
    assert speedup_at_equal_latency(baseline, bcd) == (3.0, 30.0, 15.0, 2.0)
    assert speedup_at_equal_latency(baseline, [(12.0, 3.5)]) == (3.0, 30.0, None, None)  # never reached
    assert speedup_at_equal_latency([], bcd) == (None, None, None, None)


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
    for strategy in ("metaschedule", "bcd"):
        tuned = report["results"][strategy]
        assert tuned["trials"] > 0 and tuned["final_estimate_s"] > 0 and tuned["measured_latency_ms"] > 0
        assert 0 <= tuned["bookkeeping_s"] < tuned["elapsed_s"]
        timeline = (out / f"tiny_mlp-{strategy}-timeline.csv").read_text().splitlines()
        assert timeline[0] == "elapsed_s,estimated_latency_ms" and len(timeline) > 1
        assert (out / f"tiny_mlp-{strategy}.so").is_file()
        # Both stores were closed: their write-ahead logs are folded into the files, which
        # can be copied (or committed) on their own.
        assert (out / f"{strategy}.db").is_file() and not (out / f"{strategy}.db-wal").exists()
    assert (out / "tiny_mlp-bench.png").read_bytes().startswith(b"\x89PNG")
