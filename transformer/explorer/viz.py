"""Attention and training figures: pure functions from numpy arrays and tokens to Plotly figures.

No torch, no gradio: inputs are float numpy arrays whose last two axes are
(queries, keys), so rows are queries and every row sums to 1.

Label convention (`display_token`). The model's pieces carry "▁" (U+2581, the
SentencePiece word-start mark): "▁ri" starts a word, "des" continues it. On
screen a piece that starts a word is shown bare ("ri") and a piece that continues
one gets a leading "·" ("·des"); a lone "▁" (a word about to start) shows as "␣".
Word-level labels (`merge_subwords`) have no mark at all. The transforms work on
the model's pieces; only the labels change. Every label goes through
`escape_label`, because Plotly renders a subset of HTML in text.

Axes. Token axes put positions on numeric axes (0, 1, ...) and the tokens
in `ticktext`, so repeated tokens stay separate positions (Plotly merges equal
category names). Where tick labels are hidden (`model_view`) the axes are
categorical with "position: token" labels, unique by construction, so hover can
name the tokens without a per-cell `customdata` array.

Figures are built as one list of traces plus a layout with explicit axis
domains; `make_subplots` + `add_trace` is several times slower for a 6x8 grid
(see bench/figure_build.py).
"""
from __future__ import annotations

import functools
import html
import logging
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

__all__ = [
    "escape_label", "word_groups", "hide_special", "merge_subwords", "rollout", "head_entropy", "placeholder_figure",
    "model_view", "training_curves",
]

logger = logging.getLogger(__name__)

WORD_MARK = "\u2581"  # "▁", SentencePiece's word-start mark
PLACEHOLDER_TOKEN = re.compile(r"⟨\d⟩")  # a name or number the model reads as one token (transformer.placeholders)
SPECIAL_TOKENS = ("<pad>", "<unk>", "<bos>", "<eos>")
HIDDEN_BY_DEFAULT = ("<bos>", "<eos>", "<pad>")

VALIDATE_FIGURES = False  # tests switch this on
TEMPLATE = "plotly_white"
ATTENTION_COLORSCALE = "Blues"  # white = no attention, so near-zero cells fade into the page
SCORE_COLORSCALE = "Viridis"
FONT = dict(size=14)
TRAIN_COLOR, VAL_COLOR, HIGHLIGHT_COLOR = "#1f77b4", "#ff7f0e", "#d62728"
CORPUS_COLORS = ("#2ca02c", "#9467bd", "#8c564b", "#e377c2")
CORPUS_BLEU = "val_bleu_"  # train_log.jsonl key prefix of one validation corpus's BLEU


# ----------------------------------------------------------------------------- labels


LABEL_CACHE = 1 << 14  # labels remembered: a payload labels the same few hundred pieces over and over


@functools.lru_cache(maxsize=LABEL_CACHE)
def escape_label(token: str) -> str:
    """Make a token safe to show literally in Plotly text, ticks and hover.

    Escapes &, <, > (Plotly parses tags such as <b>, <br>, <a href>) and $ (a
    "$...$" string is typeset as LaTeX when MathJax is on the page); Plotly
    decodes the entities back, so the token displays unchanged. An empty token
    becomes "∅" so that it does not vanish from an axis.
    """
    if token == "":
        return "\u2205"
    return html.escape(token, quote=False).replace("$", "&#36;")


CONTINUES = "\u00b7"  # "·": the piece continues the word before it
SPACE = "\u2423"  # "␣": a lone word-start mark (the next piece starts a new word)


@functools.lru_cache(maxsize=LABEL_CACHE)
def display_token(token: str) -> str:
    """A piece as the page shows it: no "▁"; "·" before a piece that continues a word; "␣" for a lone "▁";
    special tokens, punctuation and placeholders as they are."""
    if token in SPECIAL_TOKENS or PLACEHOLDER_TOKEN.fullmatch(token) or _is_punctuation(token):
        return token.lstrip(WORD_MARK) or token
    if token.startswith(WORD_MARK):
        return token[len(WORD_MARK):] or SPACE
    return CONTINUES + token if token else token


def choice_label(token: str) -> str:
    """A next-token choice (the steps view): as `display_token`, and a lone "▁" says what it is."""
    return SPACE + " (a new word starts)" if token == WORD_MARK else display_token(token)


def _labels(tokens: Sequence[str]) -> list[str]:
    return [escape_label(display_token(t)) for t in tokens]


def _indexed_labels(tokens: Sequence[str]) -> list[str]:
    """Unique category names "i: token" for categorical axes (duplicates would merge)."""
    return [f"{i}: {escape_label(display_token(t))}" for i, t in enumerate(tokens)]


def _tick_font_size(n: int) -> int:
    """Shrink tick labels as the sequence grows: 14 px up to ~30 tokens, 8 px from ~50."""
    return int(np.clip(420 / max(n, 1), 8, 14))


def _check_tokens(weights: np.ndarray, q_tokens: Sequence[str], k_tokens: Sequence[str]) -> None:
    if weights.ndim < 2 or weights.shape[-2:] != (len(q_tokens), len(k_tokens)):
        raise ValueError(
            f"weights shape {weights.shape} does not end with (len(q_tokens), len(k_tokens))"
            f" = ({len(q_tokens)}, {len(k_tokens)})"
        )


# ----------------------------------------------------------------------------- transforms


def hide_special(
    weights: np.ndarray,
    q_tokens: Sequence[str],
    k_tokens: Sequence[str],
    specials: Sequence[str] = HIDDEN_BY_DEFAULT,
) -> tuple[np.ndarray, list[str], list[str], float]:
    """Drop special-token rows and columns of `(..., Tq, Tk)` weights and renormalise rows.

    Returns (weights `(..., Tq', Tk')`, q_tokens', k_tokens', hidden_mass), where
    hidden_mass is the attention the kept query rows put on the removed keys,
    averaged over those rows (and any leading axes), in [0, 1]. A kept row whose
    whole mass was on removed keys stays all zeros rather than dividing by zero.
    """
    w = np.asarray(weights)
    _check_tokens(w, q_tokens, k_tokens)
    keep_q = np.array([t not in specials for t in q_tokens], dtype=bool)
    keep_k = np.array([t not in specials for t in k_tokens], dtype=bool)
    w = w[..., keep_q, :]
    kept = w[..., keep_k]
    removed = w[..., ~keep_k].sum(axis=-1)  # (..., Tq') mass on hidden keys
    hidden_mass = float(removed.mean()) if removed.size else 0.0
    totals = kept.sum(axis=-1, keepdims=True)
    kept = np.divide(kept, totals, out=np.zeros_like(kept), where=totals > 0)
    q_out = [t for t, k in zip(q_tokens, keep_q) if k]
    k_out = [t for t, k in zip(k_tokens, keep_k) if k]
    return kept, q_out, k_out, hidden_mass


def _is_punctuation(piece: str) -> bool:
    core = piece.lstrip(WORD_MARK)
    return bool(core) and all(unicodedata.category(c).startswith("P") for c in core)


def word_groups(tokens: Sequence[str], specials: Sequence[str] = SPECIAL_TOKENS) -> tuple[list[int], list[str]]:
    """Map BPE pieces to words: (word index per piece, word labels).

    A word starts at a piece beginning with "▁", at a special token, at a
    punctuation-only piece, at a placeholder ("⟨1⟩": a whole name or number, never
    the end of the word before it), and right after a special or punctuation-only
    piece (so "▁bike" "." stay two words and "." never swallows the next piece).
    Labels are the joined pieces without "▁" (a lone "▁" shows as "␣").
    """
    group: list[int] = []
    words: list[list[str]] = []
    prev_closed = True  # the previous piece cannot be continued
    for tok in tokens:
        special, punct = tok in specials, _is_punctuation(tok)
        if prev_closed or tok.startswith(WORD_MARK) or special or punct or PLACEHOLDER_TOKEN.fullmatch(tok):
            words.append([])
        words[-1].append(tok)
        group.append(len(words) - 1)
        prev_closed = special or punct
    labels = ["".join(p).replace(WORD_MARK, "") or SPACE for p in words]
    return group, labels


def merge_subwords(
    weights: np.ndarray,
    q_tokens: Sequence[str],
    k_tokens: Sequence[str],
) -> tuple[np.ndarray, list[str], list[str]]:
    """Merge BPE pieces into words in `(..., Tq, Tk)` weights -> `(..., Wq, Wk)`.

    Keys are SUMMED (attention to a word is attention to any of its pieces);
    queries are AVERAGED (a word's row is the mean of its pieces' rows), so every
    row still sums to 1. Word boundaries: see `word_groups`.
    """
    w = np.asarray(weights)
    w = w.astype(np.result_type(w.dtype, np.float32), copy=False)  # integer input would floor the means
    _check_tokens(w, q_tokens, k_tokens)
    q_group, q_words = word_groups(q_tokens)
    k_group, k_words = word_groups(k_tokens)
    # one-hot membership matrices turn both merges into matmuls over the last two axes
    sum_keys = np.zeros((len(k_tokens), len(k_words)), dtype=w.dtype)
    sum_keys[np.arange(len(k_tokens)), k_group] = 1.0
    mean_queries = np.zeros((len(q_words), len(q_tokens)), dtype=w.dtype)
    mean_queries[q_group, np.arange(len(q_tokens))] = 1.0
    mean_queries /= mean_queries.sum(axis=1, keepdims=True)
    return mean_queries @ w @ sum_keys, q_words, k_words


def rollout(encoder_attention: np.ndarray, add_residual: bool = True) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema, 2020) of `(L, H, S, S)` weights -> `(S, S)`.

    Heads are averaged; with `add_residual` each layer becomes 0.5*A + 0.5*I (the
    residual stream carries half of each token through), rows are renormalised,
    and layers compose first to last: R = A_L @ ... @ A_1. Rows sum to 1.
    """
    a = np.asarray(encoder_attention, dtype=np.float64)
    if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"expected (L, H, S, S) weights, got {a.shape}")
    eye = np.eye(a.shape[-1])
    result = eye
    for layer in a.mean(axis=1):  # (S, S) per layer, first layer first
        if add_residual:
            layer = 0.5 * layer + 0.5 * eye
        layer = layer / layer.sum(axis=-1, keepdims=True)
        result = layer @ result
    return result.astype(np.float32)


def head_entropy(weights: np.ndarray, normalise: bool = False) -> np.ndarray:
    """Mean row entropy in nats of `(L, H, Tq, Tk)` weights -> `(L, H)`.

    Low = focused heads, high = diffuse ones. With `normalise` it is divided by
    log(Tk), the entropy of a uniform row, giving [0, 1]; causal rows that can
    only see i+1 keys make early decoder rows look focused either way.
    """
    p = np.asarray(weights, dtype=np.float64)
    if p.ndim != 4:
        raise ValueError(f"expected (L, H, Tq, Tk) weights, got {p.shape}")
    plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)  # 0 log 0 = 0
    entropy = -plogp.sum(axis=-1).mean(axis=-1)
    if normalise:
        entropy = entropy / math.log(p.shape[-1]) if p.shape[-1] > 1 else np.zeros_like(entropy)
    return entropy


# ----------------------------------------------------------------------------- figure helpers


def _axis_name(i: int) -> str:
    """Trace-side axis reference: 'x', 'x2', ... for 0-based subplot i (the y side is the same)."""
    return "" if i == 0 else str(i + 1)


def _grid_domains(
    n_rows: int, n_cols: int, x_span: tuple[float, float] = (0.0, 1.0), y_span: tuple[float, float] = (0.0, 1.0),
    gap_x: float = 0.02, gap_y: float = 0.03,
) -> list[tuple[list[float], list[float]]]:
    """(x domain, y domain) per cell in row-major order, row 0 at the top."""
    cell_w = (x_span[1] - x_span[0] - gap_x * (n_cols - 1)) / n_cols
    cell_h = (y_span[1] - y_span[0] - gap_y * (n_rows - 1)) / n_rows
    cells = []
    for r in range(n_rows):
        top = y_span[1] - r * (cell_h + gap_y)
        for c in range(n_cols):
            left = x_span[0] + c * (cell_w + gap_x)
            x_dom = [max(0.0, round(left, 6)), min(1.0, round(left + cell_w, 6))]  # float drift leaves [0, 1]
            y_dom = [max(0.0, round(top - cell_h, 6)), min(1.0, round(top, 6))]
            cells.append((x_dom, y_dom))
    return cells


def _panel_title(text: str, x: float, y: float, **kw: Any) -> dict[str, Any]:
    """A paper-anchored annotation used as a subplot title (text must be escaped already)."""
    return {"text": text, "x": x, "y": y, "xref": "paper", "yref": "paper", "xanchor": "center",
            "yanchor": "bottom", "showarrow": False, "font": {"size": 14}, **kw}


def _layout(title: str, **kw: Any) -> dict[str, Any]:
    text = escape_label(title) if title else ""
    # Pinned near the top edge: by default plotly centres the title in the top margin, where the
    # labels and title of a top-side axis (keys, heads) also go. The padding keeps it clear of the
    # label badge Gradio draws over a plot's top-left corner.
    title = dict(text=text, x=0.5, xanchor="center", yref="container", y=1.0, yanchor="top", pad=dict(t=30))
    return dict(title=title, template=TEMPLATE, font=FONT,
                margin=dict(l=60, r=40, t=90, b=60), **kw)


def _token_axis(tokens: Sequence[str], **kw: Any) -> dict[str, Any]:
    """Numeric axis with one tick per position and the escaped tokens as tick text."""
    return dict(tickmode="array", tickvals=list(range(len(tokens))), ticktext=_labels(tokens),
                tickfont=dict(size=_tick_font_size(len(tokens))), showgrid=False, zeroline=False,
                automargin=True, **kw)


def placeholder_figure(message: str = "Translate a sentence to see its attention.") -> go.Figure:
    """An empty figure that only shows `message` (e.g. before the first translation)."""
    layout = _layout("", xaxis=dict(visible=False), yaxis=dict(visible=False), height=300,
                     annotations=[dict(text=escape_label(message), x=0.5, y=0.5, xref="paper", yref="paper",
                                       showarrow=False, font=dict(size=18, color="#666"))])
    return _figure([], layout)


def _figure(traces: list, layout: dict[str, Any]) -> go.Figure:
    """A Figure from traces and layout we built ourselves, skipping plotly's property validation.

    Validation walks every property of every trace and dominated the time of a
    full request (tests build the same figures with validation on, so a bad
    property still fails there: see tests/test_viz.py).
    """
    return go.Figure(data=traces, layout=layout, _validate=VALIDATE_FIGURES)


# ----------------------------------------------------------------------------- attention figures


def model_view(
    weights: np.ndarray,
    q_tokens: Sequence[str],
    k_tokens: Sequence[str],
    title: str = "",
) -> go.Figure:
    """Every layer x head of `(L, H, Tq, Tk)` weights as small multiples (rows = layers, columns = heads).

    z is stored as integer percent (uint8, colour scale 0..100) to keep the JSON
    small. Tick labels are hidden; hover
    gives layer, head, "position: token" for query and key, and the percent.
    """
    w = np.asarray(weights)
    if w.ndim != 4:
        raise ValueError(f"expected (L, H, Tq, Tk) weights, got {w.shape}")
    _check_tokens(w, q_tokens, k_tokens)
    n_layers, n_heads = w.shape[:2]
    # NaN rows (e.g. fully masked padding queries) show as zero rather than garbage bytes
    percent = np.rint(np.clip(np.nan_to_num(w), 0.0, 1.0) * 100).astype(np.uint8)
    q_lab, k_lab = _indexed_labels(q_tokens), _indexed_labels(k_tokens)
    cells = _grid_domains(n_layers, n_heads, x_span=(0.06, 1.0), y_span=(0.0, 0.94), gap_x=0.012, gap_y=0.02)

    traces: list[dict[str, Any]] = []
    axes: dict[str, Any] = {}
    notes: list[dict[str, Any]] = []
    for i, (xd, yd) in enumerate(cells):
        layer, head = divmod(i, n_heads)
        ax = _axis_name(i)
        # plain dicts: go.Figure validates them once; go.Heatmap objects would be validated, then copied
        traces.append(dict(
            type="heatmap", z=percent[layer, head], x=k_lab, y=q_lab, xaxis=f"x{ax}", yaxis=f"y{ax}",
            coloraxis="coloraxis",
            hovertemplate=f"L{layer + 1} H{head + 1}<br>query %{{y}}<br>key %{{x}}<br>%{{z}}%<extra></extra>",
        ))
        hidden = dict(type="category", showticklabels=False, ticks="", showgrid=False, zeroline=False)
        axes[f"xaxis{ax}"] = dict(domain=xd, anchor=f"y{ax}", constrain="domain", **hidden)
        axes[f"yaxis{ax}"] = dict(domain=yd, anchor=f"x{ax}", autorange="reversed", scaleanchor=f"x{ax}",
                                  constrain="domain", **hidden)
    # row and column headers instead of L*H labels: fewer annotations, same information
    for head in range(n_heads):
        xd, yd = cells[head]
        notes.append(_panel_title(f"H{head + 1}", x=sum(xd) / 2, y=yd[1]))
    for layer in range(n_layers):
        xd, yd = cells[layer * n_heads]
        notes.append(_panel_title(f"L{layer + 1}", x=xd[0] - 0.01, y=sum(yd) / 2, xanchor="right",
                                  yanchor="middle"))
    layout = _layout(
        title, annotations=notes, height=110 * n_layers + 140,
        coloraxis=dict(cmin=0, cmax=100, colorscale=ATTENTION_COLORSCALE,
                       colorbar=dict(title=dict(text="weight"), ticksuffix="%", thickness=14)),
        **axes,
    )
    fig = _figure(traces, layout)
    logger.debug("model_view: %d x %d heads of %s maps", n_layers, n_heads, w.shape[-2:])
    return fig


# ----------------------------------------------------------------------------- training curves

_CURVE_PANELS = (  # (panel title, [(record key, series name)], log y axis)
    ("Loss", (("train_loss", "train"), ("val_loss", "val")), False),
    ("Perplexity", (("train_ppl", "train"), ("val_ppl", "val")), True),
    ("BLEU", (("train_bleu", "train"), ("val_bleu", "val")), False),
)


def _number(value: Any) -> float | None:
    """A finite float, or None for missing / non-numeric / inf / NaN values."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def training_curves(records: Sequence[Mapping[str, Any]], title: str = "Training") -> go.Figure:
    """Loss, perplexity (log axis) and BLEU per epoch from train_log.jsonl records, side by side.

    Any key may be missing: a series is drawn from the records that have it. If
    no record has "epoch", records are numbered 1, 2, ...; otherwise records
    without one (e.g. per-step lines) are skipped.
    """
    have_epoch = any(_number(r.get("epoch")) is not None for r in records)
    points = [(_number(r.get("epoch")) if have_epoch else float(i + 1), r) for i, r in enumerate(records)]
    points = [(x, r) for x, r in points if x is not None]
    if not points:
        return placeholder_figure("No training log records yet.")

    traces: list[go.Scatter] = []
    axes: dict[str, Any] = {}
    notes: list[dict[str, Any]] = []
    shown_in_legend: set[str] = set()
    domains = [d for d, _ in _grid_domains(1, len(_CURVE_PANELS), gap_x=0.08)]
    corpora = sorted({k[len(CORPUS_BLEU):] for r in records for k in r if k.startswith(CORPUS_BLEU)})
    colors = {"train": TRAIN_COLOR, "val": VAL_COLOR, "val (mean)": VAL_COLOR}
    colors.update({f"val {c}": CORPUS_COLORS[i % len(CORPUS_COLORS)] for i, c in enumerate(corpora)})
    for i, ((panel, series, log_y), xd) in enumerate(zip(_CURVE_PANELS, domains)):
        ax = _axis_name(i)
        if panel == "BLEU" and corpora:  # one line per validation corpus, and their mean
            series = (("train_bleu", "train"), ("val_bleu", "val (mean)"),
                      *((f"{CORPUS_BLEU}{c}", f"val {c}") for c in corpora))
        for key, name in series:
            xy = [(x, v) for x, r in points if (v := _number(r.get(key))) is not None and (v > 0 or not log_y)]
            if not xy:
                continue
            traces.append(go.Scatter(
                x=[x for x, _ in xy], y=[v for _, v in xy], mode="lines+markers", name=name, legendgroup=name,
                showlegend=name not in shown_in_legend, xaxis=f"x{ax}", yaxis=f"y{ax}",
                line=dict(color=colors[name], dash="dot" if name == "val (mean)" else None),
                hovertemplate=f"{name} {key}: %{{y:.3f}}<br>epoch %{{x}}<extra></extra>",
            ))
            shown_in_legend.add(name)
        axes[f"xaxis{ax}"] = dict(domain=xd, anchor=f"y{ax}", title=dict(text="epoch" if have_epoch else "record"))
        axes[f"yaxis{ax}"] = dict(anchor=f"x{ax}", type="log" if log_y else "linear")
        notes.append(_panel_title(panel, x=sum(xd) / 2, y=1.02))
    layout = _layout(title, annotations=notes, height=380, **axes)  # default legend: right, clear of the axes
    return _figure(traces, layout)
