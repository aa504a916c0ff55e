"""Find, before TVM sees a model, where a tensor's shape would depend on the data fed to it.

bcd tunes kernels of fixed shapes. An ONNX graph can make a shape depend on values: a Slice
whose `starts` is a graph input, a Reshape whose target shape is computed from an input's
values, a Compress that keeps as many rows as its condition selects. TVM's frontend and task
extraction fail on these deep inside, with errors that name neither the operator nor the
input; this walk names both, and says what the user can change, from the graph alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx

from bcd_core.errors import DataDependentShapeError

# Operator -> (input position, argument name) of the inputs whose values set the output's shape.
SHAPE_ARGUMENTS: dict[str, tuple[tuple[int, str], ...]] = {
    "Reshape": ((1, "shape"),),
    "Expand": ((1, "shape"),),
    "Tile": ((1, "repeats"),),
    "ConstantOfShape": ((0, "shape"),),
    "Range": ((0, "start"), (1, "limit"), (2, "delta")),
    "Slice": ((1, "starts"), (2, "ends"), (3, "axes"), (4, "steps")),
    "Unsqueeze": ((1, "axes"),),
    "Squeeze": ((1, "axes"),),
    "TopK": ((1, "k"),),
    "Pad": ((1, "pads"), (3, "axes")),
    "Resize": ((2, "scales"), (3, "sizes")),
    "Upsample": ((1, "scales"),),
    "OneHot": ((1, "depth"),),
    "Split": ((1, "split"),),
    "CenterCropPad": ((1, "shape"),),
    "NonMaxSuppression": ((2, "max_output_boxes_per_class"),),
    **{
        op: ((1, "axes"),)
        for op in (
            "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
            "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare",
        )
    },
}  # fmt: skip
# Operators whose output size is however many elements the data selects.
DATA_SIZED = {
    "Compress": "keeps the elements its condition selects",
    "NonMaxSuppression": "keeps the boxes that survive suppression",
    "Unique": "keeps one element per distinct value",
}
# Data-sized operators TVM imports (their output is a model output as it stands); what reads
# their shape, though, depends on data.
DATA_SIZED_IMPORTED = {"NonZero"}
# Operators whose output values depend only on their input's shape, which is fixed.
SHAPE_READERS = {"Shape", "Size"}


@dataclass(frozen=True)
class ShapeDependence:
    """One operator whose output shape would depend on data."""

    op_type: str
    node_name: str
    argument: str  # the shape argument, or "" for a data-sized operator
    sources: tuple[str, ...]  # what decides it ("graph input 'k'"); () for a data-sized operator

    def message(self) -> str:
        node = f"{self.op_type} node '{self.node_name}'" if self.node_name else f"a {self.op_type} node"
        if not self.argument:
            return (
                f"the output size of {node} depends on the data ({self.op_type} {DATA_SIZED[self.op_type]}); "
                "bcd tunes fixed shapes only. Tune the part of the model before it (cut the graph with "
                "onnx.utils.extract_model) or export the model without it"
            )
        return (
            f"the output shape of {node} depends on the values of {' and '.join(self.sources)} (through its "
            f"'{self.argument}' argument); bcd tunes fixed shapes only. Make those values constants of the model "
            "(turn such a graph input into an initializer, e.g. re-export with the value fixed) and open it again"
        )


def _node_label(node: onnx.NodeProto) -> str:
    return node.name or (node.output[0] if node.output else "")


def shape_dependences(model: onnx.ModelProto) -> list[ShapeDependence]:
    """Every operator of the main graph whose output shape would depend on data, in graph order.

    A tensor's *values* depend on data if a graph input (not an initializer) reaches it, except
    through Shape or Size of a tensor whose shape is fixed. A tensor's *shape* depends on data
    if it comes from a data-sized operator, from a shape argument whose values depend on data,
    or from any operator fed such a tensor."""
    constants = {init.name for init in model.graph.initializer}
    value_origins: dict[str, frozenset[str]] = {
        value.name: frozenset({f"graph input '{value.name}'"})
        for value in model.graph.input
        if value.name not in constants
    }
    sized_by_data: set[str] = set()
    found: list[ShapeDependence] = []
    for node in model.graph.node:
        inputs = [name for name in node.input if name]
        reached = any(name in sized_by_data for name in inputs)
        if node.op_type in DATA_SIZED:
            found.append(ShapeDependence(node.op_type, _node_label(node), "", ()))
        reached = reached or node.op_type in DATA_SIZED or node.op_type in DATA_SIZED_IMPORTED
        for position, argument in SHAPE_ARGUMENTS.get(node.op_type, ()):
            if position < len(node.input) and node.input[position] in value_origins:
                origins = tuple(sorted(value_origins[node.input[position]]))
                found.append(ShapeDependence(node.op_type, _node_label(node), argument, origins))
                reached = True
                break
        if reached:
            sized_by_data.update(node.output)
        if node.op_type in SHAPE_READERS:
            read = inputs[0] if inputs and inputs[0] in sized_by_data else None
            origins = frozenset({f"the data-sized tensor '{read}'"}) if read else frozenset()
        else:
            origins = frozenset().union(*(value_origins.get(name, frozenset()) for name in inputs))
        if origins:
            value_origins.update(dict.fromkeys(node.output, origins))
    return found


def check_fixed_shapes(model: onnx.ModelProto) -> None:
    """Raise DataDependentShapeError for the first operator whose output shape depends on data."""
    found = shape_dependences(model)
    if found:
        more = f" ({len(found) - 1} more operator(s) likewise)" if len(found) > 1 else ""
        raise DataDependentShapeError(found[0].message() + more)
