"""The models the app offers (transformer/explorer/core/model_registry.py): which checkpoints are listed and in
what order, each loaded once, on the batcher's thread, and the examples each model's training suggests.
"""
from __future__ import annotations

import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from transformer.explorer.core import model_registry


def test_the_explorer_loads_every_model_on_its_batchers_thread(tmp_path, make_model, caplog):
    """Loading, like all model work, runs on the batcher's thread: torch's OpenMP keeps a thread pool per thread
    that runs parallel work, and a second pool (a model loaded on the main thread) made every search of the app
    2.7x slower on 2 cores (bench/thread_pools.py). The default model at start-up, and another one loaded later
    from a request's thread."""
    from transformer.explorer.services import Explorer
    from transformer.hub import save_checkpoint
    from transformer.tokenizer import TextTokenizer, toy_tokenizer

    for name in ("en-de", "toy-other"):
        save_checkpoint(make_model(), TextTokenizer(toy_tokenizer(12)), tmp_path / name)
    caplog.set_level(logging.INFO, logger="transformer.explorer.core.model_registry")
    explorer = Explorer(model_registry.ModelRegistry(tmp_path), tmp_path / "exports", strict=True)
    try:
        request = threading.Thread(target=explorer.models.translator, args=("toy-other",), name="a-request")
        request.start()
        request.join()
        loads = [r for r in caplog.records if r.getMessage().startswith("loaded ")]
        assert [r.getMessage().split()[1] for r in loads] == ["en-de", "toy-other"]
        assert {r.threadName for r in loads} == {explorer.models.batcher._thread.name}
        assert explorer.models.registry.is_loaded("toy-other")
    finally:
        explorer.models.batcher.close()
    direct = model_registry.ModelRegistry(tmp_path)  # without the app's runner, on the caller's thread
    caplog.clear()
    direct.get("toy-other")
    assert [r.threadName for r in caplog.records if r.getMessage().startswith("loaded ")] == ["MainThread"]


def test_registry_lists_default_models_first_then_sorted_and_override_first(tmp_path):
    for name in ("toy-b", "multi30k-en-de", "toy-a", "incomplete", ".hidden"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
        if name != "incomplete":
            (tmp_path / name / "model.safetensors").write_bytes(b"")
    (tmp_path / "stray.txt").write_text("not a checkpoint")
    assert model_registry.ModelRegistry(tmp_path).labels() == ["multi30k-en-de", "toy-a", "toy-b"]
    assert model_registry.ModelRegistry(tmp_path, str(tmp_path / "toy-b")).labels() == ["toy-b", "multi30k-en-de", "toy-a"]
    assert model_registry.ModelRegistry(tmp_path, "someone/some-model").labels()[0] == "someone/some-model"
    assert model_registry.ModelRegistry(tmp_path / "missing").labels() == []
    (tmp_path / "en-de").mkdir()
    (tmp_path / "en-de" / "config.json").write_text("{}")
    (tmp_path / "en-de" / "model.safetensors").write_bytes(b"")
    assert model_registry.ModelRegistry(tmp_path).labels() == ["en-de", "multi30k-en-de", "toy-a", "toy-b"]
    # a model exported before its schedule ended (trained over several sessions) goes last
    (tmp_path / "en-de" / "training.json").write_text(json.dumps(
        {"progress": {"step": 501}, "train_config": {"max_steps": 3000}}))
    assert model_registry.training_progress(tmp_path / "en-de") == (501, 3000)
    assert model_registry.ModelRegistry(tmp_path).labels() == ["multi30k-en-de", "toy-a", "toy-b", "en-de"]
    (tmp_path / "en-de" / "training.json").write_text(json.dumps(
        {"progress": {"step": 3000}, "train_config": {"max_steps": 3000}}))
    assert model_registry.training_progress(tmp_path / "en-de") is None
    assert model_registry.ModelRegistry(tmp_path).labels()[0] == "en-de"
    assert model_registry.ModelRegistry(tmp_path / "missing").default() is None
    with pytest.raises(LookupError, match="No model found"):
        model_registry.ModelRegistry(tmp_path / "missing").get(None)


def test_registry_loads_once_and_caches(app, tmp_path, make_model, caplog):
    """A model is loaded by its first `get`; later ones, one after the other or at once from several threads,
    answer the same translator without loading again. The app's default model was loaded at start-up."""
    from transformer.hub import save_checkpoint
    from transformer.tokenizer import TextTokenizer, toy_tokenizer

    label = app.explorer.models.default_model
    assert app.explorer.models.registry.is_loaded(label)
    assert app.explorer.models.registry.get(label) is app.explorer.models.default_translator
    assert app.explorer.models.registry.directory(label) is not None
    save_checkpoint(make_model(), TextTokenizer(toy_tokenizer(12)), tmp_path / "toy-a")
    registry = model_registry.ModelRegistry(tmp_path)
    caplog.set_level(logging.INFO, logger="transformer.explorer.core.model_registry")
    assert not registry.is_loaded("toy-a")
    first = registry.get("toy-a")
    assert registry.get("toy-a") is first and registry.is_loaded("toy-a")
    with ThreadPoolExecutor(4) as pool:
        assert all(t is first for t in pool.map(registry.get, ["toy-a"] * 8))
    assert [r.getMessage().split()[1] for r in caplog.records if r.getMessage().startswith("loaded ")] == ["toy-a"]
    save_checkpoint(make_model(), TextTokenizer(toy_tokenizer(12)), tmp_path / "toy-b")
    with ThreadPoolExecutor(4) as pool:  # a model not loaded yet, asked for by several requests at once
        loaded = list(pool.map(registry.get, ["toy-b"] * 8))
    assert all(t is loaded[0] for t in loaded) and loaded[0] is not first
    assert [r.getMessage().split()[1] for r in caplog.records if r.getMessage().startswith("loaded ")] == [
        "toy-a", "toy-b"]


def test_examples_follow_what_the_model_was_trained_on(tmp_path):
    captions_only = Path(__file__).resolve().parents[1] / "checkpoints" / "multi30k-en-de"
    assert model_registry.examples_for(None, captions_only) == model_registry.EXAMPLES_CAPTIONS
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "training.json").write_text(json.dumps(
        {"train_config": {"task": "translation", "corpora": ["tatoeba-en-de", "multi30k:2"]}}))
    assert model_registry.examples_for(None, mixed) == model_registry.EXAMPLES_EN
    assert model_registry.examples_for(None, tmp_path / "missing") == model_registry.EXAMPLES_EN


def test_the_model_list_marks_toy_tasks_and_keeps_their_names_as_values():
    models = model_registry.ModelRegistry(Path(__file__).resolve().parents[1] / "checkpoints")
    choices = dict((value, shown) for shown, value in models.choices())
    assert choices["en-de"] == "en-de" and choices["multi30k-en-de"] == "multi30k-en-de"
    assert choices["toy-reverse"] == "toy-reverse (a toy task, not a translator: it reverses letters)"
    assert all("toy task" in shown for value, shown in choices.items() if value.startswith("toy-"))
