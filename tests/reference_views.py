"""A Python copy of what the browser computes (static/payload.js, views.js and figures.js, put on the page by
explorer.js), the reference the browser, payload and Node tests (test_js.py) compare the page with: the payload
decoded (`decode_attention`), a result's attention as the views show it, one head's map (a Plotly figure),
every layer and head, a decoding step, the rollout, and the notes on hidden mass.

Test-only: the app sends the payload (`result_view.result_payload`) and the page draws it; nothing in
`transformer/` calls these.
"""
from __future__ import annotations

import base64
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from transformer.explorer.maps import figures
from transformer.explorer.maps.payload import CODEC
from transformer.explorer.core.view_state import KINDS, MEAN_HEADS, ROWS_PREDICTED, head_text
from transformer.explorer.core.texts import KIND_TITLES
from transformer.explorer.maps.token_labels import WORD_MARK, choice_label, display_token, escape_label, labels
from transformer.explorer.maps.transforms import check_tokens, hide_special, merge_subwords
from transformer.translator import Attention, StepRecord


# ----------------------------------------------------------------------------- the payload, decoded


def _unpack(entry: dict[str, Any]) -> bytes:
    """The bytes of an entry, inflated as explorer.js's `inflate` does (entries without a codec are plain)."""
    raw = base64.b64decode(entry["data"])
    return zlib.decompress(raw, -15) if entry.get("codec") == CODEC else raw


def decode_array(entry: dict[str, Any]) -> np.ndarray:
    """The inverse of `payload.encode_rows`, as float32, computed as the browser computes it (explorer.js
    `decodeArray`)."""
    if entry["dtype"] == "float32":
        return np.frombuffer(_unpack(entry), dtype="<f4").reshape(entry["shape"]).copy()
    dtype = np.dtype("<u2") if entry["dtype"] == "uint16" else np.dtype("u1")
    raw = np.frombuffer(_unpack(entry), dtype=dtype).reshape(entry["shape"])
    values = (raw.astype(np.float64) / entry["scale"]).astype(np.float32)
    if "kept_mass" in entry:
        mass = decode_array(entry["kept_mass"])[..., None]
        kept = np.asarray(entry["kept"], dtype=bool)
        values[..., kept] = (values[..., kept] * mass).astype(np.float32)
    return values


def decode_attention(payload: dict[str, Any], measure: str = "weight") -> Attention:
    """The weights (or the row-normalised norms) and tokens exactly as the browser sees them (quantised),
    as an `Attention`."""
    toks = payload["tokens"]
    steps = [StepRecord(i, s["token"], s["p"], [(t, p) for t, _, p in s["top"]])
             for i, s in enumerate(payload["steps"])]
    key = "weights" if measure == "weight" else "norm"
    return Attention(*(decode_array(payload["kinds"][k][key]) for k in KINDS), toks["src"]["raw"],
                     toks["tgt_in"]["raw"], toks["tgt_out"]["raw"], steps, measure=measure)


# ----------------------------------------------------------------------------- figures (pure: arrays -> figures)


def attention_heatmap(
    weights: np.ndarray,
    q_tokens: Sequence[str],
    k_tokens: Sequence[str],
    title: str = "",
    zmax: float = 1.0,
) -> go.Figure:
    """One `(Tq, Tk)` attention map: query i is row i from the top, keys run along the top.

    The colour scale is fixed at [0, zmax] (default 1) so maps can be compared;
    hover shows query, key and weight.
    """
    w = np.asarray(weights, dtype=np.float32)
    if w.ndim != 2:
        raise ValueError(f"expected (Tq, Tk) weights, got {w.shape}")
    check_tokens(w, q_tokens, k_tokens)
    q_lab, k_lab = labels(q_tokens), labels(k_tokens)
    customdata = [[[q, k] for k in k_lab] for q in q_lab]  # (Tq, Tk, 2); fine for a single map
    trace = go.Heatmap(
        z=w, customdata=customdata, coloraxis="coloraxis",
        hovertemplate="query: %{customdata[0]}<br>key: %{customdata[1]}<br>weight: %{z:.1%}<extra></extra>",
    )
    n = max(len(q_tokens), len(k_tokens))
    layout = figures.base_layout(
        title,
        xaxis=figures.token_axis(k_tokens, side="top", tickangle=-60, constrain="domain", title=dict(text="key")),
        # square cells; reversed so the first query is the top row, as in the matrix
        yaxis=figures.token_axis(q_tokens, autorange="reversed", scaleanchor="x", scaleratio=1, constrain="domain",
                          title=dict(text="query")),
        coloraxis=dict(cmin=0.0, cmax=zmax, colorscale=figures.ATTENTION_COLORSCALE,
                       colorbar=dict(title=dict(text="weight"), tickformat=".0%", thickness=14)),
        height=int(np.clip(260 + 16 * n, 420, 900)),
    )
    layout["margin"]["t"] = 140  # room for rotated key labels above the map
    return figures.make_figure([trace], layout)



def rollout_figure(rollout_weights: np.ndarray, src_tokens: Sequence[str], title: str = "") -> go.Figure:
    """`(S, S)` attention rollout over the source as one heatmap.

    Unlike raw maps the colour scale ends at the largest value: rollout spreads
    mass over many tokens, and a fixed 0..1 scale would wash it out.
    """
    r = np.asarray(rollout_weights, dtype=np.float32)
    zmax = float(r.max()) if r.size and r.max() > 0 else 1.0
    return attention_heatmap(r, src_tokens, src_tokens, title or "Encoder attention rollout", zmax=zmax)



def step_figure(
    step_topk: Sequence[tuple[str, float]],
    cross_row: np.ndarray,
    src_tokens: Sequence[str],
    chosen_token: str,
    title: str = "",
    k: int = 5,
) -> go.Figure:
    """One decoding step: top-k next-token probabilities (left) and the `(S,)` cross-attention row (right).

    The chosen token's bar is highlighted; sampling may choose a token outside the top-k.
    """
    row = np.asarray(cross_row, dtype=np.float32)
    if row.shape != (len(src_tokens),):
        raise ValueError(f"cross_row shape {row.shape} != ({len(src_tokens)},)")
    top = sorted(step_topk, key=lambda tp: tp[1], reverse=True)[:k]
    tokens = [t for t, _ in top]
    probs = [float(p) for _, p in top]
    colors = [figures.HIGHLIGHT_COLOR if t == chosen_token else figures.TRAIN_COLOR for t in tokens]
    bars = go.Bar(
        x=probs, y=list(range(len(top))), orientation="h", marker=dict(color=colors),
        customdata=[escape_label(choice_label(t)) for t in tokens], hovertemplate="%{customdata}: %{x:.1%}<extra></extra>",
        texttemplate="%{x:.0%}", textposition="outside", showlegend=False,
    )
    attention = go.Bar(
        x=list(range(len(src_tokens))), y=row, xaxis="x2", yaxis="y2", marker=dict(color=figures.TRAIN_COLOR),
        customdata=labels(src_tokens), hovertemplate="%{customdata}: %{y:.1%}<extra></extra>", showlegend=False,
    )
    left, right = [0.0, 0.34], [0.44, 1.0]
    layout = figures.base_layout(
        title or f"Next token: {chosen_token}",
        xaxis=dict(domain=left, anchor="y", range=[0, 1.15], tickformat=".0%", title=dict(text="probability")),
        yaxis=dict(domain=[0, 1], anchor="x", autorange="reversed",
                   **figures.token_axis(tokens) | dict(ticktext=[escape_label(choice_label(t)) for t in tokens])),
        xaxis2=dict(domain=right, anchor="y2", tickangle=-45, **figures.token_axis(src_tokens)),
        yaxis2=dict(domain=[0, 1], anchor="x2", range=[0, 1], tickformat=".0%", title=dict(text="cross-attention")),
        annotations=[figures.panel_title(f"Top-{len(top)} next tokens", x=sum(left) / 2, y=1.02),
                     figures.panel_title("Cross-attention over the source", x=sum(right) / 2, y=1.02)],
        height=380,
    )
    return figures.make_figure([bars, attention], layout)


# ----------------------------------------------------------------------------- the views of a result, as the page draws them


@dataclass(frozen=True)
class ViewOptions:
    layer: int = 0
    head: int = MEAN_HEADS
    rows: str = ROWS_PREDICTED
    hide_special: bool = False
    merge_subwords: bool = False


def kind_maps(att: Attention, kind: str, rows: str) -> tuple[np.ndarray, list[str], list[str]]:
    """(L, H, Tq, Tk) weights of one attention kind with its query and key tokens."""
    if kind == "encoder":
        return att.encoder, att.src_tokens, att.src_tokens
    queries = att.tgt_out_tokens if rows == ROWS_PREDICTED else att.tgt_in_tokens
    if kind == "decoder":
        return att.decoder, queries, att.tgt_in_tokens
    if kind == "cross":
        return att.cross, queries, att.src_tokens
    raise ValueError(f"unknown attention kind {kind!r}")


def transform(weights: np.ndarray, q: Sequence[str], k: Sequence[str], hide: bool, merge: bool
              ) -> tuple[np.ndarray, list[str], list[str], float | None]:
    """Hide special tokens (renormalising rows) then merge subwords; hidden mass is None when not hiding."""
    hidden = None
    q, k = list(q), list(k)
    if hide:
        weights, q, k, hidden = hide_special(weights, q, k)
    if merge and q and k:
        weights, q, k = merge_subwords(weights, q, k)
        # whole words: marked as word starts, so their labels show bare (display_token), as on the page
        q, k = [WORD_MARK + w for w in q], [WORD_MARK + w for w in k]
    return weights, q, k, hidden


def _empty(weights: np.ndarray) -> bool:
    return 0 in weights.shape[-2:]


def focus_view(att: Attention, kind: str, opts: ViewOptions, suffix: str = "") -> tuple[go.Figure, float | None]:
    """One layer and head (or the mean over heads) of one kind as a heatmap, and the hidden mass."""
    weights, q, k = kind_maps(att, kind, opts.rows)
    n_layers, n_heads = weights.shape[:2]
    if n_layers == 0:
        return figures.placeholder_figure(f"This model has no {kind} layers."), None
    layer = min(max(opts.layer, 0), n_layers - 1)
    head = opts.head if opts.head < n_heads else MEAN_HEADS
    w = weights[layer].mean(axis=0) if head < 0 else weights[layer, head]
    w, q, k, hidden = transform(w, q, k, opts.hide_special, opts.merge_subwords)
    title = f"{KIND_TITLES[kind]} · layer {layer + 1} · {head_text(head)}{suffix}"
    if layer != opts.layer:
        title += f" (this stack has {n_layers} layers)"
    if _empty(w):
        return figures.placeholder_figure("Nothing left to show after hiding special tokens."), hidden
    return attention_heatmap(w, q, k, title=title), hidden


def step_view(att: Attention, step: Any, opts: ViewOptions) -> tuple[go.Figure, str]:
    """Decoding step `step` (1-based): the chosen token, top-5 next tokens and that step's cross-attention row."""
    if not att.steps:
        return figures.placeholder_figure("No decoding steps."), ""
    t = min(max(int(step or 1), 1), len(att.steps)) - 1
    record = att.steps[t]
    n_layers, n_heads = att.cross.shape[:2]
    if n_layers == 0:
        return figures.placeholder_figure("This model has no decoder layers."), ""
    layer = min(max(opts.layer, 0), n_layers - 1)
    head = opts.head if opts.head < n_heads else MEAN_HEADS
    row = att.cross[layer].mean(axis=0)[t] if head < 0 else att.cross[layer, head, t]
    row2, _, src, _ = transform(row[None, :], ["·"], att.src_tokens, opts.hide_special, opts.merge_subwords)
    fig = step_figure(record.top_k, row2[0], src, record.token,
                          title=f"Step {t + 1}: chose {display_token(record.token)} · "
                                f"cross-attention layer {layer + 1}, "
                                f"{head_text(head)}")
    text = (f"Step {t + 1} of {len(att.steps)}: the decoder read \u2018{display_token(att.tgt_in_tokens[t])}"
            f"\u2019 and chose \u2018{display_token(record.token)}\u2019 (probability {record.probability:.1%}).")
    return fig, text


def hidden_text(masses: dict[str, float | None]) -> str:
    shown = {k: v for k, v in masses.items() if v is not None}
    if not shown:
        return "Special tokens are shown (tick \"Hide <bos>/<eos>\" to hide them and renormalise rows)."
    parts = ", ".join(f"{KIND_TITLES[k].lower()} {v:.1%}" for k, v in shown.items())
    return f"Attention mass hidden on <bos>/<eos>/<pad> in the focus views (rows renormalised): {parts}."
