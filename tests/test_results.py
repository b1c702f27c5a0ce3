"""A request's way in (transformer/explorer/core/results.py): `run_translation` checks its options once, caps its
work, says what it did to the text, and turns the batcher's refusals into gr.Error; `select_candidate` computes a
candidate's attention once.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from transformer.explorer.core import limits, results
from transformer.translator import DecodingOptions, load_pretrained

gr = pytest.importorskip("gradio")


@pytest.mark.parametrize("beam", [0, 11, 17, -1, 2.5, True, "5", float("nan"), [5]])
def test_a_request_with_a_bad_beam_is_refused_where_it_enters(app, beam):
    """`run_translation`, where a request enters the explorer, checks its options once (`decoding_options`, within
    the app's limits) and says what is wrong as a gr.Error."""
    tr, model = app.explorer.models.default_translator, app.explorer.models.default_model
    with pytest.raises(gr.Error, match="beam_size must be a whole number from 1 to 10"):
        results.run_translation(tr, model, "h e l l o", "beam", beam, 0.6)


def test_the_work_of_one_request_is_capped_and_the_notice_says_so(app, monkeypatch):
    """Source tokens × beam width within limits.MAX_BEAM_TOKENS: a long input at a wide beam is searched at a
    narrower beam, with a notice; a short one, and greedy, are left as asked. Page and API share the path."""
    monkeypatch.setattr(limits, "MAX_BEAM_TOKENS", 12)
    tr, model = app.explorer.models.default_translator, app.explorer.models.default_model
    long_text = "a b c d e f g h i j k"  # 11 letters + <eos>: 12 tokens, so beam 1 at most
    result, notice = results.run_translation(tr, model, long_text, "beam", 5, 0.6)
    assert result.translation.beam_size == 1 and "beam width was cut from 5 to 1" in notice
    out = app.page.on_api_translate(long_text, "beam", 4, model, 0.6)
    assert "cut from 4 to 1" in out[app.page.results.notice]
    result, notice = results.run_translation(tr, model, "a b", "beam", 4, 0.6)  # 3 tokens × 4 = 12: as asked
    assert result.translation.beam_size == 4 and "cut" not in notice
    result, notice = results.run_translation(tr, model, long_text, "greedy", 1, 0.6)
    assert result.translation.beam_size == 1 and "cut" not in notice


def test_beam_and_length_penalty_left_out_are_the_models_own(app):
    """The API's docs call them optional: None is the checkpoint's default, not an error."""
    result, _ = results.run_translation(app.explorer.models.default_translator, app.explorer.models.default_model, "a b c", "beam", None, None)
    generation = app.explorer.models.default_translator.generation
    assert (result.translation.beam_size, result.length_penalty) == (generation.num_beams, generation.length_penalty)
    for bad in (-0.5, float("inf"), "0.6", 1e9):
        with pytest.raises(gr.Error, match="length_penalty must be a finite number from 0 to 10"):
            results.run_translation(app.explorer.models.default_translator, "m", "a b c", "beam", 3, bad)


def test_options_are_resolved_once_and_methods_checked(app):
    tr = app.explorer.models.default_translator
    assert tr.decoding_options("beam", 5.0) == DecodingOptions("beam", 5, tr.generation.length_penalty)
    assert tr.decoding_options("greedy", 4, 1).beam_size == 1  # greedy searches one beam
    with pytest.raises(ValueError, match="method"):
        tr.decoding_options("sample", 3)
    with pytest.raises(gr.Error, match="method"):
        results.run_translation(tr, "m", "a b c", "sample", 3)


def test_run_translation_empty_and_truncated(app):
    tr = app.explorer.models.default_translator
    for empty in ("", "   \n", None):
        with pytest.raises(gr.Error, match="no sentence to translate yet"):
            results.run_translation(tr, "m", empty, "beam", 3)
    long = " ".join("abcdefghij"[i % 10] for i in range(tr.max_source_tokens + 20))
    result, notice = results.run_translation(tr, "m", long, "greedy", 1)
    assert result.translation.truncated and f"limit of {tr.max_source_tokens} tokens" in notice
    result, notice = results.run_translation(tr, "m", "a " * (limits.MAX_INPUT_CHARS + 10), "greedy", 1)
    assert f"first {limits.MAX_INPUT_CHARS} characters" in notice and len(result.source) == limits.MAX_INPUT_CHARS


def test_run_translation_says_how_it_read_all_caps_input(app):
    tr = app.explorer.models.default_translator  # a toy model: no truecase model, so ALL-CAPS input is read in lower case
    assert tr.truecaser is None
    shouted, notice = results.run_translation(tr, "m", "THE DOG IS SLEEPING.", "greedy", 1)
    quiet, quiet_notice = results.run_translation(tr, "m", "the dog is sleeping.", "greedy", 1)
    assert "Read as “the dog is sleeping.”" in notice and "Read as" not in quiet_notice
    assert shouted.translation.text == quiet.translation.text
    assert shouted.translation.src_tokens == quiet.translation.src_tokens


def test_run_translation_lists_the_placeholders_the_model_read():
    tr = load_pretrained(Path(__file__).resolve().parents[1] / "checkpoints" / "en-de")
    result, notice = results.run_translation(tr, "en-de", "My name is Wairimu and I was born in 1987.", "beam", 5)
    translation = result.translation
    assert "⟨1⟩ Wairimu, ⟨2⟩ 1987" in notice and translation.entities == ("Wairimu", "1987")
    assert "⟨1⟩" in translation.src_tokens and "⟨2⟩" in translation.src_tokens  # what the maps show
    assert "Wairimu" in translation.text and "1987" in translation.text  # what the translation says


def test_select_candidate_uses_attention_for_and_caches(app, monkeypatch):
    tr = app.explorer.models.default_translator
    result, _ = results.run_translation(tr, "m", "h e l l o", "beam", 4)
    n = len(result.translation.candidates)
    assert n >= 2
    calls = []
    original = tr.attention_for
    monkeypatch.setattr(tr, "translate", lambda *a, **k: pytest.fail("must not re-run decoding"))
    monkeypatch.setattr(tr, "attention_for", lambda r, candidate=0: calls.append(candidate) or original(r, candidate))
    results.select_candidate(tr, result, 1)
    results.select_candidate(tr, result, 0)
    results.select_candidate(tr, result, 1)
    assert calls == [1] and result.candidate == 1
    assert result.attention.tgt_out_tokens == result.translation.candidates[1].tokens
    with pytest.raises(gr.Error):
        results.select_candidate(tr, result, n)


def test_a_busy_batcher_is_a_clear_error_not_a_hang(app):
    from transformer.serving.batching import BatcherBusy

    def busy(*args, **kwargs):
        raise BatcherBusy("The translator is busy: 64 requests are already waiting. Please try again in a few seconds.")

    with pytest.raises(gr.Error, match="busy.*try again"):
        results.run_translation(app.explorer.models.default_translator, app.explorer.models.default_model, "h e l l o", "beam", 3, translate=busy)
