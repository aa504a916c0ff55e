"""The product's code stays small and says why: short module docstrings, no dates or run names
(those belong in git and the design doc), classes and functions of a size a reader can hold."""

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PRODUCT = sorted([*REPO.joinpath("bcd_core").rglob("*.py"), *REPO.joinpath("bcd_gui").rglob("*.py")])
MAX_MODULE_DOCSTRING_LINES = 15
MAX_CLASS_LINES = 300
MAX_FUNCTION_LINES = 60
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
RUN_NAME = re.compile(r"\bruns/i\d+")


def _relative(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def test_the_product_has_modules_to_check() -> None:
    assert len(PRODUCT) > 50


def test_module_docstrings_are_a_paragraph_or_two() -> None:
    long = []
    for path in PRODUCT:
        doc = ast.get_docstring(ast.parse(path.read_text()), clean=False) or ""
        if doc.count("\n") + 1 > MAX_MODULE_DOCSTRING_LINES:
            long.append(f"{_relative(path)}: {doc.count(chr(10)) + 1} lines")
    assert long == []


def test_no_dates_or_run_names_in_product_code() -> None:
    found = [
        f"{_relative(path)}:{number}"
        for path in PRODUCT
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if DATE.search(line) or RUN_NAME.search(line)
    ]
    assert found == []


def test_classes_and_functions_stay_small() -> None:
    large = []
    for path in PRODUCT:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                limit = MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else MAX_FUNCTION_LINES
                size = node.end_lineno - node.lineno + 1
                if size > limit:
                    large.append(f"{_relative(path)}:{node.lineno} {node.name} ({size} lines)")
    assert large == []


def test_the_checks_see_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES + 1))
    tree = ast.parse(f"def f():\n{body}\n")
    function = tree.body[0]
    assert function.end_lineno - function.lineno + 1 > MAX_FUNCTION_LINES
    assert DATE.search("measured 2026-11-27") and RUN_NAME.search("see runs/i31/x")
