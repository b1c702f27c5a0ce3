"""The tests' own server-side reference of the maps (tests/reference_views.py, what the browser's figures.js is
checked against): the focus view's layer clipping, mean over heads and titles; the step view and its hidden text.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference_views
from toy_app import fake_result

from transformer.explorer.core import view_state


def test_focus_view_layer_clipping_mean_and_titles():
    att = fake_result().attention
    opts = reference_views.ViewOptions(layer=7, head=2)
    fig, hidden = reference_views.focus_view(att, "cross", opts)
    assert "layer 2" in fig.layout.title.text and "head 3" in fig.layout.title.text
    assert "this stack has 2 layers" in fig.layout.title.text and hidden is None
    fig, hidden = reference_views.focus_view(att, "encoder", reference_views.ViewOptions(layer=0, head=view_state.MEAN_HEADS, hide_special=True))
    assert "mean over heads" in fig.layout.title.text and 0.0 < hidden < 1.0
    z = np.array(fig.data[0].z)
    np.testing.assert_allclose(z.sum(1), 1.0, atol=1e-5)  # renormalised rows
    # decoder rows by predicted token: the last row is the one that predicted <eos>
    w, q, k = reference_views.kind_maps(att, "decoder", view_state.ROWS_PREDICTED)
    assert q == att.tgt_out_tokens and k == att.tgt_in_tokens


def test_step_view_and_hidden_text():
    att = fake_result().attention
    fig, text = reference_views.step_view(att, 2, reference_views.ViewOptions(layer=1, head=0))
    assert "Step 2 of 3" in text and "&lt;i&gt;y&lt;/i&gt;" in fig.layout.title.text
    fig, text = reference_views.step_view(att, 99, reference_views.ViewOptions())  # clamped
    assert "Step 3 of 3" in text
    assert "1.5%" in reference_views.hidden_text({"encoder": 0.015, "decoder": None, "cross": None})
