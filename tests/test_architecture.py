"""The import rules of ARCHITECTURE.md, checked by import-linter against `.importlinter`.

The second test copies the package, plants one forbidden import in the model core, and checks
that the same contracts then fail: the check is live, not a formality.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    if not LINT_IMPORTS.is_file():
        pytest.fail(f"{LINT_IMPORTS} is missing: pip install -r requirements-dev.txt")
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config", str(cwd / ".importlinter")],
                          cwd=cwd, capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(cwd)})


def test_import_contracts_hold():
    out = lint_imports(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout and "KEPT" in out.stdout


@pytest.mark.parametrize("planted, contract", [
    ("from transformer.explorer import viz", "Commands over training and the explorer"),  # core -> explorer
    ("import gradio", "Only the explorer imports"),
    ("from transformer import translator", "No import cycles"),  # model.py <-> translator.py
])
def test_a_planted_violation_breaks_the_contracts(tmp_path, planted, contract):
    shutil.copytree(ROOT / "transformer", tmp_path / "transformer", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    model = tmp_path / "transformer" / "model.py"
    model.write_text(model.read_text(encoding="utf-8") + f"\n{planted}  # planted by the test\n", encoding="utf-8")
    out = lint_imports(tmp_path)
    assert out.returncode != 0
    broken = out.stdout.split("Broken contracts")[-1]
    assert contract in broken, out.stdout


def test_no_function_is_longer_than_80_lines():
    """Short functions, in the app, the package, the benches and the tests: a longer one is split (the layout
    rules of the project)."""
    import ast

    root = Path(__file__).resolve().parents[1]
    long = []
    for path in [root / "app.py", *sorted((root / "transformer").rglob("*.py")), *sorted((root / "bench").glob("*.py")),
                 *sorted((root / "tests").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                long.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1})")
    assert not long, long


def test_app_py_holds_layout_and_wiring_only():
    """app.py builds no panel itself: the panels' builders live in transformer/explorer/ (side_panels, tab_panels)."""
    lines = (ROOT / "app.py").read_text(encoding="utf-8").splitlines()
    builders = [line for line in lines if line.startswith("def build_")]
    assert builders == ["def build_demo() -> tuple[gr.Blocks, Page]:"], builders
