"""What a view change costs the browser, counted, not timed: the guard that keeps exploring instant.

In real Chromium against the app, each kind of view change a student makes (layer, head, mean over heads, a
head-summary click, hide specials, merge subwords, row labels, the measure, a kind's tab, a decoding step) is
made on a drawn page, and the test counts what the page did until its views are drawn again:
- the plotly.js calls that draw (`Plotly.react`, `newPlot`, `relayout`, `restyle`, `update`, `redraw`): each is a
  whole figure drawn, so a view change may make one per map whose content changed, and no more;
- the browser's layouts (the Chrome DevTools Protocol's `Performance.getMetrics`, `LayoutCount`): a second draw,
  a DOM size read between writes, or a resize loop each add layouts;
- the server events (the page's POSTs to gradio): none for a view change, one for a Translate press.
A change that draws a map twice, or redraws maps whose content did not change, fails here whatever the
machine's speed. Times are `bench/browser_latency.py`'s.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_browser import TIMEOUT_MS, chromium, watch_page  # noqa: E402
from test_stage import ENV, EXPLORER, link  # noqa: E402
from app_server import shared_app  # noqa: E402

pytestmark = pytest.mark.slow  # Chromium: `pytest -m "not slow"` leaves it out

# every plotly.js entry point that draws a figure, counted (the page calls them through window.Plotly)
COUNT_DRAWS = """() => {
  if (window.__draws) return true;
  if (!window.Plotly) return false;
  window.__draws = {};
  for (const name of ['react', 'newPlot', 'relayout', 'restyle', 'update', 'redraw']) {
    const original = window.Plotly[name];
    window.Plotly[name] = function (...args) {
      window.__draws[name] = (window.__draws[name] || 0) + 1;
      return original.apply(this, args);
    };
  }
  return true;
}"""

# drawn: the tab's views are drawn for the payload on screen (explorer.js's data-views) and every visible map's
# Plotly draw has finished (draw.js's data-drawn), then two animation frames, so that what a draw sets off
# (a ResizeObserver's callback, a layout) has run and is counted with it
SETTLED = f"""(() => {{
  const x = {EXPLORER}, e = document.querySelector('#explorer .explorer');
  if (!x || !x.payload || x.asked !== null || e.dataset.views !== 'views-' + x.payload.rev) return false;
  const shown = [...e.querySelectorAll('.plot')].filter((p) => p.checkVisibility());
  return shown.length > 0 && shown.every((p) => Boolean(p.dataset.drawn));
}})()"""
TWO_FRAMES = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"

# The cost of each kind of view change: (Plotly draws, layouts). Draws are the maps whose content changes, each
# drawn exactly once (a change that draws nothing left a map stale):
# the focus map, plus the rollout on the encoder's tab when the rows or columns change, or the step chart.
# Layouts: Chromium lays the page out once a frame, plus once per size read after a DOM write. The first time
# plotly.js writes a label in a font it measures it (one layout each, its text bounding boxes), so a change that
# brings new labels is held to the budget on the second round, once plotly.js knows them.
LAYOUTS = 12
SAME_LABELS, NEW_LABELS = LAYOUTS, None
CHANGES = [
    # (name, JS that makes the change through the page's own controls, draws, layouts); each a change whichever
    # state the round before left
    ("layer", "s = document.querySelector('#layer select'); s.value = s.options[0].value;"
              " s.dispatchEvent(new Event('change', {bubbles: true}))", 1, SAME_LABELS),
    ("head", "s = document.querySelector('#head select'); s.value = s.options[s.selectedIndex === 2 ? 3 : 2].value;"
             " s.dispatchEvent(new Event('change', {bubbles: true}))", 1, SAME_LABELS),
    ("mean over heads", "s = document.querySelector('#head select'); s.value = s.options[0].value;"
                        " s.dispatchEvent(new Event('change', {bubbles: true}))", 1, SAME_LABELS),
    ("head summary", "document.querySelector(\"#grid-encoder [data-testid='cell-1-2']\").click()", 1, SAME_LABELS),
    ("hide specials", "document.querySelector('#hide input').click()", 2, NEW_LABELS),
    ("merge subwords", "document.querySelector('#merge input').click()", 2, NEW_LABELS),
    ("show specials", "document.querySelector('#hide input').click()", 2, NEW_LABELS),
    ("kind tab", "document.querySelector('#tab-cross').click()", 1, NEW_LABELS),
    ("row labels", "document.querySelector(\"#rows input[value='decoder input token']\").click()", 1, NEW_LABELS),
    ("kind tab back", "document.querySelector('#tab-encoder').click()", 0, SAME_LABELS),
    ("decoding step tab", "document.querySelector('#tab-steps').click()", 1, NEW_LABELS),
    ("decoding step", "s = document.querySelector('#step input'); s.value = 2;"
                      " s.dispatchEvent(new Event('input', {bubbles: true}))", 1, NEW_LABELS),
]


# animation frames, counted: Chromium lays a changed page out once a frame, so a slow machine, which takes more frames
# to draw the same change, makes more of those layouts; what a change costs is the layouts beyond one a frame
COUNT_FRAMES = """() => {
  window.__frames = 0;
  if (window.__counting) return;
  window.__counting = true;
  const tick = () => { window.__frames += 1; requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
}"""


def counted(page, cdp, action: str) -> tuple[dict[str, int], int]:
    """Run `action` (JS) on a settled page; the Plotly draws until it has settled again, and the layouts beyond one
    a frame (those a size read after a DOM write forces)."""
    page.wait_for_function(SETTLED)
    page.evaluate(TWO_FRAMES)
    page.evaluate("window.__draws = {}")
    page.evaluate(COUNT_FRAMES)
    before = layouts(cdp)
    page.evaluate(f"() => {{ let s; {action}; }}")
    page.wait_for_function(SETTLED)
    page.evaluate(TWO_FRAMES)
    laid_out, frames = layouts(cdp) - before, page.evaluate("window.__frames")
    return page.evaluate("window.__draws"), max(0, laid_out - frames)


def layouts(cdp) -> int:
    metrics = cdp.send("Performance.getMetrics")["metrics"]
    return int(next(m["value"] for m in metrics if m["name"] == "LayoutCount"))


def test_each_view_change_draws_each_changed_map_once_and_lays_out_within_budget():
    """Every kind of view change, twice over (the second time plotly.js knows the labels): Plotly draws within
    the maps that changed, layouts within the budget, and no server event; a Translate press is one."""
    server = shared_app(ENV)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.set_default_timeout(TIMEOUT_MS)
        _, _, errors = watch_page(page)
        posts: list[str] = []
        page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
        page.goto(link(server, kind="encoder"))
        page.wait_for_function(COUNT_DRAWS)
        page.wait_for_function(SETTLED)
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        seen = []
        for round_ in (1, 2):
            # the server events of the second round's changes (the first runs while the page load's last events,
            # which follow its translation, may still be on their way)
            posts.clear()
            for name, action, draws, budget in CHANGES:
                made, laid_out = counted(page, cdp, action)
                seen.append((round_, name, made, laid_out))
                assert sum(made.values()) == draws, seen[-3:]  # each changed map drawn once; none left undrawn
                if round_ == 2 or budget is not None:
                    assert laid_out <= LAYOUTS, seen  # forced layouts: beyond one a frame
            assert round_ == 1 or posts == [], f"view changes went to the server: {posts}"
            page.evaluate("() => { for (const id of ['#tab-encoder']) document.querySelector(id).click();"
                          " const s = document.querySelector('#step input'); s.value = 1;"
                          " s.dispatchEvent(new Event('input', {bubbles: true})); }")
            page.wait_for_function(SETTLED)
            # back to the first state: rows by predicted token, layer and head as the first round found them
            page.evaluate("document.querySelector(\"#rows input[value='predicted token']\").click()")
            page.wait_for_function(SETTLED)

        # a Translate press: one server event brings all the page shows (the last POST is the press's own)
        posts.clear()
        rev = page.evaluate(f"{EXPLORER}.payload.rev")
        page.locator("#source textarea").fill("a b c d")
        page.locator("#translate").click()
        page.wait_for_function(f"{EXPLORER}.payload.rev !== {rev!r}")
        page.wait_for_function(SETTLED)
        # then every view change again: none of them goes to the server, so any POST after the press's own is
        # an event the press set off
        for _, action, _, _ in CHANGES:
            counted(page, cdp, action)
        joins = [url for url in posts if "/queue/join" in url or "/run/predict" in url]
        assert len(joins) == 1, joins
        assert errors == []
        page.close()
