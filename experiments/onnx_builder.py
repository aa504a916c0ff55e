"""A small helper for writing ONNX models node by node, shared by the unseen-model generators
(the `make_unseen_*.py` scripts)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class GraphBuilder:
    """Nodes and initializers of one graph, with fresh names and seeded random weights."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def constant(self, data: np.ndarray, stem: str = "c") -> str:
        name = self.name(stem)
        self.inits.append(numpy_helper.from_array(data, name))
        return name

    def random_weight(self, shape: tuple[int, ...], fan_in: int, stem: str = "w") -> str:
        """A float32 constant drawn from N(0, 1/fan_in), so that activations keep their scale."""
        return self.constant((self.rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32), stem)

    def op(self, kind: str, inputs: list[str], **attrs: object) -> str:
        out = self.name(kind.lower())
        self.nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    def save(self, path: Path, name: str, last: str, input_shape: list[int], output_shape: list[int]) -> Path:
        """Write the graph with input "input" and `last` as output "output" (opset 17), checked."""
        self.nodes.append(helper.make_node("Identity", [last], ["output"]))
        graph = helper.make_graph(
            self.nodes,
            name,
            [helper.make_tensor_value_info("input", TensorProto.FLOAT, input_shape)],
            [helper.make_tensor_value_info("output", TensorProto.FLOAT, output_shape)],
            self.inits,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        onnx.save(model, str(path))
        return path
