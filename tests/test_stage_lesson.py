"""A lesson run without precautions (issue 52), in real Chromium: presentation mode shows what the lesson points
at, links open on a view where their point can be seen, the views fit a projector and survive a resize, the
maps are reachable from the keyboard, labels stay legible and the n-best list reads as a table.

The app runs on the short toy run that ships training snapshots (tests/toy_snapshots.py), so "Watch it learn"
is there too. Waits are on page state (data-drawn, data-views, data-cells, data-ready), never fixed sleeps.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from urllib.parse import urlencode

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_server import shared_app  # noqa: E402
from test_browser import TIMEOUT_MS, chromium, watch_page  # noqa: E402
from toy_snapshots import toy_run_with_snapshots  # noqa: E402

TEXT = "a b c d e"
EXPLORER = "(document.querySelector('#explorer .explorer') || {}).__explorer"
READY = "(s) => ((document.querySelector(s) || {}).dataset || {}).ready || ''"

pytestmark = pytest.mark.slow  # Chromium: `pytest -m "not slow"` leaves it out


@pytest.fixture(scope="module")
def server():
    run = toy_run_with_snapshots(Path(tempfile.gettempdir()) / "attention-app-toy-learning")
    return shared_app({"TRANSFORMER_CHECKPOINT": str(run), "TRANSFORMER_THREADS": "1"})


def link(server, **params) -> str:
    return server.url + "?" + urlencode({"text": TEXT, **params})


def open_at(browser, url: str, width: int, height: int):
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(TIMEOUT_MS)
    problems = watch_page(page)
    page.goto(url)
    page.wait_for_function(f"(() => {{ const x = {EXPLORER}; return x && x.payload && x.asked === null; }})()")
    return page, problems


def views_drawn(page) -> None:
    """The attention tab's views are drawn for the payload on screen, and its focus map's draw has finished."""
    page.wait_for_function(f"""(() => {{ const x = {EXPLORER}, e = document.querySelector('#explorer .explorer');
      if (!x || !x.payload || e.dataset.views !== 'views-' + x.payload.rev) return false;
      const p = document.querySelector('#focus-' + x.state.tab + ' .plot');
      return !p || Boolean(p.dataset.drawn); }})()""")


def box(page, selector: str) -> dict | None:
    return page.evaluate("(s) => { const e = [...document.querySelectorAll(s)].find((x) => x.offsetWidth);"
                         " if (!e) return null; const b = e.getBoundingClientRect();"
                         " return {x: b.left, y: b.top, right: b.right, bottom: b.bottom, width: b.width,"
                         " height: b.height}; }", selector)


def on_screen(b: dict | None, width: int, height: int) -> bool:
    return (b is not None and b["height"] > 0 and b["x"] >= 0 and b["y"] >= 0 and b["right"] <= width + 0.5
            and b["bottom"] <= height + 0.5)


# ----------------------------------------------------------------------------- presentation mode


def test_presentation_mode_shows_the_step_translation_the_notes_and_copy_link(server):
    """1280x720, present=1: the notes (where the placeholders are listed) and "Copy link to this view" are on
    screen; in "Watch it learn" each step's translation is shown."""
    with chromium() as browser:
        page, (_, _, errors) = open_at(browser, link(server, kind="cross", present=1), 1280, 720)
        views_drawn(page)
        for selector in ("#notice", "#copy-link"):
            assert page.locator(selector).is_visible(), selector
            assert on_screen(box(page, selector), 1280, 720), (selector, box(page, selector))
        page.get_by_role("tab", name="Watch it learn").click()
        page.wait_for_function(f"({READY})('#learn-panel').startsWith('step-')")
        step = page.locator("#learn-translation")
        assert step.is_visible() and step.text_content().strip()
        assert on_screen(box(page, "#learn-translation"), 1280, 720), box(page, "#learn-translation")
        assert errors == []
        page.close()


# ----------------------------------------------------------------------------- views that open where their point shows


def test_greedy_against_beam_and_your_translation_open_on_cross_attention(server):
    """Lesson link 8 (tab=compare, no kind) and a compare link that names the encoder open greedy against beam on
    cross-attention, and the encoder is not offered there (one source: its maps are the same on both sides).
    A `yours` link without a kind, and Score pressed on the encoder view, show cross-attention (the encoder
    does not read the German)."""
    with chromium() as browser:
        for params in ({"tab": "compare"}, {"tab": "compare", "kind": "encoder"}):
            page, (_, _, errors) = open_at(browser, link(server, **params), 1280, 720)
            page.wait_for_selector("#compare-panel[data-ready^='compare-']")
            assert page.locator("#compare-kind select").input_value() == "cross", params
            options = page.locator("#compare-kind select option").evaluate_all("(os) => os.map((o) => o.value)")
            assert "encoder" not in options, options
            assert errors == []
            page.close()
        page, (_, _, errors) = open_at(browser, link(server, yours="e d c b a"), 1280, 720)
        page.wait_for_function(f"({READY})('#yours-panel').startsWith('scored-')")
        assert page.evaluate(f"{EXPLORER}.state.tab") == "cross"
        page.close()
        page, (_, _, errors) = open_at(browser, link(server, kind="encoder"), 1280, 720)
        views_drawn(page)
        page.locator("#yours textarea, #yours input").first.fill("e d c b a")
        page.locator("#yours-score").click()
        page.wait_for_function(f"({READY})('#yours-panel').startsWith('scored-')")
        page.wait_for_function(f"{EXPLORER}.state.tab === 'cross'")
        views_drawn(page)
        assert page.locator("#focus-cross .plot").is_visible()
        assert errors == []
        page.close()
