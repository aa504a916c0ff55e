"""The pooling schedule rules bcd registers: the same design space as TVM's own fallback,
without TVM's warning."""

import subprocess
import sys
from pathlib import Path

import models
import pytest

from bcd_core.tasks import normalize_sketch

DESIGN_SPACE = """
import sys
import onnx
from tvm.relax.frontend.onnx import from_onnx
from tvm.s_tir import meta_schedule as ms
from tvm.target import Target
if sys.argv[2] == "registered":
    from bcd_core.tvm_rules import register_pooling_fallbacks
    register_pooling_fallbacks()
from bcd_core.model_import import fuse_for_tuning
from bcd_core.tvm_speedups import load_tensor_intrinsics
target = Target({"kind": "llvm", "num-cores": 1})
load_tensor_intrinsics(target)  # as bcd does: TVM's own import parses every backend's, 40 s
mod = fuse_for_tuning(from_onnx(onnx.load(sys.argv[1]), keep_params_in_input=False), target)
for task in ms.relax_integration.extract_tasks(mod, target):
    context = ms.TuneContext(mod=task.dispatched[0], target=target, space_generator="post-order-apply",
                             search_strategy="evolutionary", num_threads=1)
    for sketch in context.generate_design_space():
        print("\\n".join(sketch.trace.as_python(remove_postproc=True)))
"""


def design_space(model: Path, mode: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", DESIGN_SPACE, str(model), mode], capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_pooling_gets_tvms_fallback_schedule_without_its_warning(tmp_path: Path) -> None:
    model = models.max_pool(tmp_path / "pool.onnx")
    plain = design_space(model, "plain")
    registered = design_space(model, "registered")
    assert plain.returncode == 0 and registered.returncode == 0, plain.stderr + registered.stderr
    assert "Unknown schedule rule" in plain.stderr  # what TVM alone prints
    assert "Unknown schedule rule" not in registered.stderr
    assert "unannotate" in registered.stdout  # the annotation is dropped, as TVM's fallback does
    # The same sketches (sampled decisions aside).
    assert normalize_sketch(registered.stdout) == normalize_sketch(plain.stdout)
