"""The public API: `load_pretrained(...).translate(...)`, its attention capture, step records and input checks."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from transformer.quantize import FusedQKVAttention, RowBlockLinear, RowInt8Linear
from transformer.translator import load_pretrained

FLAGSHIP = Path(__file__).resolve().parents[1] / "checkpoints" / "multi30k-en-de"
# Our own sentences, never Multi30k text.
SENTENCES = ["A girl in a yellow coat feeds the ducks.", "Three boys play football on the beach."]


@pytest.fixture(scope="module")
def tr():
    return load_pretrained(FLAGSHIP)


def reference_attention(tr, src_ids: list[int], out_ids: list[int]):
    """The model's own teacher-forced forward pass over the whole sequence, weights on."""
    in_ids = [tr.model.config.bos_id] + out_ids[:-1]
    with torch.inference_mode():
        out = tr.model(torch.tensor([src_ids]), torch.tensor([in_ids]), output_attentions=True)
    return out, in_ids


@pytest.mark.parametrize("candidate", [0, 3])
def test_attention_equals_the_models_teacher_forced_pass(tr, candidate):
    r = tr.translate(SENTENCES[0], method="beam", beam_size=4, output_attentions=True)
    att = r.attention if candidate == 0 else tr.attention_for(r, candidate=candidate)
    cand = r.candidates[candidate]
    out, in_ids = reference_attention(tr, r.src_ids, cand.ids)
    L, H = tr.model.config.n_decoder_layers, tr.model.config.n_heads
    S, T = len(r.src_ids), len(cand.ids)
    assert att.encoder.shape == (L, H, S, S) and att.decoder.shape == (L, H, T, T) and att.cross.shape == (L, H, T, S)
    assert att.encoder.dtype == att.decoder.dtype == att.cross.dtype == np.float32
    for ours, theirs in ((att.encoder, out.attention.encoder), (att.decoder, out.attention.decoder),
                         (att.cross, out.attention.cross)):
        np.testing.assert_allclose(ours, torch.stack([w[0] for w in theirs]).numpy(), atol=1e-5)
    assert np.allclose(att.cross.sum(-1), 1.0, atol=1e-5)
    assert np.all(np.triu(att.decoder, k=1) == 0)  # no query sees a later position
    assert att.src_tokens == r.src_tokens and att.tgt_out_tokens == cand.tokens
    assert att.tgt_in_tokens == tr.tokenizer.ids_to_tokens(in_ids) and att.tgt_in_tokens[0] == "<bos>"
    # Step probabilities are the reference pass's softmax at the chosen tokens.
    probs = out.logits[0].softmax(-1)
    assert [s.probability for s in att.steps] == pytest.approx([float(probs[t, i]) for t, i in enumerate(cand.ids)],
                                                                abs=1e-5)


def test_steps_add_up_to_the_search_score_and_greedy_picks_the_top_token(tr):
    r = tr.translate(SENTENCES[1], method="greedy", output_attentions=True, top_k=3)
    eos = tr.tokenizer.ids_to_tokens([tr.model.config.eos_id])[0]
    assert [s.token for s in r.steps] == r.tgt_tokens and r.tgt_tokens[-1] == eos
    assert sum(math.log(s.probability) for s in r.steps) == pytest.approx(r.log_prob, abs=1e-3)
    for s in r.steps:
        assert len(s.top_k) == 3
        assert [p for _, p in s.top_k] == sorted((p for _, p in s.top_k), reverse=True)
        assert s.top_k[0] == (s.token, pytest.approx(s.probability, abs=1e-6))


def test_greedy_is_scored_like_a_beam_of_one(tr):
    for alpha in (0.0, 0.6, 1.0):
        greedy = tr.translate(SENTENCES[0], method="greedy", length_penalty=alpha, output_attentions=False)
        beam1 = tr.translate(SENTENCES[0], method="beam", beam_size=1, length_penalty=alpha, output_attentions=False)
        assert greedy.tgt_tokens == beam1.tgt_tokens
        assert greedy.score == pytest.approx(beam1.score, abs=1e-5)
        assert greedy.score == pytest.approx(greedy.log_prob / ((5 + len(greedy.tgt_tokens)) / 6) ** alpha)


def test_beam_candidates_are_ranked_and_their_scores_match_the_teacher_forced_pass(tr):
    r = tr.translate(SENTENCES[0], method="beam", beam_size=5, length_penalty=0.6, output_attentions=False)
    assert r.text == r.candidates[0].text and len(r.candidates) == 5
    assert [c.score for c in r.candidates] == sorted((c.score for c in r.candidates), reverse=True)
    for c in r.candidates:
        out, _ = reference_attention(tr, r.src_ids, c.ids)
        log_probs = out.logits[0].log_softmax(-1)
        assert sum(float(log_probs[t, i]) for t, i in enumerate(c.ids)) == pytest.approx(c.log_prob, abs=1e-3)


@pytest.mark.parametrize("method,beam", [("greedy", 1), ("beam", 3)])
def test_attention_capture_does_not_change_the_translation(tr, method, beam):
    for sentence in SENTENCES:
        with_att = tr.translate(sentence, method=method, beam_size=beam, output_attentions=True)
        without = tr.translate(sentence, method=method, beam_size=beam, output_attentions=False)
        assert without.attention is None and without.steps == []
        assert [c.ids for c in with_att.candidates] == [c.ids for c in without.candidates]
    assert tr.translate_batch(SENTENCES + ["  "], method=method, beam_size=beam) == [
        tr.translate(s, method=method, beam_size=beam, output_attentions=False).text for s in SENTENCES] + [""]


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_text_is_a_clear_error(tr, text):
    with pytest.raises(ValueError, match="empty"):
        tr.translate(text)


@pytest.mark.parametrize("options,match", [
    (dict(beam_size=0), "beam_size"), (dict(beam_size=17), "beam_size"), (dict(beam_size=True), "beam_size"),
    (dict(beam_size="5"), "beam_size"), (dict(method="sample"), "method"),
    (dict(length_penalty=float("nan")), "length_penalty"), (dict(length_penalty=-1.0), "length_penalty"),
    (dict(max_len=0), "max_len"),
])
def test_bad_options_are_clear_errors(tr, options, match):
    with pytest.raises(ValueError, match=match):
        tr.translate(SENTENCES[0], **options)


def test_greedy_ignores_beam_size_and_max_len_caps_the_output(tr):
    assert tr.translate(SENTENCES[0], method="greedy", beam_size=16).beam_size == 1
    r = tr.translate(SENTENCES[0], method="beam", beam_size=2, max_len=3)
    assert all(len(c.ids) <= 3 for c in r.candidates) and r.attention.decoder.shape[-1] <= 3


def test_over_long_text_is_truncated_not_a_crash(tr):
    r = tr.translate("the dog runs " * 400, method="beam", beam_size=2)
    assert r.truncated and len(r.src_ids) == tr.model.config.max_len
    assert r.attention.encoder.shape[-1] == tr.model.config.max_len
    assert not tr.translate(SENTENCES[0]).truncated


@pytest.mark.parametrize("text", ["Ein Café 🚲 in Zürich — naïve 日本語!", "<script>alert('x')</script> & <b>bold</b>"])
def test_unusual_characters_translate_without_error(tr, text):
    r = tr.translate(text, method="greedy")
    assert r.text.strip() and len(r.attention.src_tokens) == len(r.src_ids)


def test_attention_for_rejects_a_missing_candidate(tr):
    r = tr.translate(SENTENCES[0], method="beam", beam_size=2, output_attentions=False)
    with pytest.raises(ValueError, match="candidate"):
        tr.attention_for(r, candidate=len(r.candidates))


BATCH = ["Dogs bark at the postman.", "An old woman with a red hat is selling apples at the market.", "A boy jumps into the lake."]


@pytest.mark.parametrize("method,beam,alpha", [("beam", 4, 0.6), ("greedy", 1, 0.6), ("beam", 3, 1.8)])
def test_a_padded_batch_gives_each_sentence_what_it_gets_alone(tr, method, beam, alpha):
    batched = tr.translate_sources([tr.source(t) for t in BATCH], tr.decoding_options(method, beam, alpha), top_k=3)
    for text, b in zip(BATCH, batched, strict=True):
        alone = tr.translate(text, method=method, beam_size=beam, length_penalty=alpha, top_k=3)
        assert [c.ids for c in b.candidates] == [c.ids for c in alone.candidates]
        assert [c.score for c in b.candidates] == pytest.approx([c.score for c in alone.candidates], abs=1e-4)
        assert (b.src_ids, b.model_input, b.beam_size) == (alone.src_ids, alone.model_input, alone.beam_size)
        for kind in ("encoder", "decoder", "cross"):  # cut to the sentence's own tokens: no padding in a map
            ours, theirs = getattr(b.attention, kind), getattr(alone.attention, kind)
            assert ours.shape == theirs.shape and ours.flags.c_contiguous
            np.testing.assert_allclose(ours, theirs, atol=1e-5)
        assert np.allclose(b.attention.cross.sum(-1), 1.0, atol=1e-5)
        assert [(s.token, [t for t, _ in s.top_k]) for s in b.steps] == [(s.token, [t for t, _ in s.top_k])
                                                                       for s in alone.steps]
        assert [s.probability for s in b.steps] == pytest.approx([s.probability for s in alone.steps], abs=1e-5)


@pytest.fixture(scope="module")
def tr8():
    return load_pretrained(FLAGSHIP, quantize="int8")


def test_int8_searches_with_int8_decoder_weights_and_draws_float32_attention(tr, tr8):
    assert (tr.precision, tr8.precision) == ("fp32", "int8")
    linears = sum(isinstance(m, torch.nn.Linear) for m in tr.model.decoder.modules()) + 1  # + the output projection
    fused = [m for m in tr8.search_model.decoder.modules() if isinstance(m, FusedQKVAttention)]
    assert len(fused) == tr.model.config.n_decoder_layers  # self-attention's q, k, v: one int8 product
    assert sum(isinstance(m, RowInt8Linear) for m in tr8.search_model.modules()) == linears + len(fused)
    assert sum(isinstance(m, RowBlockLinear) for m in tr.search_model.modules()) == linears  # float32, shared
    assert tr.search_model.generator.weight is tr.model.generator.weight
    assert tr8.search_model.encoder is tr8.model.encoder  # shared, float32
    assert not any(isinstance(m, RowInt8Linear) for m in tr8.model.modules())
    for sentence in SENTENCES:
        r8 = tr8.translate(sentence, method="beam", beam_size=4)
        assert r8.text == tr.translate(sentence, method="beam", beam_size=4).text
        out, _ = reference_attention(tr, r8.src_ids, r8.candidates[0].ids)  # the float32 model's own pass
        for ours, theirs in ((r8.attention.encoder, out.attention.encoder),
                             (r8.attention.decoder, out.attention.decoder), (r8.attention.cross, out.attention.cross)):
            np.testing.assert_allclose(ours, torch.stack([w[0] for w in theirs]).numpy(), atol=1e-5)
    assert tr8.translate_batch(SENTENCES) == [tr8.translate(s, output_attentions=False).text for s in SENTENCES]


def test_unknown_precision_is_a_clear_error():
    with pytest.raises(ValueError, match="quantize"):
        load_pretrained(FLAGSHIP, quantize="int4")


def test_the_search_copy_is_called_directly_and_the_float32_model_keeps_its_hooks(tr8):
    """The search's own modules run `forward` without nn.Module's call machinery, and find their submodules as plain
    attributes; the modules it shares with the float32 model keep theirs, so a hook there (as `inside_head` sets)
    still fires."""
    own = [m for m in tr8.search_model.decoder.modules() if type(m).forward is not torch.nn.Module.forward]
    assert own and all(getattr(type(m), "_called_directly", False) for m in own)
    assert all(m.__dict__.get(name) is child for m in own for name, child in m.named_children())
    assert not any(getattr(type(m), "_called_directly", False) for m in tr8.model.modules())
    assert tr8.search_model.encoder is tr8.model.encoder and tr8.search_model.embed_dropout is not tr8.model.embed_dropout
    fired = []
    hook = tr8.model.decoder.layers[0].self_attn.q_proj.register_forward_hook(lambda *args: fired.append(True))
    try:
        tr8.translate(SENTENCES[0])  # the attention capture runs the float32 decoder
    finally:
        hook.remove()
    assert fired


@pytest.mark.parametrize("source,text,expected", [
    ("We go to the beach on Friday!", "Wir gehen am Freitag an den Strand.", "Wir gehen am Freitag an den Strand!"),
    ("Is it raining?", "Regnet es.", "Regnet es?"), ('She asked: "Why?"', 'Sie fragte: "Warum."', 'Sie fragte: "Warum?"'),
    ("Is it raining?", "Regnet es?", "Regnet es?"), ("It rains.", "Es regnet.", "Es regnet."),
    ("Wait!", "Warte...", "Warte..."), ("Why?", "Warum", "Warum"),
])
def test_a_final_exclamation_or_question_mark_survives(source, text, expected):
    from transformer.translator import with_final_mark

    assert with_final_mark(source, text) == expected


def test_the_shipped_model_keeps_the_final_mark_and_the_title_with_the_name():
    """Our own sentences: the exclamation mark the model turned into a full stop, and a title whose dot the model
    read as a sentence's end, come out right; the tokens stay the model's own."""
    tr = load_pretrained(Path(__file__).resolve().parents[1] / "checkpoints" / "en-de")
    shout = tr.translate("We are going to the beach on Friday!", output_attentions=False)
    assert shout.text.endswith("!") and shout.candidates[0].text.endswith("!")
    met = tr.translate("We met Mr. Tanaka at the station.", output_attentions=False)
    assert "Mr. Tanaka" in met.text and met.text.count(".") == 2  # the title's dot and the sentence's own
