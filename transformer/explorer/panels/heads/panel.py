"""The Heads tab: what each head of the model on screen is for, its importance (Michel et al.), pruning curves and
the roles its heads carry (`figures.py`, from the checkpoint's head analysis), drawn on the server; it follows the
model."""
from __future__ import annotations

from functools import lru_cache, partial
from pathlib import Path
from typing import Any

from transformer.explorer.core import texts
from transformer.explorer.panels.heads.figures import head_figures
from transformer.explorer.panels.start import PanelStart
from transformer.explorer.web.plot_tab import PlotTab, build_plot_tab, followed


@lru_cache(maxsize=16)
def model_view(label: str | None, directory: Path | None) -> tuple[Any, Any]:
    """The figure and role table of a model (read and drawn once: a page load asks every time)."""
    return head_figures(label, directory)


def build(start: PanelStart) -> PlotTab:
    """The tab, showing the default model."""
    return build_plot_tab("heads", "Heads", texts.HEADS_FURTHER, model_view(start.label, start.directory),
                          "Head importance and pruning", "heads-plot", "Head roles", "head-roles")


follow_model = partial(followed, model_view)  # another model on screen: its figure and table
