"""Tests for transformer/explorer/panels/compare/compare_view.py: two translations' maps side by side and their difference."""
from __future__ import annotations

import json

import numpy as np
import pytest

from test_figures import EVIL, assert_no_raw_tag, random_attention
from transformer.explorer.panels.compare import compare_view
from transformer.explorer.maps import figures
from transformer.translator import Attention

pytestmark = pytest.mark.usefixtures("validate_figures")


def attention(src: list[str], tgt_in: list[str], seed: int, layers: int = 2, heads: int = 3) -> Attention:
    S, T = len(src), len(tgt_in)
    return Attention(random_attention((layers, heads, S, S), seed), random_attention((layers, heads, T, T), seed + 1),
                     random_attention((layers, heads, T, S), seed + 2), src, tgt_in, tgt_in[1:] + ["<eos>"])


def difference_z(view: compare_view.CompareView) -> np.ndarray:
    """The A − B numbers the difference map draws (its heatmap's z)."""
    return np.asarray(view.difference.data[0].z)


@pytest.mark.parametrize("kind,layer,head", [("cross", 3, 0), ("encoder", 0, 7), ("decoder", 2, -1)])
def test_compare_figures_hold_exactly_the_two_results(flagship, kind, layer, head):
    a = flagship.translate("He is reading a book in the garden.", method="greedy")
    b = flagship.translate("She is reading a book in the garden.", method="beam", beam_size=4)
    view = compare_view.compare_figures(a.attention, b.attention, kind, layer, head, labels=(a.text, b.text))
    for trace, att in zip(view.pair.data, (a.attention, b.attention)):
        maps = getattr(att, kind)
        expected = maps[layer].mean(axis=0) if head < 0 else maps[layer, head]
        np.testing.assert_array_equal(np.asarray(trace.z), expected)
    sent = json.loads(figures.figure_json(view.pair))  # what the page gets: every cell naming its tokens
    cells = np.asarray(sent["data"][1]["customdata"])  # (Tq, Tk, 2)
    assert cells.shape == (*np.asarray(view.pair.data[1].z).shape, 2)
    assert list(cells[:, 0, 0]) == list(view.pair.layout.yaxis2.ticktext)
    assert list(cells[0, :, 1]) == list(view.pair.layout.xaxis2.ticktext)
    if kind == "encoder":  # same source length: position by position, "▁He→▁She" in the labels
        np.testing.assert_allclose(difference_z(view), a.attention.encoder[layer, head]
                                   - b.attention.encoder[layer, head], atol=1e-7)
        assert "He\u2192She" in view.difference.layout.xaxis.ticktext
        assert view.note is None


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_a_sentence_compared_with_itself_differs_nowhere(flagship, kind):
    r = flagship.translate("The grey dog bit the baker.", method="beam", beam_size=3)
    again = flagship.translate("The grey dog bit the baker.", method="beam", beam_size=3)
    view = compare_view.compare_figures(r.attention, again.attention, kind, 1, -1)
    assert view.note is None and difference_z(view).shape == getattr(r.attention, kind).shape[-2:]
    assert np.all(difference_z(view) == 0)
    layout = view.difference.layout.coloraxis2
    assert layout.cmid == 0 and layout.cmin == -layout.cmax  # zero is the middle of the scale


def test_difference_aligns_tokens_when_lengths_differ():
    a = attention(["▁a", "▁dog", "▁runs", "<eos>"], ["<bos>", "▁x", "▁y"], seed=0)
    b = attention(["▁a", "▁big", "▁dog", "▁runs", "<eos>"], ["<bos>", "▁x", "▁y"], seed=5)
    assert compare_view.align_tokens(a.src_tokens, b.src_tokens) == [(0, 0), (1, 2), (2, 3), (3, 4)]
    view = compare_view.compare_figures(a, b, "cross", 1, 2)
    expected = a.cross[1, 2] - b.cross[1, 2][:, [0, 2, 3, 4]]
    np.testing.assert_allclose(difference_z(view), expected, atol=1e-7)
    assert list(view.difference.layout.xaxis.ticktext) == ["a", "dog", "runs", "&lt;eos&gt;"]


def test_no_difference_map_says_why():
    a = attention(["▁one", "▁two"], ["<bos>", "▁x"], seed=0)
    b = attention(["▁three", "▁four", "▁five"], ["<bos>", "▁x"], seed=1)
    reason = compare_view.difference_unavailable(a.src_tokens, a.src_tokens, b.src_tokens, b.src_tokens)
    assert reason is not None and "no aligned query token" in reason
    view = compare_view.compare_figures(a, b, "encoder", 0, 0)
    assert view.note == reason and not any(trace.type == "heatmap" for trace in view.difference.data)
    assert reason.replace(" ", "") in "".join(a.text for a in view.difference.layout.annotations).replace(" ", "")
    with pytest.raises(ValueError, match="No difference map"):
        compare_view.difference_map(a.encoder[0, 0], a.src_tokens, a.src_tokens, b.encoder[0, 0], b.src_tokens,
                                  b.src_tokens)


def test_compare_escapes_labels_and_checks_arguments():
    a = attention([EVIL, "<eos>"], ["<bos>", EVIL], seed=0)
    view = compare_view.compare_figures(a, a, "cross", 0, 0, labels=(EVIL, "x" * 5000))
    assert_no_raw_tag(view.pair)
    assert_no_raw_tag(view.difference)
    assert max(len(an.text) for an in view.pair.layout.annotations) < 100  # a 5,000-character label is cut
    for kind, layer, head in (("self", 0, 0), ("cross", 2, 0), ("cross", 0, 3), ("cross", -1, 0)):
        with pytest.raises(ValueError):
            compare_view.compare_figures(a, a, kind, layer, head)
