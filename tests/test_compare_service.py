"""The Compare tab's service (transformer/explorer/panels/compare/service.py): both translations' maps and their
difference, another map picked without decoding, greedy against beam.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from transformer.explorer.core import view_state

gr = pytest.importorskip("gradio")


def test_compare_figures_hold_both_results_arrays(app):
    from transformer.explorer.panels.compare.compare_view import select_map

    tr = app.explorer.models.default_translator
    value, session = app.explorer.compare.on_compare("h e l l o", "h e l l a", "beam", 3, app.explorer.models.default_model, 0.6,
                                    '{"kind": "cross", "layer": 1, "head": 2}')
    assert session.translations[0] == tr.translate("h e l l o", beam_size=3).text
    assert (value["kind"], value["layer"], value["head"], value["note"]) == ("cross", 1, 2, None)
    for side, text in enumerate(("h e l l o", "h e l l a")):
        own = tr.translate(text, beam_size=3).attention
        np.testing.assert_allclose(json.loads(value["pair"])["data"][side]["z"], own.cross[1, 2], atol=1e-6)
        assert value["sources"][side] == text
    w_a, *_ = select_map(session.attentions[0], "cross", 1, 2)
    w_b, *_ = select_map(session.attentions[1], "cross", 1, 2)
    np.testing.assert_allclose(json.loads(value["difference"])["data"][0]["z"], w_a - w_b, atol=1e-6)  # same lengths
    # another kind, layer and head from the panel: the same two translations, no decoding
    other = app.explorer.compare.compare_pick(session, {"kind": "encoder", "layer": 0, "head": -1})
    np.testing.assert_allclose(json.loads(other["pair"])["data"][1]["z"], session.attentions[1].encoder[0].mean(0),
                               atol=1e-6)


def test_difference_of_a_sentence_with_itself_is_zero(app):
    value, _ = app.explorer.compare.on_compare("g r a d i e n t", "g r a d i e n t", "beam", 2,
                                               app.explorer.models.default_model, 0.6, "")
    assert value["note"] is None
    difference = np.array(json.loads(value["difference"])["data"][0]["z"])
    assert difference.size and not np.any(difference)


def test_greedy_vs_beam_side_by_side(app):
    tr = app.explorer.models.default_translator
    value, session = app.explorer.compare.on_greedy_vs_beam("h e l l o", 1, app.explorer.models.default_model, 0.6, '{"kind": "decoder"}')
    assert value["labels"] == ["greedy", f"beam {view_state.DEFAULT_BEAM}"] and value["kind"] == "decoder"
    assert session.translations == (tr.translate("h e l l o", method="greedy").text,
                                    tr.translate("h e l l o", beam_size=view_state.DEFAULT_BEAM).text)
    with pytest.raises(gr.Error, match="no sentence to translate yet"):
        app.explorer.compare.on_compare("h e l l o", "   ", "beam", 3, app.explorer.models.default_model, 0.6, "")
