"""Every tab of the explorer, declared once, in page order: `PANELS`.

A panel lives in its own folder (`panels/<id>/`): `panel.py` builds its gradio components and holds its markup;
its script (an ES module) and stylesheet sit beside it; what it computes is its `service.py` (no gradio) or the
shared services of `core/`. Everything that walks the tabs reads this list: the page's tabs and their events
(`app.py`), the tab a link may open (`core/view_state.py`, through the restore service), the answer that follows a
new result (`follows_result`), the scripts the page preloads and serves, the stylesheets in its head, and the
tests that walk every tab (tests/test_panels.py, tests/test_stage.py's accessibility walk).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformer.explorer.panels.attention import panel as attention
from transformer.explorer.panels.compare import panel as compare
from transformer.explorer.panels.heads import panel as heads
from transformer.explorer.panels.inside import panel as inside
from transformer.explorer.panels.quiz import panel as quiz
from transformer.explorer.panels.start import PanelStart
from transformer.explorer.panels.training import panel as training
from transformer.explorer.panels.tree import panel as tree


@dataclass(frozen=True)
class Panel:
    """One tab. `id`: its gr.Tab id, a link's `?tab=` and the page's `#tab-<id>`; `build(start)`: makes its
    components inside the open gr.Tabs and returns them as a named tuple whose first field is the gr.Tab;
    `scripts`: the ES modules that draw it in the browser from the values its events send (maps through
    static/figures.js), none for a panel whose figure is built in Python and shown in a gr.Plot; `follows_result(explorer, components, result, tab, view_json)`:
    its part of the one answer to a new translation, as {component: value} on `components.view` (the attention
    payload is the page's own: app.Page.show_result); `follows_model(components, label, directory)`: its part of
    the answer to another model; `wire(page, components, entered)`: its own events, wired once the page is built
    (app.Page gives it the session's state and services, `entered` is the event of its tab opening; web/wiring.py
    gives the options); `ready`: a JavaScript expression true
    once the tab's content is drawn (the tests that walk every tab wait on it); `routes(explorer, host, port)`: its
    own HTTP routes and pages beside gradio's, given to the app gradio makes at launch (`app.main`)."""

    id: str
    title: str
    build: Callable[[PanelStart], Any]
    scripts: tuple[Path, ...] = ()
    styles: tuple[Path, ...] = ()
    follows_result: Callable[[Any, Any, Any, str, str], dict] | None = None
    follows_model: Callable[[Any, str | None, Path | None], dict] | None = None
    wire: Callable[[Any, Any, Any], None] | None = None
    routes: Callable[[Any, str, int], list[Any]] | None = None
    ready: str = "true"


def plot_drawn(elem_id: str) -> str:
    """`ready` of a server-drawn panel: gradio's Plot `elem_id` shows its figure (or its empty box, for none)."""
    return (f"(() => {{ const c = window.gradio_config.components.find((c) => (c.props || {{}}).elem_id === '{elem_id}');"
            f" const plot = document.querySelector('#{elem_id}'); if (!c) return false;"
            " return Boolean(plot && plot.querySelector(c.props.value ? '.js-plotly-plot' : \"[aria-label='Empty value']\")); })()")


PANELS: tuple[Panel, ...] = (
    Panel("attention", "Attention", attention.build, attention.SCRIPTS, attention.STYLES,
          ready="(document.querySelector('#explorer .explorer')?.dataset.views || '').startsWith('views-')"),
    Panel("tree", "Beam-search tree", tree.build, tree.SCRIPTS, tree.STYLES, follows_result=tree.follow_result,
          wire=tree.wire,
          ready="(document.querySelector('#tree-panel')?.dataset.ready || '').startsWith('tree-')"),
    Panel("compare", "Compare", compare.build, compare.SCRIPTS, compare.STYLES, wire=compare.wire,
          ready="['empty', 'compare-'].some((r) => (document.querySelector('#compare-panel')?.dataset.ready || '')"
                ".startsWith(r))"),
    Panel("training", "Training", training.build, follows_model=training.follow_model, ready=plot_drawn("train-plot")),
    Panel("heads", "Heads", heads.build, follows_model=heads.follow_model, ready=plot_drawn("heads-plot")),
    Panel("learn", "Watch it learn", inside.build_learn, inside.SCRIPTS, inside.STYLES,
          ready="(document.querySelector('#learn-panel')?.dataset.ready || '') !== 'busy'"),
    Panel("quiz", "Class quiz", quiz.build, follows_result=quiz.follow_result, routes=quiz.routes,
          ready="!!document.querySelector('#quiz-board')"),
)


def panel(panel_id: str) -> Panel:
    """The registered panel of an id."""
    return next(p for p in PANELS if p.id == panel_id)


def tab_ids() -> tuple[str, ...]:
    """The tabs a link may open, in page order."""
    return tuple(p.id for p in PANELS)


def scripts() -> tuple[Path, ...]:
    """Every panel's ES modules, each once."""
    return tuple(dict.fromkeys(path for p in PANELS for path in p.scripts))


def styles() -> tuple[Path, ...]:
    """Every panel's stylesheets, each once, in page order (after the page's own)."""
    return tuple(dict.fromkeys(path for p in PANELS for path in p.styles))
