"""The plots on their own, fed fake snapshots (widget tests: no tuning)."""

from __future__ import annotations

import math

from PySide6.QtGui import QColor

from bcd_core.session_view import Baseline, SessionSnapshot
from bcd_gui.plots import CostModelPlot, ModelLatencyPlot, TaskCurvesPlot, restyle
from bcd_gui.theme import DARK, LIGHT


def snapshot(session_id: int, model: str, timeline: list[tuple[float, float]]) -> SessionSnapshot:
    session = {"id": session_id, "model_name": model, "strategy": "bcd"}
    return SessionSnapshot(session=session, tasks=[], clusters=[], timeline=timeline, metrics=[])


def test_the_stock_legend_shows_only_with_a_baseline(qtbot) -> None:
    plot = ModelLatencyPlot()
    qtbot.addWidget(plot)
    plot.update_view(snapshot(1, "a.onnx", [(1.0, 2e-3), (2.0, 1e-3)]))
    assert ModelLatencyPlot.BASELINE not in plot.legend_names()
    plot.update_view(snapshot(1, "a.onnx", [(1.0, 2e-3)]), Baseline(2, [(1.0, 3e-3), (4.0, 1.5e-3)], 1.5e-3, None))
    assert plot.legend_names().count(ModelLatencyPlot.BASELINE) == 1
    plot.update_view(snapshot(1, "a.onnx", [(1.0, 2e-3)]), Baseline(2, [(1.0, 3e-3)], 3e-3, 1.0))
    assert plot.legend_names().count(ModelLatencyPlot.BASELINE) == 1
    plot.update_view(snapshot(3, "b.onnx", [(1.0, 2e-3)]))
    assert ModelLatencyPlot.BASELINE not in plot.legend_names()


def test_another_session_gets_axes_fitted_to_it(qtbot) -> None:
    plot = ModelLatencyPlot()
    qtbot.addWidget(plot)
    plot.update_view(snapshot(1, "mlp.onnx", [(60.0, 0.0345e-3), (120.0, 0.0344e-3)]))
    plot.widget.setYRange(0.0344, 0.0352)  # as after the user zoomed: auto-range is off now
    plot.update_view(snapshot(2, "squeezenet.onnx", [(60.0, 8e-3), (600.0, 5e-3)]))
    plot.widget.getPlotItem().vb.updateAutoRange()
    low, high = plot.widget.getPlotItem().vb.viewRange()[1]
    assert low <= 5.0 and high >= 8.0


def test_undefined_accuracy_is_a_gap_not_a_zero(qtbot) -> None:
    plot = CostModelPlot()
    qtbot.addWidget(plot)
    metrics = [
        {"round": 1, "pairwise_accuracy": 0.7, "spearman": 0.5},
        {"round": 2, "pairwise_accuracy": None, "spearman": None},
        {"round": 3, "pairwise_accuracy": 0.8, "spearman": 0.6},
    ]
    plot.update_view(metrics, [])
    _, ys = plot.pairwise.getData()
    assert ys[0] == 0.7 and math.isnan(ys[1]) and ys[2] == 0.8


def test_tasks_shown_together_never_share_a_colour(qtbot) -> None:
    plot = TaskCurvesPlot()
    qtbot.addWidget(plot)
    curve = [(1, 1e-3), (2, 5e-4)]
    plot.show_curves({"a": curve, "b": curve})
    plot.show_curves({"b": curve, "c": curve})  # a's colour is free again; b keeps its own
    plot.show_curves({"b": curve, "c": curve, "d": curve})
    colours = [plot.curves[name].opts["pen"].color().name() for name in ("b", "c", "d")]
    assert len(set(colours)) == 3


def test_legends_follow_the_theme(qtbot) -> None:
    plot = ModelLatencyPlot(LIGHT)
    qtbot.addWidget(plot)
    restyle(plot.widget, DARK)
    for _, label in plot.legend.items:
        assert QColor(label.opts["color"]).name() == QColor(DARK.foreground).name()


def test_other_sessions_are_overlaid_and_removed(qtbot) -> None:
    plot = ModelLatencyPlot()
    qtbot.addWidget(plot)
    plot.update_view(snapshot(1, "a.onnx", [(1.0, 2e-3), (2.0, 1e-3)]))
    plot.set_overlays({"#2 metaschedule": [(1.0, 3e-3), (3.0, 1.5e-3)], "#3 bcd": [(2.0, 2.5e-3)]})
    assert {"#2 metaschedule", "#3 bcd"} <= set(plot.legend_names())
    xs, ys = plot.overlay_curves[0].getData()
    assert list(ys) == [3.0, 3.0, 1.5]  # ms, as a staircase
    assert plot.overlay_curves[0].opts["pen"].color() != plot.overlay_curves[1].opts["pen"].color()
    plot.set_overlays({})
    assert plot.overlay_curves == [] and "#2 metaschedule" not in plot.legend_names()


def test_the_latency_plot_says_why_it_is_empty(qtbot) -> None:
    from bcd_core.session_view import TaskView

    plot = ModelLatencyPlot()
    qtbot.addWidget(plot)
    tasks = [TaskView(i, i, f"t{i}", 1, 1.0, [], "op", "sk", 0, "c", False, None, "tuning") for i in range(3)]
    tasks[0].best_s = 1e-3
    empty = SessionSnapshot(session={"id": 1, "model_name": "m"}, tasks=tasks, clusters=[], timeline=[], metrics=[])
    plot.update_view(empty)
    assert "(1/3 tasks measured)" in plot.widget.getPlotItem().titleLabel.text
    plot.update_view(snapshot(1, "m", [(1.0, 2e-3)]))
    assert plot.widget.getPlotItem().titleLabel.text == ModelLatencyPlot.TITLE


def test_onnxruntime_is_a_line_to_reach_named_in_the_legend(qtbot) -> None:
    plot = ModelLatencyPlot()
    qtbot.addWidget(plot)
    plot.set_reference(1.5e-3)
    assert not any(name.startswith("onnxruntime") for name in plot.legend_names())  # no session drawn yet
    plot.update_view(snapshot(1, "a.onnx", [(60.0, 4e-3), (300.0, 3e-3)]))
    assert plot.legend_names().count("onnxruntime 1.5 ms") == 1
    xs, ys = plot.reference_curve.getData()
    assert list(ys) == [1.5, 1.5] and xs[-1] == 5.0  # across the session's minutes
    plot.update_view(snapshot(1, "a.onnx", [(60.0, 4e-3), (600.0, 2e-3)]))
    assert plot.legend_names().count("onnxruntime 1.5 ms") == 1
    plot.set_reference(None)
    assert not any(name.startswith("onnxruntime") for name in plot.legend_names())


def test_titles_drawn_after_a_theme_switch_follow_it(qtbot, window) -> None:
    """The latency plot sets its title on every update: after a switch to dark it must be
    drawn in the dark theme's colour, not the light one it was built with."""
    window.set_theme("dark")
    window.latency_plot.update_view(snapshot(1, "a.onnx", [(60.0, 4e-3)]))
    title = window.latency_plot.widget.getPlotItem().titleLabel
    assert QColor(title.opts["color"]).name() == QColor(DARK.foreground).name()
