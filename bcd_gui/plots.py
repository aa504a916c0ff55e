"""Live plots (pyqtgraph): model latency over time, best latency per task, cost-model accuracy."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSizePolicy, QVBoxLayout, QWidget

from bcd_core.formatting import latency_unit
from bcd_core.session_view import Baseline, SessionSnapshot
from bcd_gui.theme import LIGHT, PlotColors

LEGEND_COLUMNS = 2


def _plot_widget(
    title: str, x_label: str, y_label: str, colors: PlotColors, legend_columns: int = LEGEND_COLUMNS
) -> pg.PlotWidget:
    """A plot whose legend sits under its x axis, never over a curve."""
    widget = pg.PlotWidget()
    _style(widget, title, x_label, y_label, colors)
    widget.showGrid(x=True, y=True, alpha=0.25)
    plot_item = widget.getPlotItem()
    legend = pg.LegendItem(colCount=legend_columns, labelTextColor=colors.foreground, verSpacing=-6)
    # Under the axis, the legend must not widen the plot: names it cannot fit are clipped.
    legend.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    legend.setMinimumWidth(0)
    plot_item.legend = legend  # plots named from now on are listed in it
    plot_item.layout.addItem(legend, 4, 1)  # rows 0-3: title, top axis, view, bottom axis
    return widget


def _style(widget: pg.PlotWidget, title: str, x_label: str, y_label: str, colors: PlotColors) -> None:
    widget.setBackground(colors.background)
    widget.setTitle(title, color=colors.foreground, size="10pt")
    for axis, label in (("bottom", x_label), ("left", y_label)):
        item = widget.getAxis(axis)
        item.setPen(colors.foreground)
        item.setTextPen(colors.foreground)
        item.enableAutoSIPrefix(False)  # "latency (ms)" must stay in ms, not "(x0.001)"
        widget.setLabel(axis, label, color=colors.foreground)


def fitted_range(values: list[float], floor: float | None = 0.0, margin: float = 0.06) -> tuple[float, float]:
    """A range around `values` with a margin, never below `floor`; (0, 1) when there are none."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return (floor or 0.0, (floor or 0.0) + 1.0)
    low, high = min(finite), max(finite)
    span = high - low or abs(high) * 0.2 or 1.0
    low, high = low - margin * span, high + margin * span
    return (max(low, floor) if floor is not None else low, high)


class ModelLatencyPlot(QWidget):
    """Estimated model latency over wall time, the compiled model timed at milestones, the stock
    baseline and the moment BCD reaches the baseline's final latency. Latencies are drawn in
    ms, or in µs for models faster than a millisecond; the axes follow the data until the user
    pans or zooms, and are fitted again for every other model or session."""

    TITLE = "Estimated model latency"
    BASELINE = "stock MetaSchedule"
    MEASURED = "compiled model, timed"

    def __init__(self, colors: PlotColors = LIGHT) -> None:
        super().__init__()
        self.colors = colors
        self.widget = _plot_widget(self.TITLE, "tuning time (min)", "latency (ms)", colors)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.widget)
        self.shown_session: tuple[str, int] | None = None  # (model, session id) on the axes now
        self.unit, self.scale = "ms", 1e3
        self.user_zoomed = False
        self.widget.getPlotItem().vb.sigRangeChangedManually.connect(self._zoomed)
        self.curve = self.widget.plot([], [], name="this session", pen=pg.mkPen(colors.series[0], width=2))
        self.baseline_curve = self.widget.plot(
            [], [], name=self.BASELINE, pen=pg.mkPen(colors.baseline, width=2, style=Qt.PenStyle.DashLine)
        )
        self.legend.removeItem(self.baseline_curve)  # listed only while there is a baseline
        self.target_line = pg.InfiniteLine(angle=0, pen=pg.mkPen(colors.baseline, width=1, style=Qt.PenStyle.DotLine))
        self.reached_line = pg.InfiniteLine(
            angle=90,
            pen=pg.mkPen(colors.marker, width=1, style=Qt.PenStyle.DashLine),
            label="reaches baseline",
            labelOpts={"position": 0.9, "color": colors.marker},
        )
        for line in (self.target_line, self.reached_line):
            line.setVisible(False)
            self.widget.addItem(line)
        self.measured_points = pg.ScatterPlotItem(
            [], [], symbol="d", size=10, brush=pg.mkBrush(colors.series[0]), pen=pg.mkPen(colors.foreground)
        )
        self.widget.addItem(self.measured_points)  # the compiled model timed at milestones
        self.overlay_curves: list[pg.PlotDataItem] = []  # other sessions, to compare runs
        self.overlays: dict[str, list[tuple[float, float]]] = {}
        self.reference_s: float | None = None
        self.reference_curve = self.widget.plot(
            [], [], pen=pg.mkPen(colors.marker, width=1.5, style=Qt.PenStyle.DashDotLine)
        )

    def _zoomed(self, *_: object) -> None:
        self.user_zoomed = True

    def set_overlays(self, timelines: dict[str, list[tuple[float, float]]]) -> None:
        """Other sessions' estimates beside this one's (dotted), each named in the legend."""
        self.overlays = dict(timelines)
        self._draw_overlays()
        self.fit()

    def _draw_overlays(self) -> None:
        for curve in self.overlay_curves:
            self.widget.removeItem(curve)  # and from the legend
        self.overlay_curves = []
        series = self.colors.series
        for position, (name, timeline) in enumerate(self.overlays.items()):
            pen = pg.mkPen(series[(position + 1) % len(series)], width=1.5, style=Qt.PenStyle.DotLine)
            self.overlay_curves.append(self.widget.plot(*_steps(timeline, self.scale), name=name, pen=pen))

    def set_reference(self, reference_s: float | None) -> None:
        """onnxruntime's latency on this machine, drawn across the session's time (and named
        in the legend) once known."""
        self.reference_s = reference_s
        self._draw_reference()
        self.fit()

    def _draw_reference(self) -> None:
        self.legend.removeItem(self.reference_curve)  # a no-op when it is not listed
        xs, _ = self.curve.getData()
        if self.reference_s is None or xs is None or not len(xs):
            self.reference_curve.setData([], [])
            return
        value = self.reference_s * self.scale
        self.reference_curve.setData([0.0, float(max(xs))], [value, value])
        self.legend.addItem(self.reference_curve, f"onnxruntime {value:.3g} {self.unit}")

    def _draw_measured(self, snapshot: SessionSnapshot) -> None:
        self.legend.removeItem(self.measured_points)
        rows = snapshot.measured
        self.measured_points.setData(
            [row["elapsed_s"] / 60 for row in rows], [row["measured_latency_s"] * self.scale for row in rows]
        )
        if rows:
            self.legend.addItem(self.measured_points, self.MEASURED)

    def points(self) -> int:
        x, _ = self.curve.getData()
        return 0 if x is None else len(x)

    @property
    def legend(self) -> pg.LegendItem:
        return self.widget.getPlotItem().legend

    def legend_names(self) -> list[str]:
        return [label.text for _, label in self.legend.items]

    def _choose_unit(self, snapshot: SessionSnapshot, baseline: Baseline | None) -> None:
        values = [v for _, v in snapshot.timeline] + [r["measured_latency_s"] for r in snapshot.measured]
        values += [v for _, v in baseline.timeline] if baseline else []
        unit, scale = latency_unit(max(values, default=None))
        if (unit, scale) != (self.unit, self.scale):
            self.unit, self.scale = unit, scale
            self.widget.setLabel("left", f"latency ({unit})", color=self.colors.foreground)
            self._draw_overlays()

    def update_view(self, snapshot: SessionSnapshot, baseline: Baseline | None = None) -> None:
        shown = (str(snapshot.session.get("model_name", "")), snapshot.session_id)
        if shown != self.shown_session:  # another model or session: fit the axes to it
            self.shown_session = shown
            self.user_zoomed = False
        self._choose_unit(snapshot, baseline)
        self.curve.setData(*_steps(snapshot.timeline, self.scale))
        self._draw_measured(snapshot)
        self._draw_reference()
        measured = sum(1 for t in snapshot.tasks if t.best_s is not None)
        waiting = not snapshot.timeline and snapshot.tasks and measured < len(snapshot.tasks)
        title = f"{self.TITLE} ({measured}/{len(snapshot.tasks)} tasks measured)" if waiting else self.TITLE
        self.widget.setTitle(title, color=self.colors.foreground, size="10pt")
        self.curve.opts["name"] = snapshot.session.get("strategy", "session")
        self._draw_baseline(baseline)
        self.fit()

    def _draw_baseline(self, baseline: Baseline | None) -> None:
        has_baseline = self.BASELINE in self.legend_names()
        if baseline is None:
            self.baseline_curve.setData([], [])
            self.target_line.setVisible(False)
            self.reached_line.setVisible(False)
            if has_baseline:
                self.legend.removeItem(self.baseline_curve)
            return
        if not has_baseline:
            self.legend.addItem(self.baseline_curve, self.BASELINE)
        self.baseline_curve.setData(*_steps(baseline.timeline, self.scale))
        self.target_line.setPos(baseline.final_latency_s * self.scale)
        self.target_line.setVisible(True)
        if baseline.reached_at_s is not None:
            self.reached_line.setPos(baseline.reached_at_s / 60)
        self.reached_line.setVisible(baseline.reached_at_s is not None)

    def fit(self) -> None:
        """Fit both axes to everything drawn (from time 0, latencies never below 0), unless the
        user has panned or zoomed this session's plot."""
        if self.user_zoomed:
            return
        xs: list[float] = [0.0]
        ys: list[float] = []
        items = [self.curve, self.baseline_curve, self.reference_curve, *self.overlay_curves]
        for item in [*items, self.measured_points]:
            x, y = item.getData()
            if x is not None and len(x):
                xs += [float(v) for v in x]
                ys += [float(v) for v in y]
        if self.target_line.isVisible():
            ys.append(float(self.target_line.value()))
        vb = self.widget.getPlotItem().vb
        vb.disableAutoRange()
        vb.setRange(xRange=fitted_range(xs, margin=0.02), yRange=fitted_range(ys), padding=0)


def _steps(timeline: list[tuple[float, float]], scale: float = 1e3) -> tuple[list[float], list[float]]:
    """Best-so-far estimate as a staircase, in minutes and `scale` (1e3: milliseconds). Only
    its corners: rounds that do not lower the best add no point (they lie on the flat stretch),
    so a 100 000-trial session draws hundreds of points, not one pair per round."""
    xs, ys, best = [], [], float("inf")
    for elapsed, estimate in timeline:
        if estimate >= best:
            continue
        if xs:
            xs.append(elapsed / 60)
            ys.append(best * scale)
        best = estimate
        xs.append(elapsed / 60)
        ys.append(best * scale)
    if xs and timeline[-1][0] / 60 != xs[-1]:  # the flat stretch runs to the last round
        xs.append(timeline[-1][0] / 60)
        ys.append(best * scale)
    return xs, ys


class TaskCurvesPlot(QWidget):
    """Best latency over the task's own trials, for the selected tasks."""

    MAX_CURVES = 8

    def __init__(self, colors: PlotColors = LIGHT) -> None:
        super().__init__()
        self.colors = colors
        self.widget = _plot_widget("Best latency per task", "trials of the task", "latency (ms)", colors, 1)
        self.widget.setLogMode(y=True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.widget)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.color_of: dict[str, str] = {}

    def _free_color(self) -> str:
        """The first palette colour no shown curve has (the palette has MAX_CURVES or more)."""
        used = set(self.color_of.values())
        return next((c for c in self.colors.series if c not in used), self.colors.series[0])

    def show_curves(self, curves: dict[str, list[tuple[int, float]]]) -> None:
        for name in list(self.curves):
            if name not in curves:
                self.widget.removeItem(self.curves.pop(name))
                self.color_of.pop(name, None)
        shown = list(curves.items())[: self.MAX_CURVES]
        unit, scale = latency_unit(max((v for _, points in shown for _, v in points), default=None))
        self.widget.setLabel("left", f"latency ({unit})", color=self.colors.foreground)
        for name, points in shown:
            xs = [n for n, _ in points]
            ys = [v * scale for _, v in points]
            if name not in self.curves:
                self.color_of[name] = self._free_color()
                pen = pg.mkPen(self.color_of[name], width=2)
                self.curves[name] = self.widget.plot(xs, ys, name=name, pen=pen)
            else:
                self.curves[name].setData(xs, ys)


class CostModelPlot(QWidget):
    """Per round: pairwise ranking accuracy and Spearman; and predicted vs measured for the
    latest round."""

    def __init__(self, colors: PlotColors = LIGHT) -> None:
        super().__init__()
        self.colors = colors
        self.accuracy = _plot_widget("Cost model accuracy on each new batch", "round", "", colors)
        self.accuracy.setYRange(-1, 1)
        self.accuracy.getPlotItem().vb.setLimits(xMin=0.5)  # rounds count from 1
        # A round whose accuracy is undefined (one distinct latency) is a gap, not a zero.
        self.pairwise = self.accuracy.plot(
            [], [], name="pairwise accuracy", pen=pg.mkPen(colors.series[0], width=2), connect="finite"
        )
        self.spearman = self.accuracy.plot(
            [], [], name="Spearman", pen=pg.mkPen(colors.series[4], width=2), connect="finite"
        )
        self.scatter_plot = _plot_widget("Latest round", "predicted score", "1 / latency (1/ms)", colors)
        self.scatter = pg.ScatterPlotItem(size=7, brush=pg.mkBrush(colors.series[0]), pen=None)
        self.scatter_plot.addItem(self.scatter)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.accuracy, 3)
        layout.addWidget(self.scatter_plot, 2)

    def update_view(self, metrics: list[dict], predictions: list[tuple[float, float]]) -> None:
        rounds = [m["round"] for m in metrics]
        self.accuracy.setXRange(1, max(rounds, default=1) + 1, padding=0.02)
        self.pairwise.setData(rounds, [_or_nan(m["pairwise_accuracy"]) for m in metrics], connect="finite")
        self.spearman.setData(rounds, [_or_nan(m["spearman"]) for m in metrics], connect="finite")
        self.scatter.setData([p for p, _ in predictions], [m / 1e3 for _, m in predictions])


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


def restyle(widget: pg.PlotWidget, colors: PlotColors) -> None:
    """Re-color an existing plot after a theme change, its legend's labels included."""
    title = widget.getPlotItem().titleLabel.text
    _style(widget, title, widget.getAxis("bottom").labelText, widget.getAxis("left").labelText, colors)
    legend = widget.getPlotItem().legend
    if legend is not None:
        legend.setLabelTextColor(colors.foreground)
        for _, label in legend.items:
            label.setText(label.text, color=colors.foreground)
