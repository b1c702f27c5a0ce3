"""What the browser gets after a translation: one candidate's attention, packed once, for client-side views.

The page redraws every view (layer, head, mean over heads, row labels, hidden specials, merged
subwords, decoding step, tab) from this payload without asking the server again; see
`transformer/explorer/panels/attention/explorer.js`. Everything the JavaScript cannot get exactly right by itself is
computed here, in pure Python, and sent ready-made:

* weights quantised to integers (`QUANT_SCALE`, little-endian, deflated, base64): `(L, H, Q, K)` per kind;
* tokens as the model's pieces (`raw`), as shown (`shown`, `token_labels.display_token`: no "▁", for
  `textContent`), as escaped labels (`token_labels.escape_label`, for Plotly, which parses a subset of HTML), with
  the special-token mask and the word groups of `token_labels.word_groups`, both for all tokens and for the tokens
  left after hiding the specials;
* head entropy per kind (with its cell colours), the encoder rollout, the decoding steps;
* when asked for, Kobayashi et al.'s norms ‖α f(x)‖ per kind, each row divided by its sum (`norm_rows`);
* the heads switched off and the translation with every head on (`ablation`), and what the checkpoint's
  head analysis says about each head (`heads`: importance, role tags and shares).

The JavaScript re-implements only the cheap transforms (mean over heads, hide specials with row
renormalisation, merge subwords) and inflate; tests/test_browser.py checks its plotted arrays against the
Python views (tests/reference_views.py) of the decoded payload, and against the same views of the model's float32
maps (within 0.005 per cell). bench/payload_size.py says how many bytes a translation sends.

No gradio and no torch here: numpy arrays and tokens in, a JSON-ready dict out.
"""
from __future__ import annotations

import base64
import functools
import itertools
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
from plotly.colors import sample_colorscale, sequential

from transformer.explorer.maps import token_labels
from transformer.explorer.maps import transforms
from transformer.config import ATTENTION_KINDS
from transformer.translator import Attention, StepRecord

__all__ = ["PAYLOAD_VERSION", "QUANT_SCALE", "attention_payload", "encode_rows", "token_info", "norm_rows",
           "ATTENTION_COLORS"]

PAYLOAD_VERSION = 4  # sent as `version`: raised whenever the payload's layout changes
CODEC = "deflate"
QUANT_SCALE = 65535  # weights in [0, 1] as uint16: steps of 1.5e-5, so a hover's 0.1 % agrees with float32
# uint8 for every input past a short sentence: along running sums 1/255 keeps every view within 0.004 of
# float32, and its bytes compress far better than uint16's, whose low byte is noise to the compressor
# (bench/payload_size.py)
SMALL_QUANT_SCALE = 255
MAX_WEIGHT_BYTES = 96_000  # uint16 only while its raw bytes (all kinds) stay within this: a short sentence
MASS_SCALE = 65535  # a row's kept mass as uint16
PACK_LEVEL = 6  # zlib's default level: a higher one spends more time for few bytes fewer
KINDS = ATTENTION_KINDS
# light to dark, white = no attention; the canvas model view and the Plotly heatmaps share it
ATTENTION_COLORS = [[i / (len(sequential.Blues) - 1), c] for i, c in enumerate(sequential.Blues)]
SCORE_COLORS = "Viridis"
_REVISIONS = itertools.count(1)


def _int_dtype(scale: int) -> np.dtype:
    return np.dtype("<u2") if scale > 255 else np.dtype("u1")


def _entry(q: np.ndarray, scale: int) -> dict[str, Any]:
    """Integers `q` (uint8/uint16, any shape) as a payload entry."""
    return {"shape": list(q.shape), "scale": scale, "dtype": "uint16" if q.dtype.itemsize == 2 else "uint8",
            "codec": CODEC, "data": _pack(np.ascontiguousarray(q).tobytes())}


def _pack(raw: bytes) -> str:
    """Raw DEFLATE (RFC 1951, no zlib header), base64. Gradio's queue streams results as server-sent events,
    which its compression middleware leaves alone, so the payload is compressed here: most weights are 0 or
    small, and the quantised maps of real sentences shrink well (bench/payload_size.py)."""
    packer = zlib.compressobj(PACK_LEVEL, zlib.DEFLATED, -15)
    return base64.b64encode(packer.compress(raw) + packer.flush()).decode("ascii")


def encode_rows(values: np.ndarray, kept: Sequence[bool], scale: int) -> dict[str, Any]:
    """Attention rows `(..., Q, K)` quantised so that what the page computes from them stays exact.

    The columns of `kept` keys (all but <bos>/<eos>/<pad>) are sent divided by their row's kept mass, and the
    mass itself (`kept_mass`, `(..., Q)`) beside them: many heads put 99.9 % of a row on <bos>, and quantised
    plainly the rest of such a row would be rounding noise that "Hide <bos>/<eos>" blows up to whole weights. The
    kept columns are quantised along their running sum (error diffusion: `_cumulative_round`), so the sum of any
    run of neighbouring keys (a word's pieces, a whole row) is within one quantisation step of its float32
    value: merged words stay exact too, and a row's kept values add up to exactly 1 (so hiding divides by the
    row's own sum and gets the kept-relative values back, whatever the mass). Every view is then within
    1/scale of the float32 maps (uint8: 0.004).

    The mass goes as uint16 (`MASS_SCALE`): it only scales the view with specials shown, where 1/65535 is far
    below the tolerance; a mass above 0 is never rounded to 0 (hiding would blank a row that has weights)."""
    values = _unit_interval(values)
    kept = np.asarray(kept, dtype=bool)
    kept_values = values[..., kept]  # (..., Q, kept keys): one copy, used twice
    mass = kept_values.sum(axis=-1, keepdims=True)  # (..., Q, 1)
    relative = np.divide(kept_values, mass, out=np.zeros_like(kept_values), where=mass > 0)
    dtype = _int_dtype(scale)
    q = np.rint(values * scale).astype(dtype)  # the specials' columns as they are; the kept ones replaced below
    q[..., kept] = _cumulative_round(relative, scale).astype(dtype)
    mass_q = np.rint(np.clip(mass[..., 0], 0.0, 1.0) * MASS_SCALE)
    mass_q = np.where(mass[..., 0] > 0, np.maximum(mass_q, 1), 0).astype("<u2")
    return _entry(q, scale) | {"kept": kept.tolist(), "kept_mass": _entry(mass_q, MASS_SCALE)}


def _unit_interval(values: np.ndarray) -> np.ndarray:
    """`values` as a new float64 array clipped to [0, 1], NaN as 0 (what `np.clip(np.nan_to_num(...), 0, 1)`
    gives, in two passes instead of five: every map of a payload goes through it)."""
    out = np.array(values, dtype=np.float64)
    np.clip(out, 0.0, 1.0, out=out)  # +inf -> 1, -inf -> 0, NaN stays NaN
    out[np.isnan(out)] = 0.0
    return out


def _cumulative_round(values: np.ndarray, scale: int) -> np.ndarray:
    """Integers along the last axis whose running sums are the rounded running sums of `values * scale`:
    each integer is within one step of its value, and so is the sum of any run of neighbours."""
    running = np.rint(np.cumsum(values, axis=-1) * scale)
    return np.clip(np.diff(running, axis=-1, prepend=0.0), 0, scale)


def token_info(tokens: Sequence[str], entities: Sequence[str] = ()) -> dict[str, Any]:
    """Raw tokens, escaped labels, the special mask and word groups (all tokens / specials hidden). A merged
    word that is a placeholder shows what it stands for ("⟨1⟩ Oluwaseun"; `entities[k]` for ⟨k+1⟩)."""
    special = [t in token_labels.HIDDEN_BY_DEFAULT for t in tokens]
    kept = [t for t, s in zip(tokens, special) if not s]
    groups, words = token_labels.word_groups(tokens)
    groups_kept, words_kept = token_labels.word_groups(kept)
    words, words_kept = _with_entities(words, entities), _with_entities(words_kept, entities)
    return {
        "raw": list(tokens), "label": [token_labels.escape_label(token_labels.display_token(t)) for t in tokens],
        "shown": [token_labels.display_token(t) for t in tokens], "special": special,
        "groups": groups, "words": [token_labels.escape_label(w) for w in words], "words_raw": words,
        "groups_hidden": groups_kept, "words_hidden": [token_labels.escape_label(w) for w in words_kept],
        "words_hidden_raw": words_kept,
    }


def _with_entities(words: list[str], entities: Sequence[str]) -> list[str]:
    """Word labels with each placeholder followed by its entity: "⟨1⟩" -> "⟨1⟩ Oluwaseun", "⟨1⟩s" -> "⟨1⟩s Ayo"."""
    def label(word: str) -> str:
        m = token_labels.PLACEHOLDER_TOKEN.match(word)
        k = int(word[1]) - 1 if m else -1
        return f"{word} {entities[k]}" if 0 <= k < len(entities) else word
    return [label(w) for w in words]


@functools.cache
def _score_palette() -> np.ndarray:
    """SCORE_COLORS sampled by Plotly at 256 levels, once: Plotly parses and validates the colour scale on
    every `sample_colorscale` call, most of a warm payload's time."""
    return np.array(sample_colorscale(SCORE_COLORS, np.linspace(0.0, 1.0, 256).tolist(), colortype="rgb"),
                    dtype=object)


def _entropy(weights: np.ndarray) -> dict[str, Any]:
    """Head entropy (L, H) rounded for display, with a Viridis colour per cell (scaled to this grid)."""
    if weights.shape[0] == 0 or 0 in weights.shape[-2:]:
        return {"values": [], "colors": []}
    scores = transforms.head_entropy(weights)
    lo, hi = float(scores.min()), float(scores.max())
    scaled = (scores - lo) / (hi - lo) if hi > lo else np.zeros_like(scores)
    colors = _score_palette()[np.rint(scaled * 255).astype(int)]
    return {"values": np.round(scores, 3).tolist(), "colors": colors.tolist()}


def norm_rows(norms: np.ndarray) -> np.ndarray:
    """‖α f(x)‖ maps `(..., Q, K)` with each row divided by its sum, for display on α's scale (a row of zeros,
    e.g. a head switched off, stays zero)."""
    norms = np.asarray(norms, dtype=np.float64)
    total = norms.sum(axis=-1, keepdims=True)
    return np.divide(norms, total, out=np.zeros_like(norms), where=total > 0).astype(np.float32)


def _step(record: StepRecord) -> dict[str, Any]:
    top = sorted(record.top_k, key=lambda tp: tp[1], reverse=True)[:5]
    return {"token": record.token, "label": token_labels.escape_label(token_labels.display_token(record.token)),
            "shown": token_labels.display_token(record.token), "p": round(float(record.probability), 4),
            "top": [[tok, token_labels.escape_label(token_labels.choice_label(tok)), round(float(p), 4)] for tok, p in top]}


def attention_payload(att: Attention, *, model: str = "", candidate: int = 0, n_candidates: int = 1,
                      source: str = "", translation: str = "", norms: Attention | None = None,
                      ablation: dict[str, Any] | None = None, heads: dict[str, Any] | None = None,
                      max_weight_bytes: int = MAX_WEIGHT_BYTES, entities: Sequence[str] = ()) -> dict[str, Any]:
    """One candidate's attention, tokens, head summaries, rollout and steps as a JSON-ready dict.

    `source` and `translation` (raw text; the page shows them with textContent) caption the views.
    `norms` (the same candidate's ‖α f(x)‖, `Translator.attention_for(..., attention_measure="norm")`) adds a
    row-normalised "norm" array to each kind; `ablation` ({"off": [[kind, layer, head], ...], "unmasked":
    text}) and `heads` (`checkpoint_heads.head_info`) go as they are.

    att: encoder (L, H, S, S), decoder (L, H, T, T), cross (L, H, T, S). Weights go as uint16 for a short
    sentence, or uint8 when uint16's raw bytes would exceed `max_weight_bytes`; both deflated (`_pack`).
    """
    n_values = (att.encoder.size + att.decoder.size + att.cross.size) * (2 if norms is not None else 1)
    scale = QUANT_SCALE if 2 * n_values <= max_weight_bytes else SMALL_QUANT_SCALE
    kinds = {}
    key_tokens = {"encoder": att.src_tokens, "decoder": att.tgt_in_tokens, "cross": att.src_tokens}
    for kind in KINDS:
        weights = getattr(att, kind)
        kept = [t not in token_labels.HIDDEN_BY_DEFAULT for t in key_tokens[kind]][: weights.shape[-1]]
        kinds[kind] = {"weights": encode_rows(weights, kept, scale), "entropy": _entropy(weights)}
        if norms is not None:
            kinds[kind]["norm"] = encode_rows(norm_rows(getattr(norms, kind)), kept, scale)
    kept_src = [t not in token_labels.HIDDEN_BY_DEFAULT for t in att.src_tokens][: att.encoder.shape[-1]]
    rollout = transforms.rollout(att.encoder) if att.encoder.shape[0] and att.encoder.shape[-1] else None
    cfg_layers = max(att.encoder.shape[0], att.decoder.shape[0], att.cross.shape[0], 1)
    return {
        "version": PAYLOAD_VERSION,
        "rev": next(_REVISIONS),  # tells the page a new payload from a repeated one
        "model": model,
        "candidate": candidate,
        "n_candidates": n_candidates,
        "source": source,
        "translation": translation,
        "n_layers": cfg_layers,
        "n_heads": int(att.encoder.shape[1] if att.encoder.ndim == 4 else att.cross.shape[1]),
        "tokens": {"src": token_info(att.src_tokens, entities), "tgt_in": token_info(att.tgt_in_tokens, entities),
                   "tgt_out": token_info(att.tgt_out_tokens, entities)},
        "kinds": kinds,
        "rollout": None if rollout is None else encode_rows(rollout, kept_src, scale),
        "steps": [_step(s) for s in att.steps],
        "colorscale": ATTENTION_COLORS,
        "measures": ["weight", "norm"] if norms is not None else ["weight"],
        "ablation": ablation,
        "heads": heads,
    }
