"""What the page says about a model (transformer/explorer/core/models.py): which precision decodes, why, and the
environment variable that switches it.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from toy_app import values

from transformer.explorer.core import model_registry


def test_the_notes_say_which_precision_decodes_and_an_env_variable_switches_it(app, monkeypatch):
    from transformer.explorer import startup
    from transformer.explorer.core import models

    path = app.explorer.models.serving_path
    assert app.explorer.models.default_translator.precision == path.precision  # what the start-up probe measured fastest
    notice = values(app, app.page.on_model_change(app.explorer.models.default_model), "results.notice")[0]
    assert f"Decoding: {path.precision}" in notice and "TRANSFORMER_PRECISION" not in notice  # no settings on the page
    assert "measured fastest on this computer" in notice  # the serving path, and the timings behind it
    assert f"{path.step_ms[path.precision]:.1f} ms" in notice
    for value, overridden in (("fp32", "fp32"), (" FP32 ", "fp32"), ("int8", "int8"), ("", None), ("int4", None)):
        monkeypatch.setenv("TRANSFORMER_PRECISION", value)
        # the start-up's measurement, not again; where the variable asks for a precision, one measured the other
        # way, so that it really overrides (an int8 the probe chose anyway is "measured fastest", whichever this
        # machine measured: the test no longer depends on it)
        other = "int8" if overridden == "fp32" else "fp32"
        probed = dataclasses.replace(path, precision=other) if overridden else path
        choice = startup.serving_choice(probe=lambda config: probed)
        assert choice.precision == (overridden or path.precision)
        assert (choice.why == "set by TRANSFORMER_PRECISION") == bool(overridden)
    fp32 = model_registry.ModelRegistry(Path(app.explorer.models.registry.checkpoint_dir), app.explorer.models.registry.override, "fp32")
    assert fp32.get(app.explorer.models.default_model).precision == "fp32" and models.precision_note("fp32").startswith("Decoding: fp32")
