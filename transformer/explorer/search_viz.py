"""Figures of the search and of two translations side by side: pure functions to Plotly figures.

No torch, no gradio. `beam_tree_figure` draws a `SearchTrace` (transformer/search_trace.py)
as a tree; `node_choices` / `node_label` name its nodes for a selector; `compare_figures`
puts one attention map of two translations side by side with their difference. Token text
goes through `viz.escape_label`, as everywhere else.
"""
from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import plotly.graph_objects as go

from . import viz
from transformer.config import ATTENTION_KINDS
from transformer.search_trace import FINISHED, KEPT, PRUNED, ROOT, SearchNode, SearchTrace

__all__ = [
    "beam_tree_figure", "tree_layout", "node_label", "node_choices", "node_attention_figure", "AttentionMaps", "select_map",
    "align_tokens", "difference_unavailable", "difference_map", "CompareView", "compare_figures",
]

BEST_COLOR, NBEST_COLOR, DROPPED_COLOR, PRUNED_COLOR = viz.HIGHLIGHT_COLOR, viz.TRAIN_COLOR, "#7f7f7f", "#c7c7c7"
GREEDY_COLOR = viz.VAL_COLOR
DIFF_COLORSCALE = [  # ColorBrewer RdBu, blue = B attends more, red = A attends more, white = the same
    [0.0, "#2166ac"], [0.25, "#92c5de"], [0.5, "#f7f7f7"], [0.75, "#f4a582"], [1.0, "#b2182b"],
]
MINUS = "\u2212"


# ----------------------------------------------------------------------------- the search tree


def _number(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}".replace("-", MINUS) if math.isfinite(x) else "\u2212\u221e"


def _short(token: str, max_chars: int) -> str:
    """The token cut to `max_chars` characters (with "…"), then escaped."""
    return viz.escape_label(token if len(token) <= max_chars else token[: max_chars - 1] + "\u2026")


def node_label(trace: SearchTrace, node_id: int) -> str:
    """Plain text naming a node for a selector, e.g. "step 2 · ▁Hund · kept · p 91% · score −0.16 · ▁Ein ▁Hund"."""
    node = trace.nodes[node_id]
    if node.status == ROOT:
        return "start · <bos>"
    status = f"n-best #{node.nbest_rank + 1}" if node.nbest_rank is not None else node.status
    prefix = " ".join(trace.prefix_tokens(node_id))
    return (f"step {node.step + 1} · {node.token} · {status} · p {node.probability:.0%} · "
            f"score {_number(node.score)} · {prefix}")


def node_choices(trace: SearchTrace, include_pruned: bool = False) -> list[tuple[str, int]]:
    """(label, node id) for every node but the root, step by step; pruned ones only if asked."""
    return [(node_label(trace, n.id), n.id) for n in trace.nodes[1:] if include_pruned or n.status != PRUNED]


def node_attention_figure(cross_row: np.ndarray, src_tokens: Sequence[str], title: str = "") -> go.Figure:
    """The `(S,)` cross-attention row of the step that chose a node's token, one bar per source token.

    The largest weight is highlighted; labels are escaped (`viz.escape_label`).
    """
    row = np.asarray(cross_row, dtype=np.float32)
    if row.shape != (len(src_tokens),):
        raise ValueError(f"cross_row shape {row.shape} != ({len(src_tokens)},)")
    top = int(row.argmax()) if row.size else -1
    bars = go.Bar(
        x=list(range(len(src_tokens))), y=row, marker=dict(color=[BEST_COLOR if i == top else NBEST_COLOR
                                                                 for i in range(len(src_tokens))]),
        customdata=viz._labels(src_tokens), hovertemplate="%{customdata}: %{y:.1%}<extra></extra>",
        texttemplate="%{y:.0%}", textposition="outside", cliponaxis=False, showlegend=False,
    )
    layout = viz._layout(
        title, xaxis=viz._token_axis(src_tokens, tickangle=-45, title=dict(text="source token (key)")),
        yaxis=dict(range=[0, 1.1], tickformat=".0%", title=dict(text="cross-attention")), height=340,
    )
    layout["margin"].update(t=60, b=40)
    return viz._figure([bars], layout)


def tree_layout(trace: SearchTrace, node_ids: Sequence[int]) -> dict[int, float]:
    """Vertical position of each node in `node_ids` (which must hold every listed node's parent); y grows down.

    The best hypothesis's path is a straight line at y = 0. Column by column, a node
    wants to sit at its parent's height plus its place among its siblings (best rank
    first, the others hanging below); the column is swept top to bottom so neighbours
    are at least 1 apart, then shifted so the best path's node stays on the line (or,
    past its end, so nodes are on average where they wanted to be). Children stay near
    their parents, edges stay short, and labels never overlap within a column.
    """
    y: dict[int, float] = {0: 0.0}
    shown = set(node_ids)
    best = {n.id for n in trace.best_path()}
    by_step: dict[int, list[SearchNode]] = {}
    for node in trace.nodes:
        if node.id in shown and node.step >= 0:
            by_step.setdefault(node.step, []).append(node)
    for step in sorted(by_step):
        siblings: dict[int, list[SearchNode]] = {}
        for node in sorted(by_step[step], key=lambda n: n.rank):
            siblings.setdefault(node.parent, []).append(node)
        wanted = sorted((y[parent] + i, y[parent], node.rank, node.id)
                        for parent, kids in siblings.items() for i, node in enumerate(kids))
        placed, last = [], -math.inf
        for want, *_ in wanted:
            last = max(want, last + 1.0)
            placed.append(last)
        on_line = [(pos, w[1]) for w, pos in zip(wanted, placed) if w[3] in best]
        if on_line:
            shift = on_line[0][1] - on_line[0][0]
        else:
            shift = sum(w[0] for w in wanted) / len(wanted) - sum(placed) / len(placed)
        for (*_, node_id), pos in zip(wanted, placed):
            y[node_id] = pos + shift
    return y


def _node_hover(trace: SearchTrace, node: SearchNode) -> str:
    if node.status == ROOT:
        return "start: &lt;bos&gt;"
    status = {KEPT: "kept in the beam", PRUNED: "pruned", FINISHED: "finished"}[node.status]
    if node.nbest_rank is not None:
        status += f", n-best #{node.nbest_rank + 1}"
    prefix = " ".join(viz.escape_label(t) for t in trace.prefix_tokens(node.id))
    return (f"step {node.step + 1}: <b>{viz.escape_label(node.token)}</b> ({status})<br>"
            f"p(token) = {node.probability:.1%}<br>log p(prefix) = {_number(node.log_prob, 3)}<br>"
            f"score = {_number(node.score, 3)}<br>prefix: {prefix}")


def _edges(trace: SearchTrace, ids: Sequence[int], x: dict[int, float], y: dict[int, float], **line: Any
           ) -> go.Scatter:
    """One line trace with an edge from each node in `ids` to its parent (None-separated)."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    for node_id in ids:
        parent = trace.nodes[node_id].parent
        xs += [x[parent], x[node_id], None]
        ys += [y[parent], y[node_id], None]
    return go.Scatter(x=xs, y=ys, mode="lines", line=line, hoverinfo="skip", showlegend=False)


PRUNED_LABEL_LIMIT = 200  # candidates per step x steps up to which pruned candidates are labelled
TREE_GROUPS = {  # drawing order (later on top): name, colour, edge width, marker size, opacity
    "pruned": ("pruned candidate", PRUNED_COLOR, 1.0, 6, 0.55),
    "dropped": ("kept, later dropped", DROPPED_COLOR, 1.2, 8, 0.8),
    "nbest": ("other n-best", NBEST_COLOR, 2.0, 10, 1.0),
    "best": ("best translation", BEST_COLOR, 3.5, 12, 1.0),
}


def beam_tree_figure(
    trace: SearchTrace,
    greedy: SearchTrace | None = None,
    title: str = "",
    show_pruned: bool = True,
    width: int | None = None,
) -> go.Figure:
    """The search as a tree: output steps left to right, one node per token, edges to parents.

    The best hypothesis's path is red, the other n-best blue; kept hypotheses that later
    fell out of the beam are grey, pruned candidates pale. Finished hypotheses (<eos>) are
    squares labelled with their score ("#1 −0.67" for the n-best). `greedy` (greedy's own
    trace) is drawn over it as a dashed orange path, in a lane below the tree once it leaves
    the tree, and the first step where the best beam differs from greedy is marked. Hover
    shows p(token), log p(prefix) and the score; each node's `customdata` is its node id.
    `width` in px (default: the container's); labels are cut to fit it.
    """
    nodes = [n for n in trace.nodes if show_pruned or n.status != PRUNED]
    y = tree_layout(trace, [n.id for n in nodes])
    x = {n.id: float(n.step + 1) for n in nodes}
    n_cols = trace.n_steps + 1
    max_chars = int(np.clip((width or 1200) / max(n_cols, 1) / 7.5, 3, 14))
    # a wide, long search has more pruned candidates than room: those keep their dot and hover text
    label_pruned = trace.candidates_per_step * n_cols <= PRUNED_LABEL_LIMIT
    groups = _node_groups(trace, nodes)
    traces: list[Any] = [_group_edges(trace, key, members, x, y) for key, members in groups.items()]
    traces += [_group_markers(trace, key, members, x, y, max_chars, label_pruned)
               for key, members in groups.items() if members]
    traces.append(_score_labels([n for n in nodes if n.status == FINISHED], x, y))
    annotations: list[dict[str, Any]] = []
    shapes: list[dict[str, Any]] = []
    y_all = list(y.values())
    if greedy is not None:
        lane = max(y_all) + 2.0
        overlay = _greedy_overlay(trace, greedy, x, y, lane, max_chars)
        traces += overlay
        if len(overlay) > 1:  # greedy left the tree: its own lane is drawn
            y_all.append(lane)
        step = _divergence_step(trace, greedy)
        if step is not None:
            shapes.append(_divergence_line(step))
            annotations.append(_divergence_note(step))
    layout = _tree_figure_layout(title or _tree_title(trace, greedy), n_cols, y_all, annotations, shapes, width)
    return viz._figure(traces, layout)


def _node_groups(trace: SearchTrace, nodes: Sequence[SearchNode]) -> dict[str, list[SearchNode]]:
    """`nodes` split by how they are drawn (the keys of TREE_GROUPS, in its order)."""
    best = trace.ancestors_of(trace.nbest[:1])
    nbest = trace.ancestors_of(trace.nbest)
    groups: dict[str, list[SearchNode]] = {key: [] for key in TREE_GROUPS}
    for node in nodes:
        if node.id in best:
            groups["best"].append(node)
        elif node.id in nbest:
            groups["nbest"].append(node)
        else:
            groups["pruned" if node.status == PRUNED else "dropped"].append(node)
    return groups


def _group_edges(trace: SearchTrace, key: str, members: Sequence[SearchNode], x: dict[int, float],
                 y: dict[int, float]) -> go.Scatter:
    """The edges from a group's nodes to their parents, in the group's colour and width."""
    _, color, edge_width, _, _ = TREE_GROUPS[key]
    edge_ids = [n.id for n in members if n.status != ROOT]
    return _edges(trace, edge_ids, x, y, color=color, width=edge_width, dash="dot" if key == "pruned" else "solid")


def _group_markers(trace: SearchTrace, key: str, members: Sequence[SearchNode], x: dict[int, float],
                   y: dict[int, float], max_chars: int, label_pruned: bool) -> go.Scatter:
    """A group's nodes: a marker each, with its token above it and its hover text; customdata = node ids."""
    name, color, _, size, opacity = TREE_GROUPS[key]
    eos_id = _eos_id(trace)
    labelled = key != "pruned" or label_pruned
    return go.Scatter(
        x=[x[n.id] for n in members], y=[y[n.id] for n in members], mode="markers+text", name=name,
        # finished nodes are labelled with their score instead (`_score_labels`)
        text=[_short(n.token, max_chars) if n.status != FINISHED and labelled else "" for n in members],
        textposition="top center", textfont=dict(size=11, color=color if key != "pruned" else "#999"),
        marker=dict(size=size, color=color, opacity=opacity, line=dict(width=1, color="white"),
                    symbol=["square" if n.status == FINISHED else "x" if n.status == PRUNED and
                            n.token_id == eos_id else "circle" for n in members]),
        customdata=[n.id for n in members], hovertext=[_node_hover(trace, n) for n in members],
        hovertemplate="%{hovertext}<extra></extra>", cliponaxis=False,
    )


def _score_labels(finished: Sequence[SearchNode], x: dict[int, float], y: dict[int, float]) -> go.Scatter:
    """Score labels to the right of finished hypotheses ("#1 −0.67" for the n-best), coloured as their group."""
    return go.Scatter(
        x=[x[n.id] for n in finished], y=[y[n.id] for n in finished], mode="text", showlegend=False,
        text=[(f"#{n.nbest_rank + 1} " if n.nbest_rank is not None else "") + _number(n.score) for n in finished],
        textposition="middle right", hoverinfo="skip", cliponaxis=False,
        textfont=dict(size=11, color=[BEST_COLOR if n.nbest_rank == 0 else NBEST_COLOR if n.nbest_rank is not None
                                      else DROPPED_COLOR for n in finished]),
    )


def _divergence_line(step: int) -> dict[str, Any]:
    """A dotted vertical line at the output step where the best beam leaves greedy."""
    return dict(type="line", x0=step + 1, x1=step + 1, y0=0, y1=1, yref="paper", layer="below",
                line=dict(color=GREEDY_COLOR, width=1.5, dash="dot"))


def _divergence_note(step: int) -> dict[str, Any]:
    """The annotation over `_divergence_line`."""
    return dict(x=step + 1, y=1.0, yref="paper", yanchor="bottom", showarrow=False,
                text=f"step {step + 1}: best beam leaves greedy",
                font=dict(size=12, color=GREEDY_COLOR), bgcolor="rgba(255,255,255,0.85)")


def _tree_figure_layout(title: str, n_cols: int, y_all: Sequence[float], annotations: list[dict[str, Any]],
                        shapes: list[dict[str, Any]], width: int | None) -> dict[str, Any]:
    """The tree's layout: steps on a top axis, rows from `y_all` (every drawn y), as high as the tree needs."""
    span = max(y_all) - min(y_all)
    height = int(np.clip(200 + 26 * (span + 1), 320, 2000))
    layout = viz._layout(
        title,
        xaxis=dict(tickmode="array", tickvals=list(range(n_cols)), ticktext=["start"] + [
            str(i) for i in range(1, n_cols)], title=dict(text="output step"), range=[-0.6, n_cols + 0.2],
            showgrid=False, zeroline=False, side="top"),
        yaxis=dict(visible=False, range=[max(y_all) + 0.8, min(y_all) - 1.2]),  # reversed: best path on top
        height=height, hovermode="closest", annotations=annotations, shapes=shapes, dragmode="pan",
        legend=dict(orientation="h", yanchor="top", y=-0.02, xanchor="left", x=0.0),
    )
    layout["margin"] = dict(l=20, r=60, t=135, b=60)  # the title, then the top axis title and step numbers
    if width:
        layout["width"] = width
    return layout


def _eos_id(trace: SearchTrace) -> int | None:
    """<eos>'s id: the last token of any finished hypothesis."""
    return next((n.token_id for n in trace.nodes if n.status == FINISHED), None)


def _tree_title(trace: SearchTrace, greedy: SearchTrace | None) -> str:
    what = "Greedy search" if trace.method == "greedy" else f"Beam search, beam {trace.beam_size}"
    text = f"{what}: {len(trace.nodes) - 1} candidates over {trace.n_steps} steps"
    if greedy is not None and greedy.nbest and trace.nbest:
        same = greedy.prefix_ids(greedy.nbest[0]) == trace.prefix_ids(trace.nbest[0])
        text += " · same output as greedy" if same else " · a different output than greedy"
    return text


def _greedy_overlay(trace: SearchTrace, greedy: SearchTrace, x: dict[int, float], y: dict[int, float],
                    lane: float, max_chars: int) -> list[go.Scatter]:
    """Greedy's path: through the tree's nodes while its prefix is one of them, then along `lane`."""
    where = {tuple(trace.prefix_ids(i)): i for i in y}
    xs, ys, outside = [0.0], [0.0], []
    for node in greedy.best_path():
        tree_node = where.get(tuple(greedy.prefix_ids(node.id)))
        if tree_node is not None and not outside:
            xs.append(x[tree_node])
            ys.append(y[tree_node])
        else:
            outside.append(node)
            xs.append(float(node.step + 1))
            ys.append(lane)
    line = go.Scatter(x=xs, y=ys, mode="lines", name="greedy", line=dict(color=GREEDY_COLOR, width=2.5, dash="dash"),
                      hoverinfo="skip", opacity=0.9)
    if not outside:
        return [line]
    labels = [_short(n.token, max_chars) for n in outside]
    labels[-1] += f"  {_number(outside[-1].score)}" if outside[-1].status == FINISHED else ""
    own = go.Scatter(
        x=[float(n.step + 1) for n in outside], y=[lane] * len(outside), mode="markers+text", showlegend=False,
        marker=dict(size=10, color=GREEDY_COLOR, symbol=["square" if n.status == FINISHED else "diamond"
                                                         for n in outside]),
        text=labels, textposition="bottom center", textfont=dict(size=11, color=GREEDY_COLOR),
        hovertext=["greedy, " + _node_hover(greedy, n) for n in outside], hovertemplate="%{hovertext}<extra></extra>",
        cliponaxis=False,
    )
    return [line, own]


def _divergence_step(trace: SearchTrace, greedy: SearchTrace) -> int | None:
    """The first output step where the best beam's token differs from greedy's (None if they agree)."""
    beam_path, greedy_path = trace.best_path(), greedy.best_path()
    for b, g in zip(beam_path, greedy_path):
        if b.token_id != g.token_id:
            return b.step
    return None


# ----------------------------------------------------------------------------- compare two translations


class AttentionMaps(Protocol):
    """What `compare_figures` reads: a `transformer.translator.Attention` (float arrays, rows = queries)."""

    encoder: np.ndarray  # (L, H, S, S)
    decoder: np.ndarray  # (L, H, T, T)
    cross: np.ndarray  # (L, H, T, S)
    src_tokens: list[str]
    tgt_in_tokens: list[str]
    tgt_out_tokens: list[str]


KINDS = ATTENTION_KINDS


def select_map(att: AttentionMaps, kind: str, layer: int, head: int, predicted_rows: bool = False
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
    return a if a == b else f"{a}\u2192{viz.display_token(b)}"


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
    difference: go.Figure
    difference_weights: np.ndarray | None  # (Tq', Tk') A − B over aligned positions; None when unavailable
    note: str | None  # why there is no difference map


def _heatmap(w: np.ndarray, q: Sequence[str], k: Sequence[str], axis: int, coloraxis: str, label: str
             ) -> go.Heatmap:
    q_lab, k_lab = np.array(viz._labels(q), dtype=str), np.array(viz._labels(k), dtype=str)
    # (Tq, Tk, 2): each cell's query and key label, built by numpy: a long sentence's map has ~10^5 cells, and
    # nested Python lists of them held the GIL for seconds (through plotly's validators too)
    labels = np.stack(np.broadcast_arrays(q_lab[:, None], k_lab[None, :]), axis=-1)
    return go.Heatmap(
        z=w, xaxis=f"x{viz._axis_name(axis)}", yaxis=f"y{viz._axis_name(axis)}", coloraxis=coloraxis,
        customdata=labels, _validate=viz.VALIDATE_FIGURES,
        hovertemplate=f"{label}<br>query: %{{customdata[0]}}<br>key: %{{customdata[1]}}<br>"
                      "weight: %{z:.1%}<extra></extra>" if coloraxis == "coloraxis" else
                      f"{label}<br>query: %{{customdata[0]}}<br>key: %{{customdata[1]}}<br>"
                      "left \u2212 right: %{z:+.1%}<extra></extra>",
    )


def _axes(q: Sequence[str], k: Sequence[str], axis: int, domain: list[float]) -> dict[str, Any]:
    name = viz._axis_name(axis)
    return {
        f"xaxis{name}": viz._token_axis(k, side="top", tickangle=-60, domain=domain, anchor=f"y{name}"),
        f"yaxis{name}": viz._token_axis(q, autorange="reversed", anchor=f"x{name}", domain=[0.0, 1.0]),
    }


def compare_figures(
    a: AttentionMaps, b: AttentionMaps, kind: str, layer: int, head: int, predicted_rows: bool = False,
    labels: tuple[str, str] = ("A", "B"),
) -> CompareView:
    """Layer `layer`, head `head` (-1: mean over heads) of `kind` attention for two translations.

    `pair` holds both maps side by side on one colour scale [0, 1], exactly the two
    results' arrays; `difference` is A − B on a zero-centred diverging scale over the
    aligned positions (`align_tokens`), or a placeholder with the reason.
    """
    w_a, q_a, k_a = select_map(a, kind, layer, head, predicted_rows)
    w_b, q_b, k_b = select_map(b, kind, layer, head, predicted_rows)
    head_text = "mean over heads" if head < 0 else f"head {head + 1}"
    what = f"{kind} attention · layer {layer + 1} · {head_text}"
    lab_a, lab_b = (_short(s, 80) for s in labels)
    pair_layout = viz._layout(
        f"{what}: left and right",
        **_axes(q_a, k_a, 0, [0.0, 0.46]), **_axes(q_b, k_b, 1, [0.54, 1.0]),
        coloraxis=dict(cmin=0.0, cmax=1.0, colorscale=viz.ATTENTION_COLORSCALE,
                       colorbar=dict(title=dict(text="weight"), tickformat=".0%", thickness=14)),
        annotations=[viz._panel_title(lab_a, 0.23, -0.04, yanchor="top"),
                     viz._panel_title(lab_b, 0.77, -0.04, yanchor="top")],
        height=int(np.clip(300 + 16 * max(len(q_a), len(q_b), len(k_a), len(k_b)), 460, 900)),
    )
    pair_layout["margin"].update(t=150, b=70)
    pair = viz._figure([_heatmap(w_a, q_a, k_a, 0, "coloraxis", lab_a), _heatmap(w_b, q_b, k_b, 1, "coloraxis", lab_b)],
                       pair_layout)
    note = difference_unavailable(q_a, k_a, q_b, k_b)
    if note:
        return CompareView(pair, viz.placeholder_figure(note), None, note)
    diff, q, k = difference_map(w_a, q_a, k_a, w_b, q_b, k_b)
    limit = max(float(np.abs(diff).max()), 0.01)  # symmetric, so white is exactly zero
    diff_layout = viz._layout(
        f"left \u2212 right: {what}",
        **_axes(q, k, 0, [0.0, 1.0]),
        coloraxis2=dict(cmin=-limit, cmax=limit, cmid=0.0, colorscale=DIFF_COLORSCALE,
                        colorbar=dict(title=dict(text="left \u2212 right"), tickformat="+.0%", thickness=14)),
        height=int(np.clip(260 + 16 * max(len(q), len(k)), 420, 900)),
    )
    diff_layout["annotations"] = [viz._panel_title(
        f"red: {lab_a} attends more · blue: {lab_b} attends more · white: the same", 0.5, -0.04, yanchor="top",
        font=dict(size=12, color="#555"))]
    diff_layout["yaxis"].update(scaleanchor="x", scaleratio=1, constrain="domain")
    diff_layout["xaxis"].update(constrain="domain")
    diff_layout["margin"]["t"] = 140
    difference = viz._figure([_heatmap(diff, q, k, 0, "coloraxis2", "left \u2212 right")], diff_layout)
    return CompareView(pair, difference, diff, None)
