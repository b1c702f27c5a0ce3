"""The public API: `load_pretrained(...).translate(...)`.

    from transformer import load_pretrained
    tr = load_pretrained("checkpoints/multi30k-en-de")
    r = tr.translate("A girl plays the violin.", method="beam", beam_size=5)
    r.text, r.candidates, r.attention.cross, r.steps
    tr.attention_for(r, candidate=2)
    r = tr.translate("A girl plays the violin.", beam_size=5, record_search=True)
    r.search.nodes, r.search.nbest                # the search tree (transformer.search_trace)
    tr.attention_for_prefix(r, r.search.prefix_ids(7))   # attention of any prefix in it
    r = tr.translate("A girl plays the violin.", head_mask={"cross": off})   # (L, H) of 0/1: heads switched off
    tr.attention_for(r, attention_measure="norm")   # ‖α f(x)‖ (Kobayashi et al., 2020) instead of α

Attention is computed after decoding, by one teacher-forced decoder pass over
the chosen hypothesis with weights switched on (the encoder's weights come from
the encoder pass the search used); float32 numpy arrays, rows are queries and
columns keys.

`translate_sources` decodes several prepared sources (`Translator.source`) with the
same options (`DecodingOptions`, resolved and checked once by `Translator.decoding_options`) as one
padded batch, attention included, each exactly as `translate` would alone
(`transformer.serving.batching` gathers concurrent requests into such batches).
`load_pretrained(..., quantize="int8")` searches with int8 decoder weights
(`transformer.quantize`); attention and step probabilities stay float32.
"""
from __future__ import annotations

import logging
import math
import os
import unicodedata
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from .decoding import (
    MAX_BEAM_SIZE,
    EncodedSource,
    Hypothesis,
    PlaceholderRule,
    beam_search,
    encode_source,
    greedy_decode,
    pause_point,
    source_bucket,
    stack_encoded,
    strip_specials,
)
from .casing import Truecaser, case_form, prepare_source
from .config import MEASURES, GenerationConfig
from .hub import PretrainedTransformer, checkpoint_digest, load_checkpoint, resolve_checkpoint
from .inside_head import HeadRow, head_row
from .model import HeadMask, Transformer, causal_mask, pad_sequences
from .placeholders import encode_marked, entity_spans, find_entities, mark_entities, placeholder_text, splice
from .quantize import PRECISIONS
from .quantize import search_model as build_search_model
from .search_trace import SearchTrace
from .tokenizer import TextTokenizer

log = logging.getLogger(__name__)

METHODS = ("greedy", "beam")


@dataclass
class Candidate:
    """One hypothesis of the n-best list."""

    text: str
    tokens: list[str]  # output tokens, <eos> included when the model produced it
    ids: list[int]
    score: float  # log-probability / GNMT length penalty (what beam search ranks by)
    log_prob: float  # summed log-probability


@dataclass
class StepRecord:
    """One decoding step of the chosen hypothesis."""

    position: int
    token: str  # the token chosen at this step
    probability: float  # the model's probability of that token
    top_k: list[tuple[str, float]]  # the k most likely next tokens with probabilities


@dataclass
class Attention:
    """Every layer and head of the three attention kinds for one hypothesis.

    encoder (L, H, S, S), decoder (L, H, T, T), cross (L, H, T, S); float32,
    rows are queries. Decoder row t belongs to input token `tgt_in_tokens[t]`
    and predicts `tgt_out_tokens[t]`.
    """

    encoder: np.ndarray
    decoder: np.ndarray
    cross: np.ndarray
    src_tokens: list[str]  # as the model saw them, <eos> included
    tgt_in_tokens: list[str]  # <bos> + output tokens[:-1]
    tgt_out_tokens: list[str]  # output tokens
    steps: list[StepRecord] = field(default_factory=list)
    measure: str = "weight"  # "norm": each map holds ‖α_ij f_h(x_j)‖ instead of α_ij (rows do not sum to 1)


@dataclass
class Score:
    """How likely the model finds one given translation (`Translator.score`)."""

    log_prob: float  # summed over the tokens, <eos> included
    token_log_probs: list[float]  # one per token of `tokens`; they add up to log_prob
    tokens: list[str]  # the translation as the model reads it (placeholders for the source's entities), <eos> last
    ids: list[int]


@dataclass(frozen=True)
class Source:
    """One input as the model reads it (`Translator.source`)."""

    ids: list[int]  # model input, <eos> included
    truncated: bool  # the text was longer than the model's source limit and was cut
    text: str  # the text as the model read it (`Translator.prepare`)
    entities: tuple[str, ...] = ()  # what placeholder ⟨k+1⟩ stands for (`transformer.placeholders`)
    as_text: tuple[str, ...] = ()  # entities past the model's placeholders: read as text, copied piece by piece


@dataclass(frozen=True)
class DecodingOptions:
    """How a search runs, resolved and checked (`Translator.decoding_options`, the one place that does it): what
    `translate_sources`, the batcher and the search process take as it is, checking nothing again."""

    method: str  # "greedy" or "beam"
    beam_size: int  # 1 for greedy
    length_penalty: float


@dataclass
class Translation:
    text: str
    src_tokens: list[str]
    tgt_tokens: list[str]
    score: float
    log_prob: float
    truncated: bool  # the input was longer than the model's source limit and was cut
    candidates: list[Candidate]  # best first
    method: str
    beam_size: int
    src_ids: list[int]  # model input, <eos> included
    attention: Attention | None = None
    search: SearchTrace | None = None  # only with translate(..., record_search=True)
    model_input: str = ""  # the text as the model read it (`Translator.prepare`: recased when typed in one case)
    entities: tuple[str, ...] = ()  # what placeholder ⟨k+1⟩ of the tokens stands for (`transformer.placeholders`)
    head_mask: HeadMask | None = None  # heads switched off (`translate(..., head_mask=...)`); None: all on
    as_text: tuple[str, ...] = ()  # entities past the model's placeholders, read as text (`Source.as_text`)

    def placeholder_counts(self) -> list[int]:
        """How often the translation writes each placeholder of the source: 0 is a name or number the model left
        out, 2 or more one it repeated; both are said in the app, never hidden."""
        return [self.tgt_tokens.count(placeholder_text(k)) for k in range(len(self.entities))]

    @property
    def steps(self) -> list[StepRecord]:
        return self.attention.steps if self.attention is not None else []


_CLOSING = "\"'”’»)]"  # after a sentence's final mark: quotes and brackets


def with_final_mark(source: str, text: str) -> str:
    """`text` (a translation of `source`) ending in the source's final "!" or "?" where it ends in "." instead:
    the model, trained mostly on statements, sometimes turns an exclamation or a question into one. The tokens
    (and the maps) stay the model's own; only the text shown is mended."""
    mark = source.rstrip().rstrip(_CLOSING)[-1:]
    body = text.rstrip().rstrip(_CLOSING)
    if mark not in ("!", "?") or not body.endswith(".") or body.endswith(".."):
        return text
    return body[:-1] + mark + text[len(body):]


def as_head_mask(head_mask, config, device: torch.device | str = "cpu") -> HeadMask | None:
    """`head_mask` as a checked `HeadMask` of 0/1 float tensors: a `HeadMask`, or a dict of kind -> (L, H)
    array-like (kinds left out: every head on); None stays None (every head on)."""
    if head_mask is None:
        return None
    if isinstance(head_mask, HeadMask):
        head_mask = {k: getattr(head_mask, k) for k in HeadMask.KINDS}
    if not isinstance(head_mask, dict) or set(head_mask) - set(HeadMask.KINDS):
        raise ValueError(f"head_mask must be a HeadMask or a dict with keys from {HeadMask.KINDS}")
    masks = {}
    for kind, value in head_mask.items():
        if value is None:
            continue
        mask = torch.as_tensor(np.asarray(value, dtype=np.float32), device=device)
        if mask.dim() != 2 or not bool(((mask == 0) | (mask == 1)).all()):
            raise ValueError(f"head_mask[{kind!r}] must be a (layers, heads) array of 0 and 1")
        masks[kind] = mask
    return HeadMask(**masks).check(config)


def quoted(value, limit: int = 40) -> str:
    """A value as an error message may quote it: its repr, cut to `limit` characters, control characters and
    lone surrogates escaped (ascii does), so a message never carries what it complains about."""
    text = ascii(value) if isinstance(value, str) else repr(value) if isinstance(value, (int, float)) else \
        f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_number(value) -> bool:
    """A finite int or float (not a bool)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def check_max_len(max_len: int | None) -> None:
    if max_len is not None and (isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 1):
        raise ValueError(f"max_len must be a positive integer or None, got {quoted(max_len)}")


def choosable(probs: Tensor, model: Transformer, src_ids: list[list[int]]) -> Tensor:
    """probs (B, T, V) with what the search never writes at 0: <pad>, <bos>, and placeholders the sentence's
    source lacks (`PlaceholderRule`). Not renormalised, as the search does not renormalise either: the
    alternatives a step lists are the ones the search could have chosen, with the probabilities it saw."""
    cfg, out = model.config, probs.clone()
    out[..., [cfg.pad_id, cfg.bos_id]] = 0.0
    rule = PlaceholderRule.for_model(model, pad_sequences(src_ids, cfg.pad_id).to(probs.device))
    if rule is not None:
        out[..., rule.ids] = out[..., rule.ids].masked_fill(rule.absent_rows[:, None, :], 0.0)
    return out


class Translator:
    """A loaded checkpoint (model + tokenizer) with translate / attention methods."""

    def __init__(self, model: PretrainedTransformer, tokenizer: TextTokenizer, name: str = "",
                 truecaser: Truecaser | None = None, prepare_input: bool = True,
                 search_model: Transformer | None = None, precision: str = "fp32"):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.truecaser = truecaser if truecaser is not None else getattr(model, "truecaser", None)
        self.prepare_input = prepare_input  # False: the text goes to the tokenizer as typed (measurements)
        self.copied_words: set[str] = getattr(model, "copied_words", set())  # names placeholders stand for
        self.name = name
        self.device = next(model.parameters()).device
        # what greedy and beam search run: the decoder with batch-invariant linears (`quantize.search_model`:
        # int8 rows, or float32 in fixed row blocks); the encoder pass and the attention capture use `model`
        self.search_model = (search_model if search_model is not None else build_search_model(self.model)).eval()
        self.precision = precision  # "fp32" or "int8": which weights the search uses
        # (checkpoint directory, quantize, `hub.checkpoint_digest` of what was loaded) when `load_pretrained` made
        # it: how another process loads the same model and checks it is the same (`search_process`); None otherwise
        self.origin: tuple[str, str | None, str] | None = None
        # beam width and length penalty when a call gives none: the checkpoint's generation_config.json
        self.generation: GenerationConfig = getattr(model, "generation", None) or GenerationConfig()

    @property
    def max_source_tokens(self) -> int:
        return self.model.config.max_len - 1  # room for <eos>

    def prepare(self, text: str) -> str:
        """The one input path of `translate`, `translate_batch`, evaluation, the CLI and the app:
        text typed all in lower or all in upper case is recased (`casing.prepare_source`)."""
        return prepare_source(text, self.truecaser) if self.prepare_input else text

    def source(self, text: str) -> Source:
        """`text` prepared (`prepare`) and tokenised for the model; ValueError when there is nothing to translate."""
        if not isinstance(text, str):
            raise ValueError(f"text must be a string, got {type(text).__name__}")
        if not text.strip():
            raise ValueError("text is empty: type a sentence to translate")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:  # a lone surrogate: no character, and the tokenizer cannot take it
            raise ValueError(f"text holds U+{ord(text[err.start]):04X} at position {err.start}, half of a character "
                             "pair on its own (a lone surrogate): paste the text again") from None
        text = unicodedata.normalize("NFC", text)  # "Zoë" pasted decomposed (NFD) is the same name
        prepared = self.prepare(text)
        encoding = self.tokenizer.encodings([prepared])[0]
        ids, entities, as_text = encoding.ids, (), ()
        if self.model.config.placeholders:  # names and numbers as placeholder ids
            one_case = case_form(text) != "mixed"
            found = find_entities(prepared, self._known, self.copied_words, one_case, limit=len(prepared))
            spans, everything = entity_spans(found)
            limit = self.model.config.placeholders
            entities, as_text = tuple(everything[:limit]), tuple(everything[limit:])
            ids = splice(encoding, [(a, b, k) for a, b, k in spans if k < limit], first_id=self.tokenizer.vocab_size)
        if not ids:
            raise ValueError("text has nothing to translate after normalisation")
        truncated = len(ids) > self.max_source_tokens
        return Source(ids[: self.max_source_tokens] + [self.model.config.eos_id], truncated, prepared, tuple(entities),
                      as_text)

    def _known(self, word: str) -> bool:
        """Whether the training English holds `word` (no truecase model: every word counts as known)."""
        return self.truecaser is None or self.truecaser.knows(word)

    def _candidate(self, hyp: Hypothesis, source: Source) -> Candidate:
        text = with_final_mark(source.text, self.tokenizer.decode(strip_specials(hyp.tokens, self.model),
                                                                   source.entities))
        return Candidate(text, self.tokenizer.ids_to_tokens(hyp.tokens), hyp.tokens, hyp.score, hyp.log_prob)

    def translate(
        self,
        text: str,
        method: str = "beam",
        beam_size: int | None = None,
        length_penalty: float | None = None,
        max_len: int | None = None,
        output_attentions: bool = True,
        top_k: int = 5,
        record_search: bool = False,
        head_mask: HeadMask | dict | None = None,
    ) -> Translation:
        """Translate one sentence; `method="greedy"` ignores `beam_size`. `beam_size` and `length_penalty`
        left out (None) are the checkpoint's (`generation`: chosen on validation); bad options or text raise
        ValueError (`decoding_options`, `source`). `output_attentions=False`: the text alone, no maps.

        `record_search=True` also returns the search tree in `Translation.search`
        (token texts filled in); the translation itself is the same either way.
        `head_mask` switches heads off: a `HeadMask` or {"encoder"|"decoder"|"cross": (L, H) of 0/1}
        (kinds left out stay on); the search, the attention and `attention_for` all use it.
        """
        options = self.decoding_options(method, beam_size, length_penalty)
        return self.translate_sources([self.source(text)], options, max_len, output_attentions, top_k,
                                      record_search, head_mask)[0]

    def decoding_options(self, method: str = "beam", beam_size: int | None = None,
                         length_penalty: float | None = None, *, max_beam: int = MAX_BEAM_SIZE,
                         max_length_penalty: float = math.inf) -> DecodingOptions:
        """A request's search options, resolved and checked once: `beam_size` and `length_penalty` left out (None)
        are the checkpoint's (`generation`, checked when it was loaded); given ones must be a whole number from 1
        to `max_beam` and a number from 0 to `max_length_penalty` (the app passes its own, smaller limits).
        ValueError, in words a user can read, otherwise. Greedy search has beam width 1."""
        if method not in METHODS:
            raise ValueError(f"method must be 'greedy' or 'beam', got {quoted(method)}.")
        if beam_size is None:
            beam_size = self.generation.num_beams
        elif not _is_number(beam_size) or beam_size != int(beam_size) or not 1 <= beam_size <= max_beam:
            raise ValueError(f"beam_size must be a whole number from 1 to {max_beam}, got {quoted(beam_size)}.")
        if length_penalty is None:
            length_penalty = self.generation.length_penalty
        elif not _is_number(length_penalty) or not 0 <= length_penalty <= max_length_penalty:
            most = f"from 0 to {max_length_penalty:g}" if math.isfinite(max_length_penalty) else ">= 0"
            raise ValueError(f"length_penalty must be a finite number {most}, got {quoted(length_penalty)}.")
        return DecodingOptions(method, 1 if method == "greedy" else int(beam_size), float(length_penalty))

    @torch.inference_mode()
    def translate_sources(
        self,
        sources: list[Source],
        options: DecodingOptions,
        max_len: int | None = None,
        output_attentions: bool = True,
        top_k: int = 5,
        record_search: bool = False,
        head_mask: HeadMask | dict | None = None,
    ) -> list[Translation]:
        """Several prepared sources (`source`) with the same options, searched together. Each result is bit
        for bit what `translate` gives that source alone, whatever the other sources are and in any order:
        the n-best, the scores, the steps and every attention map. How: each sentence's encoder pass and
        attention capture run alone (float32, unpadded); the search, where batching pays, runs the sentences
        of one `SOURCE_BUCKETS` length together with batch-invariant weights (`quantize.search_model`).
        `options` come checked (`decoding_options`); `head_mask` (as in `translate`) is shared by every source."""
        if not isinstance(options, DecodingOptions):
            raise TypeError(f"options must be a DecodingOptions (Translator.decoding_options), got {options!r}")
        check_max_len(max_len)
        mask = as_head_mask(head_mask, self.model.config, self.device)
        if not sources:
            return []
        if max_len is not None:
            max_len = min(max_len, self.model.config.max_len)
        encoded = []
        for s in sources:
            pause_point()  # between sentences: other work may run here (`decoding.pause_points`)
            encoded.append(self._encode(s.ids, output_attentions, mask))
        nbests, traces = self._search([s.ids for s in sources], encoded, options, max_len, record_search, mask)
        results = []
        for source, hyps, trace in zip(sources, nbests, traces):
            candidates = [self._candidate(h, source) for h in hyps]
            best = candidates[0]
            results.append(Translation(
                text=best.text, src_tokens=self.tokenizer.ids_to_tokens(source.ids), tgt_tokens=best.tokens,
                score=best.score, log_prob=best.log_prob, truncated=source.truncated, candidates=candidates,
                method=options.method, beam_size=options.beam_size, src_ids=source.ids,
                model_input=source.text, head_mask=mask, entities=source.entities, as_text=source.as_text,
                search=trace.name_tokens(self.tokenizer.ids_to_tokens) if trace is not None else None,
            ))
        if output_attentions:
            for result, enc in zip(results, encoded):  # alone: the float32 model's maps of this output
                pause_point()  # between sentences: other work may run here (`decoding.pause_points`)
                result.attention = self._capture([result.src_ids], [result.candidates[0].ids], top_k, enc, mask)[0]
        return results

    def _encode(self, src_ids: list[int], output_attentions: bool, head_mask: HeadMask | None) -> EncodedSource:
        """One sentence's float32 encoder pass (src (1, S), no padding, so no mask): the same bits in any batch.
        Always the attention path that computes the weights, kept or not: the fused path (SDPA) rounds
        differently, and a text-only request must find the translation the page shows."""
        encoded = encode_source(self.model, torch.tensor([src_ids], device=self.device), True, head_mask=head_mask)
        if not output_attentions:
            encoded.attention = []
        return encoded

    def _search(self, src_ids: list[list[int]], encoded: list[EncodedSource], options: DecodingOptions,
                max_len: int | None, record_search: bool, head_mask: HeadMask | None
                ) -> tuple[list[list[Hypothesis]], list[SearchTrace | None]]:
        """Per sentence, its n-best (one hypothesis for greedy) and its search trace (None unless recorded).
        Sentences of one source bucket (`source_bucket`) are searched as one batch over their encoder passes
        `encoded`, padded to the bucket; every row of the search model is computed on its own row alone."""
        groups: dict[int, list[int]] = {}
        for i, ids in enumerate(src_ids):
            groups.setdefault(source_bucket(len(ids)), []).append(i)
        nbests: list[list[Hypothesis]] = [[] for _ in src_ids]
        traces: list[SearchTrace | None] = [None] * len(src_ids)
        for length, members in groups.items():
            src, enc = stack_encoded([encoded[i] for i in members], [src_ids[i] for i in members],
                                     self.model.config.pad_id, length)
            if options.method == "greedy":
                out = greedy_decode(self.search_model, src, max_len, enc, options.length_penalty,
                                    record_search=record_search, head_mask=head_mask)
                found = [[h] for h in out.hypotheses]
            else:
                out = beam_search(self.search_model, src, options.beam_size, options.length_penalty, max_len,
                                  encoded=enc, record_search=record_search, head_mask=head_mask)
                found = out.hypotheses
            for k, i in enumerate(members):
                nbests[i] = found[k]
                traces[i] = out.traces[k] if out.traces is not None else None
        return nbests, traces

    @torch.inference_mode()
    def attention_for(self, result: Translation, candidate: int = 0, top_k: int = 5,
                      attention_measure: str = "weight") -> Attention:
        """Attention (and step records) of n-best candidate `candidate`, by one teacher-forced pass (with
        `result`'s head mask). `attention_measure="norm"`: Kobayashi et al.'s ‖α_ij f_h(x_j)‖ instead of α_ij."""
        if not 0 <= candidate < len(result.candidates):
            raise ValueError(f"candidate must be in 0..{len(result.candidates) - 1}, got {candidate!r}")
        if attention_measure not in MEASURES:
            raise ValueError(f"attention_measure must be one of {MEASURES}, got {quoted(attention_measure)}")
        src = torch.tensor([result.src_ids], device=self.device)
        encoded = encode_source(self.model, src, True, attention_measure, result.head_mask)
        return self._capture([result.src_ids], [result.candidates[candidate].ids], top_k, encoded, result.head_mask,
                             attention_measure)[0]

    @torch.inference_mode()
    def attention_for_prefix(self, result: Translation, prefix_ids: list[int], top_k: int = 5) -> Attention:
        """Attention (and step records) of any output prefix of `result`'s source, by one teacher-forced pass.

        `prefix_ids` are output ids without <bos>, e.g. `result.search.prefix_ids(node_id)`
        for a node of the search tree. Shapes as in `Attention` with T = len(prefix_ids):
        cross (L, H, T, S); its last row is the cross-attention of the step that chose
        the prefix's last token.
        """
        vocab = self.model.config.tgt_vocab_size
        if not isinstance(prefix_ids, (list, tuple)) or not prefix_ids:
            raise ValueError("prefix_ids must be a non-empty list of output token ids")
        if not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < vocab for i in prefix_ids):
            raise ValueError(f"prefix_ids must be integers in 0..{vocab - 1}")
        if len(prefix_ids) > self.model.config.max_len:
            raise ValueError(f"prefix_ids is longer than the model's {self.model.config.max_len} positions")
        src = torch.tensor([result.src_ids], device=self.device)
        encoded = encode_source(self.model, src, True, head_mask=result.head_mask)
        return self._capture([result.src_ids], [list(prefix_ids)], top_k, encoded, result.head_mask)[0]

    def _capture(self, src_ids: list[list[int]], out_ids: list[list[int]], top_k: int,
                 encoded: EncodedSource, head_mask: HeadMask | None = None, attention_measure: str = "weight"
                 ) -> list[Attention]:
        """One decoder pass with weights on (norms with `attention_measure="norm"`, as in the encoder pass) over each
        `out_ids[i]` (right-padded into a batch), after the encoder pass `encoded` of the padded `src_ids`,
        heads off as `head_mask` says; each map is cut to its own sentence's tokens, so padding (masked:
        weight 0) never shows. Always the float32 `model`."""
        cfg = self.model.config
        in_ids = [[cfg.bos_id] + out[:-1] for out in out_ids]
        tgt_in = pad_sequences(in_ids, cfg.pad_id).to(self.device)
        hidden, self_ws, cross_ws = self.model.decode(
            tgt_in, encoded.memory, encoded.mask, causal_mask(tgt_in.size(1), self.device),
            output_attentions=True, attention_measure=attention_measure, head_mask=head_mask,
        )
        encoder, decoder, cross = (torch.stack(ws, 1).float() for ws in (encoded.attention, self_ws, cross_ws))
        probs = self.model.project(hidden).float().softmax(-1)  # (B, T, V)
        top_p, top_i = choosable(probs, self.model, src_ids).topk(min(top_k, probs.size(-1)), dim=-1)  # (B, T, k)
        attentions = []
        for i, (src, out, tgt) in enumerate(zip(src_ids, out_ids, in_ids)):
            S, T = len(src), len(out)
            chosen_p = probs[i, torch.arange(T, device=probs.device), out].tolist()  # (T,)
            out_tokens = self.tokenizer.ids_to_tokens(out)
            steps = [StepRecord(t, out_tokens[t], chosen_p[t], list(zip(self.tokenizer.ids_to_tokens(ids), ps)))
                     for t, (ids, ps) in enumerate(zip(top_i[i, :T].tolist(), top_p[i, :T].tolist()))]
            attentions.append(Attention(  # (L, H, T_q, T_k) each, copied out of the batch
                encoder=encoder[i, :, :, :S, :S].contiguous().cpu().numpy(),
                decoder=decoder[i, :, :, :T, :T].contiguous().cpu().numpy(),
                cross=cross[i, :, :, :T, :S].contiguous().cpu().numpy(),
                src_tokens=self.tokenizer.ids_to_tokens(src), tgt_in_tokens=self.tokenizer.ids_to_tokens(tgt),
                tgt_out_tokens=out_tokens, steps=steps, measure=attention_measure,
            ))
        return attentions

    @torch.inference_mode()
    def translate_batch(
        self, texts: list[str], method: str = "beam", beam_size: int | None = None,
        length_penalty: float | None = None, batch_size: int = 64, head_mask: HeadMask | dict | None = None,
    ) -> list[str]:
        """Texts only, decoded in length-sorted batches; each text is prepared as `translate` prepares it
        (`prepare`), so `translate_batch(xs)[i] == translate(xs[i]).text`. Empty inputs give empty outputs."""
        options = self.decoding_options(method, beam_size, length_penalty)
        mask = as_head_mask(head_mask, self.model.config, self.device)
        sources = [self._source_or_none(t) for t in texts]
        order = sorted((i for i, s in enumerate(sources) if s is not None), key=lambda i: len(sources[i].ids))
        texts_out = [""] * len(texts)
        for start in range(0, len(order), batch_size):
            idx = order[start: start + batch_size]
            encoded = [self._encode(sources[i].ids, False, mask) for i in idx]
            nbests, _ = self._search([sources[i].ids for i in idx], encoded, options, None, False, mask)
            for i, hyps in zip(idx, nbests):
                texts_out[i] = self._candidate(hyps[0], sources[i]).text
        return texts_out

    def inside_head(self, result: Translation, kind: str, layer: int, head: int, query: int,
                    candidate: int = 0) -> HeadRow:
        """How row `query` of one head's map for n-best candidate `candidate` is computed (`inside_head.HeadRow`:
        q, keys, scores, mask, softmax, values, output), from one float32 pass with `result`'s head mask."""
        if not 0 <= candidate < len(result.candidates):
            raise ValueError(f"candidate must be in 0..{len(result.candidates) - 1}, got {candidate!r}")
        tgt_in = [self.model.config.bos_id] + result.candidates[candidate].ids[:-1]
        return head_row(self.model, result.src_ids, tgt_in, kind, layer, head, query, result.head_mask)

    @torch.inference_mode()
    def score(self, sources: list[str], translations: list[str]) -> list[Score]:
        """The float32 model's log-probability of each `translations[i]` given `sources[i]`, by one
        teacher-forced pass over the padded batch: in total and per token (<eos> included).

        Sources take the input path of `translate` (`source`: truecasing, names and numbers as placeholders);
        in a translation, each entity of its source is read as the same placeholder, as training marks
        targets. So the model's own output, scored, gives the log-probability its search found (when the
        output text tokenises back into the same tokens). ValueError for an empty or over-long text."""
        if isinstance(sources, str) or isinstance(translations, str):
            raise ValueError("sources and translations must be lists of strings")
        if len(sources) != len(translations):
            raise ValueError(f"{len(sources)} sources but {len(translations)} translations")
        cfg = self.model.config
        prepared = [self.source(text) for text in sources]
        targets = [self._target_ids(text, source) for text, source in zip(translations, prepared)]
        if not prepared:
            return []
        src = pad_sequences([s.ids for s in prepared], cfg.pad_id).to(self.device)  # (B, S)
        tgt_in = pad_sequences([[cfg.bos_id] + t for t in targets], cfg.pad_id).to(self.device)  # (B, T)
        log_probs = self.model(src, tgt_in).logits.float().log_softmax(-1)  # (B, T, V)
        scores = []
        for i, ids in enumerate(targets):
            out = ids + [cfg.eos_id]
            per_token = log_probs[i, torch.arange(len(out), device=self.device), out].tolist()
            scores.append(Score(math.fsum(per_token), per_token, self.tokenizer.ids_to_tokens(out), out))
        return scores

    @torch.inference_mode()
    def force(self, text: str, translation: str, top_k: int = 5, head_mask: HeadMask | dict | None = None,
              ids: list[int] | None = None) -> Translation:
        """`text` translated as `translation` says, not as the search would: a `Translation` with that one
        candidate, scored (`score`: its log-probability, per token in `steps`, each with the model's own top
        `top_k` alternatives) and with every attention map of it, from one teacher-forced float32 pass
        (with the heads `head_mask` switches off, as in `translate`). `ids`: the output ids to force (<eos>
        last), e.g. a candidate's, which the search may have spelled in other subword pieces than the
        tokenizer splits its text into; `translation` is then only what is shown."""
        source = self.source(text)
        if ids is None:
            ids = self._target_ids(translation, source) + [self.model.config.eos_id]
        else:
            ids = self._checked_ids(ids)
        mask = as_head_mask(head_mask, self.model.config, self.device)
        src = torch.tensor([source.ids], device=self.device)
        encoded = encode_source(self.model, src, True, head_mask=mask)
        attention = self._capture([source.ids], [ids], top_k, encoded, mask)[0]
        log_prob = math.fsum(math.log(max(s.probability, 1e-45)) for s in attention.steps)
        tokens = self.tokenizer.ids_to_tokens(ids)
        shown = self.tokenizer.decode(strip_specials(ids, self.model), source.entities)
        candidate = Candidate(shown, tokens, ids, log_prob, log_prob)
        return Translation(
            text=shown, src_tokens=self.tokenizer.ids_to_tokens(source.ids), tgt_tokens=tokens, score=log_prob,
            log_prob=log_prob, truncated=source.truncated, candidates=[candidate], method="forced", beam_size=1,
            src_ids=source.ids, attention=attention, model_input=source.text, entities=source.entities,
            head_mask=mask, as_text=source.as_text)

    def _checked_ids(self, ids: list[int]) -> list[int]:
        """Output ids to force, as given, or ValueError."""
        cfg = self.model.config
        if not isinstance(ids, (list, tuple)) or not ids or not all(
                isinstance(i, int) and not isinstance(i, bool) and 0 <= i < cfg.tgt_vocab_size for i in ids):
            raise ValueError(f"ids must be a non-empty list of output token ids in 0..{cfg.tgt_vocab_size - 1}")
        if len(ids) > cfg.max_len:
            raise ValueError(f"translation is too long: {len(ids)} tokens, the model reads at most {cfg.max_len}")
        return list(ids)

    def _target_ids(self, text: str, source: Source) -> list[int]:
        """A translation's ids (no specials), the source's entities as its placeholders."""
        if not isinstance(text, str):
            raise ValueError(f"a translation must be a string, got {type(text).__name__}")
        if not text.strip():
            raise ValueError("translation is empty: type the translation to score")
        if source.entities:
            ids = encode_marked(self.tokenizer, [mark_entities(text, source.entities)], self.tokenizer.vocab_size)[0]
        else:
            ids = self.tokenizer.encodings([text])[0].ids
        if len(ids) + 1 > self.model.config.max_len:
            raise ValueError(f"translation is too long: {len(ids)} tokens, the model reads at most "
                             f"{self.model.config.max_len - 1}")
        return ids

    def _source_or_none(self, text: str) -> Source | None:
        """`source(text)`, or None for a string with nothing to translate (its output is empty)."""
        if not isinstance(text, str):
            return self.source(text)  # raises: text must be a string
        try:
            return self.source(text)
        except ValueError:  # empty, or nothing left after normalisation
            return None


def load_pretrained(name_or_path: str | os.PathLike, device: str = "cpu", quantize: str | None = None,
                    **download_kwargs) -> Translator:
    """A local checkpoint directory or a Hugging Face Hub repo id -> `Translator`.

    `quantize="int8"` (CPU only) searches with int8 decoder weights (`transformer.quantize`): faster at beam 5
    (`bench/decode_latency.py`); attention and step probabilities stay float32. None or "fp32": float32 throughout.
    """
    if quantize not in (None,) + PRECISIONS:
        raise ValueError(f"quantize must be one of {PRECISIONS} or None, got {quantize!r}")
    directory = resolve_checkpoint(name_or_path, **download_kwargs)
    digest = checkpoint_digest(directory)
    model = load_checkpoint(directory, device=device)
    if quantize == "int8":
        translator = Translator(model, model.tokenizer, name=str(name_or_path), truecaser=model.truecaser,
                                search_model=build_search_model(model, "int8"), precision="int8")
    else:
        translator = Translator(model, model.tokenizer, name=str(name_or_path), truecaser=model.truecaser)
    if checkpoint_digest(directory) == digest:
        translator.origin = (os.path.abspath(directory), "int8" if quantize == "int8" else None, digest)
    else:  # rewritten while it loaded: what was read may mix two versions, so no other process copies it
        log.warning("%s changed on disk while it loaded; its searches stay in this process", directory)
    return translator
