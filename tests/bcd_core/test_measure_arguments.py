"""The runner's inputs: indices in bounds, floating-point values like a model's activations."""

import numpy as np
import tvm
from tvm.s_tir import meta_schedule as ms

from bcd_core.tuning.measure.arguments import local_arguments


def test_candidates_are_timed_on_values_like_a_models() -> None:
    """TVM's fill (uniform in [1, 10]) makes a 4096-term sum reach hundreds of thousands, whose
    exp underflows to subnormals that time a swish or softmax at twice its real cost; the fill
    here keeps such a sum near 1, and indices at zero so gathers stay in bounds."""
    infos = [
        ms.arg_info.TensorInfo("float32", [1, 4096]),
        ms.arg_info.TensorInfo("float32", [4096, 64]),
        ms.arg_info.TensorInfo("int64", [8]),
    ]
    (data, weight, index), again = local_arguments(tvm.cpu(), [info.as_json() for info in infos], 2)
    values = data.numpy()
    assert abs(values.mean()) < 0.01 and 0.1 < values.std() < 0.15 and np.isfinite(values).all()
    assert not index.numpy().any()
    sums = values @ weight.numpy()
    assert np.abs(sums).max() < 8, "exp of such a sum would underflow, as on TVM's fill"
    assert np.exp(-np.abs(sums)).min() > np.finfo(np.float32).tiny
    assert len(again) == 3 and again[0].numpy().shape == (1, 4096)
