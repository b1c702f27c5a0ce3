"""The explorer under concurrency: a page load never waits for model work, a result in use is never released
under its reader, and the learning tab's snapshot models count against a budget."""
from __future__ import annotations

import inspect
import os
import sys
import threading
from typing import Any
from pathlib import Path

import pytest

from transformer.serving.batching import Batcher
from transformer.explorer.services import Explorer
from transformer.explorer.core.model_registry import ModelRegistry

ROOT = Path(__file__).resolve().parents[1]
TOYS = ("toy-copy", "toy-reverse")
WAIT_S = 60  # how long a test waits for something that must happen (never a speed bound)


@pytest.fixture
def toy_explorer(tmp_path):
    """An Explorer over two toy checkpoints, the second not loaded."""
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    for name in TOYS:
        os.symlink(ROOT / "checkpoints" / name, checkpoints / name)
    batcher = Batcher()
    explorer = Explorer(ModelRegistry(checkpoints), tmp_path / "exports", strict=True, batcher=batcher)
    assert explorer.models.default_model == TOYS[0] and not explorer.models.registry.is_loaded(TOYS[1])
    yield explorer
    batcher.close()


@pytest.fixture
def busy_explorer(toy_explorer):
    """(`toy_explorer`, an event that frees its model worker, which is held busy until then)."""
    release, started = threading.Event(), threading.Event()
    holder = threading.Thread(target=toy_explorer.models.batcher.call,
                              args=(lambda: (started.set(), release.wait(WAIT_S)),))
    holder.start()
    assert started.wait(WAIT_S)
    yield toy_explorer, release
    release.set()
    holder.join(WAIT_S)


def test_a_link_to_a_model_not_loaded_yet_loads_the_page_while_the_model_is_busy(busy_explorer):
    """A link to the second model, with a head switched off that it does not have, opened while the worker is
    held: the page load returns, the link validated against the model's config.json (4 heads), without
    queueing a load behind the model work."""
    explorer, release = busy_explorer
    restored: list = []
    load = threading.Thread(target=lambda: restored.append(
        explorer.restore.restore(TOYS[1], {"model": [TOYS[1]], "text": ["h e l l o"], "off": ["c1.6"]})))
    load.start()
    load.join(WAIT_S)
    still_waiting = load.is_alive()
    release.set()  # frees the worker either way, so a failure does not hang the test
    load.join(WAIT_S)
    assert not still_waiting and restored[0].view.model == TOYS[1]
    assert restored[0].view.off == () and "c1.6" in restored[0].note
    assert not explorer.models.registry.is_loaded(TOYS[1])  # the link's translation loads it, as model work


def test_a_result_read_by_a_waiting_event_is_not_released_under_it(busy_explorer):
    """A clicked cell waits for the model (held busy) after its result was checked; meanwhile other sessions'
    translations fill the store past its budget. The cell is then answered with its numbers, not an error: the
    result it reads is pinned while it is in use, and released only once it is not."""
    from transformer.explorer.panels.inside.service import Inside
    from transformer.explorer.core.results import ResultStore, held_bytes, run_translation

    explorer, release = busy_explorer
    tr = explorer.models.default_translator
    mine, _ = run_translation(tr, explorer.models.default_model, "h e l l o", "greedy", 1, 1.0)
    explorer.models.results = ResultStore(max_bytes=held_bytes(mine) * 3 // 2)  # room for one result
    explorer.models.keep(mine)
    answers: list = []
    cell = {"kind": "cross", "layer": 0, "head": 0, "query": 0, "key": 0, "rows": "predicted"}
    click = threading.Thread(target=lambda: answers.append(Inside(explorer.models).cell(mine, cell)))
    click.start()
    deadline = threading.Event()
    for _ in range(WAIT_S * 20):  # the click's model work is queued: its result was checked
        if explorer.models.batcher.waiting:
            break
        deadline.wait(0.05)
    assert explorer.models.batcher.waiting == 1
    for text in ("w o r l d", "a b c"):  # other sessions' results, made here while the worker is held
        explorer.models.keep(run_translation(tr, explorer.models.default_model, text, "greedy", 1, 1.0)[0])
    release.set()
    click.join(WAIT_S)
    assert not click.is_alive() and answers, "the click ended in an error"
    same, _ = run_translation(tr, explorer.models.default_model, "h e l l o", "greedy", 1, 1.0)
    assert answers[0] == Inside(explorer.models).cell(same, cell)  # the cell's numbers, as from a kept result
    explorer.models.keep(run_translation(tr, explorer.models.default_model, "x y z", "greedy", 1, 1.0)[0])
    assert mine.released  # once no event reads it, it goes like any other


def test_snapshot_models_count_against_the_results_budget_and_come_back_when_asked(tmp_path):
    """The learning tab's float32 snapshot models are counted in the results store; with room for one, the next
    snapshot releases the first, and a new sentence at the first step loads it again."""
    from transformer.explorer.panels.inside.service import Inside

    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    os.symlink(ROOT / "checkpoints" / "en-de", checkpoints / "en-de")
    batcher = Batcher()
    try:
        explorer = Explorer(ModelRegistry(checkpoints), tmp_path / "exports", strict=True, batcher=batcher)
        inside = Inside(explorer.models)
        steps = inside.learn_index("en-de")["steps"]
        model_bytes = sum(p.numel() * p.element_size() for p in explorer.models.default_translator.model.parameters())
        before = explorer.models.results.bytes
        assert "translation" in inside.learn("en-de", "", {"step": steps[-1], "text": "A dog runs."})
        assert explorer.models.results.bytes - before >= model_bytes
        explorer.models.results.max_bytes = explorer.models.results.bytes + model_bytes // 2  # room for one snapshot model
        assert "translation" in inside.learn("en-de", "", {"step": steps[-2], "text": "A dog runs."})
        assert explorer.models.results.bytes <= explorer.models.results.max_bytes
        assert "translation" in inside.learn("en-de", "", {"step": steps[-1], "text": "The cat sleeps."})
        assert inside.snapshots.loads[("en-de", steps[-1])] == 2 and inside.snapshots.loads[("en-de", steps[-2])] == 1
    finally:
        batcher.close()


def waiting_at(thread: threading.Thread, function: Any, text: str) -> bool:
    """Whether `thread`'s innermost Python frame is `function` at its line that reads `text` (a `with lock:`
    waiting for the lock: acquiring it runs no Python)."""
    lines, first = inspect.getsourcelines(function)
    at = {first + i for i, line in enumerate(lines) if text in line}
    frame = sys._current_frames().get(thread.ident)
    return frame is not None and frame.f_code is function.__code__ and frame.f_lineno in at


def test_heads_switched_off_are_added_to_a_kept_result_only_under_the_stores_lock(busy_explorer):
    """A rerun's new ablation, computed while another thread holds the store's lock (as `keep` does when it
    trims a result's ablations), waits for that lock before it is added: the result's ablations never change
    under the holder's walk."""
    from transformer.explorer.core import results

    explorer, release = busy_explorer
    base, _ = results.run_translation(explorer.models.default_translator, explorer.models.default_model, "h e l l o", "greedy",
                                      1, 1.0)
    explorer.models.keep(base)
    done: list = []
    rerun = threading.Thread(target=lambda: done.append(explorer.reruns.rerun(base, [["cross", 0, 1]])))
    rerun.start()
    pause = threading.Event()
    for _ in range(WAIT_S * 20):  # the rerun waits for the worker
        if explorer.models.batcher.waiting:
            break
        pause.wait(0.05)
    worker = explorer.models.batcher._thread
    with explorer.models.results.lock:
        release.set()  # the worker computes the ablation now
        for _ in range(WAIT_S * 20):  # until it waits for this lock in `ablate`, or the rerun is over without it
            if waiting_at(worker, results.ablate, "with guard:") or not rerun.is_alive():
                break
            pause.wait(0.05)
        assert rerun.is_alive(), "the ablation was added while another thread held the store's lock"
        assert not base.ablated
    rerun.join(WAIT_S)
    assert done and done[0].base is base and list(base.ablated) == [(("cross", 0, 1),)]
    assert base.ablated[(("cross", 0, 1),)] is done[0]
