"""Time building the 6x8 model view (40x40 maps): explicit axis domains vs make_subplots + add_trace.

Usage: python bench/figure_build.py [--runs 7] [--json PATH]
Prints one JSON line: {"direct_ms": ..., "make_subplots_ms": ..., "json_kb": ...} (medians over runs).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere without installing
from transformer.explorer import viz  # noqa: E402

L, H, T = 6, 8, 40


def fake_attention(seed: int = 0) -> np.ndarray:
    """(L, H, T, T) peaky rows summing to 1, like softmax output."""
    a = np.random.default_rng(seed).random((L, H, T, T)).astype(np.float32) ** 4
    return a / a.sum(axis=-1, keepdims=True)


def via_make_subplots(weights: np.ndarray, tokens: list[str]) -> go.Figure:
    """The same traces placed with make_subplots + add_trace (the slow baseline)."""
    labels = [f"{i}: {viz.escape_label(t)}" for i, t in enumerate(tokens)]
    percent = np.rint(weights * 100).astype(np.uint8)
    fig = make_subplots(rows=L, cols=H, horizontal_spacing=0.012, vertical_spacing=0.02)
    for layer in range(L):
        for head in range(H):
            fig.add_trace(go.Heatmap(z=percent[layer, head], x=labels, y=labels, coloraxis="coloraxis",
                                     hovertemplate="%{y} %{x} %{z}%<extra></extra>"),
                          row=layer + 1, col=head + 1)
    fig.update_layout(coloraxis=dict(cmin=0, cmax=100, colorscale=viz.ATTENTION_COLORSCALE), template=viz.TEMPLATE)
    return fig


def median_ms(build: Callable[[], go.Figure], runs: int) -> float:
    build()  # warm-up: the first call pays for importing plotly's validators
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        build()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", help="also write the result to this file (see bench/report.py)")
    args = parser.parse_args()
    weights = fake_attention()
    tokens = [f"\u2581tok{i % 11}" for i in range(T)]  # repeated tokens, as in real sentences
    direct = median_ms(lambda: viz.model_view(weights, tokens, tokens, "encoder self-attention"), args.runs)
    baseline = median_ms(lambda: via_make_subplots(weights, tokens), args.runs)
    json_kb = len(viz.model_view(weights, tokens, tokens, "encoder self-attention").to_json()) / 1000
    result = {"direct_ms": round(direct, 1), "make_subplots_ms": round(baseline, 1), "json_kb": round(json_kb, 1)}
    print(json.dumps(result))
    if args.json:
        from report import write_result  # bench/, the script's own directory
        write_result(args.json, result)


if __name__ == "__main__":
    main()
