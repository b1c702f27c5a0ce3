"""Tests for transformer/explorer/maps/figures.py and panels/training/curves.py, and for the Python figures the browser tests compare
the page with (tests/reference_views.py): structure and escaping."""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import plotly.graph_objects as go
import pytest

import reference_views
from strings import all_strings
from transformer.explorer.maps import figures
from transformer.explorer.maps.token_labels import display_token, escape_label
from transformer.explorer.panels.training.curves import training_curves
from transformer.explorer.maps.transforms import rollout


pytestmark = pytest.mark.usefixtures("validate_figures")

EVIL = "<img src=x onerror=alert(1)>"


def random_attention(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Peaky random rows that sum to 1, float32, like softmax output."""
    a = np.random.default_rng(seed).random(shape).astype(np.float32) ** 4
    return a / a.sum(axis=-1, keepdims=True)


def json_strings(fig: go.Figure) -> Iterator[str]:
    """Every string (keys included) in the figure's JSON, decoded, so "\\u003c" escapes can't hide a "<"."""
    return all_strings(json.loads(fig.to_json()))


def assert_no_raw_tag(fig: go.Figure) -> None:
    raw = fig.to_json().lower()
    assert "<img" not in raw and "\\u003cimg" not in raw
    strings = list(json_strings(fig))
    assert not [s for s in strings if "<img" in s.lower()]
    assert any("&lt;img src=x onerror=alert(1)&gt;" in s for s in strings), "escaped token should be shown"


def escaped(tokens: list[str]) -> list[str]:
    return [escape_label(display_token(t)) for t in tokens]


def heatmaps(fig: go.Figure) -> list[go.Heatmap]:
    return [t for t in fig.data if t.type == "heatmap"]


# ----------------------------------------------------------------------------- figures


def test_attention_heatmap_rows_are_queries_and_ticks_in_order() -> None:
    q = ["<bos>", "▁the", "▁cat", "▁the"]  # duplicate token must stay two positions
    k = ["▁the", "▁dog", "▁the", ".", "<eos>"]
    w = random_attention((4, 5))
    fig = reference_views.attention_heatmap(w, q, k, "focus")
    (trace,) = heatmaps(fig)
    z = np.asarray(trace.z)
    assert z.shape == (4, 5)
    for i in range(4):
        np.testing.assert_array_equal(z[i], w[i])
    assert list(fig.layout.xaxis.tickvals) == list(range(5)) and list(fig.layout.xaxis.ticktext) == escaped(k)
    assert list(fig.layout.yaxis.tickvals) == list(range(4)) and list(fig.layout.yaxis.ticktext) == escaped(q)
    assert fig.layout.yaxis.autorange == "reversed"  # first query at the top
    assert fig.layout.yaxis.scaleanchor == "x"
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
    assert list(trace.customdata[3][2]) == ["the", "the"]
    assert list(trace.customdata[0][4]) == ["&lt;bos&gt;", "&lt;eos&gt;"]
    assert list(trace.customdata[1][1]) == ["the", "dog"]
    with pytest.raises(ValueError):
        reference_views.attention_heatmap(np.zeros((3, 4)), ["a"] * 3, ["b"] * 3)


@pytest.mark.parametrize("build", [
    lambda q, k, w: reference_views.attention_heatmap(w[0, 0], q, k, EVIL),
    lambda q, k, w: reference_views.rollout_figure(rollout(w), q, EVIL),
    lambda q, k, w: reference_views.step_figure([(EVIL, 0.6), ("▁a", 0.3)], w[0, 0, 0], k, EVIL),
    lambda q, k, w: figures.placeholder_figure(EVIL),
], ids=["heatmap", "rollout", "step", "placeholder"])
def test_no_raw_html_reaches_the_figure(build: Any) -> None:
    toks = ["▁A", EVIL, "<b>", "▁A", "<eos>"]
    fig = build(toks, toks, random_attention((2, 2, 5, 5)))
    assert_no_raw_tag(fig)
    assert not [s for s in json_strings(fig) if "<b>" in s]


def test_step_figure() -> None:
    src = ["▁A", "▁man", "▁A", "<eos>"]
    row = np.array([0.1, 0.6, 0.2, 0.1], dtype=np.float32)
    topk = [("▁b", 0.05), ("▁Ein", 0.7), ("▁Der", 0.1), ("▁c", 0.04), ("▁d", 0.03), ("▁e", 0.02)]
    fig = reference_views.step_figure(topk, row, src, "▁Ein")
    probs, attention = fig.data
    assert list(probs.x) == [0.7, 0.1, 0.05, 0.04, 0.03]  # sorted, top-5 only
    assert list(fig.layout.yaxis.ticktext) == ["Ein", "Der", "b", "c", "d"]  # shown without "▁"
    colors = list(probs.marker.color)
    assert colors[0] != colors[1] and len(set(colors[1:])) == 1  # chosen token highlighted
    np.testing.assert_allclose(np.asarray(attention.y), row)
    assert list(fig.layout.xaxis2.ticktext) == escaped(src) and list(fig.layout.xaxis2.tickvals) == [0, 1, 2, 3]
    assert fig.layout.xaxis.domain[1] <= fig.layout.xaxis2.domain[0]  # side by side
    with pytest.raises(ValueError):
        reference_views.step_figure(topk, row[:3], src, "▁Ein")


def test_training_curves_tolerates_missing_keys() -> None:
    records = [
        {"epoch": 1, "train_loss": 5.0},
        {"step": 100, "train_loss": 4.0},  # per-step line without epoch: skipped
        {"epoch": 2, "train_loss": 3.5, "val_loss": 3.9, "val_ppl": float("inf")},
        {"epoch": 3, "val_loss": 3.2, "val_ppl": 24.5, "val_bleu": 11.2, "train_loss": None},
    ]
    fig = training_curves(records)
    series = {(t.yaxis, t.name): (list(t.x), list(t.y)) for t in fig.data}
    assert series[("y", "train")] == ([1, 2], [5.0, 3.5])
    assert series[("y", "val")] == ([2, 3], [3.9, 3.2])
    assert series[("y2", "val")] == ([3], [24.5])  # inf perplexity dropped
    assert series[("y3", "val")] == ([3], [11.2])
    assert len(series) == 4
    assert fig.layout.yaxis2.type == "log"
    # no epochs at all: records are numbered; nothing usable: a placeholder
    numbered = training_curves([{"train_loss": 2.0}, {"train_loss": 1.5}])
    assert list(numbered.data[0].x) == [1, 2]
    assert len(training_curves([]).data) == 0
    assert len(training_curves([{"epoch": 1}]).data) == 0


def test_placeholder_figure() -> None:
    fig = figures.placeholder_figure("Nothing translated yet.")
    assert len(fig.data) == 0
    assert fig.layout.annotations[0].text == "Nothing translated yet."
    assert not fig.layout.title.text  # no stray "∅" title


def test_training_curves_draw_bleu_per_validation_corpus() -> None:
    records = [
        {"epoch": 0.5, "step": 250, "val_bleu": 20.0, "val_bleu_tatoeba-en-de": 25.0, "val_bleu_multi30k": 15.0},
        {"epoch": 1.0, "step": 500, "val_bleu": 26.0, "val_bleu_tatoeba-en-de": 30.0, "val_bleu_multi30k": 22.0},
    ]
    fig = training_curves(records)
    series = {t.name: (list(t.x), list(t.y)) for t in fig.data if t.yaxis == "y3"}
    assert series == {"val (mean)": ([0.5, 1.0], [20.0, 26.0]), "val multi30k": ([0.5, 1.0], [15.0, 22.0]),
                      "val tatoeba-en-de": ([0.5, 1.0], [25.0, 30.0])}
    colours = {t.name: t.line.color for t in fig.data if t.yaxis == "y3"}
    assert len(set(colours.values())) == 3
