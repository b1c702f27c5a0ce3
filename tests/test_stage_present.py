"""Presentation mode on a projector, in real Chromium on the shipped en-de checkpoint: the type a room can read
(the computed font size of every text on screen, HTML and Plotly's SVG alike, so that no style sheet can win
over presentation mode's rules unseen), and what a lesson step needs on one screen of 1280x720 for every link
shape a teacher can make.

Waits are on page state (data-views, data-drawn, data-ready), never fixed sleeps.
"""
from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlencode

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_server import ROOT, shared_app  # noqa: E402
from test_browser import chromium  # noqa: E402
from test_stage import EXPLORER, open_at, views_drawn  # noqa: E402

pytestmark = pytest.mark.slow  # Chromium: `pytest -m "not slow"` leaves it out

WIDTH, HEIGHT = 1280, 720
SHORT = "The dog likes fresh bread."  # 5 words
LONG = ("On a rainy Monday morning my grandmother took the early train to the city because she wanted to buy a "
        "new winter coat and a pair of warm boots.")  # 30 words
TEXT_MIN, LABEL_MIN = 16, 12  # px: any text on the first screen; a map's token labels (fitted to their cells)

# Every text on screen with its computed font size: HTML text nodes that are seen (inside the window, not
# hidden, not clipped away or covered: the element at the text's middle is its own), and Plotly's SVG text
# (tick labels marked: they follow their cells down to LABEL_MIN).
VISIBLE_TEXT = """() => { const out = [], W = innerWidth, H = innerHeight;
  const seen = (b) => b.width >= 2 && b.height >= 2 && b.right > 0 && b.bottom > 0 && b.left < W && b.top < H;
  const where = (e) => { const x = e.closest('[id]'); return x ? x.id : e.tagName; };
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const e = n.parentElement; if (!n.data.trim() || !e || e.closest('svg, script, style, option')) continue;
    const range = document.createRange(); range.selectNodeContents(n);
    const b = range.getBoundingClientRect(); if (!seen(b)) continue;
    const cs = getComputedStyle(e); if (cs.visibility !== 'visible' || +cs.opacity === 0) continue;
    const x = Math.min(Math.max(b.left + b.width / 2, 0), W - 1), y = Math.min(Math.max(b.top + b.height / 2, 0), H - 1);
    const hit = document.elementFromPoint(x, y); if (!hit || !(hit === e || e.contains(hit) || hit.contains(e))) continue;
    out.push({size: parseFloat(cs.fontSize), text: n.data.trim().slice(0, 40), where: where(e), tick: false}); }
  for (const t of document.querySelectorAll('.js-plotly-plot svg text')) {
    if (!t.textContent.trim()) continue; const b = t.getBoundingClientRect(); if (!seen(b)) continue;
    const cs = getComputedStyle(t); if (cs.visibility === 'hidden' || cs.display === 'none' || +cs.opacity === 0) continue;
    out.push({size: parseFloat(cs.fontSize), text: t.textContent.trim().slice(0, 40), where: where(t),
      tick: Boolean(t.closest('.xtick, .ytick, .x2tick, .y2tick')) && !t.closest('.colorbar')}); }
  return out; }"""


@pytest.fixture(scope="module")
def en_de():
    """The app on the shipped checkpoints (en-de first), as a teacher's link opens it."""
    if not (ROOT / "checkpoints" / "en-de" / "model.safetensors").is_file():
        pytest.skip("checkpoints/en-de is not here")
    return shared_app({"TRANSFORMER_THREADS": "1"})


def link(server, text: str, **params) -> str:
    return server.url + "?" + urlencode({"text": text, "present": 1, **params})


def too_small(page) -> list[dict]:
    """The texts on screen under the smallest readable size: TEXT_MIN, or LABEL_MIN for a map's tick label."""
    return [t for t in page.evaluate(VISIBLE_TEXT) if t["size"] < (LABEL_MIN if t["tick"] else TEXT_MIN)]


def test_presentation_mode_writes_no_text_under_16_px_on_the_first_screen(en_de):
    """1280x720, present=1, the README's presentation link and a long sentence: every text on the first screen of
    each attention view (the alignment drawing too) is at least 16 px, a map's token labels at least 12 px."""
    with chromium() as browser:
        page, (_, _, errors) = open_at(browser, link(en_de, "The cat sleeps on the warm kitchen table.",
                                                     kind="cross"), WIDTH, HEIGHT)
        for text in ("The cat sleeps on the warm kitchen table.", LONG):
            if text == LONG:
                page.goto(link(en_de, LONG, kind="cross"))
                page.wait_for_function(f"(() => {{ const x = {EXPLORER}; return x && x.payload && x.asked === null; }})()")
            for kind in ("encoder", "decoder", "cross", "steps"):
                page.evaluate(f"{EXPLORER}.update({{tab: '{kind}'}})")
                views_drawn(page)
                if kind == "steps":
                    page.wait_for_selector("#step-plot .main-svg")
                found = page.evaluate(VISIBLE_TEXT)
                assert len(found) > 20, (kind, found)  # the walk finds the page's text
                small = [t for t in found if t["size"] < (LABEL_MIN if t["tick"] else TEXT_MIN)]
                assert small == [], (text[:20], kind, small)
        assert errors == []
        page.close()


def box(page, selector: str) -> dict | None:
    return page.evaluate("(s) => { const e = document.querySelector(s); if (!e) return null;"
                         " const b = e.getBoundingClientRect(); return {x: b.left, y: b.top, right: b.right,"
                         " bottom: b.bottom, width: b.width, height: b.height}; }", selector)


def on_screen(b: dict | None) -> bool:
    return (b is not None and b["height"] > 0 and b["x"] >= 0 and b["y"] >= 0 and b["right"] <= WIDTH + 0.5
            and b["bottom"] <= HEIGHT + 0.5)


def apart(a: dict, b: dict) -> bool:
    return (a["right"] <= b["x"] + 0.5 or b["right"] <= a["x"] + 0.5 or a["bottom"] <= b["y"] + 0.5
            or b["bottom"] <= a["y"] + 0.5)


def test_the_weight_panel_opens_beside_the_map_on_one_screen(en_de):
    """Lesson link 10 (a cell) at 1280x720 in presentation mode: the map and "How this weight is computed" are on
    one screen without scrolling, the panel clear of the map's cells; another cell keeps the page where it is,
    and "back to the map" puts the keyboard on the map on screen (not the hidden encoder map)."""
    from test_stage_lesson import lesson_link

    ready = "(document.querySelector('#inside-panel').dataset.ready || '')"
    with chromium() as browser:
        page, (_, _, errors) = open_at(browser, lesson_link(en_de, 10), WIDTH, HEIGHT)
        page.wait_for_function(f"{ready}.startsWith('cell-cross-')")
        views_drawn(page)
        assert page.evaluate("window.scrollY") == 0
        cells, panel = box(page, "#focus-cross .nsewdrag"), box(page, "#inside-panel")
        assert on_screen(box(page, "#focus-cross .main-svg")), box(page, "#focus-cross .main-svg")
        for part in ("#inside-panel .inside-title", "#inside-title", "#inside-qk .main-svg"):
            assert on_screen(box(page, part)), (part, box(page, part))
        assert apart(cells, panel), (cells, panel)
        before = page.evaluate(ready)
        b = cells
        page.mouse.click(b["x"] + b["width"] * 0.1, b["y"] + b["height"] * 0.1)
        page.wait_for_function(f"{ready}.startsWith('cell-cross-') && {ready} !== '{before}'")
        assert page.evaluate("window.scrollY") == 0
        page.locator("#inside-panel .back").click()
        page.wait_for_function("document.activeElement === document.querySelector('#focus-cross .plot')")
        assert page.evaluate("window.scrollY") == 0
        assert errors == []
        page.close()
