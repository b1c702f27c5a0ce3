"""The Heads tab: what each head of the model on screen is for, its importance (Michel et al.), pruning curves and
the roles its heads carry (`figures.py`, from the checkpoint's head analysis), drawn on the server; it follows the
model."""
from __future__ import annotations

from collections import namedtuple
from functools import lru_cache
from pathlib import Path
from typing import Any

import gradio as gr

from transformer.explorer.core import texts
from transformer.explorer.panels.heads.figures import head_figures
from transformer.explorer.panels.start import PanelStart

PlotTab = namedtuple("PlotTab", "tab plot table")  # a figure and a table


@lru_cache(maxsize=16)
def model_view(label: str | None, directory: Path | None) -> tuple[Any, Any]:
    """The figure and role table of a model (read and drawn once: a page load asks every time)."""
    return head_figures(label, directory)


def build(start: PanelStart) -> PlotTab:
    """The tab, showing the default model."""
    figure, roles = model_view(start.label, start.directory)
    with gr.Tab("Heads", id="heads", elem_id="tab-heads") as tab:
        gr.Markdown(texts.HEADS_FURTHER, elem_classes="further")
        plot = gr.Plot(figure, label="Head importance and pruning", elem_id="heads-plot")
        table = gr.Dataframe(roles, label="Head roles", interactive=False, elem_id="head-roles")
    return PlotTab(tab, plot, table)


def follow_model(tab: PlotTab, label: str | None, directory: Path | None) -> dict:
    """Another model on screen: its figure and role table."""
    figure, roles = model_view(label, directory)
    return {tab.plot: figure, tab.table: roles}
