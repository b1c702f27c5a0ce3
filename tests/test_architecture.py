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
    ("from transformer.explorer import figures", "Commands over training and the explorer"),  # core -> explorer
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
    """app.py builds no panel itself: the panels' builders live in transformer/explorer/ (side_panels, tab_panels);
    its one builder composes them into the page."""
    import ast

    tree = ast.parse((ROOT / "app.py").read_text(encoding="utf-8"))
    builders = [node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("build_")]
    assert builders == ["build_page"], builders


def test_app_py_is_formatted_by_ruff():
    """app.py's layout is the formatter's (ruff.toml), not a hand's."""
    out = subprocess.run([sys.executable, "-m", "ruff", "format", "--check", "--diff", "app.py"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    if "No module named ruff" in out.stderr:
        pytest.fail("ruff is missing: pip install -r requirements-dev.txt")
    assert out.returncode == 0, out.stdout + out.stderr


IMPORT_APP = """
import atexit, os, sys, threading
import gradio, torch  # the libraries' own import-time work is theirs, not the app's
from transformer import heap
from transformer.explorer import callbacks, inside, launch, side_panels, tab_panels
callbacks_before, threads_before, torch_threads = atexit._ncallbacks(), threading.active_count(), torch.get_num_threads()
import app
children = [open(path).read().split() for path in
            [f"/proc/self/task/{task}/children" for task in os.listdir("/proc/self/task")]]
print(sum(map(len, children)), atexit._ncallbacks() - callbacks_before, threading.active_count() - threads_before,
      torch.get_num_threads() == torch_threads, heap._glibc.cache_info().currsize, hasattr(app, "create_app"))
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads the process's children from /proc")
def test_importing_app_starts_nothing():
    """`import app` starts no search process or other child, registers no exit handler, starts no thread, sets
    neither torch's threads nor the heap (every heap setting goes through `heap._glibc`): `create_app()` does."""
    out = subprocess.run([sys.executable, "-c", IMPORT_APP], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    children, exit_handlers, threads, torch_threads_kept, heap_calls, factory = out.stdout.split()
    assert (children, exit_handlers, threads) == ("0", "0", "0"), out.stdout
    assert (torch_threads_kept, heap_calls, factory) == ("True", "0", "True"), out.stdout
