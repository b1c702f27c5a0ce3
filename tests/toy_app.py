"""What the in-process tests of the explorer share: the toy app's environment (tests/app_server.app_env:
checkpoints/toy-reverse when it is trained, else an untrained stand-in), reading a handler's answer by the names of
the page's components, and a hand-made result. The app itself is conftest.py's `app` fixture."""
from __future__ import annotations

from operator import attrgetter

import numpy as np
import pytest
from app_server import app_env

from transformer.explorer.core import results
from transformer.translator import Attention, Candidate, StepRecord, Translation

EVIL = "<img src=x onerror=alert(1)>"
ENV, WHICH = app_env()


TRAINED = WHICH == "toy-reverse"
needs_trained = pytest.mark.skipif(not TRAINED, reason="checkpoints/toy-reverse is not trained yet (stand-in model)")


def values(app, out: dict, *paths: str) -> list:
    """A handler's `{component: value}` answer, read by the components' names in `app.page` ("states.result")."""
    return [out[attrgetter(path)(app.page)] for path in paths]


def fake_result():
    """A Result with hand-made attention and HTML-looking tokens (no model needed)."""
    src = ["\u2581a", "b", EVIL, "<b>", "<eos>"]
    out = ["\u2581x", "<i>y</i>", "<eos>"]
    tin = ["<bos>"] + out[:-1]
    rng = np.random.default_rng(0)

    def maps(shape):
        a = rng.random(shape).astype(np.float32)
        return a / a.sum(-1, keepdims=True)

    dec = maps((2, 4, 3, 3)) * np.tril(np.ones((3, 3), np.float32))
    dec /= dec.sum(-1, keepdims=True)
    steps = [StepRecord(t, tok, 0.5, [(tok, 0.5), (EVIL, 0.3), ("<b>", 0.2)]) for t, tok in enumerate(out)]
    att = Attention(maps((2, 4, 5, 5)), dec, maps((2, 4, 3, 5)), src, tin, out, steps)
    cand = Candidate("x " + EVIL, out, [4, 5, 3], -1.0, -2.0)
    tr = Translation("x " + EVIL, src, out, -1.0, -2.0, False, [cand], "beam", 5, [4, 5, 6, 7, 3], att)
    return results.Result("fake", EVIL, tr, 0.6, {0: att})
