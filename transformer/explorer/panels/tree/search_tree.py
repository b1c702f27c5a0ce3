"""The beam-search tree tab: a translation's search, recorded when the tab asks for it, drawn as a tree, and what
the tree panel gets (`tree_value`).

The tree is recorded only when asked (the tree tab is opened, or a translation arrives while it is open):
`record_search` re-runs the translation's own decoding with `record_search=True` (and greedy's, to draw over it),
without attention; the result is kept on the session's `Result`. A node's cross-attention comes from one
teacher-forced pass over its prefix (`Translator.attention_for_prefix`), kept per node. `beam_tree_figure` draws
the `SearchTrace` (transformer/search_trace.py); `node_choices` and `node_label` name its nodes for the selector.

The panel's value is JSON-ready: figures as JSON text (`figures.figure_json`) and plain texts (shown with
`textContent`, never as markup), drawn by tree.js. No gradio here: errors are `ValueError`s.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import plotly.graph_objects as go

from transformer.search_trace import FINISHED, KEPT, PRUNED, ROOT, SearchNode, SearchTrace
from transformer.translator import Translation, Translator

from transformer.explorer.maps.figures import (HIGHLIGHT_COLOR, TRAIN_COLOR, VAL_COLOR, base_layout, figure_json, make_figure,
                      token_axis)
from transformer.explorer.core.view_state import head_text, pick_view
from transformer.explorer.maps.token_labels import escape_label, labels, named_token, read_tokens, short_label

__all__ = ["SearchView", "record_search", "node_cross_rows", "tree_value", "beam_tree_figure", "tree_layout",
           "node_label", "node_choices", "node_attention_figure"]

BEST_COLOR, NBEST_COLOR, DROPPED_COLOR, PRUNED_COLOR = HIGHLIGHT_COLOR, TRAIN_COLOR, "#7f7f7f", "#c7c7c7"
GREEDY_COLOR = VAL_COLOR
MINUS = "\u2212"
LABEL_PX = 12  # a node's token and its score: the smallest label the page writes (figures.js LABEL_MIN)
_REVISIONS = itertools.count(1)


# ----------------------------------------------------------------------------- what the tree panel gets


@dataclass
class SearchView:
    """The recorded search of one translation, its tree figure, and the nodes looked at so far."""

    translation: Translation  # the re-run with the search recorded (same result as the shown one)
    trace: SearchTrace
    greedy: SearchTrace | None  # greedy's own search, drawn over the tree (None when the method is greedy)
    tree: str  # the tree figure as JSON text (`figures.figure_json`)
    rev: int
    node_cross: dict[int, np.ndarray] = field(default_factory=dict)  # node id -> (L, H, S)

    @property
    def default_node(self) -> int:
        """The best hypothesis's last node (its <eos>), or the last node recorded."""
        return self.trace.nbest[0] if self.trace.nbest else len(self.trace.nodes) - 1


def record_search(tr: Translator, source: str, method: str, beam_size: int, length_penalty: float,
                  head_mask: Any = None) -> SearchView:
    """Decode `source` again as it was decoded (with the same heads switched off, `head_mask`), recording the
    search (and greedy's), and draw the tree."""
    search = tr.translate(source, method=method, beam_size=beam_size, length_penalty=length_penalty,
                          output_attentions=False, record_search=True, head_mask=head_mask)
    greedy = None
    if method != "greedy":
        greedy = tr.translate(source, method="greedy", length_penalty=length_penalty, output_attentions=False,
                              record_search=True, head_mask=head_mask).search
    assert search.search is not None  # record_search=True always returns a trace
    tree = figure_json(beam_tree_figure(search.search, greedy))
    return SearchView(search, search.search, greedy, tree, next(_REVISIONS))


def node_cross_rows(tr: Translator, view: SearchView, node_id: int) -> np.ndarray:
    """(L, H, S) cross-attention of the step that chose node `node_id`'s token (cached per node)."""
    if node_id not in view.node_cross:
        att = tr.attention_for_prefix(view.translation, view.trace.prefix_ids(node_id))
        view.node_cross[node_id] = att.cross[:, :, -1, :]
    return view.node_cross[node_id]


def tree_value(tr: Translator, view: SearchView, node_id: Any = None, data: Any = None,
               with_tree: bool = True) -> dict[str, Any]:
    """What the tree panel draws: the tree, the node selector, and one node's prefix and cross-attention.

    `node_id` None or unknown: the best hypothesis's last node; `data` holds the panel's layer
    and head (see `pick_view`). `with_tree=False` leaves the tree figure out (the page has it).
    """
    trace = view.trace
    if not isinstance(node_id, int) or isinstance(node_id, bool) or not 0 < node_id < len(trace.nodes):
        node_id = view.default_node
    choices = node_choices(trace)
    if all(node_id != i for _, i in choices):  # a pruned node picked in the figure
        choices.append((node_label(trace, node_id), node_id))
    cross = node_cross_rows(tr, view, node_id)
    n_layers, n_heads = cross.shape[:2]
    _, layer, head, _ = pick_view(data, n_layers, n_heads)
    row = cross[layer].mean(axis=0) if head < 0 else cross[layer, head]
    node = trace.nodes[node_id]
    src_tokens = view.translation.src_tokens
    title = (f"Cross-attention when step {node.step + 1} chose {named_token(node.token)} · layer {layer + 1}, "
             f"{head_text(head)}")
    prefix = read_tokens(trace.prefix_tokens(node_id))
    return {
        "rev": next(_REVISIONS), "tree_rev": view.rev, "tree": view.tree if with_tree else None,
        "choices": [[label, i] for label, i in choices], "selected": node_id,
        "prefix": prefix, "status": node_label(trace, node_id),
        "node": figure_json(node_attention_figure(row, src_tokens, title)),
        "row": [float(x) for x in row], "n_layers": int(n_layers), "n_heads": int(n_heads),
        "layer": layer, "head": head, "root": node.status == ROOT,
    }


# ----------------------------------------------------------------------------- the tree figure


def _number(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}".replace("-", MINUS) if math.isfinite(x) else "\u2212\u221e"


def node_label(trace: SearchTrace, node_id: int) -> str:
    """Plain text naming a node for a selector, e.g. "step 2 · Hund · kept · p 91% · score −0.16 · Ein Hund"."""
    node = trace.nodes[node_id]
    if node.status == ROOT:
        return "start · <bos>"
    status = f"n-best #{node.nbest_rank + 1}" if node.nbest_rank is not None else node.status
    prefix = read_tokens(trace.prefix_tokens(node_id))
    return (f"step {node.step + 1} · {named_token(node.token)} · {status} · p {node.probability:.0%} · "
            f"score {_number(node.score)} · {prefix}")


def node_choices(trace: SearchTrace, include_pruned: bool = False) -> list[tuple[str, int]]:
    """(label, node id) for every node but the root, step by step; pruned ones only if asked."""
    return [(node_label(trace, n.id), n.id) for n in trace.nodes[1:] if include_pruned or n.status != PRUNED]


def node_attention_figure(cross_row: np.ndarray, src_tokens: Sequence[str], title: str = "") -> go.Figure:
    """The `(S,)` cross-attention row of the step that chose a node's token, one bar per source token.

    The largest weight is highlighted; labels are escaped (`token_labels.labels`).
    """
    row = np.asarray(cross_row, dtype=np.float32)
    if row.shape != (len(src_tokens),):
        raise ValueError(f"cross_row shape {row.shape} != ({len(src_tokens)},)")
    top = int(row.argmax()) if row.size else -1
    bars = go.Bar(
        x=list(range(len(src_tokens))), y=row, marker=dict(color=[BEST_COLOR if i == top else NBEST_COLOR
                                                                 for i in range(len(src_tokens))]),
        customdata=labels(src_tokens), hovertemplate="%{customdata}: %{y:.1%}<extra></extra>",
        texttemplate="%{y:.0%}", textposition="outside", cliponaxis=False, showlegend=False,
    )
    layout = base_layout(
        title, xaxis=token_axis(src_tokens, tickangle=-45, title=dict(text="source token (key)")),
        yaxis=dict(range=[0, 1.1], tickformat=".0%", title=dict(text="cross-attention")), height=340,
    )
    layout["margin"].update(t=60, b=40)
    return make_figure([bars], layout)


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
    prefix = escape_label(read_tokens(trace.prefix_tokens(node.id)))
    return (f"step {node.step + 1}: <b>{escape_label(named_token(node.token))}</b> ({status})<br>"
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
    return make_figure(traces, layout)


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
        text=[short_label(n.token, max_chars) if n.status != FINISHED and labelled else "" for n in members],
        textposition="top center", textfont=dict(size=LABEL_PX, color=color if key != "pruned" else "#999"),
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
        textfont=dict(size=LABEL_PX, color=[BEST_COLOR if n.nbest_rank == 0 else NBEST_COLOR if n.nbest_rank is not None
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
                font=dict(size=LABEL_PX, color=GREEDY_COLOR), bgcolor="rgba(255,255,255,0.85)")


def _tree_figure_layout(title: str, n_cols: int, y_all: Sequence[float], annotations: list[dict[str, Any]],
                        shapes: list[dict[str, Any]], width: int | None) -> dict[str, Any]:
    """The tree's layout: steps on a top axis, rows from `y_all` (every drawn y), as high as the tree needs."""
    span = max(y_all) - min(y_all)
    height = int(np.clip(200 + 26 * (span + 1), 320, 2000))
    layout = base_layout(
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
    labels = [short_label(n.token, max_chars) for n in outside]
    labels[-1] += f"  {_number(outside[-1].score)}" if outside[-1].status == FINISHED else ""
    own = go.Scatter(
        x=[float(n.step + 1) for n in outside], y=[lane] * len(outside), mode="markers+text", showlegend=False,
        marker=dict(size=10, color=GREEDY_COLOR, symbol=["square" if n.status == FINISHED else "diamond"
                                                         for n in outside]),
        text=labels, textposition="bottom center", textfont=dict(size=LABEL_PX, color=GREEDY_COLOR),
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
