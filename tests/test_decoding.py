"""Decoding: KV-cache parity, greedy vs beam 1, beam search vs brute force, batching invariance."""
from __future__ import annotations

import itertools
import math

import pytest
import torch

from transformer.config import ModelConfig
from transformer.model import pad_sequences
from transformer.decoding import (
    beam_search,
    greedy_decode,
    length_penalty_factor,
    next_token_log_probs,
)
from transformer.kv_cache import KVCache
from transformer.model import Transformer, causal_mask, padding_mask


def tiny_model(vocab: int = 12, seed: int = 0, norm_first: bool = True, **kw) -> Transformer:
    torch.manual_seed(seed)
    cfg = ModelConfig(src_vocab_size=vocab, tgt_vocab_size=vocab, d_model=32, n_heads=4, n_encoder_layers=2,
                      n_decoder_layers=2, d_ff=64, dropout=0.0, max_len=64, norm_first=norm_first, **kw)
    model = Transformer(cfg).eval()
    # Larger output weights make the random distributions peaked and varied, like a trained model's.
    with torch.no_grad():
        model.generator.weight.mul_(4.0)
    return model


def sources(vocab: int, lengths=(5, 3, 7), seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    seqs = [torch.randint(4, vocab, (n,), generator=g).tolist() + [3] for n in lengths]
    return pad_sequences(seqs, 0)


@pytest.mark.parametrize("norm_first", [True, False])
def test_cached_decoding_matches_full_recompute(norm_first):
    model = tiny_model(norm_first=norm_first)
    src = sources(12)
    tgt = torch.randint(4, 12, (src.size(0), 9))
    tgt[:, 0] = model.config.bos_id
    src_mask = padding_mask(src, 0)
    memory, _ = model.encode(src, src_mask)
    full, _, _ = model.decode(tgt, memory, src_mask, causal_mask(tgt.size(1))[None, None])
    full_logits = model.project(full)
    cache = KVCache.empty(model.config.n_decoder_layers)
    steps = [model.project(model.decode(tgt[:, t : t + 1], memory, src_mask, None, cache)[0]) for t in range(9)]
    cached_logits = torch.cat(steps, dim=1)
    assert cache.length == 9
    assert (cached_logits - full_logits).abs().max().item() <= 1e-5


def uncached_greedy(model: Transformer, src: torch.Tensor, max_len: int) -> list[list[int]]:
    """The seed implementations' decoding: recompute the whole prefix every step."""
    cfg = model.config
    src_mask = padding_mask(src, cfg.pad_id)
    memory, _ = model.encode(src, src_mask)
    outs = []
    for b in range(src.size(0)):
        ys = [cfg.bos_id]
        for t in range(max_len):
            tgt = torch.tensor([ys])
            hidden, _, _ = model.decode(tgt, memory[b : b + 1], src_mask[b : b + 1], causal_mask(len(ys))[None, None])
            token = int(next_token_log_probs(model, hidden, t, max_len).argmax(-1))
            ys.append(token)
            if token == cfg.eos_id:
                break
        outs.append(ys[1:])
    return outs


def test_cached_greedy_equals_uncached_greedy():
    model = tiny_model(vocab=20, seed=3)
    src = sources(20, lengths=(6, 2, 9, 4))
    cached = [h.tokens for h in greedy_decode(model, src, max_len=15).hypotheses]
    assert cached == uncached_greedy(model, src, max_len=15)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_width_one_is_greedy(seed):
    model = tiny_model(vocab=20, seed=seed)
    src = sources(20, lengths=(6, 2, 9, 4), seed=seed)
    greedy = greedy_decode(model, src, max_len=20).hypotheses
    beam = beam_search(model, src, beam_size=1, length_penalty=0.6, max_len=20).hypotheses
    for g, nbest in zip(greedy, beam, strict=True):
        assert nbest[0].tokens == g.tokens
        assert nbest[0].log_prob == pytest.approx(g.log_prob, abs=1e-5)


@torch.no_grad()
def brute_force(model: Transformer, src: torch.Tensor, max_len: int, alpha: float) -> tuple[list[int], float]:
    """Score every output of at most `max_len` tokens ending in <eos>; return the best."""
    cfg = model.config
    allowed = [i for i in range(cfg.tgt_vocab_size) if i not in (cfg.pad_id, cfg.bos_id, cfg.eos_id)]
    prefixes = [list(p) for n in range(max_len) for p in itertools.product(allowed, repeat=n)]
    outputs = [p + [cfg.eos_id] for p in prefixes]
    tgt_in = pad_sequences([[cfg.bos_id] + o[:-1] for o in outputs], cfg.pad_id)
    with torch.no_grad():
        src_b = src.expand(len(outputs), -1)
        src_mask, tgt_mask = model.make_masks(src_b, tgt_in)
        hidden, _, _ = model.decode(tgt_in, model.encode(src_b, src_mask)[0], src_mask, tgt_mask)
    best, best_score = None, -math.inf
    for i, out in enumerate(outputs):
        lp = 0.0
        for t, token in enumerate(out):
            lp += float(next_token_log_probs(model, hidden[i : i + 1, t : t + 1], t, max_len)[0, token])
        score = lp / length_penalty_factor(len(out), alpha)
        if score > best_score:
            best, best_score = out, score
    return best, best_score


@pytest.mark.parametrize("seed,alpha", [(0, 0.0), (1, 0.0), (2, 0.0), (3, 1.0)])
def test_wide_beam_matches_brute_force(seed, alpha):
    # Vocabulary: 4 specials + 3 words, so <eos> and 3 tokens compete; outputs up to 4 tokens.
    model = tiny_model(vocab=7, seed=seed)
    src = sources(7, lengths=(3,), seed=seed)
    max_len = 4
    expected, expected_score = brute_force(model, src, max_len, alpha)
    best = beam_search(model, src, beam_size=64, length_penalty=alpha, max_len=max_len).hypotheses[0][0]
    assert best.tokens == expected
    assert best.score == pytest.approx(expected_score, abs=1e-4)


def test_batching_does_not_change_results():
    model = tiny_model(vocab=30, seed=5)
    src = sources(30, lengths=(7, 3, 11, 5, 1), seed=9)
    batched = beam_search(model, src, beam_size=4, max_len=25).hypotheses
    batched_greedy = greedy_decode(model, src, max_len=25).hypotheses
    for b in range(src.size(0)):
        n = int((src[b] != 0).sum())
        alone = beam_search(model, src[b : b + 1, :n], beam_size=4, max_len=25).hypotheses[0]
        assert [h.tokens for h in alone] == [h.tokens for h in batched[b]]
        assert [h.score for h in alone] == pytest.approx([h.score for h in batched[b]], abs=1e-4)
        assert greedy_decode(model, src[b : b + 1, :n], max_len=25).hypotheses[0].tokens == batched_greedy[b].tokens


def test_each_sentence_of_a_batch_keeps_its_own_default_length_limit():
    # A random model rarely ends, so outputs run to the limit: source length + 50, capped at max_len 64.
    # Padded to 41 tokens, the 3-token sentence must still stop at 53 tokens, as it does alone.
    model = tiny_model(vocab=30, seed=0)
    src = sources(30, lengths=(2, 40, 9), seed=0)
    batched, batched_greedy = beam_search(model, src, beam_size=3).hypotheses, greedy_decode(model, src).hypotheses
    for b in range(src.size(0)):
        n = int((src[b] != 0).sum())
        alone = beam_search(model, src[b : b + 1, :n], beam_size=3).hypotheses[0]
        assert [h.tokens for h in alone] == [h.tokens for h in batched[b]]
        assert [h.score for h in alone] == pytest.approx([h.score for h in batched[b]], abs=1e-4)
        assert greedy_decode(model, src[b : b + 1, :n]).hypotheses[0].tokens == batched_greedy[b].tokens
    assert len(batched[0][0].tokens) == len(batched_greedy[0].tokens) == 53  # 3 + 50, not 41 + 50
    per_sentence = greedy_decode(model, src, max_len=[4, 6, 5]).hypotheses
    assert [len(h.tokens) for h in per_sentence] == [4, 6, 5] and all(h.tokens[-1] == 3 for h in per_sentence)


def test_nbest_sorted_distinct_and_scored():
    model = tiny_model(vocab=30, seed=7)
    src = sources(30, lengths=(6,), seed=2)
    nbest = beam_search(model, src, beam_size=5, length_penalty=0.6, max_len=20).hypotheses[0]
    assert 1 <= len(nbest) <= 5
    scores = [h.score for h in nbest]
    assert scores == sorted(scores, reverse=True)
    assert len({tuple(h.tokens) for h in nbest}) == len(nbest)
    for h in nbest:
        assert h.tokens[-1] == model.config.eos_id
        assert h.score == pytest.approx(h.log_prob / length_penalty_factor(len(h.tokens), 0.6))


def sentences_done_apart():
    """The shipped en-de and a batch of our sentences that are done at different steps: names and a number
    (placeholders), a head mask per sentence, and 30-token limits but for sentence 3, cut short at 6.
    -> (translator, src (5, S), head_mask, limits)."""
    from pathlib import Path

    from transformer.model import HeadMask
    from transformer.translator import load_pretrained

    tr = load_pretrained(Path(__file__).resolve().parents[1] / "checkpoints" / "en-de")
    texts = ["Hello.", "Anna Berger bought 7 apples at the market in Bremen on Friday.", "It rains.",
             "The old fisherman told the children a long story about the sea and the storm.", "Thanks!"]
    cfg = tr.model.config
    mask = torch.ones(len(texts), cfg.n_decoder_layers, cfg.n_heads)
    mask[1, 0, :3] = 0.0
    mask[3, -1, 2] = 0.0
    src = pad_sequences([tr.source(t).ids for t in texts], cfg.pad_id)
    return tr, src, HeadMask(decoder=mask, cross=mask.flip(0)), [30, 30, 30, 6, 30]


def test_greedy_rows_that_ended_leave_the_batch_and_change_no_other_row():
    """Plain greedy runs only the rows still writing (`decoding._LiveRows`); the recording search runs every row
    to the last step. On the shipped en-de's search model (row-by-row linears), with `sentences_done_apart`,
    both give every sentence the same tokens and the same log-probability bits."""
    tr, src, head_mask, limits = sentences_done_apart()
    plain = greedy_decode(tr.search_model, src, max_len=limits, head_mask=head_mask).hypotheses
    traced = greedy_decode(tr.search_model, src, max_len=limits, head_mask=head_mask, record_search=True)
    assert len({len(h.tokens) for h in plain}) > 2 and len(plain[3].tokens) == 6
    assert [(h.tokens, h.log_prob, h.score) for h in plain] == [(h.tokens, h.log_prob, h.score)
                                                                 for h in traced.hypotheses]


def test_beam_sentences_that_are_done_leave_the_batch_and_change_no_other_sentence():
    """Plain beam search drops a sentence's K rows once it is done (with its cross-attention keys, encoder
    output, mask, placeholder rule and head mask rows); the recording search keeps every row to the last step.
    On the shipped en-de's int8 search model, with `sentences_done_apart`, both give every sentence the same
    n-best: tokens, log-probability and score bits."""
    from transformer.quantize import search_model

    tr, src, head_mask, limits = sentences_done_apart()
    model = search_model(tr.model, "int8")
    done_at: list[int] = []  # how many sentences each step searched
    decode = model.decode
    model.decode = lambda tokens, *a, **k: done_at.append(tokens.size(0)) or decode(tokens, *a, **k)
    plain = beam_search(model, src, 4, 0.6, max_len=limits, n_best=4, head_mask=head_mask).hypotheses
    del model.decode
    traced = beam_search(model, src, 4, 0.6, max_len=limits, n_best=4, head_mask=head_mask, record_search=True)
    assert done_at[0] == 4 * src.size(0) and len(set(done_at)) > 2  # rows left the batch on more than one step
    assert [len(h[0].tokens) for h in plain][3] <= 6
    assert [[(h.tokens, h.log_prob, h.score) for h in hyps] for hyps in plain] == [
        [(h.tokens, h.log_prob, h.score) for h in hyps] for hyps in traced.hypotheses]
