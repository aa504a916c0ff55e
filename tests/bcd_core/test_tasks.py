from pathlib import Path

from bcd_core.clustering import cluster_tasks
from bcd_core.model_import import import_model
from bcd_core.tasks import extract_tasks, normalize_sketch, operator_key


def test_operator_key_strips_numbering() -> None:
    assert operator_key("fused_conv2d3_add1_relu1") == "conv2d_add_relu"
    assert operator_key("fused_conv2d_add_relu") == "conv2d_add_relu"
    assert operator_key("max_pool2d2") == "max_pool2d"
    assert operator_key("fused_matmul12_add3") == "matmul_add"


def test_normalize_sketch_drops_decisions_names_and_numbers() -> None:
    tile = "v1 = sch.sample_perfect_tile(loop=l5, n=4, max_innermost_factor=64, decision=[{}])"
    a = 'b0 = sch.get_sblock(name="lv3_conv", func_name="main")\n' + tile.format("1, 2, 4, 8")
    b = 'b0 = sch.get_sblock(name="conv_b", func_name="main")\n' + tile.format("8, 4, 2, 1")
    c = 'b0 = sch.get_sblock(name="conv", func_name="main")\n'
    c += "v1 = sch.sample_categorical(candidates=[0, 16], probs=[0.5, 0.5], decision=1)"
    assert normalize_sketch(a) == normalize_sketch(b)
    assert normalize_sketch(a) != normalize_sketch(c)


def test_extracts_conv_tasks_with_shared_keys(tiny_convnet: Path, host) -> None:
    tasks = extract_tasks(import_model(tiny_convnet).relax_mod, host)
    convs = [t for t in tasks if "conv2d" in t.name]
    assert len(convs) == 2
    assert {t.operator_key for t in convs} == {"conv2d_add_relu"}
    # Different channel counts, same structure: one sketch cluster.
    assert len({t.sketch_key for t in convs}) == 1
    for task in convs:
        assert task.flops > 0 and task.weight == 1 and task.num_sketches >= 1
        assert all(all(isinstance(d, int) for d in shape) for shape in task.shapes)
    assert convs[0].shapes != convs[1].shapes
    for mode in ("operator", "sketch"):
        clusters = cluster_tasks(tasks, mode)
        conv_cluster = next(c for c in clusters if convs[0].index in c.members)
        assert convs[1].index in conv_cluster.members


def test_dense_and_conv_have_different_sketch_keys(tiny_convnet: Path, tiny_mlp: Path, host) -> None:
    conv = next(t for t in extract_tasks(import_model(tiny_convnet).relax_mod, host) if "conv" in t.name)
    dense = next(t for t in extract_tasks(import_model(tiny_mlp).relax_mod, host) if "matmul" in t.name)
    assert conv.sketch_key != dense.sketch_key
