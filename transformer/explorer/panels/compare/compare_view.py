"""The compare tab: two translations (two sentences, or one sentence decoded greedily and by beam search), one
attention map of both side by side and their difference, as the compare panel gets it (`compare_value`, drawn by
compare.js: figures as JSON text and plain texts).
"""
from __future__ import annotations

import difflib
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import plotly.graph_objects as go

from transformer.translator import Attention

from transformer.explorer.maps import figures
from transformer.explorer.maps import token_labels
from transformer.explorer.maps.figures import (ATTENTION_COLORSCALE, axis_name, base_layout, figure_json, make_figure, panel_title,
                      placeholder_figure, token_axis)
from transformer.explorer.core.view_state import KINDS, ROWS_PREDICTED, head_text, pick_view
from transformer.explorer.maps.token_labels import display_token, short_label

__all__ = ["CompareSession", "compare_value", "AttentionArrays", "select_map", "align_tokens", "difference_unavailable",
           "difference_map", "CompareView", "compare_figures"]

DIFF_COLORSCALE = [  # ColorBrewer RdBu, blue = B attends more, red = A attends more, white = the same
    [0.0, "#2166ac"], [0.25, "#92c5de"], [0.5, "#f7f7f7"], [0.75, "#f4a582"], [1.0, "#b2182b"],
]
_REVISIONS = itertools.count(1)


# ----------------------------------------------------------------------------- what the compare panel gets


@dataclass
class CompareSession:
    """Two translations to compare: two sentences, or one sentence decoded two ways."""

    mode: str  # "sentences" or "methods"
    labels: tuple[str, str]  # panel names ("greedy", "beam 5", or the two sources)
    sources: tuple[str, str]
    translations: tuple[str, str]
    attentions: tuple[Attention, Attention]
    rev: int = field(default_factory=lambda: next(_REVISIONS))
    released: bool = False  # its arrays were dropped by the app's results store

    def release(self) -> None:
        """Drop both attentions (the app's results store, over its budget); the texts stay."""
        self.attentions, self.released = (), True


def compare_value(session: CompareSession, data: Any = None) -> dict[str, Any]:
    """What the compare panel draws for the kind, layer, head and row labels in `data` (see `pick_view`)."""
    a, b = session.attentions
    kind = data.get("kind") if isinstance(data, Mapping) else None
    kind = kind if kind in KINDS else "cross"
    if session.mode == "methods" and kind == "encoder":
        kind = "cross"  # one source decoded two ways: the encoder's maps are the same on both sides
    maps_a, maps_b = getattr(a, kind), getattr(b, kind)
    n_layers, n_heads = min(maps_a.shape[0], maps_b.shape[0]), min(maps_a.shape[1], maps_b.shape[1])
    kind, layer, head, rows = pick_view({**(dict(data) if isinstance(data, Mapping) else {}), "kind": kind},
                                        n_layers, n_heads)
    # each map is named under it as the panel's texts name its side: "greedy" and "beam 5", or "sentence 1" and 2
    names = session.labels if session.mode == "methods" else ("sentence 1", "sentence 2")
    view = compare_figures(a, b, kind, layer, head, predicted_rows=rows == ROWS_PREDICTED, labels=names)
    return {
        "rev": next(_REVISIONS), "session": session.rev, "mode": session.mode, "labels": list(session.labels),
        "sources": list(session.sources), "translations": list(session.translations),
        "pair": figure_json(view.pair), "difference": figure_json(view.difference), "note": view.note,
        "kind": kind, "layer": layer, "head": head, "rows": rows, "n_layers": int(n_layers), "n_heads": int(n_heads),
    }


# ----------------------------------------------------------------------------- the figures


class AttentionArrays(Protocol):
    """What `compare_figures` reads: a `transformer.translator.Attention` (float arrays, rows = queries)."""

    encoder: np.ndarray  # (L, H, S, S)
    decoder: np.ndarray  # (L, H, T, T)
    cross: np.ndarray  # (L, H, T, S)
    src_tokens: list[str]
    tgt_in_tokens: list[str]
    tgt_out_tokens: list[str]


def select_map(att: AttentionArrays, kind: str, layer: int, head: int, predicted_rows: bool = False
               ) -> tuple[np.ndarray, list[str], list[str]]:
    """One (Tq, Tk) map, its query and key tokens; head -1 is the mean over heads.

    Decoder and cross-attention rows are named by the decoder's input token, or by the
    token each row predicts when `predicted_rows`.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    weights = getattr(att, kind)
    n_layers, n_heads = weights.shape[:2]
    if not 0 <= layer < n_layers or not -1 <= head < n_heads:
        raise ValueError(f"layer must be in 0..{n_layers - 1} and head in -1..{n_heads - 1}, got {layer}, {head}")
    w = weights[layer].mean(axis=0) if head < 0 else weights[layer, head]
    rows = att.tgt_out_tokens if predicted_rows else att.tgt_in_tokens
    q, k = {"encoder": (att.src_tokens, att.src_tokens), "decoder": (rows, att.tgt_in_tokens),
            "cross": (rows, att.src_tokens)}[kind]
    return w, list(q), list(k)


def align_tokens(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """Position pairs (i in a, j in b) that correspond.

    Same length: position by position (so "he" -> "she" or a swapped word order stays
    aligned). Otherwise the matching runs of `difflib.SequenceMatcher` plus replaced runs
    of equal length; inserted or deleted tokens have no partner.
    """
    if len(a) == len(b):
        return [(i, i) for i in range(len(a))]
    pairs = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, list(a), list(b), autojunk=False).get_opcodes():
        if op == "equal" or (op == "replace" and i2 - i1 == j2 - j1):
            pairs += list(zip(range(i1, i2), range(j1, j2)))
    return pairs


def difference_unavailable(q_a: Sequence[str], k_a: Sequence[str], q_b: Sequence[str], k_b: Sequence[str]
                           ) -> str | None:
    """Why two maps cannot be subtracted (None when they can): no aligned query or no aligned key."""
    if not align_tokens(q_a, q_b):
        return "No difference map: the two sides share no aligned query token (different lengths, nothing in common)."
    if not align_tokens(k_a, k_b):
        return "No difference map: the two sides share no aligned key token (different lengths, nothing in common)."
    return None


def _pair_label(a: str, b: str) -> str:
    return a if a == b else f"{a}\u2192{display_token(b)}"


def difference_map(w_a: np.ndarray, q_a: Sequence[str], k_a: Sequence[str],
                   w_b: np.ndarray, q_b: Sequence[str], k_b: Sequence[str]
                   ) -> tuple[np.ndarray, list[str], list[str]]:
    """A − B over aligned rows and columns: ((Tq', Tk') float32, query labels, key labels).

    Labels are the token, or "a→b" where the aligned tokens differ. Raises ValueError
    when `difference_unavailable` says why not.
    """
    reason = difference_unavailable(q_a, k_a, q_b, k_b)
    if reason:
        raise ValueError(reason)
    rows, cols = align_tokens(q_a, q_b), align_tokens(k_a, k_b)
    ia, ib = [i for i, _ in rows], [j for _, j in rows]
    ja, jb = [i for i, _ in cols], [j for _, j in cols]
    diff = np.asarray(w_a, dtype=np.float32)[np.ix_(ia, ja)] - np.asarray(w_b, dtype=np.float32)[np.ix_(ib, jb)]
    return diff, [_pair_label(q_a[i], q_b[j]) for i, j in rows], [_pair_label(k_a[i], k_b[j]) for i, j in cols]


@dataclass
class CompareView:
    """The compare view's figures: A and B side by side, and A − B (or a note saying why not)."""

    pair: go.Figure
    difference: go.Figure  # its heatmap's z: (Tq', Tk') A − B over aligned positions
    note: str | None  # why there is no difference map


def _heatmap(w: np.ndarray, q: Sequence[str], k: Sequence[str], axis: int, coloraxis: str, label: str
             ) -> go.Heatmap:
    q_lab, k_lab = np.array(token_labels.labels(q), dtype=str), np.array(token_labels.labels(k), dtype=str)
    # (Tq, Tk, 2): each cell's query and key label, built by numpy: as nested Python lists, a long sentence's
    # cells are slow to build and to validate, and hold the GIL meanwhile
    cell_labels = np.stack(np.broadcast_arrays(q_lab[:, None], k_lab[None, :]), axis=-1)
    return go.Heatmap(
        z=w, xaxis=f"x{axis_name(axis)}", yaxis=f"y{axis_name(axis)}", coloraxis=coloraxis,
        customdata=cell_labels, _validate=figures.VALIDATE_FIGURES,
        hovertemplate=f"{label}<br>query: %{{customdata[0]}}<br>key: %{{customdata[1]}}<br>"
                      "weight: %{z:.1%}<extra></extra>" if coloraxis == "coloraxis" else
                      f"{label}<br>query: %{{customdata[0]}}<br>key: %{{customdata[1]}}<br>"
                      "left \u2212 right: %{z:+.1%}<extra></extra>",
    )


def _axes(q: Sequence[str], k: Sequence[str], axis: int, domain: list[float]) -> dict[str, Any]:
    name = axis_name(axis)
    return {
        f"xaxis{name}": token_axis(k, side="top", tickangle=-60, domain=domain, anchor=f"y{name}"),
        f"yaxis{name}": token_axis(q, autorange="reversed", anchor=f"x{name}", domain=[0.0, 1.0]),
    }


def _compact(layout: dict[str, Any], keys: Sequence[str], bottom: int) -> None:
    """Margins that leave the maps most of a short screen: the title at the top edge (no badge is drawn over
    these figures), under it room for the slanted column labels (`keys`, estimated from the longest: Plotly's
    automargin makes room for labels but not between them and a title), `bottom` px for the names below."""
    size = _tick_size(keys)
    longest = max((len(display_token(k)) for k in keys), default=1)
    labels = 0.6 * size * longest * math.sin(math.radians(60)) + size * 0.5 + 8
    layout["title"]["pad"] = dict(t=6)
    layout["margin"].update(t=int(36 + labels), b=bottom, r=20)


def _tick_size(tokens: Sequence[str]) -> int:
    return token_axis(tokens)["tickfont"]["size"]


def compare_figures(
    a: AttentionArrays, b: AttentionArrays, kind: str, layer: int, head: int, predicted_rows: bool = False,
    labels: tuple[str, str] = ("A", "B"),
) -> CompareView:
    """Layer `layer`, head `head` (-1: mean over heads) of `kind` attention for two translations.

    `pair` holds both maps side by side on one colour scale [0, 1], exactly the two
    results' arrays; `difference` is A − B on a zero-centred diverging scale over the
    aligned positions (`align_tokens`), or a placeholder with the reason.
    """
    w_a, q_a, k_a = select_map(a, kind, layer, head, predicted_rows)
    w_b, q_b, k_b = select_map(b, kind, layer, head, predicted_rows)
    what = f"{kind} attention · layer {layer + 1} · {head_text(head)}"
    lab_a, lab_b = (short_label(s, 80) for s in labels)
    pair_layout = base_layout(
        f"{what}: left and right",
        **_axes(q_a, k_a, 0, [0.0, 0.46]), **_axes(q_b, k_b, 1, [0.54, 1.0]),
        coloraxis=dict(cmin=0.0, cmax=1.0, colorscale=ATTENTION_COLORSCALE,
                       colorbar=dict(title=dict(text="weight"), tickformat=".0%", thickness=14)),
        annotations=[panel_title(lab_a, 0.23, -0.04, yanchor="top"),
                     panel_title(lab_b, 0.77, -0.04, yanchor="top")],
        height=int(np.clip(300 + 16 * max(len(q_a), len(q_b), len(k_a), len(k_b)), 460, 900)),
    )
    _compact(pair_layout, [*k_a, *k_b], bottom=36)
    pair = make_figure([_heatmap(w_a, q_a, k_a, 0, "coloraxis", lab_a), _heatmap(w_b, q_b, k_b, 1, "coloraxis", lab_b)],
                       pair_layout)
    note = difference_unavailable(q_a, k_a, q_b, k_b)
    if note:
        return CompareView(pair, placeholder_figure(note), note)
    diff, q, k = difference_map(w_a, q_a, k_a, w_b, q_b, k_b)
    limit = max(float(np.abs(diff).max()), 0.01)  # symmetric, so white is exactly zero
    diff_layout = base_layout(
        "left \u2212 right",  # beside the pair, whose title says what both are
        **_axes(q, k, 0, [0.0, 1.0]),
        coloraxis2=dict(cmin=-limit, cmax=limit, cmid=0.0, colorscale=DIFF_COLORSCALE,
                        colorbar=dict(tickformat="+.0%", thickness=14)),
        height=int(np.clip(260 + 16 * max(len(q), len(k)), 420, 900)),
    )
    # two short lines: the figure may be a third of the panel's width, beside the pair
    diff_layout["annotations"] = [panel_title(
        f"red: {lab_a} attends more<br>blue: {lab_b} attends more", 0.5, -0.04, yanchor="top",
        font=dict(size=12, color="#555"))]
    _compact(diff_layout, k, bottom=48)
    difference = make_figure([_heatmap(diff, q, k, 0, "coloraxis2", "left \u2212 right")], diff_layout)
    return CompareView(pair, difference, None)
