"""The panel registry (transformer/explorer/panels/registry.py): each tab declared once, and what the page builds
from it agrees with the declaration: the tabs in order, their scripts served and started, their stylesheets in the
head, a link's tab checked against it, and each panel's room holding what it says."""
from __future__ import annotations

from pathlib import Path

import gradio as gr
import pytest

from transformer.explorer.core.view_state import ViewState
from transformer.explorer.panels.registry import PANELS, scripts, styles, tab_ids
from transformer.explorer.web import page

ROOMS = Path(page.EXPLORER_DIR) / "panels"


def test_each_panel_is_declared_once_in_its_own_room():
    assert len(set(tab_ids())) == len(PANELS) and tab_ids()[0] == "attention"
    for panel in PANELS:
        assert panel.title and panel.ready, panel.id
        for path in (*panel.scripts, *panel.styles):
            assert path.is_file() and path.parent.parent == ROOMS, path  # a room's own file


def test_the_page_builds_the_registered_tabs_in_order_and_serves_their_scripts(app):
    tabs = [c for c in app.demo.blocks.values() if isinstance(c, gr.Tab) and c.id in tab_ids()]
    assert [t.id for t in tabs] == list(tab_ids())
    assert [t.label for t in tabs] == [p.title for p in PANELS]
    assert set(app.page.panels) == set(tab_ids())
    for panel in PANELS:  # the builder's components: the tab first, then what the panel shows
        assert app.page.panels[panel.id][0].id == panel.id
        # a figure built in Python is shown in a gr.Plot, never drawn again by a script of the panel
        plots = [c for c in app.page.panels[panel.id][1:] if isinstance(c, gr.Plot)]
        assert not (plots and panel.scripts), panel.id
    head = app.head
    for path in styles():
        assert path.read_text(encoding="utf-8") in head
    preloaded = page.head_html(scripts())
    for path in scripts():
        assert page.module_url(path) in preloaded
    served = {Path(p) for p in page.served_paths(scripts())}
    assert set(scripts()) <= served and not [p for p in served if p.is_dir() and ROOMS in (p, *p.parents)]


@pytest.mark.parametrize("tab", tab_ids())
def test_a_link_opens_every_registered_tab_and_no_other(tab):
    view, notes = ViewState.from_query({"tab": tab}, tabs=tab_ids())
    assert view.tab == tab and not notes
    view, notes = ViewState.from_query({"tab": tab + "x"}, tabs=tab_ids())
    assert view.tab == "attention" and "tab" in notes[0]
