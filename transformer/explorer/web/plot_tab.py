"""A tab that shows a model's figure built on the server (a gr.Plot) above a table, and follows the model on
screen: the training and heads panels. Each gives its own `view(label, directory) -> (figure, table)`."""
from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr

PlotTab = namedtuple("PlotTab", "tab plot table")  # a figure and a table
ModelView = Callable[[str | None, Path | None], tuple[Any, Any]]


def build_plot_tab(tab_id: str, title: str, further: str, view: tuple[Any, Any], plot_label: str, plot_id: str,
                   table_label: str, table_id: str) -> PlotTab:
    """The tab: a "going further" note, the figure and the table of `view` (the default model's)."""
    figure, table = view
    with gr.Tab(title, id=tab_id, elem_id=f"tab-{tab_id}") as tab:
        gr.Markdown(further, elem_classes="further")
        plot = gr.Plot(figure, label=plot_label, elem_id=plot_id)
        frame = gr.Dataframe(table, label=table_label, interactive=False, elem_id=table_id)
    return PlotTab(tab, plot, frame)


def followed(view: ModelView, tab: PlotTab, label: str | None, directory: Path | None) -> dict:
    """Another model on screen: its figure and table."""
    figure, table = view(label, directory)
    return {tab.plot: figure, tab.table: table}
