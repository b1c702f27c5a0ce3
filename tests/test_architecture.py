"""The import rules of ARCHITECTURE.md, checked by import-linter against `.importlinter`.

The second test copies the package, plants one forbidden import in the model core, and checks
that the same contracts then fail: the check is live, not a formality. The map itself is checked too: every file
ARCHITECTURE.md names exists and every code name it puts in backticks is defined where it says.
"""
from __future__ import annotations

import re
import shutil
import ast
import functools
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
    """app.py builds no panel itself: the panels' builders live in transformer/explorer/panels/<panel>/panel.py;
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
from transformer.explorer import services
from transformer.explorer.panels import registry
from transformer.explorer.panels.inside import service
from transformer.explorer.panels.sidebar import panel
from transformer.explorer.web import launch, sessions, wiring
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


# ARCHITECTURE.md's claims about the code: every file it names exists, and every name it puts in backticks is
# defined (a `Class.member` or `module.name` in that class or module, a bare name somewhere in the code).
ARCHITECTURE = ROOT / "ARCHITECTURE.md"
EXPLORER = ROOT / "transformer" / "explorer"
# where a bare file name may live: the packages, the explorer's layers and every panel's folder
PACKAGE_DIRS = [ROOT / part for part in ("", "transformer", "transformer/explorer", "transformer/explorer/static",
                                         "transformer/explorer/core", "transformer/explorer/maps",
                                         "transformer/explorer/web", "transformer/explorer/panels",
                                         "transformer/training", "transformer/serving", "checkpoints/en-de")]
PACKAGE_DIRS += sorted(path.parent for path in (EXPLORER / "panels").glob("*/panel.py"))
FILE_SUFFIXES = (".py", ".js", ".md", ".json", ".jsonl", ".tsv", ".txt", ".css", ".pt")
RUN_FILES = {"state.pt"}  # written into a training run's directory, never committed
OTHER_LIBRARIES = {"gr", "demo", "window", "nn"}  # gradio's objects, the browser's and torch.nn's
PLACEHOLDERS = {"limits.NAME"}  # any one of limits' constants


def architecture_tokens(text: str) -> list[str]:
    """The backticked code names of ARCHITECTURE.md, and the file paths of its code block, each once."""
    block = text.split("```")[1]
    paths = re.findall(r"[\w.]+/[\w./]*\.(?:py|js)\b", block)
    return list(dict.fromkeys(re.findall(r"`([^`\n]+)`", text) + paths))


def code_names(token: str) -> list[str]:
    """The names a token refers to: `f()`, `f(x, y)` and `x=1` name f and x, `python -m a.b|c` the modules a.b and
    a.c, `a | b` (a layer of .importlinter) a and b; shapes and punctuation name nothing."""
    if token.startswith("python -m "):
        module = token.split()[2].split("|")
        return [f"{module[0].rpartition('.')[0]}.{name}" if i else name for i, name in enumerate(module)]
    if " | " in token:
        return token.split(" | ")
    match = re.fullmatch(r"(--[\w-]+|[\w./*<>]+?)(?:\(.*\)|=.*)?", token)
    return [match.group(1)] if match and re.search(r"[A-Za-z]", match.group(1)) else []


def is_path(name: str) -> bool:
    return "/" in name or name.endswith(FILE_SUFFIXES) or name.startswith(".")


def path_exists(name: str) -> bool:
    """A path relative to the repository, to one of the package directories, or a shipped checkpoint."""
    if name in RUN_FILES:
        return True
    name = name.split("*")[0].split("<")[0]  # a pattern or a template: its directory
    return any((base / name).exists() for base in PACKAGE_DIRS)


@functools.lru_cache(maxsize=1)
def definitions() -> tuple[dict[str, set[str]], dict[str, set[str]], set[str]]:
    """Every module's top-level names by file stem, every class's members (methods, fields, `self.x`) by class
    name, and every word of the code (Python, JavaScript, the import contracts)."""
    modules: dict[str, set[str]] = {}
    classes: dict[str, set[str]] = {}
    files = [ROOT / "app.py", *(ROOT / "transformer").rglob("*.py"), *(ROOT / "bench").glob("*.py"),
             *(path for path in (ROOT / "tests").glob("*.py") if path.name != Path(__file__).name)]  # not this test
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = modules.setdefault(path.stem, set())
        for node in tree.body:
            top.update(defined_names(node))
            if isinstance(node, ast.ClassDef):
                members = classes.setdefault(node.name, set())
                for inner in ast.walk(node):
                    members.update(defined_names(inner) if inner in node.body else self_attributes(inner))
    scripts = sorted(path for path in EXPLORER.rglob("*.js") if "vendor" not in path.parts)  # static/, each panel's
    for path in scripts:
        modules.setdefault(path.stem, set()).update(
            re.findall(r"(?:function|const|let|class)\s+(\w+)", path.read_text(encoding="utf-8")))
    words = set()
    for path in [*files, *scripts, ROOT / ".importlinter"]:
        words.update(re.findall(r"--[\w-]+|\w+", path.read_text(encoding="utf-8")))  # names; flags with their dashes
    return modules, classes, words | {path.stem for path in files}


def defined_names(node: ast.AST) -> set[str]:
    """The names a statement defines: a def, a class, an assignment's names."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return {name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name)}


def self_attributes(node: ast.AST) -> set[str]:
    """`self.x = ...` inside a method: x."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return {t.attr for t in targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
            and t.value.id == "self"}


def false_claims(text: str) -> list[str]:
    """The tokens of `text` that name a file that is not there, or a name defined nowhere it says."""
    modules, classes, words = definitions()
    wrong = []
    for name in [name for token in architecture_tokens(text) for name in code_names(token)]:
        if name in PLACEHOLDERS:
            continue
        owner, _, member = name.rpartition(".")
        if is_path(name) and not name.endswith(FILE_SUFFIXES) and "/" in owner:  # training/augment.with_placeholders
            ok = path_exists(owner + ".py") and member in modules.get(Path(owner).name, set())
        elif is_path(name):
            ok = path_exists(name)
        elif name.startswith("transformer."):  # a dotted module (or package)
            ok = path_exists(name.replace(".", "/") + ".py") or path_exists(name.replace(".", "/"))
        elif owner:
            ok = owner in OTHER_LIBRARIES or member in modules.get(owner, set()) | classes.get(owner, set())
        elif name.endswith("*"):  # build_*: some name of that prefix
            ok = any(word.startswith(name[:-1]) for word in words)
        else:
            ok = name in words
        if not ok:
            wrong.append(name)
    return wrong


def test_architecture_names_only_what_exists():
    assert not false_claims(ARCHITECTURE.read_text(encoding="utf-8"))


@pytest.mark.parametrize("planted, false", [
    ("`explorer/no_such_file.py`", "explorer/no_such_file.py"),
    ("`tests/test_no_such_test.py`", "tests/test_no_such_test.py"),
    ("`core/no_such_module.py`", "core/no_such_module.py"), ("`panels/tree/no_such.js`", "panels/tree/no_such.js"),
    ("`Translator.no_such_method`", "Translator.no_such_method"), ("`heap.no_such_function`", "heap.no_such_function"),
    ("`noSuchHelper`", "noSuchHelper"), ("`python -m transformer.no_such_command`", "transformer.no_such_command")])
def test_a_false_claim_in_the_map_is_found(planted, false):
    assert false_claims(ARCHITECTURE.read_text(encoding="utf-8") + f"\n{planted}\n") == [false]


def gradio_importers() -> set[str]:
    """The modules of transformer/explorer that import gradio (anywhere in the file), relative to it."""
    explorer = ROOT / "transformer" / "explorer"
    found = set()
    for path in explorer.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "gradio" or n.startswith("gradio.") for n in names):
                found.add(path.relative_to(explorer).as_posix())
    return found


def test_gradio_is_imported_only_where_the_map_says():
    """ARCHITECTURE.md's list of the modules besides app.py that import gradio is the list the code has: a module
    that starts importing it, or a listed one that stops, fails here until the map says so."""
    line = next(l for l in (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8").splitlines()
                if "gradio is imported only by" in l)
    listed = set(re.findall(r"`([\w/]+\.py)`", line)) - {"app.py", "panel.py"}
    found = gradio_importers()
    panels = {p for p in found if re.fullmatch(r"panels/\w+/panel\.py", p)}
    assert "each panel's `panel.py`" in line and found - panels == listed
