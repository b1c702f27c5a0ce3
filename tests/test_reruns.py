"""Heads switched off and norm passes (transformer/explorer/panels/attention/reruns.py): the model's answer without
the heads beside the unmasked one, cached, run on the batcher's thread, bad heads refused, norms only when asked.
"""
from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference_views import decode_attention
from toy_app import values

gr = pytest.importorskip("gradio")


class Event:
    """What gr.HTML's 'rerun' event carries (`EventData._data`)."""

    def __init__(self, **data):
        self._data = data


def test_heads_switched_off_give_the_models_answer_without_them_beside_the_unmasked(app):
    result = app.page.on_translate("h e l l o", "beam", 3, app.explorer.models.default_model, 0.6)[app.page.states.result]
    cfg = app.explorer.models.default_translator.model.config
    every_cross = [["cross", layer, head] for layer in range(cfg.n_decoder_layers) for head in range(cfg.n_heads)]
    out = app.page.on_rerun(result, Event(off=every_cross + [["encoder", 0, 1]], measure="weight"))
    ablated, payload = values(app, out, "states.result", "attention.view")
    text, nbest, notice = app.explorer.reruns.rerun_texts(ablated)
    assert ablated.base is result and len(ablated.off) == len(every_cross) + 1
    mask = ablated.translation.head_mask
    assert int((mask.cross == 0).sum() + (mask.encoder == 0).sum()) == len(ablated.off)
    assert text == ablated.translation.text
    assert list(nbest["translation"]) == list(dict.fromkeys(c.text for c in ablated.translation.candidates))
    assert payload["ablation"]["unmasked"] == result.translation.text
    assert len(payload["ablation"]["off"]) == len(ablated.off)
    assert "switched off" in notice and result.translation.text in notice
    att = decode_attention(payload)
    assert not att.cross.any() and not att.encoder[0, 1].any() and att.encoder[0, 0].any()
    # the same heads again: cached, no model pass; none: the unmasked result itself
    assert app.explorer.reruns.rerun(result, every_cross + [["encoder", 0, 1]]) is ablated
    back = app.page.on_rerun(ablated, Event(off=[], measure="weight"))
    assert back[app.page.states.result] is result and back[app.page.attention.view]["ablation"] is None
    assert app.explorer.reruns.rerun_texts(result)[2] == "" and app.explorer.reruns.rerun_texts(None)[0] == ""
    # another candidate of the ablated result keeps its heads off
    if len(ablated.translation.candidates) > 1:
        shown = app.page.on_candidate(ablated, 1)
        assert not decode_attention(shown[app.page.attention.view]).cross.any()


def test_heads_off_and_norm_passes_run_on_the_batchers_thread(app, monkeypatch):
    """All model work goes through the Batcher: a heads-off translation and a norm pass never run on the
    handler's thread, beside another pass on the same cores."""

    result = app.page.on_translate("x y z", "beam", 2, app.explorer.models.default_model, 0.6)[app.page.states.result]
    tr, seen = app.explorer.models.default_translator, []
    for name in ("translate", "attention_for"):
        def spy(*args, real=getattr(tr, name), name=name, **kwargs):
            seen.append((name, threading.current_thread().name))
            return real(*args, **kwargs)
        monkeypatch.setattr(tr, name, spy)
    app.page.on_rerun(result, Event(off=[["decoder", 0, 1]], measure="norm"))
    assert {name for name, _ in seen} == {"translate", "attention_for"}
    assert {thread for _, thread in seen} == {app.explorer.models.batcher._thread.name}


@pytest.mark.parametrize("off", [[["cross", 99, 0]], [["kernel", 0, 0]], "all", [["cross", 0]], [[None, 0, 0]]])
def test_bad_heads_to_switch_off_are_a_clear_error(app, off):
    result = app.page.on_translate("a b c", "greedy", 1, app.explorer.models.default_model, 0.6)[app.page.states.result]
    with pytest.raises(gr.Error):
        app.explorer.reruns.rerun(result, off)


def test_norms_come_only_when_asked_and_rows_are_shares(app):
    result = app.page.on_translate("h e l l o", "beam", 2, app.explorer.models.default_model, 0.6)[app.page.states.result]
    payload = app.page.show_result(result)[app.page.attention.view]
    assert "norm" not in payload["kinds"]["encoder"] and payload["measures"] == ["weight"]
    out = app.page.on_rerun(result, Event(off=[["decoder", 0, 0]], measure="norm"))
    ablated, payload = values(app, out, "states.result", "attention.view")
    assert payload["measures"] == ["weight", "norm"]
    norms = decode_attention(payload, "norm")
    assert norms.measure == "norm" and norms.encoder.shape == ablated.attention.encoder.shape
    sums = norms.cross.sum(-1)
    np.testing.assert_allclose(sums, 1.0, atol=1e-3)
    assert not norms.decoder[0, 0].any()  # the head switched off: no norm either
    expected = app.explorer.models.default_translator.attention_for(ablated.translation, attention_measure="norm").cross
    np.testing.assert_allclose(norms.cross, expected / expected.sum(-1, keepdims=True), atol=1e-4)
