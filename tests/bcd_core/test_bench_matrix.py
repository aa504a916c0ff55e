"""`bcd bench --seeds N`: mean curves, cross pairs and per-trial cost over several runs a side."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bcd_core.bench_matrix import (
    Matrix,
    ModelMatrix,
    RunResult,
    compare,
    load_matrix,
    markdown_table,
    mean_curve,
    mean_speedup,
    model_timings,
    write_matrix,
)
from bcd_core.records.store import RecordStore


def run(strategy: str, seed: int, timeline: list[tuple[float, float]], trials: int = 10) -> RunResult:
    return RunResult(
        strategy=strategy,
        seed=seed,
        trials=trials,
        elapsed_s=timeline[-1][0],
        final_estimate_s=min(v for _, v in timeline),
        first_estimate_s=timeline[0][0],
        measured_latency_ms=None,
        timeline=timeline,
        trial_timeline=[(float(i + 1), v) for i, (_, v) in enumerate(timeline)],
    )


def test_the_mean_curve_is_defined_where_every_run_has_an_estimate() -> None:
    runs = [[(1.0, 4.0), (3.0, 2.0)], [(2.0, 6.0), (4.0, 4.0)]]
    assert mean_curve(runs, [0.0, 1.0, 2.0, 3.0, 4.0]) == [(2.0, 5.0), (3.0, 4.0), (4.0, 3.0)]


def test_speedups_come_from_the_mean_curves_and_from_every_cross_pair() -> None:
    stock = [run("metaschedule", 0, [(10.0, 5.0), (40.0, 3.0)]), run("metaschedule", 1, [(10.0, 5.0), (40.0, 3.0)])]
    fast = [run("bcd", 0, [(10.0, 4.0), (20.0, 2.0)]), run("bcd", 1, [(10.0, 4.0), (30.0, 3.5)])]
    comparison = compare(stock, fast)
    assert comparison.pair_speedups == [2.0, None, 2.0, None]  # seed 1 never reaches 3.0 ms
    assert comparison.reached == 2
    assert mean_speedup([r.timeline for r in stock], [r.timeline for r in fast]) == comparison.mean_speedup
    assert comparison.mean_speedup == pytest.approx(40.0 / 20.0, rel=0.02)  # means: 3.0 at 20 s
    assert comparison.final_ratio == pytest.approx(2.75 / 3.0)
    assert comparison.trial_cost_ratio == pytest.approx((25.0 / 10) / (40.0 / 10))
    never = compare(stock, [run("bcd", 0, [(10.0, 4.0)])])
    assert never.mean_speedup is None and never.reached == 0
    matrix = Matrix("llvm", 8, 4, 2, 2, "bcd bench m.onnx --seeds 2", [ModelMatrix("m.onnx", stock + fast, 1.0)])
    table = markdown_table(matrix)
    assert "| m | bcd | 2.0" in table and "2/4, median" in table and "bcd bench m.onnx --seeds 2" in table


def test_both_sides_are_read_off_their_mean_curves_at_shares_of_stocks_time() -> None:
    stock = [run("metaschedule", 0, [(10.0, 5.0), (40.0, 3.0)]), run("metaschedule", 1, [(10.0, 5.0), (40.0, 3.0)])]
    fast = [run("bcd", 0, [(10.0, 4.0), (20.0, 2.0)]), run("bcd", 1, [(10.0, 4.0), (30.0, 3.5)])]
    late = [run("bcd", 0, [(15.0, 4.0), (20.0, 2.0)]), run("bcd", 1, [(5.0, 4.0)])]
    assert compare(stock, fast).equal_time == [(0.25, 4.0, 5.0), (0.5, 3.0, 5.0), (1.0, 2.75, 3.0)]
    assert compare(stock, late).equal_time[0] == (0.25, None, 5.0), "one run had no estimate at 10 s yet"
    matrix = Matrix("llvm", 8, 4, 2, 2, "bcd bench m.onnx --seeds 2", [ModelMatrix("m.onnx", stock + fast, 1.0)])
    assert "0.25: 4000.000 / 5000.000, 0.5: 3000.000 / 5000.000, 1: 2750.000 / 3000.000 |" in markdown_table(matrix)


def test_a_cross_pair_median_that_most_pairs_never_reach_reads_never() -> None:
    stock = [run("metaschedule", 0, [(10.0, 5.0), (40.0, 3.0)]), run("metaschedule", 1, [(10.0, 5.0), (40.0, 2.0)])]
    fast = [run("bcd", 0, [(10.0, 4.0), (20.0, 2.5)]), run("bcd", 1, [(10.0, 4.0)])]
    matrix = Matrix("llvm", 8, 4, 2, 2, "bcd bench m.onnx --seeds 2", [ModelMatrix("m.onnx", stock + fast, 1.0)])
    assert "1/4, median never (2.00-2.00x)" in markdown_table(matrix)


@pytest.mark.slow
def test_bench_with_seeds_writes_a_matrix_of_runs(tiny_mlp: Path, tmp_path: Path) -> None:
    out = tmp_path / "matrix"
    command = [sys.executable, "-m", "bcd_core", "bench", str(tiny_mlp), "--seeds", "2", "--trials-per-task", "4"]
    command += ["--trials-per-round", "4", "--runs", "3", "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "| tiny_mlp | bcd |" in result.stdout
    matrix = load_matrix(out / "matrix.json")
    (model,) = matrix.models
    assert sorted((r.strategy, r.seed) for r in model.runs) == [
        ("bcd", 0), ("bcd", 1), ("metaschedule", 0), ("metaschedule", 1)
    ]  # fmt: skip
    for tuned in model.runs:
        assert tuned.trials > 0 and tuned.timeline and tuned.measured_latency_ms > 0
        assert tuned.first_estimate_s == tuned.timeline[0][0]
        assert (out / "tiny_mlp" / f"{tuned.strategy}-seed{tuned.seed}.db").is_file()
    assert len(model.probes_ms) == 4 and model.onnxruntime_ms > 0
    (comparison,) = model.comparisons()
    assert len(comparison.pair_speedups) == 4
    assert (out / "tiny_mlp-curves.png").read_bytes().startswith(b"\x89PNG")


def test_bench_refuses_an_unknown_strategy(tiny_mlp: Path, tmp_path: Path) -> None:
    from bcd_core.cli import main

    assert main(["bench", str(tiny_mlp), "--strategies", "bcd,magic", "--out", str(tmp_path)]) == 2


def test_a_matrix_keeps_each_tunes_model_timings_and_reads_one_written_before_them(tmp_path: Path) -> None:
    store = RecordStore(tmp_path / "timed.db")
    sid = store.create_session(model_path="m", model_hash="h", target="{}", target_key="t", strategy="bcd", settings={})
    for milestone, measured in (("first estimate", 2e-3), ("goal check", None), ("final", 1.2e-3)):
        row = {"milestone": milestone, "trials_done": 5, "elapsed_s": 10.0, "estimated_latency_s": 1e-3}
        store.record_model_latency(sid, {**row, "measured_latency_s": measured, "spread": 0.01, "cost_s": 3.0})
    timings = model_timings(store, sid)
    assert timings == [(10.0, 1e-3, 2e-3), (10.0, 1e-3, 1.2e-3)], "a row without a timing was kept"
    tuned = run("bcd", 0, [(1.0, 3e-3), (2.0, 1e-3)])
    tuned.model_timings = timings
    matrix = Matrix("llvm", 4, 4, 1, 2, "bcd bench m.onnx", [ModelMatrix("m.onnx", [tuned], 1.0)])
    path = write_matrix(matrix, tmp_path / "out")
    assert load_matrix(path).models[0].runs[0].model_timings == timings
    older = json.loads(path.read_text())
    del older["models"][0]["runs"][0]["model_timings"]
    path.write_text(json.dumps(older))
    assert load_matrix(path).models[0].runs[0].model_timings == []
