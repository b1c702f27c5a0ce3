"""The Training tab: how the model on screen was trained, its train_log.jsonl as loss, perplexity and BLEU curves
and its metrics.json as a table (`curves.py`), drawn on the server as a Plotly figure; it follows the model."""
from __future__ import annotations

from functools import lru_cache, partial
from pathlib import Path
from typing import Any

from transformer.explorer.core import texts
from transformer.explorer.panels.training.curves import training_view
from transformer.explorer.panels.start import PanelStart
from transformer.explorer.web.plot_tab import PlotTab, build_plot_tab, followed


@lru_cache(maxsize=16)
def model_view(label: str | None, directory: Path | None) -> tuple[Any, Any]:
    """The curves and the table of a model (read and drawn once: a page load asks every time)."""
    return training_view(label, directory)


def build(start: PanelStart) -> PlotTab:
    """The tab, showing the default model."""
    return build_plot_tab("training", "Training", texts.TRAINING_FURTHER, model_view(start.label, start.directory),
                          "Training curves", "train-plot", "Model card metrics (metrics.json)", "metrics")


follow_model = partial(followed, model_view)  # another model on screen: its figure and table
