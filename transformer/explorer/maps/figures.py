"""How the app's Plotly figures are built: one style (template, font, colour scales, colours), the layout and token
axes every figure starts from, the figure itself built without plotly's validation, the placeholder figure, and a
figure as the JSON text the page draws (`figure_json`).

Token axes put positions on numeric axes (0, 1, ...) and the tokens in `ticktext`, so repeated tokens stay
separate positions (Plotly merges equal category names); their labels are `token_labels.labels`, escaped.
Figures are built as one list of traces plus a layout with explicit axis domains, not with make_subplots and
add_trace, which validates every trace as it is added (`make_figure`).
"""
from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.colors import get_colorscale

from transformer.explorer.maps.token_labels import escape_label, labels

__all__ = ["VALIDATE_FIGURES", "TEMPLATE", "FONT", "ATTENTION_COLORSCALE", "SCORE_COLORSCALE", "axis_name",
           "grid_domains", "panel_title", "base_layout", "token_axis", "make_figure", "placeholder_figure",
           "figure_json"]

VALIDATE_FIGURES = False  # tests switch this on
TEMPLATE = "plotly_white"
ATTENTION_COLORSCALE = "Blues"  # white = no attention, so near-zero cells fade into the page
SCORE_COLORSCALE = "Viridis"
FONT = dict(size=14)
TRAIN_COLOR, VAL_COLOR, HIGHLIGHT_COLOR = "#1f77b4", "#ff7f0e", "#d62728"


def axis_name(i: int) -> str:
    """Trace-side axis reference: 'x', 'x2', ... for 0-based subplot i (the y side is the same)."""
    return "" if i == 0 else str(i + 1)


def grid_domains(
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


def panel_title(text: str, x: float, y: float, **kw: Any) -> dict[str, Any]:
    """A paper-anchored annotation used as a subplot title (text must be escaped already)."""
    return {"text": text, "x": x, "y": y, "xref": "paper", "yref": "paper", "xanchor": "center",
            "yanchor": "bottom", "showarrow": False, "font": {"size": 14}, **kw}


def base_layout(title: str, **kw: Any) -> dict[str, Any]:
    """The layout every figure starts from: the escaped title, the template, the font and the margins, plus `kw`."""
    text = escape_label(title) if title else ""
    # Pinned near the top edge: by default plotly centres the title in the top margin, where the
    # labels and title of a top-side axis (keys, heads) also go. The padding keeps it clear of the
    # label badge Gradio draws over a plot's top-left corner.
    title_layout = dict(text=text, x=0.5, xanchor="center", yref="container", y=1.0, yanchor="top", pad=dict(t=30))
    return dict(title=title_layout, template=TEMPLATE, font=FONT, margin=dict(l=60, r=40, t=90, b=60), **kw)


def _tick_font_size(n: int) -> int:
    """Shrink tick labels as the sequence grows: 14 px up to 30 tokens, 8 px from 47 on."""
    return int(np.clip(420 / max(n, 1), 8, 14))


def token_axis(tokens: Sequence[str], **kw: Any) -> dict[str, Any]:
    """Numeric axis with one tick per position and the escaped tokens as tick text."""
    return dict(tickmode="array", tickvals=list(range(len(tokens))), ticktext=labels(tokens),
                tickfont=dict(size=_tick_font_size(len(tokens))), showgrid=False, zeroline=False,
                automargin=True, **kw)


def make_figure(traces: list, layout: dict[str, Any]) -> go.Figure:
    """A Figure from traces and a layout built here, without plotly's property validation, which walks every
    property of every trace: slow for a heatmap's many cells. Tests switch `VALIDATE_FIGURES` on, so a bad
    property still fails there."""
    return go.Figure(data=traces, layout=layout, _validate=VALIDATE_FIGURES)


def placeholder_figure(message: str) -> go.Figure:
    """An empty figure that only shows `message` (nothing to draw, and why)."""
    layout = base_layout("", xaxis=dict(visible=False), yaxis=dict(visible=False), height=300,
                         annotations=[dict(text=escape_label(message), x=0.5, y=0.5, xref="paper", yref="paper",
                                           showarrow=False, font=dict(size=18, color="#666"))])
    return make_figure([], layout)


def figure_json(fig: go.Figure) -> str:
    """A figure as the JSON text Plotly.react draws in the browser: numpy arrays as nested lists, not plotly.py's
    base64 typed arrays, which the page's heatmaps do not draw from. One string, not a nested value: gradio walks
    every element of a nested output on its event loop, and a long sentence's map has a value per cell
    (docs/serving.md)."""
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
