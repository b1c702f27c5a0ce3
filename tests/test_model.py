"""The from-scratch Transformer: equivalence with torch.nn.Transformer, masking, attention maps, caching."""
from __future__ import annotations

import logging
import warnings

import pytest
import torch
from torch import Tensor, nn

from transformer.kv_cache import KVCache
from transformer.model import AttentionMaps, Seq2SeqOutput, Transformer, causal_mask, padding_mask

PAD = 0


def batch_with_padding() -> tuple[Tensor, Tensor]:
    """Three right-padded sources and targets (pad id 0), of different lengths; ids avoid the specials."""
    src = torch.tensor([
        [5, 9, 7, 12, 3, 0, 0],
        [4, 6, 8, 10, 11, 13, 3],
        [15, 3, 0, 0, 0, 0, 0],
    ])
    tgt_in = torch.tensor([
        [2, 7, 12, 9, 0, 0],
        [2, 13, 11, 10, 8, 6],
        [2, 15, 14, 0, 0, 0],
    ])
    return src, tgt_in


# ---------------------------------------------------------------------------- equivalence with torch.nn.Transformer

def _copy_attention(ours, ref: nn.MultiheadAttention) -> None:
    ref.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
    ref.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
    ref.out_proj.weight.copy_(ours.out_proj.weight)
    ref.out_proj.bias.copy_(ours.out_proj.bias)


def _copy_linear_norm(src: nn.Module, dst: nn.Module) -> None:
    dst.weight.copy_(src.weight)
    dst.bias.copy_(src.bias)


def reference_from(model: Transformer) -> nn.Transformer:
    """An nn.Transformer configured like `model`, holding the same weights."""
    cfg = model.config
    with warnings.catch_warnings():  # "enable_nested_tensor is True, but ... norm_first was True"
        warnings.simplefilter("ignore", UserWarning)
        ref = nn.Transformer(
            d_model=cfg.d_model, nhead=cfg.n_heads, num_encoder_layers=cfg.n_encoder_layers,
            num_decoder_layers=cfg.n_decoder_layers, dim_feedforward=cfg.d_ff, dropout=0.0,
            activation=cfg.activation, batch_first=True, norm_first=cfg.norm_first,
        )
    with torch.no_grad():
        for ours, theirs in zip(model.encoder.layers, ref.encoder.layers):
            _copy_attention(ours.self_attn, theirs.self_attn)
            for a, b in ((ours.ff.linear1, theirs.linear1), (ours.ff.linear2, theirs.linear2),
                         (ours.norm1, theirs.norm1), (ours.norm2, theirs.norm2)):
                _copy_linear_norm(a, b)
        for ours, theirs in zip(model.decoder.layers, ref.decoder.layers):
            _copy_attention(ours.self_attn, theirs.self_attn)
            _copy_attention(ours.cross_attn, theirs.multihead_attn)
            for a, b in ((ours.ff.linear1, theirs.linear1), (ours.ff.linear2, theirs.linear2),
                         (ours.norm1, theirs.norm1), (ours.norm2, theirs.norm2), (ours.norm3, theirs.norm3)):
                _copy_linear_norm(a, b)
        if cfg.norm_first:
            _copy_linear_norm(model.encoder.norm, ref.encoder.norm)
            _copy_linear_norm(model.decoder.norm, ref.decoder.norm)
        else:  # nn.Transformer always ends each stack with a LayerNorm; post-LN layers already end normalised
            ref.encoder.norm = None
            ref.decoder.norm = None
    return ref.eval()


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_matches_torch_nn_transformer(make_model, norm_first, activation):
    model = make_model(seed=1, norm_first=norm_first, activation=activation, n_encoder_layers=2,
                       n_decoder_layers=2, tie_embeddings=True)
    # Non-trivial LayerNorm affine parameters, so a mis-copied norm cannot go unnoticed.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.3 * torch.randn_like(p))
    ref = reference_from(model)
    src, tgt_in = batch_with_padding()
    src_pad, tgt_pad = src == PAD, tgt_in == PAD  # nn.Transformer: True = ignore

    with torch.no_grad():
        out = model(src, tgt_in)
        logits = out.logits
        src_mask, tgt_mask = model.make_masks(src, tgt_in)
        memory, _ = model.encode(src, src_mask)
        src_x = model._embed(model.src_embed, src)
        tgt_x = model._embed(model.tgt_embed, tgt_in)
    # Grad mode on: keeps nn.TransformerEncoder off its fused/nested-tensor fast path, which zeroes padded rows.
    ref_memory = ref.encoder(src_x, src_key_padding_mask=src_pad)
    ref_hidden = ref(
        src_x, tgt_x,
        tgt_mask=~causal_mask(tgt_in.size(1)),  # True = future, not allowed
        src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad,
    )
    with torch.no_grad():
        ref_logits = model.project(ref_hidden)

    real = ~src_pad
    memory_err = (memory - ref_memory).abs()[real].max().item()
    hidden_err = (out.hidden - ref_hidden).abs()[tgt_in != PAD].max().item()
    logits_err = (logits - ref_logits).abs().max().item()
    logging.getLogger(__name__).info("equivalence, norm_first=%s activation=%s: max |memory diff| %.3e, max |hidden "
                                     "diff| %.3e, max |logit diff| %.3e", norm_first, activation, memory_err,
                                     hidden_err, logits_err)
    assert logits.abs().max() > 0.1  # the comparison is not between two near-zero tensors
    assert memory_err <= 1e-5
    assert hidden_err <= 1e-5
    assert logits_err <= 1e-5


def test_reference_comparison_detects_a_wrong_mask(make_model):
    """Sanity check of the harness: without the causal mask the reference disagrees."""
    model = make_model(seed=1, norm_first=True)
    ref = reference_from(model)
    src, tgt_in = batch_with_padding()
    with torch.no_grad():
        logits = model(src, tgt_in).logits
        src_x, tgt_x = model._embed(model.src_embed, src), model._embed(model.tgt_embed, tgt_in)
    hidden = ref(src_x, tgt_x, src_key_padding_mask=src == PAD, tgt_key_padding_mask=tgt_in == PAD,
                 memory_key_padding_mask=src == PAD)
    with torch.no_grad():
        assert (logits - model.project(hidden)).abs().max() > 1e-3


# ---------------------------------------------------------------------------- shapes and attention maps

def test_shapes(make_model):
    model = make_model(n_encoder_layers=2, n_decoder_layers=3, n_heads=4)
    src, tgt_in = batch_with_padding()
    B, S = src.shape
    T = tgt_in.size(1)
    plain = model(src, tgt_in)
    assert isinstance(plain, Seq2SeqOutput) and plain.attention is None  # no maps unless asked for
    assert plain.logits.shape == (B, T, 16) and plain.hidden.shape == (B, T, model.config.d_model)
    hidden_only = model(src, tgt_in, project=False)  # for a loss that projects the hidden states itself
    assert hidden_only.logits is None and torch.equal(hidden_only.hidden, plain.hidden)
    out = model(src, tgt_in, output_attentions=True)
    assert isinstance(out, Seq2SeqOutput) and isinstance(out.attention, AttentionMaps)
    torch.testing.assert_close(out.logits, plain.logits, rtol=0, atol=1e-5)
    assert [w.shape for w in out.attention.encoder] == [(B, 4, S, S)] * 2
    assert [w.shape for w in out.attention.decoder] == [(B, 4, T, T)] * 3
    assert [w.shape for w in out.attention.cross] == [(B, 4, T, S)] * 3
    src_mask, tgt_mask = model.make_masks(src, tgt_in)
    assert src_mask.dtype == torch.bool and src_mask.shape == (B, 1, 1, S)
    assert tgt_mask.dtype == torch.bool and tgt_mask.shape == (B, 1, T, T)
    memory, ws = model.encode(src, src_mask)
    assert memory.shape == (B, S, 32) and ws == []
    hidden, self_ws, cross_ws = model.decode(tgt_in, memory, src_mask, tgt_mask)
    assert hidden.shape == (B, T, 32) and self_ws == [] and cross_ws == []


def test_masks_hand_computed(make_model):
    model = make_model()
    src = torch.tensor([[5, 3, 0]])
    tgt_in = torch.tensor([[2, 6, 0]])
    src_mask, tgt_mask = model.make_masks(src, tgt_in)
    assert src_mask.flatten().tolist() == [True, True, False]
    assert tgt_mask[0, 0].tolist() == [[True, False, False], [True, True, False], [True, True, False]]
    assert causal_mask(3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    assert padding_mask(torch.tensor([[0, 4]]), 0).tolist() == [[[[False, True]]]]


@pytest.mark.parametrize("norm_first", [False, True])
def test_attention_rows_sum_to_one_and_masked_keys_get_zero(make_model, norm_first):
    model = make_model(norm_first=norm_first, n_encoder_layers=2, n_decoder_layers=2)
    src, tgt_in = batch_with_padding()
    att = model(src, tgt_in, output_attentions=True).attention
    src_pad = (src == PAD)[:, None, None, :]  # (B, 1, 1, S) padded keys
    tgt_blocked = ~model.make_masks(src, tgt_in)[1]  # (B, 1, T, T): padded or future keys
    for w in att.encoder + att.decoder + att.cross:
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]), rtol=0, atol=1e-5)
        assert (w >= 0).all()
    for w in att.encoder + att.cross:
        assert (w.masked_select(src_pad.expand_as(w)) == 0).all()
        assert (w.masked_select(~src_pad.expand_as(w)) > 0).all()  # softmax gives every real key some weight
    for w in att.decoder:
        assert (w.masked_select(tgt_blocked.expand_as(w)) == 0).all()
        assert tgt_blocked.any()  # there were future and padded keys to check


def test_changing_a_future_target_token_leaves_earlier_logits_unchanged(make_model):
    model = make_model(n_decoder_layers=2)
    src = torch.tensor([[5, 9, 7, 12, 3]])
    tgt_in = torch.tensor([[2, 7, 12, 9, 6, 4]])
    base = model(src, tgt_in).logits
    for t in range(1, tgt_in.size(1)):
        changed = tgt_in.clone()
        changed[0, t] = 14 if tgt_in[0, t] != 14 else 13
        out = model(src, changed).logits
        torch.testing.assert_close(out[:, :t], base[:, :t], rtol=0, atol=1e-6)
        assert (out[:, t:] - base[:, t:]).abs().max() > 1e-4, "the changed position itself must matter"


def test_sentence_alone_equals_sentence_padded_in_batch(make_model):
    model = make_model(n_encoder_layers=2, n_decoder_layers=2)
    src, tgt_in = batch_with_padding()
    for attention in (False, True):
        batch_out = model(src, tgt_in, output_attentions=attention)
        for b in range(src.size(0)):
            s_len, t_len = int((src[b] != PAD).sum()), int((tgt_in[b] != PAD).sum())
            alone = model(src[b : b + 1, :s_len], tgt_in[b : b + 1, :t_len], output_attentions=attention)
            torch.testing.assert_close(batch_out.logits[b, :t_len], alone.logits[0], rtol=0, atol=1e-5)
            if attention:
                cross = batch_out.attention.cross[-1][b, :, :t_len, :s_len]
                torch.testing.assert_close(cross, alone.attention.cross[-1][0], rtol=0, atol=1e-5)


@pytest.mark.parametrize("activation", ["relu", "gelu", "geglu"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_fast_path_equals_weights_path(make_model, norm_first, activation):
    model = make_model(norm_first=norm_first, activation=activation, n_encoder_layers=2, n_decoder_layers=2)
    src, tgt_in = batch_with_padding()
    fast = model(src, tgt_in).logits
    slow = model(src, tgt_in, output_attentions=True).logits
    assert fast.abs().max() > 0.1
    torch.testing.assert_close(fast, slow, rtol=0, atol=1e-5)


def _tensor_attributes(model: nn.Module) -> dict[str, list[str]]:
    """Attributes of each module (outside _parameters/_buffers) that hold tensors or lists/tuples of tensors."""
    found = {}
    for name, module in model.named_modules():
        for attr, value in vars(module).items():
            items = value if isinstance(value, (list, tuple)) else [value]
            if any(isinstance(v, Tensor) for v in items):
                found.setdefault(name, []).append(attr)
    return found


def test_attention_is_returned_never_stored(make_model):
    model = make_model(n_encoder_layers=2, n_decoder_layers=2)
    before = {name: sorted(vars(m)) for name, m in model.named_modules()}
    assert _tensor_attributes(model) == {}
    src, tgt_in = batch_with_padding()
    out = model(src, tgt_in, output_attentions=True)
    assert len(out.attention.encoder) == 2
    assert _tensor_attributes(model) == {}, "attention (or other tensors) left on modules"
    assert {name: sorted(vars(m)) for name, m in model.named_modules()} == before
    plain = model(src, tgt_in, output_attentions=False)
    assert plain.attention is None
    assert _tensor_attributes(model) == {}


def test_returned_attention_keeps_gradients_only_when_asked(make_model):
    model = make_model()
    src, tgt_in = batch_with_padding()
    with torch.no_grad():
        out = model(src, tgt_in, output_attentions=True)
    assert not out.attention.cross[0].requires_grad
    out = model(src, tgt_in, output_attentions=True)
    out.attention.cross[0].sum().backward()  # the maps are part of the graph (e.g. for attribution methods)
    assert model.decoder.layers[0].cross_attn.q_proj.weight.grad is not None


def test_padding_embedding_is_zero_and_tied_weights_are_shared(make_model):
    model = make_model(tie_embeddings=True)
    assert model.src_embed.weight is model.tgt_embed.weight is model.generator.weight
    assert (model.src_embed.weight[PAD] == 0).all()
    untied = make_model(tie_embeddings=False)
    assert untied.src_embed.weight is not untied.tgt_embed.weight
    assert untied.generator.weight is not untied.tgt_embed.weight


def test_embedding_is_scaled_and_positions_added(make_model):
    model = make_model()
    ids = torch.tensor([[5, 5, 5]])
    x = model._embed(model.src_embed, ids)
    base = model.src_embed.weight[5] * 32 ** 0.5
    pe = model.positional.pe
    torch.testing.assert_close(x[0], base + pe[:3])
    assert pe[0, 0] == 0 and pe[0, 1] == 1  # sin(0), cos(0)
    torch.testing.assert_close(pe[3, 0], torch.sin(torch.tensor(3.0)))
    assert "positional.pe" not in model.state_dict()  # derived, not a weight
    with pytest.raises(ValueError, match="max_len"):
        model(torch.full((1, 65), 5), torch.tensor([[2]]))


@pytest.mark.parametrize("norm_first", [False, True])
def test_incremental_decoding_with_cache_equals_full_decode(make_model, norm_first):
    model = make_model(norm_first=norm_first, n_decoder_layers=2)
    src, tgt_in = batch_with_padding()
    tgt_in = tgt_in.clamp(min=4)  # no padding in the target: every position is a real step
    tgt_in[:, 0] = 2
    src_mask, tgt_mask = model.make_masks(src, tgt_in)
    memory, _ = model.encode(src, src_mask)
    full, _, _ = model.decode(tgt_in, memory, src_mask, tgt_mask)
    cache = KVCache.empty(2)
    steps = []
    for t in range(tgt_in.size(1)):
        hidden, _, _ = model.decode(tgt_in[:, t : t + 1], memory, src_mask, None, cache)
        steps.append(hidden)
    assert cache.length == tgt_in.size(1)
    torch.testing.assert_close(torch.cat(steps, 1), full, rtol=0, atol=1e-5)


def test_dropout_is_active_in_train_mode_only(make_model):
    model = make_model(dropout=0.3)
    src, tgt_in = batch_with_padding()
    model.train()
    a, b = model(src, tgt_in).logits, model(src, tgt_in).logits
    assert (a - b).abs().max() > 1e-3
    model.eval()
    torch.testing.assert_close(model(src, tgt_in).logits, model(src, tgt_in).logits, rtol=0, atol=0)
