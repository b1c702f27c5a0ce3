"""Deploying to a Hugging Face Space: LFS attributes, python_version, the upload file list, a Space-like start.

The Hub rejects a push whose binary files are not in LFS, and a Space builds with the front matter's
python_version; both are checked here against the repository and the installed pinned packages.
"""
from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_server import ROOT, running_app  # noqa: E402

from transformer.explorer import deploy  # noqa: E402

needs_git = pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                               reason="not a git checkout")


pytestmark = pytest.mark.slow  # real processes: `pytest -m "not slow"` leaves it out


def git(*args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(["git", *args], cwd=ROOT, input=stdin, capture_output=True, check=True).stdout


def is_text(data: bytes) -> bool:
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def front_matter() -> dict[str, str]:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "---", "README.md must start with the Space's front matter"
    end = lines.index("---", 1)
    return {k.strip(): v.strip().strip("\"'") for k, v in (line.split(":", 1) for line in lines[1:end])}


@needs_git
def test_every_tracked_binary_file_is_stored_with_lfs():
    tracked = [p for p in git("ls-files", "-z").decode().split("\0") if p]
    binary = [p for p in tracked if (ROOT / p).is_file() and not is_text((ROOT / p).read_bytes())]
    assert any(p.endswith(".safetensors") for p in binary)  # the check sees the files it is about
    out = git("check-attr", "-z", "--stdin", "filter", stdin="\0".join(binary).encode()).decode().split("\0")
    filters = dict(zip(out[0::3], out[2::3]))  # path, attribute, value triples
    uncovered = [p for p in binary if filters.get(p) != "lfs"]
    assert uncovered == [], f"binary files not marked for LFS in .gitattributes: {uncovered}"


def test_python_version_satisfies_every_pinned_requirement():
    python = front_matter().get("python_version")
    assert python, "README front matter sets no python_version"
    pins = [Requirement(line) for line in (ROOT / "requirements.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    seen: dict[str, str] = {}
    todo = [p.name for p in pins]
    for pin in pins:  # the environment holds the pinned versions, so their metadata is the one checked
        assert Version(importlib.metadata.version(pin.name)).public in pin.specifier, pin
    while todo:  # the pinned packages and everything they pull in (pandas comes with gradio)
        name = todo.pop()
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # an optional extra that is not installed
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in seen:
            continue
        seen[key] = dist.metadata.get("Requires-Python") or ""
        for req in dist.requires or []:
            r = Requirement(req)
            if r.marker is None or r.marker.evaluate({"extra": ""}):
                todo.append(r.name)
    assert {"numpy", "pandas", "gradio", "torch"} <= set(seen)
    bad = {name: spec for name, spec in seen.items() if spec and Version(python) not in SpecifierSet(spec)}
    assert bad == {}, f"python_version {python} does not satisfy: {bad}"
    assert front_matter()["sdk_version"] == importlib.metadata.version("gradio")


def test_dry_run_lists_the_app_and_leaves_runs_and_caches_behind():
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_TOKEN": ""}
    out = subprocess.run([sys.executable, "-m", "transformer.deploy", "--space", "someone/explorer", "--dry-run"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True).stdout
    paths = [line.split(None, 1)[1] for line in out.splitlines() if line[:12].strip().replace(",", "").isdigit()]
    for needed in ("app.py", "README.md", "requirements.txt", "transformer/explorer/panels/attention/explorer.js",
                   "checkpoints/multi30k-en-de/model.safetensors"):
        assert needed in paths, needed
    assert not [p for p in paths if p.startswith(("runs/", ".venv/", ".git/", ".pytest_cache/"))
                or "__pycache__" in p or p == ".git"]
    assert f"{len(paths)} files" in out and "dry run: nothing uploaded" in out
    bad = subprocess.run([sys.executable, "-m", "transformer.deploy", "--space", "a b/c", "--dry-run"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--space must look like" in bad.stderr


def test_space_files_match_what_upload_folder_would_send(tmp_path):
    from huggingface_hub import HfApi

    for rel in ("app.py", "transformer/x.py", "transformer/__pycache__/x.cpython-311.pyc", "runs/p/state.pt",
                ".venv/lib/site.py", ".git/HEAD", "checkpoints/m/model.safetensors", ".pytest_cache/v",
                "docs/screenshot.png", "tests/test_x.py", "app.log", "x/.DS_Store"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"12345")
    ours = [p for p, _ in deploy.space_files(tmp_path)]
    assert ours == ["app.py", "checkpoints/m/model.safetensors", "docs/screenshot.png", "tests/test_x.py",
                    "transformer/x.py"]
    # huggingface_hub's own listing for upload_folder (no README here, so it stays offline)
    ops = HfApi()._prepare_upload_folder_additions(tmp_path, "", ignore_patterns=deploy.IGNORE_PATTERNS)
    assert sorted(op.path_in_repo for op in ops) == ours


def test_starts_like_a_space_offline():
    """A fresh `python app.py` with HF_HUB_OFFLINE=1 and the default checkpoints answers /translate."""
    from gradio_client import Client

    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMER_CHECKPOINT": "", "TRANSFORMER_THREADS": "1"}
    with running_app(env, timeout_s=240) as server:
        text, notice, table = Client(server.url, verbose=False).predict(
            "A man is riding a red bicycle.", "beam", 3, api_name="/translate")
        assert isinstance(text, str) and text.strip(), server.log_tail()
        assert table["data"][0][1] == text
