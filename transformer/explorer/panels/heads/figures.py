"""The Heads tab's figure and table: one importance heatmap per attention kind (role tags in the cells) above that
kind's pruning curve (importance order, reverse, random), and a table of how many heads of each kind carry each
role (`head_figures`), from the checkpoint's head analysis (`core/checkpoint_heads.py`). Pure plotly and pandas."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from transformer.explorer.core.checkpoint_heads import KINDS, ROLE_CODES, opening_note, opening_read_outs, read_analysis
from transformer.explorer.core.texts import KIND_TITLES
from transformer.explorer.maps import figures
from transformer.explorer.maps.token_labels import escape_label

log = logging.getLogger(__name__)

ORDERS = (("importance", "least important first", "#d62728"), ("random", "random order (mean of seeds)", "#7f7f7f"),
          ("reverse", "most important first", "#1f77b4"))
NO_ANALYSIS = ("No head analysis for this model: run python -m transformer.training.head_analysis "
               "--checkpoint DIR to write head_importance.json and head_roles.json.")


def _cell_text(tags: list[str]) -> str:
    return "".join(ROLE_CODES.get(t, "?") for t in tags)


def _hover(kind: str, layer: int, head: int, roles: dict[str, Any]) -> str:
    shares = roles["kinds"][kind]["shares"]
    parts = [f"{escape_label(roles['names'].get(r, r))} {shares[r][layer][head]:.0%}" for r in shares]
    return f"L{layer + 1} H{head + 1}<br>" + "<br>".join(parts)


def _importance_traces(importance: dict[str, Any], roles: dict[str, Any], kind: str, ax: str) -> list:
    grid = np.asarray(importance["importance"][kind], dtype=np.float64)
    L, H = grid.shape
    tags = roles["kinds"][kind]["tags"]
    text = [[_cell_text(tags[layer][head]) for head in range(H)] for layer in range(L)]
    hover = [[_hover(kind, layer, head, roles) for head in range(H)] for layer in range(L)]
    return [go.Heatmap(z=grid, x=[f"H{h + 1}" for h in range(H)], y=[f"L{layer + 1}" for layer in range(L)],
                       text=text, texttemplate="%{text}", customdata=hover, coloraxis="coloraxis",
                       hovertemplate="%{customdata}<br>importance %{z:.3f}<extra></extra>",
                       xaxis=f"x{ax}", yaxis=f"y{ax}", xgap=2, ygap=2)]


def _pruning_traces(pruning: dict[str, Any], kind: str, ax: str, legend: bool) -> list:
    traces = []
    for order, name, color in ORDERS:
        curve = pruning.get(kind, {}).get(order)
        if not curve:
            continue
        traces.append(go.Scatter(x=curve["removed"], y=curve["bleu"], mode="lines+markers", name=name,
                                 legendgroup=order, showlegend=legend, line=dict(color=color),
                                 marker=dict(size=4), xaxis=f"x{ax}", yaxis=f"y{ax}",
                                 hovertemplate=f"{name}: %{{x}} heads off, BLEU %{{y:.2f}}<extra></extra>"))
    return traces


def importance_and_pruning_figure(importance: dict[str, Any], roles: dict[str, Any], title: str = "") -> go.Figure:
    """Top row: importance per head (normalised per layer) of each kind, role letters in the cells; bottom row:
    that kind's pruning curves (greedy val BLEU as its heads are switched off)."""
    traces, axes, notes = [], {}, []
    pruning = importance.get("pruning", {})
    width, gap = 0.28, 0.08
    for i, kind in enumerate(KINDS):
        x0 = i * (width + gap)
        top, bottom = str(i + 1) if i else "", str(i + 4)
        traces += _importance_traces(importance, roles, kind, top)
        traces += _pruning_traces(pruning, kind, bottom, legend=i == 0)
        axes[f"xaxis{top}"] = dict(domain=[x0, x0 + width], anchor=f"y{top}", side="top", showgrid=False)
        axes[f"yaxis{top}"] = dict(domain=[0.55, 0.92], anchor=f"x{top}", autorange="reversed", showgrid=False)
        axes[f"xaxis{bottom}"] = dict(domain=[x0, x0 + width], anchor=f"y{bottom}",
                                      title=dict(text="heads switched off"))
        axes[f"yaxis{bottom}"] = dict(domain=[0.0, 0.38], anchor=f"x{bottom}",
                                      title=dict(text="val BLEU" if i == 0 else ""))
        notes.append(dict(text=KIND_TITLES[kind], x=x0 + width / 2, y=1.0, xref="paper", yref="paper",
                          showarrow=False, xanchor="center", yanchor="bottom", font=dict(size=15)))
        removable = pruning.get(kind, {}).get("removable", {})
        if "importance" in removable:
            text = f"{removable['importance']} of {pruning[kind]['n_heads']} heads go at ≤ 0.5 BLEU loss"
            notes.append(dict(text=text,
                              x=x0 + width / 2, y=0.4, xref="paper", yref="paper", showarrow=False,
                              xanchor="center", yanchor="bottom", font=dict(size=12, color="#444")))
    layout = dict(title=dict(text=escape_label(title), x=0.5, xanchor="center"), template=figures.TEMPLATE,
                  font=figures.FONT, height=760, margin=dict(l=60, r=30, t=110, b=50), annotations=notes,
                  coloraxis=dict(colorscale=figures.SCORE_COLORSCALE, colorbar=dict(title=dict(text="importance"),
                                                                                len=0.4, y=0.74, thickness=14)),
                  legend=dict(orientation="h", x=0.5, xanchor="center", y=-0.12), **axes)
    return figures.make_figure(traces, layout)


def role_table(roles: dict[str, Any]) -> pd.DataFrame:
    """One row per kind and role: how many heads carry it, its threshold, and the head with the highest share."""
    rows = []
    for kind in KINDS:
        entry = roles["kinds"][kind]
        for role, share in entry["shares"].items():
            grid = np.asarray(share, dtype=np.float64)
            layer, head = np.unravel_index(int(np.argmax(grid)), grid.shape)
            tagged = sum(role in tags for row in entry["tags"] for tags in row)
            rows.append([KIND_TITLES[kind], roles["names"].get(role, role), ROLE_CODES.get(role, "?"), tagged,
                         f"{roles['thresholds'][role]:.0%}", f"L{layer + 1} H{head + 1} ({grid[layer, head]:.0%})"])
    return pd.DataFrame(rows, columns=["attention", "role", "letter", "heads", "threshold", "strongest head (share)"])


def head_figures(label: str | None, directory: Path | None) -> tuple[go.Figure, pd.DataFrame]:
    """The Heads tab of a model: the figure and the role table (a note and an empty table without analysis)."""
    analysis = read_analysis(directory)
    if analysis is None:
        return figures.placeholder_figure(NO_ANALYSIS), pd.DataFrame(columns=["attention", "role", "heads"])
    importance, roles = analysis
    try:
        title = f"Heads of {label}: importance (Michel et al., 2019) and pruning" if label else "Heads"
        figure = importance_and_pruning_figure(importance, roles, title)
        opens = opening_read_outs(directory, roles["kinds"]["cross"])
        if opens and opens["cross"]["agreement"]:
            note = "<br>".join(escape_label(line) for line in opening_note(opens["cross"]).split("\n"))
            figure.add_annotation(text=note, x=0.5, y=1.065, xref="paper", yref="paper", showarrow=False,
                                  xanchor="center", yanchor="bottom", font=dict(size=13, color="#444"))
            figure.update_layout(margin_t=150, height=800, title_y=0.985, title_yanchor="top")  # the note under the title
        return figure, role_table(roles)
    except (KeyError, TypeError, ValueError, IndexError):
        log.warning("incomplete head analysis in %s", directory)
        return figures.placeholder_figure(NO_ANALYSIS), pd.DataFrame(columns=["attention", "role", "heads"])
