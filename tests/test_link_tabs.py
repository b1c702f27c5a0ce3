"""A link that opens a tab draws that tab's panel once: in real Chromium against the app, `?text=...&tab=compare`
(compare's greedy against beam), counted by the values the panel is drawn with (its `data-ready` marks), not
timed. A panel whose value came twice (once in the link's translation, again when its tab opened) would compute
its maps twice. The tree is not held to it yet: gradio fires the tree tab's opening when a link selects it, so
`?tab=tree` computes the tree twice, in the link's translation and in the tab's opening (seen in server events)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_server import shared_app  # noqa: E402
from test_browser import TIMEOUT_MS, chromium, watch_page  # noqa: E402
from test_stage import AT_REST, ENV, link  # noqa: E402

from transformer.explorer.panels.registry import panel  # noqa: E402

pytestmark = pytest.mark.slow  # Chromium: `pytest -m "not slow"` leaves it out

# every data-ready value a panel's root takes, in order, from the page's first script on
LOG_READY = """new MutationObserver((changes) => {
  for (const c of changes) {
    (window.__ready = window.__ready || []).push([c.target.id, c.target.dataset.ready || '']);
  }
}).observe(document, {subtree: true, attributes: true, attributeFilter: ['data-ready']});"""
# (panel id, its root's id, the prefix of a drawn value)
COMPUTED_FOR_THE_TRANSLATION = (("compare", "compare-panel", "compare-"),)


@pytest.mark.parametrize("tab,root,drawn", COMPUTED_FOR_THE_TRANSLATION)
def test_a_link_to_a_tab_draws_its_panel_once(tab, root, drawn):
    server = shared_app(ENV)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        _, external, errors = watch_page(page)
        page.add_init_script(LOG_READY)
        page.goto(link(server, tab=tab))
        page.wait_for_function(f"() => {panel(tab).ready}")
        page.wait_for_function(f"() => (document.querySelector('#{root}')?.dataset.ready || '').startsWith('{drawn}')")
        page.evaluate("window.__busyAt = performance.now()")  # at rest: a whole second from now without an event
        page.wait_for_function(AT_REST, polling="raf")  # every event the link set off has answered
        values = [value for element, value in page.evaluate("window.__ready") if element == root]
        assert [v for v in values if v.startswith(drawn)] == [values[-1]], values  # one value drawn, the last
        assert errors == [] and external == []
