import json
from pathlib import Path

import pytest
from tvm.target import codegen

from bcd_core.errors import TargetError
from bcd_core.model_import import import_model
from bcd_core.target import host_core_count, parse_target, target_key
from bcd_core.tasks import extract_tasks


def test_default_is_the_host_cpu() -> None:
    target = parse_target(None)
    assert target.kind.name == "llvm"
    assert target.attrs["mcpu"] == codegen.llvm_get_system_cpu()
    assert int(target.attrs["num-cores"]) == host_core_count()
    assert parse_target("llvm").attrs["mcpu"] == target.attrs["mcpu"]


def test_json_dict_target() -> None:
    target = parse_target('{"kind": "llvm", "num-cores": 1}')
    assert int(target.attrs["num-cores"]) == 1
    assert json.loads(target_key(target))["kind"] == "llvm"


@pytest.mark.parametrize(
    "spec,match",
    [
        ("not-a-target", "unknown or malformed"),
        ('{"kind": ', "not valid JSON"),
        ('{"kind": "llvm", "mcpu": "potato9000"}', "potato9000"),
    ],
)
def test_bad_targets_have_clear_errors(spec: str, match: str) -> None:
    with pytest.raises(TargetError, match=match):
        parse_target(spec)


def test_cuda_tag_constructs_with_a_host_and_extracts_tasks(tiny_mlp: Path) -> None:
    target = parse_target("nvidia/nvidia-h100")
    assert target.kind.name == "cuda" and target.host is not None
    tasks = extract_tasks(import_model(tiny_mlp).relax_mod, target)
    assert any("matmul" in t.name for t in tasks)
    assert all(t.num_sketches >= 1 for t in tasks)
