"""What the page says about a model (transformer/explorer/core/models.py): which precision decodes, why, and the
environment variable that switches it.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from toy_app import values



def test_the_notes_say_the_search_is_int8_everywhere_and_why_its_kernels(app):
    path = app.explorer.models.serving_path
    assert app.explorer.models.default_translator.precision == path.precision == "int8"
    notice = values(app, app.page.on_model_change(app.explorer.models.default_model), "results.notice")[0]
    assert "Decoding: int8" in notice and "TRANSFORMER_" not in notice  # no settings on the page
    assert "the same translation everywhere" in notice
    assert "measured fastest on this computer" in notice  # the kernels, and the timing behind them
    assert f"{path.step_ms['int8']:.1f} ms" in notice
