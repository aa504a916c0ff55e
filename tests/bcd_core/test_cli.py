import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAMPLE_MODEL, shared_model

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


def test_inspect_squeezenet_json_has_27_tasks_in_every_mode() -> None:
    result = bcd("inspect", str(shared_model("squeezenet1_1.onnx")), "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert len(payload["tasks"]) == 27
    assert sum(t["weight"] for t in payload["tasks"]) == 39
    for mode in CLUSTER_MODES:
        clusters = payload["clusters"][mode]
        assert sorted(m for c in clusters for m in c["members"]) == list(range(27))
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


@pytest.mark.slow
def test_inspect_with_the_heaviest_rule_names_each_clusters_heaviest_task(uneven_convnet: Path) -> None:
    def inspect(*options: str) -> dict:
        result = bcd("inspect", str(uneven_convnet), "--json", *options)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    similar, chosen = inspect(), inspect("--representative", "heaviest")
    assert (similar["representative_rule"], chosen["representative_rule"]) == ("similar", "heaviest")
    work = {t["index"]: t["flops"] * t["weight"] for t in chosen["tasks"]}
    shared = [c for clusters in chosen["clusters"].values() for c in clusters if len(c["members"]) > 1]
    assert shared, "the three convolutions share a cluster"
    for cluster in shared:
        assert cluster["representative"] == max(cluster["members"], key=lambda i: (work[i], -i))
    assert chosen["clusters"] != similar["clusters"], "the two rules pick different representatives here"
    split = inspect("--split-heavier-than", "4")
    assert (split["split_heavier_than"], similar["split_heavier_than"]) == (4, 0)
    heavy = [c for c in split["clusters"]["loose-sketch"] if c["key"].startswith("heavy:")]
    assert [len(c["members"]) for c in heavy] == [1], "one convolution has 5x its representative's work"


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


def test_prior_size_and_phase_one_patience_options(tmp_path: Path) -> None:
    from bcd_core.cli import build_parser, settings_from_args
    from bcd_core.tuning.settings import TuneSettings

    chosen = build_parser().parse_args(["tune", str(SAMPLE_MODEL), "--prior-top-k", "3", "--phase-one-patience", "0"])
    assert settings_from_args(chosen).prior_top_k == 3
    assert settings_from_args(chosen).phase_one_patience == 0
    default = build_parser().parse_args(["tune", str(SAMPLE_MODEL)])
    assert settings_from_args(default).prior_top_k == TuneSettings().prior_top_k
    assert settings_from_args(default).phase_one_patience == TuneSettings().phase_one_patience
    result = bcd("tune", str(SAMPLE_MODEL), "--phase-one-patience", "-1", "--db", str(tmp_path / "y.db"))
    assert result.returncode == 2 and "--phase-one-patience" in result.stderr
    result = bcd("tune", str(SAMPLE_MODEL), "--prior-top-k", "0", "--db", str(tmp_path / "x.db"))
    assert result.returncode == 2 and "--prior-top-k" in result.stderr
    assert not (tmp_path / "x.db").exists()


def test_representative_option_reaches_the_settings_and_is_checked() -> None:
    from bcd_core.cli import build_parser, settings_from_args
    from bcd_core.tuning.settings import TuneSettings

    chosen = build_parser().parse_args(
        ["tune", str(SAMPLE_MODEL), "--strategy", "bcd-phased", "--representative", "heaviest"]
    )
    assert settings_from_args(chosen).representative_rule == "heaviest"
    assert "representative_rule" in settings_from_args(chosen).identity()
    default = build_parser().parse_args(["tune", str(SAMPLE_MODEL)])
    assert settings_from_args(default).representative_rule == TuneSettings().representative_rule == "similar"
    with pytest.raises(ValueError, match="representative rule"):
        TuneSettings(representative_rule="lightest")


def test_split_option_reaches_the_settings_and_is_checked(tmp_path: Path) -> None:
    from bcd_core.cli import build_parser, settings_from_args
    from bcd_core.tuning.settings import TuneSettings

    chosen = build_parser().parse_args(
        ["tune", str(SAMPLE_MODEL), "--strategy", "bcd-phased", "--split-heavier-than", "8"]
    )
    assert settings_from_args(chosen).split_heavier_than == 8.0
    assert settings_from_args(chosen).identity()["split_heavier_than"] == 8.0
    default = build_parser().parse_args(["tune", str(SAMPLE_MODEL)])
    assert settings_from_args(default).split_heavier_than == TuneSettings().split_heavier_than
    result = bcd("tune", str(SAMPLE_MODEL), "--split-heavier-than", "0.5", "--db", str(tmp_path / "x.db"))
    assert result.returncode == 2 and "--split-heavier-than" in result.stderr
    assert not (tmp_path / "x.db").exists()


def test_prior_source_option_reaches_the_settings_and_is_checked() -> None:
    from bcd_core.cli import build_parser, settings_from_args
    from bcd_core.tuning.settings import TuneSettings

    chosen = build_parser().parse_args(
        ["tune", str(SAMPLE_MODEL), "--strategy", "bcd-phased", "--prior-source", "representative"]
    )
    assert settings_from_args(chosen).prior_source == "representative"
    assert settings_from_args(chosen).identity()["prior_source"] == "representative"
    default = build_parser().parse_args(["tune", str(SAMPLE_MODEL)])
    assert settings_from_args(default).prior_source == TuneSettings().prior_source == "auto"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["tune", str(SAMPLE_MODEL), "--prior-source", "everyone"])
    with pytest.raises(ValueError, match="prior source"):
        TuneSettings(prior_source="everyone")


def test_research_knobs_stay_out_of_help_but_still_work() -> None:
    from bcd_core.cli import build_parser, settings_from_args

    result = bcd("tune", "--help")
    assert result.returncode == 0 and "--strategy" in result.stdout and "bcd-phased" in result.stdout
    for knob in ("--prior-top-k", "--prior-source", "--phase-one-patience", "--representative", "--diffusion-share"):
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
