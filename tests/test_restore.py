"""A link's restore (transformer/explorer/core/restore.py and Page.on_restore): each value checked, a bad one
noted and replaced by its default, and the length penalty a link leaves out the model's own.
"""
from __future__ import annotations

import json
import sys
from operator import attrgetter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from toy_app import EVIL, values

from transformer.explorer.core import model_registry, view_state

gr = pytest.importorskip("gradio")


def test_page_and_links_start_at_the_default_models_length_penalty(app, tmp_path, make_model):
    from transformer.explorer.services import Explorer
    from transformer.hub import save_checkpoint
    from transformer.tokenizer import TextTokenizer, toy_tokenizer

    directory = save_checkpoint(make_model(), TextTokenizer(toy_tokenizer(12)), tmp_path / "en-de")
    (directory / "generation_config.json").write_text('{"num_beams": 5, "length_penalty": 1.7}')
    explorer = Explorer(model_registry.ModelRegistry(tmp_path), tmp_path / "exports", strict=True)
    try:
        assert explorer.models.default_length_penalty == 1.7  # what build_page starts the slider at
        assert explorer.restore.restore("en-de", {"text": "a b"}).view.length_penalty == 1.7  # a link without lp
        assert explorer.restore.restore("en-de", {"lp": "nan"}).view.length_penalty == 1.7  # a bad one: noted, default
        assert explorer.restore.restore("en-de", {"lp": "0.3"}).view.length_penalty == 0.3  # a link's own
    finally:
        explorer.models.batcher.close()
    assert app.explorer.models.default_length_penalty == view_state.DEFAULT_LENGTH_PENALTY  # the toy has no generation config


def test_restore_from_a_link_validates_and_notes(app):
    from types import SimpleNamespace

    request = SimpleNamespace(query_params={"text": "a b c", "beam": "999", "tab": "tree", "layer": "2",
                                            "head": "9", "model": "nope", "compare": EVIL, "lp": "nan"})
    linked = ("controls.src", "compare.src", "controls.method", "controls.beam", "controls.lp", "states.lp",
              "controls.present", "tabs")  # what a link may set
    out = app.page.on_restore(app.explorer.models.default_model, request)
    text, compare, beam, lp, tabs = values(app, out, "controls.src", "compare.src", "controls.beam", "controls.lp",
                                           "tabs")
    model, tab, note, restored = values(app, out, "states.model", "states.tab", "results.note", "states.restore")
    assert (model, text, compare, beam.value, lp, tab) == (app.explorer.models.default_model, "a b c", "", 5, 0.6, "tree")
    assert tabs.selected == "tree" and note.visible
    for word in ("beam", "head", "model", "compare", "lp"):
        assert f"{word} " in note.value
    assert json.loads(restored)["view"]["layer"] == 1
    out = app.page.on_restore(app.explorer.models.default_model, SimpleNamespace(query_params={}))
    note, plain = values(app, out, "results.note", "states.restore")
    assert note.visible is False  # a plain page: no note
    assert not {attrgetter(path)(app.page) for path in linked} & out.keys()  # nothing typed is overwritten
    assert app.page.on_restore_translate("x", "beam", 5, app.explorer.models.default_model, 0.6, plain) == gr.skip()  # no link text
    assert app.page.on_restore_translate("", "beam", 5, app.explorer.models.default_model, 0.6, restored) == gr.skip()  # no error
