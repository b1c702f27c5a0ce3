"""What a request may ask (transformer/explorer/core/checks.py): a ValueError shown to the user as a plain gr.Error,
the browser's view state and event data read safely, the beam cut to the work budget, and the heads to switch off
read and checked. The toy model on checkpoints/toy-reverse where a translator is needed (its source ids only)."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import gradio as gr
import numpy as np
import pytest

from transformer.explorer.core import checks, limits
from transformer.translator import DecodingOptions, Source, load_pretrained

TOY = Path(__file__).resolve().parents[1] / "checkpoints" / "toy-reverse"


def test_a_value_error_becomes_the_plain_error_the_page_shows():
    with pytest.raises(gr.Error) as raised, checks.user_errors("Cannot translate"):
        raise ValueError("beam_size must be a whole number from 1 to 10")
    assert raised.value.message == "beam_size must be a whole number from 1 to 10"
    assert raised.value.title == "Cannot translate" and raised.value.print_exception is False
    assert raised.value.__cause__ is None and raised.value.__suppress_context__  # no traceback of ours behind it
    with pytest.raises(KeyError), checks.user_errors("x"):  # anything else is not the user's to read
        raise KeyError("bug")


def test_the_view_state_is_read_only_as_a_json_object_within_its_size():
    assert checks.view_data('{"kind": "cross", "layer": 1}') == {"kind": "cross", "layer": 1}
    for unreadable in (None, "", "not json", "[1, 2]", '"text"', "[" * 5000 + "]" * 5000, 42,
                       json.dumps({"x": "a" * limits.MAX_VIEW_CHARS})):
        assert checks.view_data(unreadable) == {}, str(unreadable)[:40]


def test_event_data_is_its_dict_or_nothing():
    assert checks.event_data(gr.EventData(None, {"node": 3})) == {"node": 3}
    assert checks.event_data(gr.EventData(None, [3])) == {} and checks.event_data(None) == {}


def test_the_beam_is_cut_to_the_work_budget_and_greedy_never(monkeypatch):
    monkeypatch.setattr(limits, "MAX_BEAM_TOKENS", 12)
    long, short = Source(list(range(11)) + [3], False, "long"), Source([5, 6, 3], False, "short")
    beam = DecodingOptions("beam", 5, 0.6)
    cut, notice = checks.budgeted_beam(long, beam)
    assert cut == replace(beam, beam_size=1) and "cut from 5 to 1 for this input of 12 tokens" in notice
    assert checks.budgeted_beam(short, replace(beam, beam_size=4)) == (replace(beam, beam_size=4), "")  # 3 × 4 = 12
    assert checks.budgeted_beam(long, DecodingOptions("greedy", 1, 0.6)) == (DecodingOptions("greedy", 1, 0.6), "")


def test_heads_to_switch_off_are_read_sorted_and_checked_against_the_model():
    assert checks.read_off([["cross", 1, 0], ["encoder", 0, 2], ["cross", 0, 3], ["cross", 1, 0]]) == (
        ("encoder", 0, 2), ("cross", 0, 3), ("cross", 1, 0))  # the page's kind order, each head once
    for bad in ("all", [["cross", 0]], [["kernel", 0, 0]], [["cross", True, 0]], [["cross", 0, 1.5]],
                [["cross", 0, 0]] * 1025):
        with pytest.raises(gr.Error, match="must be a list of"):
            checks.read_off(bad)
    tr = load_pretrained(TOY)
    cfg = tr.model.config
    masks = checks.head_mask_of([("cross", 0, 1), ("encoder", cfg.n_encoder_layers - 1, 0)], tr)
    assert {k: m.shape for k, m in masks.items()} == {"encoder": (cfg.n_encoder_layers, cfg.n_heads),
                                                       "decoder": (cfg.n_decoder_layers, cfg.n_heads),
                                                       "cross": (cfg.n_decoder_layers, cfg.n_heads)}
    assert int(sum((m == 0).sum() for m in masks.values())) == 2
    assert masks["cross"][0, 1] == 0 and masks["encoder"][-1, 0] == 0 and np.all(masks["decoder"] == 1)
    for missing in (("cross", cfg.n_decoder_layers, 0), ("decoder", 0, cfg.n_heads), ("cross", -1, 0)):
        with pytest.raises(gr.Error, match="No head"):
            checks.head_mask_of([missing], tr)
