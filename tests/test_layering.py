"""The engine stays headless: bcd_core never imports Qt or pyqtgraph."""

import ast
import subprocess
import sys
from pathlib import Path

QT_MODULES = ("PySide6", "PyQt5", "PyQt6", "shiboken6", "pyqtgraph")
CORE = Path(__file__).resolve().parent.parent / "bcd_core"


def test_no_qt_import_statement_in_bcd_core() -> None:
    offenders = []
    for path in CORE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in QT_MODULES]
    assert offenders == []


def test_importing_the_engine_loads_no_qt() -> None:
    modules = [
        p.relative_to(CORE.parent).with_suffix("").as_posix().replace("/", ".")
        for p in CORE.rglob("*.py")
        if p.name != "__main__.py"
    ]
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {QT_MODULES!r}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# The dashboard holds views only: tuning, compilation and cost models stay in bcd_core.
ENGINE_ONLY_MODULES = ("tvm", "tvm_ffi", "xgboost", "onnx", "onnxruntime", "sqlite3", "sqlite_utils")
GUI = CORE.parent / "bcd_gui"


def test_gui_reaches_tvm_and_storage_only_through_the_engine() -> None:
    offenders = []
    for path in GUI.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in ENGINE_ONLY_MODULES]
    assert offenders == []
