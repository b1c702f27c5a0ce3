"""`Translator.inside_head`: the numbers behind one row of one head's map reproduce the map, for each kind."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from transformer.translator import load_pretrained

EN_DE = Path(__file__).resolve().parents[1] / "checkpoints" / "en-de"
SENTENCE = "My little cousin paints the kitchen after lunch."


@pytest.fixture(scope="module")
def translator():
    return load_pretrained(EN_DE)


@pytest.fixture(scope="module")
def result(translator):
    return translator.translate(SENTENCE, beam_size=3)


@pytest.mark.parametrize("kind,layer,head,query", [
    ("encoder", 0, 0, 2), ("encoder", 5, 7, 0), ("decoder", 0, 3, 4), ("decoder", 3, 1, 1), ("cross", 1, 2, 3),
    ("cross", 3, 7, 0),
])
def test_the_rows_numbers_reproduce_the_map(translator, result, kind, layer, head, query):
    row = translator.inside_head(result, kind, layer, head, query)
    shown = getattr(result.attention, kind)[layer, head, query]  # the map's row
    np.testing.assert_allclose(row.weights.numpy(), shown, atol=1e-5)
    # softmax of the panel's allowed scores gives the panel's weights
    again = row.scores.masked_fill(~row.allowed, float("-inf")).softmax(-1)
    torch.testing.assert_close(again, row.weights, atol=1e-6, rtol=0)
    # the elementwise products add up to the score times sqrt(d_k)
    d_k = row.q.numel()
    for key in range(row.keys.size(0)):
        assert float(row.products(key).sum()) / math.sqrt(d_k) == pytest.approx(float(row.scores[key]), abs=1e-4)
    torch.testing.assert_close(row.output, row.weights @ row.values)
    assert row.head_on and row.output_norm == pytest.approx(float(row.output.norm()))


def test_decoder_rows_mask_the_future(translator, result):
    row = translator.inside_head(result, "decoder", 1, 0, 2)
    assert row.allowed.tolist()[:3] == [True] * 3 and not row.allowed[3:].any()
    assert float(row.weights[3:].sum()) == 0.0


def test_a_switched_off_head_says_so(translator):
    off = np.ones((4, 8))
    off[2, 5] = 0
    masked = translator.translate(SENTENCE, beam_size=3, head_mask={"cross": off})
    row = translator.inside_head(masked, "cross", 2, 5, 1)
    assert not row.head_on and float(row.weights.abs().sum()) == 0.0
    assert float(np.abs(masked.attention.cross[2, 5]).sum()) == 0.0
    assert translator.inside_head(masked, "cross", 2, 4, 1).head_on


@pytest.mark.parametrize("kind,layer,head,query", [("self", 0, 0, 0), ("encoder", 6, 0, 0), ("cross", 4, 0, 0),
                                                  ("encoder", 0, 8, 0), ("decoder", 0, 0, 999), ("encoder", 0, 0, -1)])
def test_out_of_range_is_a_clear_value_error(translator, result, kind, layer, head, query):
    with pytest.raises(ValueError, match="must be"):
        translator.inside_head(result, kind, layer, head, query)
