"""Shared fixtures: tiny model configs and a deterministic torch setup for the engine tests; plotly's validation
and the shipped multi30k-en-de translator for the explorer's figure tests; the app on the toy checkpoint, in
this process, for the explorer's service and page tests (`app`).

Every model in these tests is tiny, and for tiny tensors torch's intra-op thread pool costs far more
than it gives (a busy 2-core machine makes a 2-thread forward pass many times slower than a 1-thread one),
so the whole session runs single-threaded; training subprocesses get `--threads 1` to match.
numpy's OpenBLAS too: its threads spin while they wait, and on the shared cores a worker's matmuls of attention
maps (transforms.merge_subwords) took far longer with two of them than with one. The variable is read
when numpy loads, so it is set here before anything imports numpy; child processes inherit it.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy (through torch) loads: see above

import pytest
import torch

from transformer.config import ModelConfig
from transformer.model import Transformer

torch.set_num_threads(1)


def require_asset(path: Path, install: str) -> None:
    """A test-only asset (an npm package) the calling test needs: absent, the test is skipped on a developer's
    machine, and fails under CI (`CI` set: .ci/run sets it), so that CI never passes by leaving a check out."""
    if path.is_file():
        return
    message = f"{path.relative_to(Path(__file__).resolve().parents[1])} is not installed: {install}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def tiny_config(**overrides) -> ModelConfig:
    """A model small enough for a unit test: d_model 32, 1+1 layers, 16-symbol vocabulary."""
    values = dict(
        src_vocab_size=16, tgt_vocab_size=16, d_model=32, n_heads=4, n_encoder_layers=1, n_decoder_layers=1,
        d_ff=64, dropout=0.0, max_len=64, norm_first=True, activation="relu", tie_embeddings=False,
    )
    values.update(overrides)
    return ModelConfig(**values)


@pytest.fixture
def make_config():
    """`make_config(**overrides)` -> a tiny ModelConfig."""
    return tiny_config


@pytest.fixture
def make_model():
    """`make_model(seed=0, **config_overrides)` -> a tiny Transformer in eval mode."""

    def build(seed: int = 0, **overrides) -> Transformer:
        torch.manual_seed(seed)
        return Transformer(tiny_config(**overrides)).eval()

    return build


@pytest.fixture
def validate_figures(monkeypatch):
    """Every figure built with plotly's property validation on (`figures.VALIDATE_FIGURES`), so a bad property
    fails."""
    from transformer.explorer.maps import figures

    monkeypatch.setattr(figures, "VALIDATE_FIGURES", True)


@pytest.fixture(scope="module")
def flagship():
    """The translator of the shipped multi30k-en-de checkpoint."""
    from transformer.translator import load_pretrained

    return load_pretrained(Path(__file__).resolve().parents[1] / "checkpoints" / "multi30k-en-de")


@pytest.fixture(scope="module")
def app():
    """The app (`app.create_app()`) in this process, on the toy checkpoint as default (tests/toy_app.py) with one
    torch thread: built once per test process (app_server.import_app), whichever module asks first."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from app_server import import_app
    from toy_app import ENV

    built = import_app({**ENV, "TRANSFORMER_INT8_KERNEL": ""})  # measured, whatever the caller's shell sets
    assert built.explorer.models.default_translator is not None, built.explorer.models.startup_error
    return built


@pytest.fixture(scope="module", autouse=True)
def _after_each_module():
    """When a module ends: a browser test module's one Chromium (test_browser.chromium) is closed, and the shared
    app servers (app_server.shared_app) are paused until a test asks for one again."""
    yield
    for name, ends in (("test_browser", "close_chromium"), ("app_server", "pause_shared_apps")):
        module = sys.modules.get(name)
        if module is not None:
            getattr(module, ends)()


# The longest modules, longest first (their summed test times in bench/results/test_suite.json, whole suite):
# handed out before the other modules with slow tests, so that the last module a worker takes is a short one.
LONGEST = ("test_stage.py", "test_stage_present.py", "test_stage_lesson.py", "test_batch_invariance.py",
           "test_browser.py", "test_search_process.py", "test_browser_inside.py", "test_lesson_quotes.py",
           "test_train.py")


def pytest_collection_modifyitems(config, items):
    """The longest modules first (`LONGEST`), then the other modules with slow tests, then the rest, each module's
    tests in their own order (pytest.ini hands whole modules to two workers in collection order): the long ones
    start early and the quick ones fill the end, so neither worker idles while the other finishes a long module."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    rank = {name: i for i, name in enumerate(LONGEST)}
    items.sort(key=lambda item: (item.path not in slow, rank.get(item.path.name, len(LONGEST))))
