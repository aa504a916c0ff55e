import contextlib
from pathlib import Path

import models
import pytest
import tvm
import tvm_ffi
from tvm_builds import counted_builds

import bcd_core.model_import
from bcd_core.model_import import fuse_for_tuning, import_model
from bcd_core.tvm_speedups import shared_constant_builds


@pytest.fixture
def counted():
    with counted_builds() as built:
        yield built


def test_constant_folding_builds_each_distinct_function_once(
    model_dir: Path, host, counted: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Three convolutions with 8 output channels: three folds of the same bias reshape.
    raw = import_model(models.convnet(model_dir / "repeated_bias.onnx", channels=(3, 8, 8, 8))).relax_mod
    counting = tvm.get_global_func("tirx.build")
    shared = fuse_for_tuning(raw, host)
    shared_builds = len(counted)

    counted.clear()
    monkeypatch.setattr(bcd_core.model_import, "shared_constant_builds", contextlib.nullcontext)
    plain = fuse_for_tuning(raw, host)

    assert tvm_ffi.structural_equal(shared, plain)  # the same module, task names included
    assert 1 <= shared_builds < len(counted)
    assert tvm.get_global_func("tirx.build").same_as(counting)  # the builder is restored


def test_shared_builds_nest_and_restore_the_builder() -> None:
    stock = tvm.get_global_func("tirx.build")
    with shared_constant_builds():
        sharing = tvm.get_global_func("tirx.build")
        assert not sharing.same_as(stock)
        with shared_constant_builds():
            assert tvm.get_global_func("tirx.build").same_as(sharing)
        assert tvm.get_global_func("tirx.build").same_as(sharing)  # the outer use still shares
    assert tvm.get_global_func("tirx.build").same_as(stock)


def test_an_error_inside_restores_the_builder() -> None:
    stock = tvm.get_global_func("tirx.build")
    with pytest.raises(RuntimeError), shared_constant_builds():
        raise RuntimeError("a pass failed")
    assert tvm.get_global_func("tirx.build").same_as(stock)
