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


def _module_name(path: Path, root: Path) -> str:
    name = path.relative_to(root).with_suffix("").as_posix().replace("/", ".")
    return name.removesuffix(".__init__")


def _package_imports(package: Path) -> dict[str, set[str]]:
    """Each module of the package -> the package's modules it imports, at any depth
    (imports inside functions count: they only hide a cycle until the function runs)."""
    root = package.parent
    modules = {_module_name(p, root): p for p in package.rglob("*.py")}

    def owner(dotted: str) -> str:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets |= {owner(f"{node.module}.{alias.name}") for alias in node.names}
            elif isinstance(node, ast.Import):
                targets |= {owner(alias.name) for alias in node.names}
        graph[name] = {t for t in targets if t and t != name and t != package.name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_cycle_finder_sees_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles_in_the_packages() -> None:
    assert _cycles(_package_imports(CORE)) == []
    assert _cycles(_package_imports(GUI)) == []
