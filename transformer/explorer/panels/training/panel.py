"""The Training tab: how the model on screen was trained, its train_log.jsonl as loss, perplexity and BLEU curves
and its metrics.json as a table (`curves.py`), drawn on the server as a Plotly figure; it follows the model."""
from __future__ import annotations

from collections import namedtuple
from functools import lru_cache
from pathlib import Path
from typing import Any

import gradio as gr

from transformer.explorer.core import texts
from transformer.explorer.panels.start import PanelStart
from transformer.explorer.panels.training.curves import training_view

PlotTab = namedtuple("PlotTab", "tab plot table")  # a figure and a table


@lru_cache(maxsize=16)
def model_view(label: str | None, directory: Path | None) -> tuple[Any, Any]:
    """The curves and the table of a model (read and drawn once: a page load asks every time)."""
    return training_view(label, directory)


def build(start: PanelStart) -> PlotTab:
    """The tab, showing the default model."""
    figure, metrics = model_view(start.label, start.directory)
    with gr.Tab("Training", id="training", elem_id="tab-training") as tab:
        gr.Markdown(texts.TRAINING_FURTHER, elem_classes="further")
        plot = gr.Plot(figure, label="Training curves", elem_id="train-plot")
        table = gr.Dataframe(metrics, label="Model card metrics (metrics.json)", interactive=False, elem_id="metrics")
    return PlotTab(tab, plot, table)


def follow_model(tab: PlotTab, label: str | None, directory: Path | None) -> dict:
    """Another model on screen: its curves and table."""
    figure, metrics = model_view(label, directory)
    return {tab.plot: figure, tab.table: metrics}
