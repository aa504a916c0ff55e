import json
import subprocess
import sys
from pathlib import Path

import pytest
from models import SAMPLE_MODEL

from bcd_core.tuning.settings import CLUSTER_MODES


def bcd(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bcd_core", *args], capture_output=True, text=True, timeout=timeout)


def test_inspect_table_lists_tasks_and_every_cluster_mode() -> None:
    result = bcd("inspect", str(SAMPLE_MODEL))
    assert result.returncode == 0, result.stderr
    assert "tasks   4" in result.stdout
    for mode in CLUSTER_MODES:
        assert f"\n{mode} clustering: " in result.stdout
    assert "fused_matmul" in result.stdout


def test_inspect_json_lists_the_tasks_a_tune_extracts_and_clusters_them_in_every_mode(
    conv_cluster_model: Path, host
) -> None:
    from bcd_core.tuning.run import prepare_model

    result = bcd("inspect", str(conv_cluster_model), "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    tasks = prepare_model(conv_cluster_model, host).tasks
    assert [t["name"] for t in payload["tasks"]] == [task.name for task in tasks]
    assert [t["weight"] for t in payload["tasks"]] == [task.weight for task in tasks]
    for mode in CLUSTER_MODES:
        clusters = payload["clusters"][mode]
        assert sorted(m for c in clusters for m in c["members"]) == list(range(len(tasks)))
    assert any(len(c["members"]) > 1 for c in payload["clusters"]["loose-sketch"]), "the convolutions share one"
    assert all(t["flops"] >= 0 for t in payload["tasks"])


def test_inspect_json_shows_loose_sketch_clusters_across_epilogues(tiny_mlp: Path) -> None:
    result = bcd("inspect", str(tiny_mlp), "--json")
    assert result.returncode == 0, result.stderr
    tasks = {t["name"]: t for t in json.loads(result.stdout)["tasks"]}
    # The two matmuls differ only by an inlined ReLU: one loose-sketch cluster, two sketch clusters.
    relu, plain = tasks["fused_matmul1_add1_relu1"], tasks["fused_matmul2_add2"]
    assert relu["loose_sketch_key"] == plain["loose_sketch_key"] != ""
    assert relu["loose_sketch_cluster"] == plain["loose_sketch_cluster"]
    assert relu["sketch_cluster"] != plain["sketch_cluster"]
    assert relu["loose_sketch_representative"] != plain["loose_sketch_representative"]


@pytest.mark.parametrize(
    "make,expected",
    [
        (lambda p: p.write_text("hello"), "not"),
        (lambda p: p.write_bytes(b""), "empty"),
    ],
)
def test_inspect_bad_files(tmp_path: Path, make, expected: str) -> None:
    path = tmp_path / "bad.onnx"
    make(path)
    result = bcd("inspect", str(path))
    assert result.returncode == 2
    assert result.stderr.startswith("bcd: error:") and expected in result.stderr
    assert "Traceback" not in result.stderr


def test_truncated_model_cli(tmp_path: Path) -> None:
    path = tmp_path / "truncated.onnx"
    path.write_bytes(SAMPLE_MODEL.read_bytes()[:5000])
    result = bcd("inspect", str(path))
    assert result.returncode == 2 and "Traceback" not in result.stderr


@pytest.mark.slow
def test_unsupported_dynamic_and_target_errors(unsupported_model: Path, dynamic_mlp: Path) -> None:
    result = bcd("inspect", str(unsupported_model))
    assert result.returncode == 2 and "FrobnicateTensor" in result.stderr
    result = bcd("tune", str(dynamic_mlp), "--trials-per-task", "1", "--db", str(dynamic_mlp) + ".db")
    assert result.returncode == 2 and "--input-shape x=1,16" in result.stderr
    assert not Path(str(dynamic_mlp) + ".db").exists(), "a failed import must not create a store"
    result = bcd("inspect", str(SAMPLE_MODEL), "--target", "quantum")
    assert result.returncode == 2 and "unknown or malformed target" in result.stderr


def test_export_from_empty_or_missing_store(tmp_path: Path) -> None:
    result = bcd("export", "--db", str(tmp_path / "none.db"), "--out", str(tmp_path / "x.so"))
    assert result.returncode == 2 and "not found" in result.stderr


def test_retired_options_and_strategies_are_refused_with_what_to_use(tmp_path: Path) -> None:
    result = bcd("tune", str(SAMPLE_MODEL), "--strategy", "bcd-phased", "--db", str(tmp_path / "x.db"))
    assert result.returncode == 2 and "bcd-phased" in result.stderr and "Traceback" not in result.stderr
    result = bcd("tune", str(SAMPLE_MODEL), "--first-round", "cold", "--db", str(tmp_path / "x.db"))
    assert result.returncode == 2 and "--first-round" in result.stderr
    assert not (tmp_path / "x.db").exists()


def test_settings_take_only_the_choices_the_options_table_lists() -> None:
    from bcd_core.tuning.options import OPTIONS
    from bcd_core.tuning.settings import TuneSettings

    rpc = {"tracker": "127.0.0.1:9190", "tracker_key": "k"}  # what the rpc runner needs besides
    for option in (o for o in OPTIONS if o.choices):
        for value in option.choices:
            extra = rpc if (option.field, value) == ("runner", "rpc") else {}
            assert getattr(TuneSettings(**{option.field: value}, **extra), option.field) == value
        with pytest.raises(ValueError, match="choose one of"):
            TuneSettings(**{option.field: "no-such-choice"})
    with pytest.raises(ValueError, match="retired"):
        TuneSettings(strategy="bcd-phased")


def test_research_knobs_stay_out_of_help_but_still_work() -> None:
    from bcd_core.cli import build_parser, settings_from_args

    result = bcd("tune", "--help")
    assert result.returncode == 0 and "--strategy" in result.stdout and "metaschedule" in result.stdout
    assert "bcd-phased" not in result.stdout
    for knob in ("--seed", "--cluster-mode", "--builder-timeout", "--diffusion-share"):
        assert knob not in result.stdout
    chosen = build_parser().parse_args(["tune", str(SAMPLE_MODEL), "--diffusion-share", "0"])
    assert (
        settings_from_args(chosen).diffusion_share == 0
        and settings_from_args(chosen).identity()["diffusion_share"] == 0
    )


def test_a_reader_that_left_gets_no_traceback() -> None:
    """`bcd inspect MODEL | head -1` where head has gone: bcd ends quietly, as Unix tools do."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bcd_core", "inspect", str(SAMPLE_MODEL)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.close()  # long before bcd has imported TVM: every write of its table fails
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141, stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr
