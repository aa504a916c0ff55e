"""Light and dark themes that follow the system (or the user's choice), plots included."""

from __future__ import annotations

from dataclasses import dataclass

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from bcd_gui.paths import style_sheet

THEME_CHOICES = ("system", "light", "dark")


@dataclass(frozen=True)
class PlotColors:
    background: str
    foreground: str
    series: tuple[str, ...]
    baseline: str
    marker: str


LIGHT = PlotColors(
    "#ffffff",
    "#303030",
    ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"),
    "#8a8a8a",
    "#d62728",
)
DARK = PlotColors(
    "#1e1f22",
    "#d0d0d0",
    ("#5aa9e6", "#ff6b6b", "#6bd68b", "#c39bff", "#ffb25a", "#4fd6e0", "#d4a373", "#f49ac2"),
    "#9a9a9a",
    "#ff6b6b",
)


def system_is_dark() -> bool:
    hints = QGuiApplication.styleHints()
    scheme = getattr(hints, "colorScheme", None)
    return scheme is not None and scheme() == Qt.ColorScheme.Dark


def resolve(choice: str) -> str:
    if choice == "system":
        return "dark" if system_is_dark() else "light"
    return choice if choice in ("light", "dark") else "light"


def _dark_palette() -> QPalette:
    palette = QPalette()
    base, window, text = QColor("#1e1f22"), QColor("#2b2d30"), QColor("#dfe1e5")
    for role, color in (
        (QPalette.ColorRole.Window, window),
        (QPalette.ColorRole.WindowText, text),
        (QPalette.ColorRole.Base, base),
        (QPalette.ColorRole.AlternateBase, QColor("#26282b")),
        (QPalette.ColorRole.Text, text),
        (QPalette.ColorRole.Button, window),
        (QPalette.ColorRole.ButtonText, text),
        (QPalette.ColorRole.Highlight, QColor("#2f65ca")),
        (QPalette.ColorRole.HighlightedText, QColor("#ffffff")),
        (QPalette.ColorRole.ToolTipBase, window),
        (QPalette.ColorRole.ToolTipText, text),
        (QPalette.ColorRole.PlaceholderText, QColor("#8b8e94")),
    ):
        palette.setColor(role, color)
    palette.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text, QColor("#6f737a"))
    palette.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.ButtonText, QColor("#6f737a"))
    return palette


def apply_theme(app: QApplication, choice: str) -> PlotColors:
    """Style the whole application; returns the plot colors to use."""
    name = resolve(choice)
    app.setStyle("Fusion")
    app.setPalette(_dark_palette() if name == "dark" else app.style().standardPalette())
    app.setStyleSheet(style_sheet(name))
    colors = DARK if name == "dark" else LIGHT
    pg.setConfigOptions(background=colors.background, foreground=colors.foreground, antialias=True)
    return colors
