"""Decoding with a KV cache: batched greedy search and batched beam search.

Both run the encoder once, then feed the decoder one new position per step;
the decoder's self-attention keys/values grow in a `KVCache` and the
cross-attention keys/values are computed on the first step only. Both take
an optional `HeadMask` (heads switched off), honoured on every step.

Every step ends at a `pause_point`: a scheduler that set a hook with `pause_points` may run other work
there, on the same thread (the app's `batching.Batcher` serves cheaper requests between the steps of an
expensive search). The search's own tensors are left as they are, so its result does not change.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Union

import torch
from torch import Tensor

from .kv_cache import KVCache
from .model import HeadMask, Transformer, pad_sequences, padding_mask
from .search_trace import SearchOutput, SearchRecorder

MAX_BEAM_SIZE = 16  # the widest beam the API and the command-line tools accept

_PAUSE_HOOK: ContextVar[Callable[[], None] | None] = ContextVar("decoding_pause_hook", default=None)


@contextmanager
def pause_points(hook: Callable[[], None]) -> Iterator[None]:
    """Call `hook` at every `pause_point` the body reaches on this thread (a context variable: other threads'
    model work is not paused). The hook may run other model work; it must not raise."""
    token = _PAUSE_HOOK.set(hook)
    try:
        yield
    finally:
        _PAUSE_HOOK.reset(token)


def pause_point() -> None:
    """Where model work may pause for other work: after each search step, between the sentences of
    `Translator.translate_sources`. Does nothing unless a `pause_points` hook is set."""
    hook = _PAUSE_HOOK.get()
    if hook is not None:
        hook()


@dataclass
class Hypothesis:
    tokens: list[int]  # output ids, without <bos>, ending in <eos>
    score: float  # log_prob / length penalty: what beams are ranked by
    log_prob: float  # summed log-probability of `tokens`


def length_penalty_factor(length: int, alpha: float) -> float:
    """GNMT length penalty (Wu et al., 2016): ((5 + |Y|) / 6) ** alpha; alpha 0 turns it off."""
    return ((5.0 + length) / 6.0) ** alpha


def default_max_len(model: Transformer, src_len: int) -> int:
    """Source length + 50 output tokens (the paper), capped by the model's positions."""
    return min(src_len + 50, model.config.max_len)


MaxLen = Union[int, Sequence[int], None]


def sentence_limits(model: Transformer, src: Tensor, max_len: MaxLen = None) -> list[int]:
    """The most output tokens each sentence of `src` (B, S) may get: `max_len` (one for all, or one per
    sentence), or by default `default_max_len` of the sentence's own length, padding not counted, so
    that a sentence decoded in a padded batch gets the limit it gets alone."""
    if max_len is None:
        return [default_max_len(model, n) for n in (src != model.config.pad_id).sum(1).tolist()]
    if isinstance(max_len, int):
        return [max_len] * src.size(0)
    if len(max_len) != src.size(0):
        raise ValueError(f"max_len holds {len(max_len)} limits for {src.size(0)} sentences")
    return [int(n) for n in max_len]


def rows_ending_at(limits: Sequence[int], rows_per_sentence: int = 1) -> dict[int, list[int]]:
    """{step: the rows (of B * rows_per_sentence) whose sentence must end at that step}."""
    ending: dict[int, list[int]] = {}
    for b, limit in enumerate(limits):
        ending.setdefault(limit - 1, []).extend(range(b * rows_per_sentence, (b + 1) * rows_per_sentence))
    return ending


class PlaceholderRule:
    """For a checkpoint with placeholders (`transformer.placeholders`): an output writes only placeholders
    its source holds, and of a beam's finished hypotheses, those that write every one of them rank first
    (the model's own n-best, reordered: a hypothesis that drops a name often scores higher, being
    shorter). Forcing each placeholder instead, by forbidding <eos> until all are written, was tried: where
    the model had left one out, it wrote on into nonsense."""

    def __init__(self, model: Transformer, src: Tensor, rows_per_sentence: int = 1):
        cfg = model.config
        self.ids = torch.arange(cfg.tgt_vocab_size - cfg.placeholders, cfg.tgt_vocab_size, device=src.device)  # (P,)
        self.present = (src[:, :, None] == self.ids).any(1)  # (B, P)
        self.absent_rows = ~self.present.repeat_interleave(rows_per_sentence, 0)  # (N, P)

    @classmethod
    def for_model(cls, model: Transformer, src: Tensor, rows_per_sentence: int = 1) -> PlaceholderRule | None:
        return cls(model, src, rows_per_sentence) if model.config.placeholders else None

    def rows(self, index: Tensor, rows_per_sentence: int = 1) -> PlaceholderRule:
        """The rule of sentences `index` (n,) of a search with `rows_per_sentence` rows per sentence."""
        sub = object.__new__(PlaceholderRule)
        rows = (index[:, None] * rows_per_sentence + torch.arange(rows_per_sentence, device=index.device)).view(-1)
        sub.ids, sub.present, sub.absent_rows = self.ids, self.present[index], self.absent_rows[rows]
        return sub

    def apply(self, log_probs: Tensor) -> None:
        """Forbid, in `log_probs` (N, V), each row's placeholders that its source lacks."""
        log_probs[:, self.ids] = log_probs[:, self.ids].masked_fill(self.absent_rows, float("-inf"))

    def covering_first(self, nbest: list[list[Hypothesis]]) -> list[list[Hypothesis]]:
        """Each sentence's hypotheses, those writing all of its source's placeholders first (stable)."""
        wanted = [set(self.ids[row].tolist()) for row in self.present]
        return [sorted(hyps, key=lambda h, w=w: not w <= set(h.tokens)) for hyps, w in zip(nbest, wanted)]


def next_token_log_probs(model: Transformer, hidden: Tensor, step: int, max_len: int,
                         ending_rows: list[int] | None = None, rule: PlaceholderRule | None = None) -> Tensor:
    """(N, 1, d_model) decoder output -> (N, V) log-probabilities of the next token.

    <pad> and <bos> are never generated, nor placeholders `rule` forbids; on the last allowed step
    only <eos> is: step `max_len - 1` for every row, or, when `ending_rows` is given, for those rows only.
    """
    cfg = model.config
    log_probs = model.project(hidden[:, -1]).float().log_softmax(-1)
    log_probs[:, [cfg.pad_id, cfg.bos_id]] = float("-inf")
    if rule is not None:
        rule.apply(log_probs)
    if ending_rows is None:
        ending_rows = list(range(log_probs.size(0))) if step == max_len - 1 else []
    if ending_rows:
        rows = ending_rows if len(ending_rows) < log_probs.size(0) else slice(None)
        eos = log_probs[rows, cfg.eos_id].clone()
        log_probs[rows] = float("-inf")
        log_probs[rows, cfg.eos_id] = eos
    return log_probs


@dataclass
class EncodedSource:
    """One encoder pass, shared by the search and the attention capture that follows it."""

    memory: Tensor  # (B, S, d_model)
    mask: Tensor | None  # (B, 1, 1, S); None when no sentence is padded
    attention: list[Tensor]  # per layer (B, H, S, S); empty unless asked for


def encode_source(model: Transformer, src: Tensor, output_attentions: bool = False,
                  attention_measure: str = "weight", head_mask: HeadMask | None = None) -> EncodedSource:
    """src (B, S) padded ids -> the encoder output, its mask and (`output_attentions`) its attention weights (or,
    with `attention_measure="norm"`, their norms).

    The mask is None when no sentence has padding (always so for one sentence):
    attention then skips the masking work on every decoder step.
    """
    src_mask = padding_mask(src, model.config.pad_id)
    if bool(src_mask.all()):
        src_mask = None
    if head_mask is not None:
        head_mask.check(model.config)
    memory, weights = model.encode(src, src_mask, output_attentions, attention_measure, head_mask)
    return EncodedSource(memory, src_mask, weights)


# The padded source lengths a search runs at. A sentence is searched at the smallest that holds it, so the
# shapes its cross-attention sees depend on its own length alone, never on the longest sentence beside it
# (float32 sums over a padded row are rounded differently at another length). Sentences of one bucket
# share a search; a mixed batch runs one search per bucket.
SOURCE_BUCKETS = (16, 32, 48, 64, 96, 128, 192, 256)


def source_bucket(length: int) -> int:
    """The padded length a source of `length` tokens (<eos> included) is searched at (`SOURCE_BUCKETS`)."""
    return next((b for b in SOURCE_BUCKETS if length <= b), length)


def stack_encoded(parts: list[EncodedSource], src_ids: list[list[int]], pad_id: int, length: int
                  ) -> tuple[Tensor, EncodedSource]:
    """Encoder passes of single sentences (memory (1, S_i, d_model) each), padded with zeros to `length` and
    stacked: padded ids (B, length) and their `EncodedSource` (memory (B, length, d_model), mask
    (B, 1, 1, length)). The mask is always given, even where nothing is padded, so that every batch takes the
    same attention path."""
    memory = parts[0].memory.new_zeros(len(parts), length, parts[0].memory.size(-1))
    for b, part in enumerate(parts):
        memory[b, : part.memory.size(1)] = part.memory[0]
    src = pad_sequences([list(ids) + [pad_id] * (length - len(ids)) for ids in src_ids], pad_id).to(memory.device)
    return src, EncodedSource(memory, padding_mask(src, pad_id), [])


@torch.no_grad()
def greedy_decode(
    model: Transformer,
    src: Tensor,
    max_len: MaxLen = None,
    encoded: EncodedSource | None = None,
    length_penalty: float = 0.0,
    record_search: bool = False,
    head_mask: HeadMask | None = None,
) -> SearchOutput[list[Hypothesis]]:
    """src (B, S) padded ids -> one hypothesis per sentence, the most likely token at every step.

    `max_len` is the most output tokens (one for all, one per sentence, or by default each
    sentence's own `default_max_len`: `sentence_limits`). `encoded` is the encoder pass over `src`
    when the caller already ran it. The search ignores `length_penalty`; it only divides the reported
    score, as beam search's does, so greedy and beam scores compare. `record_search=True` adds its
    `traces`: one `SearchTrace` per sentence (each step's choice and runner-up); the hypotheses are the same.
    `head_mask` switches heads off (the encoder's too, unless `encoded` is given: that pass is the caller's).
    """
    cfg = model.config
    B = src.size(0)
    encoded = encoded or encode_source(model, src, head_mask=head_mask)
    memory, src_mask = encoded.memory, encoded.mask
    limits = sentence_limits(model, src, max_len)
    horizon, ending = max(limits), rows_ending_at(limits)
    cache = KVCache.empty(cfg.n_decoder_layers)
    next_input = torch.full((B, 1), cfg.bos_id, dtype=torch.long, device=src.device)
    out = torch.full((B, horizon), cfg.pad_id, dtype=torch.long, device=src.device)
    log_probs = torch.zeros(B, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    recorder = SearchRecorder(B, "greedy", 1, length_penalty, cfg.bos_id) if record_search else None
    rule = PlaceholderRule.for_model(model, src)
    if recorder is not None:  # the trace records every row at every step
        for t in range(horizon):
            hidden, _, _ = model.decode(next_input, memory, src_mask, None, cache, head_mask=head_mask)
            step_log_probs = next_token_log_probs(model, hidden, t, horizon, ending.get(t, []), rule)  # (B, V)
            lp, token = step_log_probs.max(-1)  # (B,)
            _record_greedy_step(recorder, t, done, log_probs, step_log_probs, lp, token, cfg.eos_id,
                                length_penalty_factor(t + 1, length_penalty))
            token = token.masked_fill(done, cfg.pad_id)
            log_probs += lp.masked_fill(done, 0.0)
            out[:, t] = token
            done |= token == cfg.eos_id
            if done.all():
                break
            next_input = token[:, None]
            pause_point()
    else:
        _greedy_steps(model, _LiveRows(memory, src_mask, cache, rule, head_mask, B), horizon, ending, out, log_probs)
    hyps = []
    for b in range(B):
        ids = out[b].tolist()
        ids = ids[: ids.index(cfg.eos_id) + 1]
        lp = float(log_probs[b])
        hyps.append(Hypothesis(ids, lp / length_penalty_factor(len(ids), length_penalty), lp))
    return SearchOutput(hyps, recorder.finish([[h] for h in hyps]) if recorder is not None else None)


class _LiveRows:
    """The sentences of a search still searched, and their share of its state (encoder output, mask, cache,
    placeholder rule, per-row head masks), with `beams` rows each (greedy: 1). A sentence that is done leaves
    the batch (`keep`): every row of the search model is computed on its own row alone, so the others' steps give
    the same bits with or without it."""

    def __init__(self, memory: Tensor, src_mask: Tensor | None, cache: KVCache, rule: PlaceholderRule | None,
                 head_mask: HeadMask | None, batch: int, beams: int = 1):
        self.rows = torch.arange(batch, device=memory.device)  # (n,) the live sentences' indices in the batch
        self.memory, self.src_mask, self.cache, self.rule, self.head_mask = memory, src_mask, cache, rule, head_mask
        self.beams = beams

    def keep(self, live: Tensor) -> Tensor:
        """Keep the sentences where `live` (n,) is true; return their rows among the search's rows (m * beams,)."""
        index = live.nonzero()[:, 0]
        rows = (index[:, None] * self.beams + torch.arange(self.beams, device=index.device)).view(-1)
        self.rows, self.memory = self.rows[index], self.memory.index_select(0, index)
        if self.src_mask is not None:
            self.src_mask = self.src_mask.index_select(0, index)
        self.cache.keep_sentences(index)
        if self.rule is not None:
            self.rule = self.rule.rows(index, self.beams)
        if self.head_mask is not None:
            self.head_mask = self.head_mask.index_select(rows)
        return rows

    def ending(self, rows: list[int]) -> list[int]:
        """Of the batch rows `rows` that must end now, the live ones' positions among the live rows."""
        if not rows:
            return []
        position = {r: i for i, r in enumerate(self.rows.tolist())}
        return [position[r] for r in rows if r in position]


def _greedy_steps(model: Transformer, live: _LiveRows, horizon: int, ending: dict[int, list[int]], out: Tensor,
                  log_probs: Tensor) -> None:
    """Greedy's steps without a trace, into `out` (B, horizon) and `log_probs` (B,): each step runs the rows
    still writing only."""
    cfg = model.config
    next_input = torch.full((live.rows.numel(), 1), cfg.bos_id, dtype=torch.long, device=out.device)
    for t in range(horizon):
        hidden, _, _ = model.decode(next_input, live.memory, live.src_mask, None, live.cache,
                                    head_mask=live.head_mask)
        step_log_probs = next_token_log_probs(model, hidden, t, horizon, live.ending(ending.get(t, [])), live.rule)
        lp, token = step_log_probs.max(-1)  # (n,)
        log_probs[live.rows] += lp
        out[live.rows, t] = token
        writing = token != cfg.eos_id
        if not writing.any():
            break
        if not writing.all():
            live.keep(writing)
            token = token[writing]
        next_input = token[:, None]
        pause_point()


def _record_greedy_step(
    recorder: SearchRecorder, t: int, done: Tensor, prefix_log_prob: Tensor, step_log_probs: Tensor,
    lp: Tensor, token: Tensor, eos_id: int, length_factor: float,
) -> None:
    """Greedy's candidates at step t: the chosen token and the runner-up (the best other token)."""
    top_lp, top_token = step_log_probs.topk(2, dim=-1)  # (B, 2)
    runner_up = torch.where(top_token[:, :1] == token[:, None], 1, 0)  # (B, 1): the column that is not `token`
    token_lp = torch.stack([lp, top_lp.gather(1, runner_up)[:, 0]], 1)  # (B, 2)
    tokens = torch.stack([token, top_token.gather(1, runner_up)[:, 0]], 1)
    finished = torch.zeros_like(tokens, dtype=torch.bool)
    finished[:, 0] = token == eos_id
    keep = torch.where(finished[:, :1], -1, 0)  # (B, 1): the choice stays the live beam unless it ended
    recorder.record_step(t, (~done).tolist(), prefix_log_prob[:, None] + token_lp, token_lp, tokens,
                         torch.zeros_like(tokens), finished, keep, length_factor)


class _BeamSentences:
    """Per sentence of a beam search: the hypotheses that ended, and whether its search is over."""

    def __init__(self, beam_size: int, length_penalty: float, limits: list[int]):
        self.K, self.alpha, self.limits = beam_size, length_penalty, limits
        self.finished: list[list[Hypothesis]] = [[] for _ in limits]
        self.done = [False] * len(limits)
        # the length penalty at the most tokens a sentence may get: the most a live beam's score can gain
        self.best_penalty = torch.tensor([length_penalty_factor(n, length_penalty) for n in limits])

    def collect(self, finishing: Tensor, tokens: Tensor, from_beam: Tensor, top_scores: Tensor, eos_id: int,
                searched: list[int]) -> None:
        """Set aside the candidates `finishing` (n, 2K) marks: <eos> ones ranked within the top K. Row i of the
        step's tensors is sentence `searched[i]` (its beams: rows i*K to i*K+K-1 of `tokens`)."""
        for i, j in finishing.nonzero().tolist():  # only hypotheses that end here
            b = searched[i]
            if not self.done[b]:
                ids = tokens[i * self.K + from_beam[i, j], 1:].tolist() + [eos_id]
                lp = float(top_scores[i, j])
                self.finished[b].append(Hypothesis(ids, lp / length_penalty_factor(len(ids), self.alpha), lp))

    def update(self, t: int, live_scores: Tensor, searched: list[int]) -> bool:
        """After step t: a sentence is done when K hypotheses ended, its last step was t, or no live beam
        (`live_scores` (n, K), of the sentences `searched`) can still beat its best finished one. True when every
        sentence is done."""
        penalty = self.best_penalty[searched].to(live_scores.device)
        bound = (live_scores.max(1).values / penalty).tolist()
        for i, b in enumerate(searched):
            hyps = self.finished[b]
            if not self.done[b] and hyps:
                self.done[b] = (len(hyps) >= self.K or t >= self.limits[b] - 1
                                or max(h.score for h in hyps) >= bound[i])
        return all(self.done)

    def nbest(self, n_best: int | None) -> list[list[Hypothesis]]:
        return [sorted(hyps, key=lambda h: -h.score)[: n_best or self.K] for hyps in self.finished]


def _best_continuations(log_probs: Tensor, scores: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """log_probs (n*K, V) of the next token, scores (n, K) of the beams -> each sentence's 2K best continuations,
    best first, each (n, 2K): their scores, the beam each extends, its token and the token's log-probability."""
    n, K = scores.shape
    # A sentence's best 2K continuations are among the best 2K of each of its beams,
    # and ranking K * 2K numbers costs far less than ranking K * V.
    per_beam = min(2 * K, log_probs.size(-1))
    beam_top, beam_token = log_probs.topk(per_beam, dim=1)  # (n*K, per_beam)
    candidates = (scores.view(n * K, 1) + beam_top).view(n, K * per_beam)
    top_scores, top_index = candidates.topk(2 * K, dim=1)  # (n, 2K)
    return (top_scores, top_index // per_beam, beam_token.view(n, K * per_beam).gather(1, top_index),
            beam_top.view(n, K * per_beam).gather(1, top_index))


@torch.no_grad()
def beam_search(
    model: Transformer,
    src: Tensor,
    beam_size: int = 5,
    length_penalty: float = 0.6,
    max_len: MaxLen = None,
    n_best: int | None = None,
    encoded: EncodedSource | None = None,
    record_search: bool = False,
    head_mask: HeadMask | None = None,
) -> SearchOutput[list[list[Hypothesis]]]:
    """src (B, S) padded ids -> a `SearchOutput`: per sentence, up to `n_best` hypotheses, best first.

    All B * K beams advance as one (B * K, V) tensor per step. Each step takes the
    top 2K continuations per sentence: <eos> ones ranked within the top K are set
    aside as finished, the best K others stay live. A sentence is done when K
    hypotheses have finished, or earlier when no live beam can still beat the best
    finished one (its log-probability can only fall, and the length penalty can
    at most reach its value at the sentence's limit). `max_len` is that limit (one for
    all, one per sentence, or by default each sentence's own: `sentence_limits`), so a
    sentence gets the same n-best in a padded batch as alone. `encoded` is the encoder
    pass over `src` when the caller already ran it. `record_search=True` adds its `traces`:
    one `SearchTrace` per sentence (the 2K ranked candidates of every step it searched); the n-best
    lists are the same. `head_mask` switches heads off (as in `greedy_decode`).
    """
    cfg = model.config
    B, K = src.size(0), beam_size
    device = src.device
    limits = sentence_limits(model, src, max_len)
    horizon = max(limits)
    encoded = encoded or encode_source(model, src, head_mask=head_mask)
    # (B, S, d_model) and (B, 1, 1, S): the K beams of a sentence share its cross-attention keys (`KVCache.beams`)
    sentence_rule = PlaceholderRule.for_model(model, src, K)
    live = _LiveRows(encoded.memory, encoded.mask, KVCache.empty(cfg.n_decoder_layers, beams=K), sentence_rule,
                     head_mask.repeat_interleave(K) if head_mask else None, B, K)
    tokens = torch.full((B * K, 1), cfg.bos_id, dtype=torch.long, device=device)  # (B*K, t+1)
    scores = torch.full((B, K), float("-inf"), device=device)
    scores[:, 0] = 0.0  # all beams start identical: expand only the first
    sentences = _BeamSentences(K, length_penalty, limits)
    beam_offset = (torch.arange(B, device=device) * K)[:, None]  # (B, 1)
    rank = torch.arange(2 * K, device=device)[None, :]  # (1, 2K)
    recorder = SearchRecorder(B, "beam", K, length_penalty, cfg.bos_id) if record_search else None
    searched = list(range(B))  # the sentences in the batch (while recording, every sentence to the end)
    for t in range(horizon):
        n = len(searched)
        hidden, _, _ = model.decode(tokens[:, -1:], live.memory, live.src_mask, None, live.cache,
                                    head_mask=live.head_mask)
        ending = [i * K + k for i, b in enumerate(searched) if limits[b] - 1 == t for k in range(K)]
        log_probs = next_token_log_probs(model, hidden, t, horizon, ending, live.rule)  # (n*K, V)
        top_scores, from_beam, token, token_log_prob = _best_continuations(log_probs, scores)  # each (n, 2K)
        is_eos = token == cfg.eos_id
        finishing = is_eos & (rank < K) & (top_scores > float("-inf"))
        sentences.collect(finishing, tokens, from_beam, top_scores, cfg.eos_id, searched)
        scores, order = top_scores.masked_fill(is_eos, float("-inf")).topk(K, dim=1)  # (n, K)
        if recorder is not None:
            recorder.record_step(
                t, [not d for d in sentences.done], top_scores, token_log_prob, token, from_beam, finishing,
                order.masked_fill(scores == float("-inf"), -1), length_penalty_factor(t + 1, length_penalty),
            )
        rows = (beam_offset[:n] + from_beam.gather(1, order)).view(-1)  # (n*K,) parent of each new beam
        tokens = torch.cat([tokens.index_select(0, rows), token.gather(1, order).view(-1, 1)], dim=1)
        live.cache.reorder(rows)
        if sentences.update(t, scores, searched):
            break
        if recorder is None and any(sentences.done[b] for b in searched):  # a sentence that is done leaves the batch
            kept = live.keep(torch.tensor([not sentences.done[b] for b in searched], device=device))
            tokens, scores = tokens.index_select(0, kept), scores.view(-1).index_select(0, kept).view(-1, K)
            searched = live.rows.tolist()
        pause_point()
    nbest = sentences.nbest(None if sentence_rule is not None else n_best)
    if sentence_rule is not None:  # the K finished, covering ones first, then cut to n_best
        nbest = [hyps[: n_best or K] for hyps in sentence_rule.covering_first(nbest)]
    return SearchOutput(nbest, recorder.finish(nbest) if recorder is not None else None)


def strip_specials(ids: list[int], model: Transformer) -> list[int]:
    """Drop <eos> (and anything after it), <pad> and <bos> from an output id list."""
    cfg = model.config
    if cfg.eos_id in ids:
        ids = ids[: ids.index(cfg.eos_id)]
    return [i for i in ids if i not in (cfg.pad_id, cfg.bos_id)]


def translate_ids(
    model: Transformer,
    sources: list[list[int]],
    method: str = "greedy",
    beam_size: int = 5,
    length_penalty: float = 0.6,
    batch_size: int = 64,
    head_mask: HeadMask | None = None,
) -> list[list[int]]:
    """Source id lists (no specials) -> best output id lists (no specials), in input order.

    Sentences are decoded in length-sorted batches, so padding stays small. `head_mask` (shared masks,
    `(L, H)`) switches heads off.
    """
    cfg = model.config
    device = next(model.parameters()).device
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    results: list[list[int]] = [[] for _ in sources]
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        src = pad_sequences([sources[i][: cfg.max_len - 1] + [cfg.eos_id] for i in idx], cfg.pad_id).to(device)
        if method == "greedy":
            hyps = greedy_decode(model, src, head_mask=head_mask).hypotheses
        else:
            found = beam_search(model, src, beam_size, length_penalty, head_mask=head_mask).hypotheses
            hyps = [nbest[0] for nbest in found]
        for i, hyp in zip(idx, hyps):
            results[i] = strip_specials(hyp.tokens, model)
    return results
