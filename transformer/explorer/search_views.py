"""The app's beam-search tree and compare views: what a session keeps, and what the page gets.

The tree is recorded only when asked (the tree tab is opened, or a translation arrives while it
is open): `record_search` re-runs the translation's own decoding with `record_search=True` (and
greedy's, to draw over it), without attention; the result is cached on the session's `Result`.
A node's cross-attention comes from one teacher-forced pass over its prefix
(`Translator.attention_for_prefix`), cached per node.

`tree_value` and `compare_value` are the JSON-ready dicts the page's two panels draw
(static/panels.js): Plotly figures from `transformer.explorer.search_viz` and plain texts (shown with
`textContent`, never as markup). No gradio here: errors are `ValueError`s.
"""
from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.colors import get_colorscale

from . import search_viz
from transformer.search_trace import ROOT, SearchTrace
from transformer.config import ATTENTION_KINDS
from .share import MEAN_HEADS, ROWS_INPUT, ROWS_PREDICTED
from transformer.translator import Attention, Translation, Translator

__all__ = ["SearchView", "record_search", "node_cross_rows", "tree_value", "CompareSession", "compare_value",
           "pick_view", "figure_json"]

_REVISIONS = itertools.count(1)
COMPARE_KINDS = ATTENTION_KINDS


def figure_json(fig: go.Figure) -> str:
    """A figure as the JSON text Plotly.react draws in the browser (numpy arrays become nested lists, not
    plotly.py's base64 typed arrays, which the 2-D heatmaps here did not draw from). One string, not a nested
    value: gradio walks every element of a nested output on its event loop, and a long sentence's map has ~10^5
    cells, which stalled every other page's requests."""
    def plain(value: Any) -> Any:
        if isinstance(value, np.ndarray):
            return np.where(np.isfinite(value), value, None).tolist() if value.dtype.kind == "f" else value.tolist()
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, dict) and "bdata" in value and "dtype" in value:  # plotly.py's typed array
            array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
            shape = [int(n) for n in str(value.get("shape", len(array))).split(",")]
            return plain(array.reshape(shape))
        if isinstance(value, dict):  # named colour scales as plotly.py means them (plotly.js's "Blues" is reversed)
            return {k: get_colorscale(v) if k == "colorscale" and isinstance(v, str) else plain(v)
                    for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    return json.dumps(plain(fig.to_plotly_json()))


# ----------------------------------------------------------------------------- the search tree


@dataclass
class SearchView:
    """The recorded search of one translation, its tree figure, and the nodes looked at so far."""

    translation: Translation  # the re-run with the search recorded (same result as the shown one)
    trace: SearchTrace
    greedy: SearchTrace | None  # greedy's own search, drawn over the tree (None when the method is greedy)
    tree: dict[str, Any]  # the tree figure as JSON
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
                          return_attention=False, record_search=True, head_mask=head_mask)
    greedy = None
    if method != "greedy":
        greedy = tr.translate(source, method="greedy", length_penalty=length_penalty, return_attention=False,
                              record_search=True, head_mask=head_mask).search
    assert search.search is not None  # record_search=True always returns a trace
    tree = figure_json(search_viz.beam_tree_figure(search.search, greedy))
    return SearchView(search, search.search, greedy, tree, next(_REVISIONS))


def node_cross_rows(tr: Translator, view: SearchView, node_id: int) -> np.ndarray:
    """(L, H, S) cross-attention of the step that chose node `node_id`'s token (cached per node)."""
    if node_id not in view.node_cross:
        att = tr.attention_for_prefix(view.translation, view.trace.prefix_ids(node_id))
        view.node_cross[node_id] = att.cross[:, :, -1, :]
    return view.node_cross[node_id]


def pick_view(data: Any, n_layers: int, n_heads: int) -> tuple[str, int, int, str]:
    """(kind, layer, head, rows) from a panel's event data (untrusted: anything odd becomes a default).

    kind: an attention kind ("steps" and unknown values: cross); layer: 0-based, None or
    out of range: the last; head: MEAN_HEADS or 0..n_heads-1.
    """
    data = data if isinstance(data, Mapping) else {}
    kind = data.get("kind") if data.get("kind") in COMPARE_KINDS else "cross"
    layer, head = data.get("layer"), data.get("head")
    layer = layer if _index(layer, n_layers) else n_layers - 1
    head = head if _index(head, n_heads) else MEAN_HEADS
    rows = ROWS_PREDICTED if data.get("rows") == ROWS_PREDICTED else ROWS_INPUT
    return kind, int(layer), int(head), rows


def _index(value: Any, n: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < n


def _head_text(head: int) -> str:
    return "mean over heads" if head < 0 else f"head {head + 1}"


def tree_value(tr: Translator, view: SearchView, node_id: Any = None, data: Any = None,
               with_tree: bool = True) -> dict[str, Any]:
    """What the tree panel draws: the tree, the node selector, and one node's prefix and cross-attention.

    `node_id` None or unknown: the best hypothesis's last node; `data` holds the panel's layer
    and head (see `pick_view`). `with_tree=False` leaves the tree figure out (the page has it).
    """
    trace = view.trace
    if not isinstance(node_id, int) or isinstance(node_id, bool) or not 0 < node_id < len(trace.nodes):
        node_id = view.default_node
    choices = search_viz.node_choices(trace)
    if all(node_id != i for _, i in choices):  # a pruned node picked in the figure
        choices.append((search_viz.node_label(trace, node_id), node_id))
    cross = node_cross_rows(tr, view, node_id)
    n_layers, n_heads = cross.shape[:2]
    _, layer, head, _ = pick_view(data, n_layers, n_heads)
    row = cross[layer].mean(axis=0) if head < 0 else cross[layer, head]
    node = trace.nodes[node_id]
    src_tokens = view.translation.src_tokens
    title = f"Cross-attention when step {node.step + 1} chose {node.token} · layer {layer + 1}, {_head_text(head)}"
    prefix = " ".join(trace.prefix_tokens(node_id))
    return {
        "rev": next(_REVISIONS), "tree_rev": view.rev, "tree": view.tree if with_tree else None,
        "choices": [[label, i] for label, i in choices], "selected": node_id,
        "prefix": prefix, "status": search_viz.node_label(trace, node_id),
        "node": figure_json(search_viz.node_attention_figure(row, src_tokens, title)),
        "row": [float(x) for x in row], "n_layers": int(n_layers), "n_heads": int(n_heads),
        "layer": layer, "head": head, "root": node.status == ROOT,
    }


# ----------------------------------------------------------------------------- compare


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
    kind = kind if kind in COMPARE_KINDS else "cross"
    if session.mode == "methods" and kind == "encoder":
        kind = "cross"  # one source decoded two ways: the encoder's maps are the same on both sides
    maps_a, maps_b = getattr(a, kind), getattr(b, kind)
    n_layers, n_heads = min(maps_a.shape[0], maps_b.shape[0]), min(maps_a.shape[1], maps_b.shape[1])
    kind, layer, head, rows = pick_view({**(dict(data) if isinstance(data, Mapping) else {}), "kind": kind},
                                        n_layers, n_heads)
    view = search_viz.compare_figures(a, b, kind, layer, head, predicted_rows=rows == ROWS_PREDICTED,
                                      labels=session.labels)
    return {
        "rev": next(_REVISIONS), "session": session.rev, "mode": session.mode, "labels": list(session.labels),
        "sources": list(session.sources), "translations": list(session.translations),
        "pair": figure_json(view.pair), "difference": figure_json(view.difference), "note": view.note,
        "kind": kind, "layer": layer, "head": head, "rows": rows, "n_layers": int(n_layers), "n_heads": int(n_heads),
    }
