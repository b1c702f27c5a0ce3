"""The search tree tab's service (transformer/explorer/panels/tree/service.py): nothing recorded on the main
path, the tree recorded once when the tab opens and matching the translation, a node picked without decoding.
"""
from __future__ import annotations

import json

import numpy as np

from transformer.explorer.maps.token_labels import read_tokens


def test_main_path_records_no_search(app, monkeypatch):
    tr = app.explorer.models.default_translator
    calls = []
    original = tr.translate_sources  # what decodes, alone or in a batch (transformer/serving/batching.py)

    def spy(sources, options, max_len=None, output_attentions=True, top_k=5, record_search=False):
        calls.append(dict(record_search=record_search))
        return original(sources, options, max_len, output_attentions, top_k, record_search)

    monkeypatch.setattr(tr, "translate_sources", spy)
    searcher = app.explorer.models.batcher.searcher  # the search process searches without a trace: it has no such option
    original_search = searcher.search
    monkeypatch.setattr(searcher, "search", lambda *a, **k: calls.append({}) or original_search(*a, **k))
    result = app.page.on_translate("h e l l o", "beam", 3, app.explorer.models.default_model, 0.6)[app.page.states.result]
    assert [k.get("record_search", False) for k in calls] == [False]
    assert result.translation.search is None and result.search is None
    assert app.explorer.tree.on_tree_view(result, "attention", "") is None  # the tree tab is closed: nothing recorded
    assert len(calls) == 1 and result.search is None


def test_tree_is_recorded_once_when_opened_and_matches_the_translation(app, monkeypatch):
    from transformer.explorer.panels.tree import search_tree

    tr = app.explorer.models.default_translator
    result = app.page.on_translate("h e l l o", "beam", 4, app.explorer.models.default_model, 0.6)[app.page.states.result]
    calls = []
    original = tr.translate
    monkeypatch.setattr(tr, "translate", lambda *a, **k: calls.append(k) or original(*a, **k))
    value = app.explorer.tree.on_tree_view(result, "tree", '{"kind": "cross", "layer": 0, "head": 1}')
    assert [(k["method"], k["record_search"], k["output_attentions"]) for k in calls] == [
        ("beam", True, False), ("greedy", True, False)]
    trace = result.search.trace
    final = [trace.prefix_ids(i) for i in trace.nbest]
    assert final == [c.ids for c in result.translation.candidates]  # the tree of the translation shown
    assert value["choices"] == [[label, i] for label, i in search_tree.node_choices(trace)]  # plain text labels
    assert value["selected"] == trace.nbest[0] and (value["layer"], value["head"]) == (0, 1)
    reference = tr.attention_for_prefix(result.translation, trace.prefix_ids(value["selected"]))
    np.testing.assert_allclose(value["row"], reference.cross[0, 1, -1], atol=1e-6)
    np.testing.assert_allclose(json.loads(value["node"])["data"][0]["y"], reference.cross[0, 1, -1], atol=1e-6)
    assert json.loads(value["tree"])["data"] and value["tree_rev"] == result.search.rev
    # opening the tab again costs no decoding; a node, layer and head are one teacher-forced pass (cached)
    app.explorer.tree.on_tree_view(result, "tree", "")
    node = trace.nbest[-1]
    picked = app.explorer.tree.tree_pick(result, {"node": node, "layer": 1, "head": -1,
                                                         "tree_rev": result.search.rev})
    assert len(calls) == 2 and picked["tree"] is None  # the page has the tree already
    mean = tr.attention_for_prefix(result.translation, trace.prefix_ids(node)).cross[1].mean(axis=0)[-1]
    np.testing.assert_allclose(picked["row"], mean, atol=1e-6)
    assert picked["prefix"] == read_tokens(trace.prefix_tokens(node))  # the node's prefix, read as words
    # hostile event data falls back to defaults
    odd = app.explorer.tree.tree_pick(result, {"node": "<b>", "layer": 99, "head": True})
    assert odd["selected"] == trace.nbest[0] and odd["layer"] == odd["n_layers"] - 1 and odd["head"] == -1
    assert odd["tree"] is not None


def test_tree_of_a_greedy_translation_has_no_second_search(app):
    result = app.page.on_translate("a b c", "greedy", 1, app.explorer.models.default_model, 0.6)[app.page.states.result]
    app.explorer.tree.on_tree_view(result, "tree", "")
    assert result.search.greedy is None and result.search.trace.method == "greedy"
    assert [n.token_id for n in result.search.trace.best_path()] == result.translation.candidates[0].ids
