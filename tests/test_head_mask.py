"""Switching heads off (`HeadMask`, `translate(..., head_mask=...)`) and Kobayashi et al.'s norms ‖α f(x)‖.

Every check is against something computed by hand from the weights of a small model: the masked head's
slice zeroed before the output projection, the norms from the value vectors and the output projection's
columns of each head.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import Tensor

from transformer.decoding import beam_search, greedy_decode
from transformer.kv_cache import KVCache
from transformer.model import HeadMask, causal_mask
from transformer.translator import load_pretrained

TOY = Path(__file__).resolve().parents[1] / "checkpoints" / "toy-reverse"


def batch() -> tuple[Tensor, Tensor]:
    src = torch.tensor([[5, 9, 7, 12, 3, 0], [4, 6, 8, 10, 11, 3]])
    tgt_in = torch.tensor([[2, 7, 12, 9, 0], [2, 13, 11, 10, 8]])
    return src, tgt_in


def ones(model) -> HeadMask:
    cfg = model.config
    return HeadMask(torch.ones(cfg.n_encoder_layers, cfg.n_heads), torch.ones(cfg.n_decoder_layers, cfg.n_heads),
                    torch.ones(cfg.n_decoder_layers, cfg.n_heads))


def one_off(model, kind: str, layer: int, head: int) -> HeadMask:
    mask = ones(model)
    getattr(mask, kind)[layer, head] = 0.0
    return mask


def attention_module(model, kind: str, layer: int):
    if kind == "encoder":
        return model.encoder.layers[layer].self_attn
    return model.decoder.layers[layer].self_attn if kind == "decoder" else model.decoder.layers[layer].cross_attn


# ---------------------------------------------------------------------------- all ones: nothing changes, bit for bit

@pytest.mark.parametrize("measure", [None, "weight", "norm"])
def test_all_ones_mask_changes_nothing_bit_for_bit(make_model, measure):
    model = make_model(n_encoder_layers=2, n_decoder_layers=2)
    src, tgt_in = batch()
    asked = dict(output_attentions=measure is not None, attention_measure=measure or "weight")
    plain = model(src, tgt_in, **asked)
    masked = model(src, tgt_in, **asked, head_mask=ones(model))
    assert torch.equal(plain.logits, masked.logits)
    if measure is None:
        assert plain.attention is None and masked.attention is None
        return
    for a, b in zip(plain.attention.encoder + plain.attention.decoder + plain.attention.cross,
                    masked.attention.encoder + masked.attention.decoder + masked.attention.cross, strict=True):
        assert torch.equal(a, b)


def test_all_ones_mask_leaves_greedy_and_beam_search_as_they_are(make_model):
    model = make_model(n_encoder_layers=2, n_decoder_layers=2)
    src, _ = batch()
    masked = greedy_decode(model, src, max_len=8, head_mask=ones(model)).hypotheses
    for a, b in zip(greedy_decode(model, src, max_len=8).hypotheses, masked, strict=True):
        assert a.tokens == b.tokens and a.log_prob == b.log_prob
    plain = beam_search(model, src, beam_size=3, max_len=8).hypotheses
    masked = beam_search(model, src, beam_size=3, max_len=8, head_mask=ones(model)).hypotheses
    assert [[(h.tokens, h.score) for h in n] for n in plain] == [[(h.tokens, h.score) for h in n] for n in masked]


# ---------------------------------------------------------------------------- a masked head = its slice zeroed by hand

def by_hand(mha, x: Tensor, context: Tensor, off: int) -> tuple[Tensor, Tensor]:
    """Multi-head attention written out, with head `off`'s slice of the concatenated heads zeroed."""
    H, d_k = mha.n_heads, mha.d_k
    q = (x @ mha.q_proj.weight.T + mha.q_proj.bias).view(*x.shape[:2], H, d_k).transpose(1, 2)
    k = (context @ mha.k_proj.weight.T + mha.k_proj.bias).view(*context.shape[:2], H, d_k).transpose(1, 2)
    v = (context @ mha.v_proj.weight.T + mha.v_proj.bias).view(*context.shape[:2], H, d_k).transpose(1, 2)
    alpha = (q @ k.transpose(-2, -1) / math.sqrt(d_k)).softmax(-1)
    heads = (alpha @ v).transpose(1, 2).reshape(*x.shape[:2], H * d_k)  # (B, T, H * d_k)
    heads[..., off * d_k:(off + 1) * d_k] = 0.0
    return heads @ mha.out_proj.weight.T + mha.out_proj.bias, alpha


@pytest.mark.parametrize("output_attentions", [False, True])
def test_masked_head_equals_its_slice_zeroed_before_the_output_projection(make_model, output_attentions):
    model = make_model()
    mha = model.encoder.layers[0].self_attn
    torch.manual_seed(3)
    x, context = torch.randn(2, 5, 32), torch.randn(2, 7, 32)
    with torch.no_grad():
        expected, alpha = by_hand(mha, x, context, off=2)
        mask = torch.tensor([1.0, 1.0, 0.0, 1.0]).view(1, 4, 1, 1)
        out, weights = mha(x, context, None, output_attentions, head_mask=mask)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-5)
    if output_attentions:  # the returned map of the masked head is zero, the others are the plain weights
        assert torch.equal(weights[:, 2], torch.zeros_like(weights[:, 2]))
        torch.testing.assert_close(weights[:, [0, 1, 3]], alpha[:, [0, 1, 3]], rtol=0, atol=1e-6)


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_model_with_a_head_off_equals_the_model_with_that_slice_zeroed_by_a_hook(make_model, kind):
    model = make_model(n_encoder_layers=2, n_decoder_layers=2)
    src, tgt_in = batch()
    layer, head, d_k = 1, 3, model.config.d_k

    def zero_slice(module, args):
        x = args[0].clone()
        x[..., head * d_k:(head + 1) * d_k] = 0.0
        return (x,)

    with torch.no_grad():
        masked = model(src, tgt_in, head_mask=one_off(model, kind, layer, head)).logits
        plain = model(src, tgt_in).logits
        hook = attention_module(model, kind, layer).out_proj.register_forward_pre_hook(zero_slice)
        try:
            hooked = model(src, tgt_in).logits
        finally:
            hook.remove()
    assert (masked - plain).abs().max() > 1e-4  # the head mattered
    torch.testing.assert_close(masked, hooked, rtol=0, atol=1e-5)


# ---------------------------------------------------------------------------- cached and uncached paths agree

@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_cached_decoding_honours_the_mask_like_the_full_pass(make_model, kind):
    model = make_model(n_decoder_layers=2)
    mask = one_off(model, kind, 0, 1)
    src, tgt_in = batch()
    tgt_in = tgt_in.clamp(min=4)
    tgt_in[:, 0] = 2
    src_mask, tgt_mask = model.make_masks(src, tgt_in)
    with torch.no_grad():
        memory, _ = model.encode(src, src_mask, head_mask=mask)
        full, _, _ = model.decode(tgt_in, memory, src_mask, tgt_mask, head_mask=mask)
        unmasked, _, _ = model.decode(tgt_in, model.encode(src, src_mask)[0], src_mask, tgt_mask)
        cache, steps = KVCache.empty(2), []
        for t in range(tgt_in.size(1)):
            hidden, _, _ = model.decode(tgt_in[:, t:t + 1], memory, src_mask, None, cache, head_mask=mask)
            steps.append(hidden)
    assert (full - unmasked).abs().max() > 1e-4
    torch.testing.assert_close(torch.cat(steps, 1), full, rtol=0, atol=1e-5)


def test_greedy_and_beam_search_with_a_mask_match_the_teacher_forced_masked_pass(make_model):
    model = make_model(n_encoder_layers=2, n_decoder_layers=2)
    mask = one_off(model, "cross", 1, 0)
    mask.encoder[0, 2] = 0.0
    src = torch.tensor([[5, 9, 7, 12, 3]])
    for hyp in greedy_decode(model, src, max_len=6, head_mask=mask).hypotheses + beam_search(
            model, src, beam_size=3, max_len=6, head_mask=mask).hypotheses[0]:
        tgt_in = torch.tensor([[2] + hyp.tokens[:-1]])
        with torch.no_grad():
            log_probs = model(src, tgt_in, head_mask=mask).logits.log_softmax(-1)[0]
        assert sum(float(log_probs[t, i]) for t, i in enumerate(hyp.tokens)) == pytest.approx(hyp.log_prob, abs=1e-4)


def test_per_example_masks_equal_one_sentence_at_a_time(make_model):
    model = make_model(n_encoder_layers=2, n_decoder_layers=2)
    src, _ = batch()
    masks = [one_off(model, "encoder", 0, 1), one_off(model, "cross", 1, 2)]
    stacked = HeadMask(*(torch.stack([getattr(m, k) for m in masks]) for k in HeadMask.KINDS))
    together = beam_search(model, src, beam_size=3, max_len=7, head_mask=stacked).hypotheses
    for b in range(2):
        alone = beam_search(model, src[b:b + 1, :(src[b] != 0).sum()], beam_size=3, max_len=7,
                            head_mask=masks[b]).hypotheses
        assert [h.tokens for h in together[b]] == [h.tokens for h in alone[0]]


def test_a_mask_of_the_wrong_shape_is_a_clear_error(make_model):
    model = make_model(n_encoder_layers=2)
    src, tgt_in = batch()
    with pytest.raises(ValueError, match=r"head_mask.encoder must be \(2, 4\)"):
        model(src, tgt_in, head_mask=HeadMask(encoder=torch.ones(1, 4)))


# ---------------------------------------------------------------------------- the translator

@pytest.fixture(scope="module")
def toy():
    return load_pretrained(TOY)


def test_translate_with_a_head_mask(toy):
    cfg = toy.model.config
    plain = toy.translate("a b c d e", beam_size=3)
    same = toy.translate("a b c d e", beam_size=3, head_mask={"cross": np.ones((cfg.n_decoder_layers, cfg.n_heads))})
    assert same.text == plain.text and [c.score for c in same.candidates] == [c.score for c in plain.candidates]
    np.testing.assert_array_equal(same.attention.cross, plain.attention.cross)
    off = np.ones((cfg.n_decoder_layers, cfg.n_heads))
    off[:, :] = 0.0  # every cross-attention head off: the decoder no longer sees the source
    blind = toy.translate("a b c d e", beam_size=3, head_mask={"cross": off})
    assert blind.head_mask is not None and int((blind.head_mask.cross == 0).sum()) == off.size
    assert not blind.attention.cross.any()  # switched-off heads show no attention
    again = toy.attention_for(blind, candidate=len(blind.candidates) - 1)  # the result's mask is kept
    assert not again.cross.any()
    assert toy.translate("e d c b a", beam_size=3, head_mask={"cross": off}).text == blind.text  # source unseen


@pytest.mark.parametrize("mask, match", [
    ({"crosss": np.ones((2, 4))}, "keys from"),
    ({"cross": np.ones((3, 4))}, r"must be \(2, 4\)"),
    ({"cross": np.full((2, 4), 0.5)}, "of 0 and 1"),
    ("all", "HeadMask or a dict"),
])
def test_translate_rejects_bad_head_masks(toy, mask, match):
    with pytest.raises(ValueError, match=match):
        toy.translate("a b c", head_mask=mask)


# ---------------------------------------------------------------------------- Kobayashi et al.'s norms ‖α f(x)‖

def norms_by_hand(mha, x: Tensor, context: Tensor) -> Tensor:
    """‖α_ij f_h(x_j)‖ with f_h(x_j) = (x_j W_V^h + b_V^h) W_O^h, one vector at a time."""
    H, d_k = mha.n_heads, mha.d_k
    _, alpha = by_hand(mha, x, context, off=-1)  # off=-1 zeroes nothing that matters: alpha only
    v = context @ mha.v_proj.weight.T + mha.v_proj.bias  # (B, T_k, d_model)
    B, Tq, Tk = alpha.shape[0], alpha.shape[2], alpha.shape[3]
    out = torch.zeros(B, H, Tq, Tk)
    for b in range(B):
        for h in range(H):
            w_o = mha.out_proj.weight[:, h * d_k:(h + 1) * d_k]  # (d_model, d_k): head h's columns
            for j in range(Tk):
                f = w_o @ v[b, j, h * d_k:(h + 1) * d_k]
                for i in range(Tq):
                    out[b, h, i, j] = torch.linalg.vector_norm(alpha[b, h, i, j] * f)
    return out


def test_norms_match_a_hand_computation(make_model):
    model = make_model(n_encoder_layers=1, n_decoder_layers=1)
    src, tgt_in = batch()
    src, tgt_in = src[1:], tgt_in[1:]  # no padding
    with torch.no_grad():
        out = model(src, tgt_in, output_attentions=True, attention_measure="norm")
        x = model._embed(model.src_embed, src)
        h = model.encoder.layers[0].norm1(x)
        expected = norms_by_hand(model.encoder.layers[0].self_attn, h, h)
        weights = model(src, tgt_in, output_attentions=True).attention
    torch.testing.assert_close(out.attention.encoder[0], expected, rtol=1e-4, atol=1e-5)
    for norm, alpha in ((out.attention.decoder[0], weights.decoder[0]), (out.attention.cross[0], weights.cross[0])):
        assert norm.shape == alpha.shape and bool(((norm > 0) == (alpha > 0)).all())  # zero exactly where α is


def test_norms_of_a_masked_head_are_zero_and_the_translator_returns_them_on_request(toy):
    cfg = toy.model.config
    off = np.ones((cfg.n_encoder_layers, cfg.n_heads))
    off[1, 2] = 0.0
    r = toy.translate("a b c d", beam_size=2, head_mask={"encoder": off})
    assert r.attention.measure == "weight"
    norms = toy.attention_for(r, attention_measure="norm")
    assert norms.measure == "norm" and norms.encoder.shape == r.attention.encoder.shape
    assert not norms.encoder[1, 2].any() and norms.encoder[0].sum() > 0
    assert [s.token for s in norms.steps] == [s.token for s in r.attention.steps]
    with pytest.raises(ValueError, match="measure"):
        toy.attention_for(r, attention_measure="value")


def test_causal_mask_still_applies_to_norms(make_model):
    model = make_model()
    _, tgt_in = batch()
    src = torch.tensor([[5, 9, 3]])
    with torch.no_grad():
        memory, _ = model.encode(src, None)
        _, self_n, _ = model.decode(tgt_in[1:], memory, None, causal_mask(5), output_attentions=True,
                                   attention_measure="norm")
    norms = self_n[0][0]  # (H, T, T)
    lower = torch.ones(5, 5, dtype=torch.bool).tril()
    assert not norms[:, ~lower].any() and bool((norms[:, lower] > 0).all())
