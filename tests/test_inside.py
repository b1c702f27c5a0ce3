"""The three ways into the model as the app computes them (transformer/explorer/panels/inside/service.py): the numbers of a clicked
cell against the map's float32 row, a translation of one's own against the model's own scores and `attention_for`,
and the learning slider on the snapshots of a short toy run."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
import torch

from transformer.explorer.core import model_registry
from transformer.explorer.core import result_view
from transformer.explorer.core import results
from transformer.explorer.services import Explorer
from transformer.explorer.panels.inside.service import Inside
from transformer.explorer.panels.inside.your_translation import check_yours
from transformer.explorer.panels.inside.snapshots import LearningSnapshots, metric_of, snapshot_file, snapshot_records
from transformer.explorer.panels.registry import tab_ids
from transformer.explorer.core.view_state import ViewState
from transformer.hub import load_int8_weights

sys.path.insert(0, str(Path(__file__).resolve().parent))
from toy_snapshots import SNAPSHOT_STEPS, toy_run_with_snapshots  # noqa: E402

TABS = tab_ids()  # the app's tabs, as its registry declares them

ROOT = Path(__file__).resolve().parents[1]
EN_DE = ROOT / "checkpoints" / "en-de"
SENTENCE = "My little cousin paints the kitchen after lunch."


@pytest.fixture(scope="module")
def explorer(tmp_path_factory):
    if not (EN_DE / "model.safetensors").is_file():
        pytest.skip("checkpoints/en-de is not here")
    models = model_registry.ModelRegistry(ROOT / "checkpoints", str(EN_DE), "fp32")  # fp32: the search's own numbers
    xp = Explorer(models, tmp_path_factory.mktemp("exports"), strict=True)
    yield xp
    xp.models.batcher.close()


@pytest.fixture(scope="module")
def inside(explorer):
    return Inside(explorer.models)


@pytest.fixture(scope="module")
def result(explorer):
    return explorer.translation.translate(SENTENCE, "beam", 3, explorer.models.default_model, 1.0)[0]


def softmax_of_allowed(scores, allowed) -> np.ndarray:
    x = np.where(allowed, np.asarray(scores, dtype=np.float64), -np.inf)
    e = np.exp(x - x[allowed].max())
    return e / e.sum()


# ----------------------------------------------------------------------------- how this weight is computed


@pytest.mark.parametrize("kind,layer,head,query,key", [
    ("encoder", 0, 0, 2, 4), ("encoder", 5, 7, 0, 0), ("decoder", 0, 3, 4, 2), ("decoder", 3, 1, 5, 5),
    ("cross", 1, 2, 3, 1), ("cross", 3, 7, 0, 6),
])
def test_the_panels_numbers_reproduce_the_maps_row(inside, result, kind, layer, head, query, key):
    value = inside.cell(result, {"kind": kind, "layer": layer, "head": head, "query": query, "key": key})
    weights, allowed = np.array(value["weights"]), np.array(value["allowed"])
    # softmax of the panel's scores (masked keys left out) gives the panel's weights ...
    np.testing.assert_allclose(softmax_of_allowed(value["scores"], allowed), weights, atol=1e-6)
    # ... and those are the map's row (the float32 attention the maps are drawn from)
    np.testing.assert_allclose(weights, getattr(result.attention, kind)[layer, head, query], atol=1e-5)
    assert value["weight"] == weights[key]
    # the strips: q_i * k_j elementwise, summed and divided by sqrt(d_k), is the clicked score
    assert np.array(value["products"]) == pytest.approx(np.array(value["q"]) * np.array(value["k"]), abs=1e-6)
    assert value["dot"] / math.sqrt(value["d_k"]) == pytest.approx(value["scores"][key], abs=1e-4)
    assert value["score"] == value["scores"][key]
    # what the head passes on: the weighted values summed, and its norm
    summed = np.array(value["weighted"]).sum(0)
    np.testing.assert_allclose(summed, value["output"], atol=1e-5)
    assert value["output_norm"] == pytest.approx(float(np.linalg.norm(value["output"])), rel=1e-5)
    assert value["head_on"] and value["d_k"] == 32
    # tokens named as the maps name them: no word-start mark "▁", read as a stray space inside quotes
    named = [value["query_token"], value["key_token"], *value["keys"]]
    assert not [t for t in named if t != t.strip() or "\u2581" in t], named


def test_decoder_rows_show_the_future_as_masked(inside, result):
    value = inside.cell(result, {"kind": "decoder", "layer": 1, "head": 0, "query": 2, "key": 0})
    assert value["allowed"][:3] == [True] * 3 and not any(value["allowed"][3:])
    assert sum(value["weights"][3:]) == 0.0
    assert value["query_predicts"] is not None and value["keys"][0] == "<bos>"


def test_a_switched_off_head_says_so_and_its_map_row_is_zero(explorer, inside, result):
    tr = explorer.models.translator(result.model)
    masked = results.ablate(tr, result, [["cross", 2, 5]])
    value = inside.cell(masked, {"kind": "cross", "layer": 2, "head": 5, "query": 1, "key": 0})
    assert not value["head_on"] and sum(value["weights"]) == 0.0
    assert float(np.abs(masked.attention.cross[2, 5]).sum()) == 0.0
    assert any(value["scores"])  # what it would compute is still shown
    assert inside.cell(masked, {"kind": "cross", "layer": 2, "head": 4, "query": 1, "key": 0})["head_on"]


@pytest.mark.parametrize("data,says", [
    ({"kind": "cross", "layer": 0, "head": -1, "query": 0, "key": 0}, "single head"),
    ({"kind": "cross", "layer": 4, "head": 0, "query": 0, "key": 0}, "No layer 4"),
    ({"kind": "self", "layer": 0, "head": 0, "query": 0, "key": 0}, "must be one of"),
    ({"kind": "encoder", "layer": 0, "head": 0, "query": 999, "key": 0}, "query"),
    ({"kind": "encoder", "layer": 0, "head": 0, "query": 0, "key": 999}, "No key 999"),
    ({"kind": "encoder", "layer": 0, "head": 0, "query": 0, "key": True}, "No key"),
    ({"kind": "encoder", "layer": 0, "head": 0, "query": 0, "key": 0, "merged": True}, "Untick"),
])
def test_a_bad_click_is_a_plain_message(inside, result, data, says):
    assert says in inside.cell(result, data)["message"]
    assert "Translate a sentence first" in inside.cell(None, data)["message"]


# ----------------------------------------------------------------------------- your translation


def test_the_models_own_translation_scores_its_search_log_probability(explorer, inside, result):
    own = result.translation.text
    forced, value = inside.score(SENTENCE, own, result.model, 1.0, result)
    assert forced.translation.candidates[0].ids == result.translation.candidates[0].ids
    assert value["log_prob"] == pytest.approx(result.translation.candidates[0].log_prob, abs=1e-4)
    assert value["own"]["log_prob"] == pytest.approx(value["log_prob"], abs=1e-4)
    assert sum(t["log_p"] for t in value["tokens"]) == pytest.approx(value["log_prob"], abs=1e-4)
    # every map of the forced translation is the model's own map of that token sequence
    for kind in ("encoder", "decoder", "cross"):
        np.testing.assert_allclose(getattr(forced.attention, kind), getattr(result.attention, kind), atol=1e-6)


def test_your_translation_is_scored_with_the_maps_of_that_token_sequence(explorer, inside, result):
    mine = "Mein kleiner Cousin streicht nach dem Mittagessen die Küche."
    forced, value = inside.score(SENTENCE, mine, result.model, 1.0, result)
    tr = explorer.models.translator(result.model)
    again = tr.attention_for(forced.translation)
    for kind in ("encoder", "decoder", "cross"):
        assert (getattr(forced.attention, kind) == getattr(again, kind)).all()
    (score,) = tr.score([SENTENCE], [mine])
    assert value["log_prob"] == pytest.approx(score.log_prob, abs=1e-4)
    assert [t["p"] for t in value["tokens"]] == pytest.approx([math.exp(x) for x in score.token_log_probs], rel=1e-4)
    assert value["text"] == mine and value["own"]["text"] == result.translation.text
    assert all(len(t["top"]) == 5 and t["top"][0][1] >= t["top"][-1][1] for t in value["tokens"])
    assert value["n_top1"] == sum(t["top1"] for t in value["tokens"]) and not value["heads_off"]
    # heads switched off while one's own translation is on screen: the same tokens, without that head
    masked = results.ablate(tr, forced, [["cross", 0, 1]])
    assert masked.translation.method == "forced"
    assert masked.translation.candidates[0].ids == forced.translation.candidates[0].ids
    assert float(np.abs(masked.attention.cross[0, 1]).sum()) == 0.0
    redo = tr.attention_for(masked.translation)
    assert (masked.attention.cross == redo.cross).all()


@pytest.mark.parametrize("yours,says", [
    ("", "Type your translation"), ("   ", "Type your translation"), ("<b>Hallo</b>", "looks like HTML"),
    ("javascript:alert(1)", "looks like HTML"), ("x" * 2001, "at most 2000"), ("Hal\u200blo", "invisible"),
    ("Hund " * 400, "too long for the model"),
])
def test_bad_input_gets_a_clear_message(inside, result, yours, says):
    with pytest.raises(gr.Error, match=says):
        inside.score(SENTENCE, yours, result.model, 1.0, result)


def test_check_yours_passes_plain_text_through():
    assert check_yours("Ich male die Küche.") == "Ich male die Küche."
    with pytest.raises(ValueError):
        check_yours(None)


def test_the_link_carries_your_translation_validated_like_the_text():
    view, notes = ViewState.from_query({"yours": "Ein Hund läuft.", "tab": "learn"}, ["en-de"], tabs=TABS)
    assert view.yours == "Ein Hund läuft." and view.tab == "learn" and not notes
    assert ViewState.from_query(view.to_query(), ["en-de"], tabs=TABS)[0].yours == "Ein Hund läuft."
    view, notes = ViewState.from_query({"yours": "<img src=x onerror=alert(1)>"}, ["en-de"], tabs=TABS)
    assert view.yours == "" and "yours" in notes[0] and "HTML" in notes[0]
    view, notes = ViewState.from_query({"yours": "a" * 2001}, ["en-de"], tabs=TABS)
    assert view.yours == "" and "at most 2000" in notes[0]


# ----------------------------------------------------------------------------- watch it learn


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    torch.set_num_threads(1)
    return toy_run_with_snapshots(tmp_path_factory.mktemp("toy-learning"))


@pytest.fixture(scope="module")
def toy_explorer(toy_run, tmp_path_factory):
    models = model_registry.ModelRegistry(ROOT / "checkpoints", str(toy_run), "fp32")
    xp = Explorer(models, tmp_path_factory.mktemp("exports"), strict=True)
    yield xp
    xp.models.batcher.close()


@pytest.mark.slow  # trains a toy model
def test_the_slider_loads_each_snapshot_once_and_caches_it(toy_run, toy_explorer, monkeypatch):
    inside = Inside(toy_explorer.models)
    label = toy_explorer.models.default_model
    index = inside.learn_index(label)
    assert index["steps"] == list(SNAPSHOT_STEPS) and index["metric"] == "val_seq_acc"
    reads = []
    real = load_int8_weights
    monkeypatch.setattr("transformer.explorer.panels.inside.snapshots.load_int8_weights", lambda p: reads.append(p) or real(p))
    first = inside.learn(label, "a b c d", {"step": 240})
    again = inside.learn(label, "a b c d", {"step": 240})
    other = inside.learn(label, "", {"step": 240, "text": "h g f e"})
    assert reads == [snapshot_file(toy_run, 240)]  # three views of step 240, its weights read once
    assert inside.snapshots.loads == {(label, 240): 1}
    assert first == again and first["translation"] == "d c b a" and other["translation"] == "e f g h"
    assert inside.snapshots.value(label, toy_explorer.models.translator(label), toy_run, 240, "a b c d") is \
        inside.snapshots.value(label, toy_explorer.models.translator(label), toy_run, 240, "a b c d")
    for step in SNAPSHOT_STEPS:
        inside.learn(label, "a b c d", {"step": step})
    assert len(reads) == len(SNAPSHOT_STEPS) and set(inside.snapshots.loads.values()) == {1}
    recorded = {r["step"]: r for r in json.loads((toy_run / "snapshots" / "snapshots.json").read_text())}
    assert first["score"] == recorded[240]["val_seq_acc"] and 0 < first["score"] <= 1  # the run's own val score
    assert [h["step"] for h in first["history"]] == list(SNAPSHOT_STEPS)


@pytest.mark.slow  # trains a toy model
def test_each_snapshot_translates_with_its_own_weights(toy_run, toy_explorer):
    inside, label = Inside(toy_explorer.models), toy_explorer.models.default_model
    base = toy_explorer.models.translator(label)
    for step in (1, 240):
        tr = inside.snapshots.translator(label, base, toy_run, step)
        stored = load_int8_weights(snapshot_file(toy_run, step))
        assert all(torch.equal(tr.model.state_dict()[name], w) for name, w in stored.items())
    # the untrained model attends evenly; the trained one looks at the letter it writes
    first = inside.learn(label, "a b c d e", {"step": 1})
    assert len(first["tgt_out"]) <= 2 * len(first["src"]) + 10  # an untrained model's output is cut there
    early, late = (np.array(inside.learn(label, "a b c d e", {"step": s})["maps"]["cross"]) for s in (1, 240))

    def entropy(w):
        return float(-(w * np.log(np.clip(w, 1e-12, 1))).sum(-1).mean())

    assert entropy(early) > 1.2 * entropy(late)  # measured: 1.61 and 1.21 nats


@pytest.mark.slow  # trains a toy model
def test_bad_steps_and_a_model_without_snapshots(toy_explorer):
    inside, label = Inside(toy_explorer.models), toy_explorer.models.default_model
    bad = inside.learn(label, "a b", {"step": 5})
    assert "Choose one of the snapshot steps 1, 20, 60, 240" in bad["message"]
    assert "Choose one" in inside.learn(label, "a b", {"step": "240"})["message"]
    assert inside.learn_index("toy-reverse") is None  # a checkpoint without snapshots: the tab stays hidden
    assert "no training snapshots" in inside.learn("toy-reverse", "a b", {"step": 1})["message"]


def test_snapshot_records_and_their_score(tmp_path):
    assert snapshot_records(tmp_path) == [] and snapshot_records(None) == []
    assert metric_of([{"step": 1, "val_loss": 2.0, "val_bleu": 3.1}]) == "val_bleu"
    assert metric_of([{"step": 1, "val_loss": 2.0}]) == "val_loss"
    (tmp_path / "snapshots").mkdir()
    (tmp_path / "snapshots" / "snapshots.json").write_text("[{\"step\": 3}, {\"step\": 7}]")
    snapshot_file(tmp_path, 7).write_bytes(b"")
    assert [r["step"] for r in snapshot_records(tmp_path)] == [7]  # a record without its weights is left out
    LearningSnapshots()  # nothing loaded until asked


def test_the_tree_of_a_scored_translation_is_the_models_own_search(explorer, inside, result):
    forced, _ = inside.score(SENTENCE, "Mein Cousin malt die Küche.", result.model, 1.0, result)
    tree = explorer.tree.on_tree_view(forced, "tree", "{}")
    assert forced.search is not None and tree is not None
    assert forced.search.translation.text == result.translation.text
    alone, _ = inside.score(SENTENCE, "Mein Cousin malt die Küche.", result.model, 1.0, None)
    assert explorer.tree.on_tree_view(alone, "tree", "{}") is None  # no search of the model's to show


def test_your_translations_scores_follow_heads_switched_off(explorer, inside, result):
    forced, value = inside.score(SENTENCE, "Mein Cousin malt die Küche.", result.model, 1.0, result)
    masked = results.ablate(explorer.models.translator(result.model), forced, [["cross", 3, 7], ["decoder", 0, 0]])
    again = inside.yours_of(masked)
    assert again["heads_off"] and not value["heads_off"] and again["own"] == value["own"]
    assert again["log_prob"] == pytest.approx(masked.translation.log_prob) and again["log_prob"] != value["log_prob"]
    assert inside.yours_of(result) is None and inside.yours_of(None) is None


def test_heads_off_under_your_translation_keep_the_models_texts(explorer, inside, result):
    forced, _ = inside.score(SENTENCE, "Mein Cousin malt die Küche.", result.model, 1.0, result)
    masked = results.ablate(explorer.models.translator(result.model), forced, [["cross", 3, 7]])
    text, nbest, notice = explorer.reruns.rerun_texts(masked)
    assert text == result.translation.text and nbest.equals(result_view.nbest_table(result))
    assert "your translation" in notice and "c4.8" in notice
