from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Tests other than the layout's own tune the model's layout: which one "auto" measures to be
# faster depends on the CPU, and the tests check task names and counts (engine processes and
# `bcd` subprocesses inherit it).
os.environ["BCD_LAYOUT"] = "nchw"
# Timing the compiled model at a tune's milestones costs a tiny test model more than its tune:
# off, except in the tests that check the timings and what shows them (time_model below).
os.environ["BCD_TIME_MODEL"] = "0"
# Compiled libraries are kept for reuse (bcd_core/compiled_cache.py): in a folder of this run's
# own, never the user's cache.
os.environ["BCD_CACHE_DIR"] = tempfile.mkdtemp(prefix="bcd-test-libraries-")


@pytest.fixture
def time_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Time the compiled model at milestones, in this process and the engines it starts."""
    monkeypatch.setenv("BCD_TIME_MODEL", "1")


sys.path.insert(0, str(Path(__file__).parent))

import models  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SAMPLE_MODEL = models.SAMPLE_MODEL
# Fixtures that run a real tune (or start RPC servers) once for their module: a test that uses
# one is slow however quick its own body is, so `pytest -m "not slow"` leaves it out.
TUNING_FIXTURES = {"steered", "seeded", "cluster"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if TUNING_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def tiny_mlp(model_dir: Path) -> Path:
    return models.mlp(model_dir / "tiny_mlp.onnx")


@pytest.fixture(scope="session")
def tiny_convnet(model_dir: Path) -> Path:
    return models.convnet(model_dir / "tiny_convnet.onnx")


@pytest.fixture(scope="session")
def uneven_convnet(model_dir: Path) -> Path:
    """Three convolutions in one cluster whose most similar task (the last) is not the one
    with the most work (the middle one): the two representative rules disagree."""
    return models.convnet(model_dir / "uneven_convnet.onnx", channels=(3, 8, 16, 4))


@pytest.fixture(scope="session")
def dynamic_mlp(model_dir: Path) -> Path:
    return models.mlp(model_dir / "dynamic_mlp.onnx", dynamic=True)


@pytest.fixture(scope="session")
def unsupported_model(model_dir: Path) -> Path:
    return models.unsupported_op(model_dir / "unsupported.onnx")


@pytest.fixture(scope="session")
def host():
    from bcd_core.target import host_target

    return host_target()


@pytest.fixture(scope="session")
def conv_cluster_model(model_dir: Path) -> Path:
    return models.convnet_pool(model_dir / "conv_cluster.onnx")


@pytest.fixture(scope="session")
def gelu_model(model_dir: Path) -> Path:
    return models.gelu_softmax(model_dir / "gelu_softmax.onnx")
