"""What a panel's builder is given when the page is built: the view the page opens on, the default model's facts
and every panel's scripts (preloaded with the page); and `HtmlTab`, what a builder of a one-panel tab returns."""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformer.explorer.core.view_state import ViewState


@dataclass(frozen=True)
class PanelStart:
    """`view`: the page's first view; `label`, `directory`: the default model and its checkpoint folder (None
    without one); `learn_index`: its training snapshots' index (None when it ships none); `scripts`: the ES modules
    of every registered panel."""

    view: ViewState
    label: str | None
    directory: Path | None
    learn_index: dict[str, Any] | None
    scripts: tuple[Path, ...]


HtmlTab = namedtuple("HtmlTab", "tab view")  # a tab holding one gr.HTML panel: the gr.Tab and the gr.HTML
