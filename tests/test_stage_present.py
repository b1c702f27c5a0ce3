"""Presentation mode on a projector, in real Chromium on the shipped en-de checkpoint: the type a room can read
(the computed font size of every text on screen, HTML and Plotly's SVG alike, so that no style sheet can win
over presentation mode's rules unseen), and what a lesson step needs on one screen of 1280x720 for every link
shape a teacher can make.

Waits are on page state (data-views, data-drawn, data-ready), never fixed sleeps.
"""
from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_server import ROOT, SHIPPED_ENV, shared_app  # noqa: E402
from test_browser import chromium, page_at  # noqa: E402
from test_stage import EXPLORER, open_at, views_drawn  # noqa: E402

pytestmark = pytest.mark.slow  # Chromium: `pytest -m "not slow"` leaves it out

WIDTH, HEIGHT = 1280, 720
SHORT = "The dog likes fresh bread."  # 5 words
LONG = ("On a rainy Monday morning my grandmother took the early train to the city because she wanted to buy a "
        "new winter coat and a pair of warm boots.")  # 30 words
TEXT_MIN, LABEL_MIN = 16, 12  # px: any text on the first screen; a map's token labels (fitted to their cells)

# Every text on screen with its computed font size: HTML text nodes that are seen (inside the window, not
# hidden, not clipped away or covered: the element at the text's middle is its own), and Plotly's SVG text
# (marked `tick`: a figure's labels, its tokens and numbers, which follow their cells down to LABEL_MIN; its
# titles and colour bar are text like any other).
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
      tick: !t.closest('.gtitle, .g-xtitle, .g-ytitle, .g-x2title, .g-y2title, .colorbar')}); }
  return out; }"""


@pytest.fixture(scope="module")
def en_de():
    """The app on the shipped checkpoints (en-de first, int8 as the docs quote it: app_server.SHIPPED_ENV), as a
    teacher's link opens it."""
    if not (ROOT / "checkpoints" / "en-de" / "model.safetensors").is_file():
        pytest.skip("checkpoints/en-de is not here")
    return shared_app(SHIPPED_ENV)


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
        for part in ("#inside-title", "#inside-qk .main-svg", "#inside-panel .inside-title"):
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


# ----------------------------------------------------------------------------- every link shape on one screen

ATTENTION_VIEWS = ("encoder", "decoder", "cross", "align", "steps")
# what a lesson step reads in each view: the figure, whole, and what it is read with
NEEDS = {"encoder": ("#focus-encoder .main-svg", "#grid-encoder"), "decoder": ("#focus-decoder .main-svg", "#grid-decoder"),
         "cross": ("#focus-cross .main-svg", "#grid-cross", "#agreement"), "align": ("#focus-cross .main-svg", "#align"),
         "steps": ("#step-plot .main-svg", "#step"), "tree": ("#tree-plot .main-svg",),
         "compare": ("#compare-pair .main-svg", "#compare-diff .main-svg")}
ORIGINS = ((1920, 1080), (390, 844))  # a resize back to the projector from a fullscreen window and from a phone
ATTENTION_DRAWN = f"""(align) => {{ const x = {EXPLORER}, e = document.querySelector('#explorer .explorer');
  if (!x || !x.payload || e.dataset.views !== 'views-' + x.payload.rev) return false;
  if (x.state.tab === 'steps') return Boolean(document.querySelector('#step-plot .main-svg'));
  const p = document.querySelector('#focus-' + x.state.tab + ' .plot');
  return Boolean(p && p.dataset.drawn) && Boolean(p.__alignment) === align; }}"""


def show(page, view: str) -> None:
    """Put `view` on screen in the page's own way (the view state; the app's tabs), and wait for it drawn."""
    if view == "compare":  # a compare link (tab=compare) opens greedy against beam
        if "tab=compare" not in page.url:
            page.goto(page.url.split("?")[0] + "?" + urlencode({**dict(parse_qsl(urlsplit(page.url).query)),
                                                                "tab": "compare"}))
        page.wait_for_function("((document.querySelector('#compare-panel') || {}).dataset || {}).ready"
                               " && document.querySelector('#compare-panel').dataset.ready.startsWith('compare-')")
        page.wait_for_function("['#compare-pair', '#compare-diff'].every((s) => { const d = document.querySelector(s);"
                               " return d.hidden || d.dataset.drawn === document.querySelector('#compare-panel')"
                               ".dataset.ready.slice(8); })")
        return
    if view == "tree":
        page.get_by_role("tab", name="Beam-search tree").click()
        page.wait_for_function("(document.querySelector('#tree-panel').dataset.ready || '').startsWith('tree-')")
        page.wait_for_selector(f"{NEEDS[view][0]}")
        return
    page.locator("#tab-attention-button").click()
    kind = "cross" if view == "align" else view
    page.evaluate(f"{EXPLORER}.update({{tab: '{kind}'}})")
    if kind == "cross" and page.locator("#align input").is_checked() != (view == "align"):
        page.locator("#align input").click()
    page.wait_for_function(ATTENTION_DRAWN, arg=view == "align")


def drawn_again(page, view: str, resize) -> None:
    """Run `resize` and wait for the view on screen drawn again at its new size."""
    if view == "compare":  # compare.js draws both figures again once the resizing settles
        before = page.evaluate("document.querySelector('#compare-pair').__draw || 0")
        resize()
        page.wait_for_function(f"(document.querySelector('#compare-pair').__draw || 0) > {before}")
        show(page, view)
        return
    if view == "tree":  # Plotly's own resize (the tree is responsive): its drawing takes its place's width
        resize()
        page.wait_for_function("(() => { const p = document.querySelector('#tree-plot'), s = p.querySelector('.main-svg');"
                               " return s && Math.abs(s.getBoundingClientRect().width - p.clientWidth) <= 1; })()")
        return
    # the step view's plot too: a check before its redraw read the figure of the size before
    plot = f"document.querySelector({EXPLORER}.state.tab === 'steps' ? '#step-plot .plot' : '#focus-' + {EXPLORER}.state.tab + ' .plot')"
    before = page.evaluate(f"{plot}.__draw || 0")
    resize()
    page.wait_for_function(f"(() => {{ const p = {plot}; return (p.__draw || 0) > {before} && Boolean(p.dataset.drawn); }})()")
    page.wait_for_function(ATTENTION_DRAWN, arg=view == "align")


def one_screen(page, view: str, where) -> None:
    """What `view` needs is whole inside the window, without scrolling; so are the figure's own texts."""
    assert page.evaluate("window.scrollY") == 0, where
    over = {"compare": "#compare-fit", "tree": "#tree-fit"}.get(view)
    if over and page.locator(over).is_visible():
        # too big for one screen at a readable size: the page says so, on screen, and the figure stays whole
        assert on_screen(box(page, over)), where
        figure = NEEDS[view][0].replace(" .main-svg", "")
        svg, plot = box(page, f"{figure} .main-svg"), box(page, figure)
        assert svg["bottom"] <= plot["bottom"] + 1 and svg["y"] >= plot["y"] - 1, (where, svg, plot)
        return
    for selector in NEEDS[view]:
        if selector in ("#agreement", "#compare-diff .main-svg") and not page.locator(selector).first.is_visible():
            continue
        assert on_screen(box(page, selector)), (where, selector, box(page, selector))
    figure = NEEDS[view][0].replace(" .main-svg", "")  # its texts are in both of Plotly's layers
    texts = page.evaluate("(s) => [...document.querySelector(s).querySelectorAll('text')].filter((t) => t.textContent)"
                          ".map((t) => { const b = t.getBoundingClientRect(); return {x: b.left, y: b.top, right: b.right,"
                          " bottom: b.bottom, height: b.height, text: t.textContent}; })", figure)
    assert texts, where
    cut = [t for t in texts if not on_screen(t)]
    assert cut == [], (where, cut[:5])


@pytest.mark.timeout(600)
def test_every_link_shape_puts_what_its_step_needs_on_one_screen(en_de):
    """1280x720, present=1: every tab (the attention views, the alignment drawing, the tree and compare) for a
    5-word and a 30-word sentence, greedy and beam: what the view needs is on screen whole, as it opens and after
    a resize from 1920x1080 and from 390x844; no text under 16 px, no map label under 12. Compare is checked once
    per sentence: a compare link of one sentence opens greedy against beam whatever its method
    (CompareService.on_restore_compare), the same two figures for both."""
    projector = {"width": WIDTH, "height": HEIGHT}
    with chromium() as browser:
        page = None
        for text in (SHORT, LONG):
            for method in ("greedy", "beam"):
                url = link(en_de, text, kind="encoder", method=method, beam=4)
                if page is None:
                    page, (_, _, errors) = open_at(browser, url, WIDTH, HEIGHT)
                else:
                    page.goto(url)
                    page.wait_for_function(f"(() => {{ const x = {EXPLORER}; return x && x.payload && "
                                           "x.asked === null; })()")
                for view in (*ATTENTION_VIEWS, "tree", *(("compare",) if method == "beam" else ())):
                    where = [text[:12], method, view]
                    show(page, view)
                    one_screen(page, view, where)
                    assert too_small(page) == [], where
                    for w, h in ORIGINS:
                        drawn_again(page, view, lambda: page.set_viewport_size({"width": w, "height": h}))
                        drawn_again(page, view, lambda: page.set_viewport_size(projector))
                        one_screen(page, view, [*where, "from", w, h])
        assert errors == []


# Texts cut off by a box that clips its overflow: for each text of the controls on screen, an ancestor that does
# not show what runs out of it sideways (hidden, clipped or behind a scroll bar), that the text runs out of
CLIPPED_TEXT = """() => { const out = [];
  const roots = document.querySelectorAll('#sidebar, #main .controls, #compare-panel .controls');
  for (const root of roots) {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const e = n.parentElement; if (!n.data.trim() || !e || e.closest('textarea, option, script, style')) continue;
      const range = document.createRange(); range.selectNodeContents(n); const b = range.getBoundingClientRect();
      if (b.width < 1 || !e.checkVisibility()) continue;
      if (e.closest('.sr-only, .skip-link:not(:focus)')) continue;  // for screen readers (and the keyboard) only
      if (e.closest('.sizing-body')) continue;  // gradio's table measures its columns on an unseen copy of its rows
      for (let a = e; a && a !== document.body; a = a.parentElement) {
        const s = getComputedStyle(a); if (s.overflowX === 'visible') continue;
        const r = a.getBoundingClientRect();
        if (b.left < r.left - 0.5 || b.right > r.right + 0.5) {
          out.push({text: n.data.trim().slice(0, 30), box: a.id || a.className.slice(0, 30)}); break; } } } }
  return out; }"""


def test_no_control_text_is_cut_off_by_its_box(en_de):
    """The beam width slider's end value and the compare panel's "Attention", in presentation mode and on the
    normal page at 1280x720: every text of the side column and of the view controls is inside the boxes that clip
    (gradio's slider kept its range a minimum width that pushed "10" out of its box)."""
    with chromium() as browser:
        for present, tab in ((1, "attention"), (0, "attention"), (1, "compare")):
            url = en_de.url + "?" + urlencode({"text": SHORT, "present": present, "tab": tab})
            page, (_, _, errors) = open_at(browser, url, WIDTH, HEIGHT)
            if tab == "compare":
                page.wait_for_selector("#compare-panel .controls label", state="visible")
            else:
                views_drawn(page)
            clipped = page.evaluate(CLIPPED_TEXT)
            assert clipped == [], (present, tab, clipped)
            assert errors == []


# the ring a focused choice shows: its own, or its label's round box and words (3 px of the focus colour)
FOCUS_RING = """(input) => { const ring = (e) => { const cs = getComputedStyle(e);
    return cs.outlineStyle === 'solid' && parseFloat(cs.outlineWidth) >= 3 ? cs.outlineColor : null; };
  return {visible: input.matches(':focus-visible'), own: ring(input), label: ring(input.closest('label'))}; }"""


def test_a_checkbox_or_radio_button_focused_from_the_keyboard_shows_a_ring_a_room_can_see(en_de):
    """Presentation mode, the row labels and the decoding are gradio's inputs, outside the explorer's own rules:
    Tab onto each, and it and its label are ringed in 3 px."""
    with chromium() as browser:
        page, (_, _, errors) = open_at(browser, link(en_de, SHORT, present=0), WIDTH, HEIGHT)
        views_drawn(page)
        for selector in ("#present input[type=checkbox]", "#rows input[type=radio]", "#method input[type=radio]"):
            inputs = page.locator(selector)
            target = inputs.nth(0)
            target.focus()
            page.keyboard.press("Shift+Tab")  # off and back on from the keyboard: focus-visible, as Tab gives
            page.keyboard.press("Tab")
            ring = page.evaluate(f"() => ({FOCUS_RING})(document.activeElement)")
            assert ring["visible"] and ring["own"] and ring["label"], (selector, ring)
        assert errors == []


# ----------------------------------------------------------------------------- what is drawn reads (tests/legibility.py)

# a page with one planted fault of each kind the guard looks for, and a clean text beside them
PLANTED = """<html><body style="margin:0; font: 20px sans-serif">
<p id="clean" style="position:absolute; left:600px; top:10px">A clean line</p>
<p id="a" style="position:absolute; left:10px; top:10px; margin:0">First text here</p>
<p id="b" style="position:absolute; left:40px; top:14px; margin:0">Second text</p>
<div id="box" style="position:absolute; left:10px; top:80px; width:60px; overflow:hidden; white-space:nowrap">
  A sentence cut by its box</div>
<p id="tiny" style="position:absolute; left:10px; top:130px; font-size:12px">tiny words</p>
<button id="under" style="position:absolute; left:10px; top:180px; width:120px; height:40px">Press</button>
<div id="lid" style="position:absolute; left:0; top:170px; width:200px; height:60px; background:#eee"></div>
<div id="narrow" style="position:absolute; left:300px; top:200px; width:60px; overflow-wrap:anywhere">Presentation</div>
<p id="below" style="position:absolute; left:10px; top:1400px">What the step needs</p>
</body></html>"""


def test_the_legibility_guard_finds_each_planted_fault_and_nothing_else(en_de):
    """tests/legibility.py on a page with one fault of each kind: two texts overlapping, a text cut by its box, text
    under 16 px, a covered button, a word broken across lines, a need below the screen; the clean text is in none."""
    import legibility

    with chromium() as browser:
        page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        page.set_content(PLANTED)
        found = legibility.problems(page, ("#clean", "#below"))
    kinds = {line.split(":")[0] for line in found}
    assert kinds == {"overlap", "cut", "small", "covered", "broken word", "off screen"}, found
    assert not [line for line in found if "clean" in line.lower()], found
    assert any("First text" in line and "Second text" in line for line in found), found


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", ["README: One decoding step", "lesson 10"])
def test_step_by_step_and_the_weight_panel_read_from_the_back_of_the_room(en_de, name):
    """The README's "One decoding step" and lesson link 10 (the weight panel) in presentation mode at 1280x720, as
    tests/legibility.py reads them: no texts overlapping, none cut, none under 16 px (a tick label 14), no control
    covered, and what the step needs on the first screen or in a region that scrolls by wheel and by keyboard
    (the weight panel's five steps)."""
    import legibility

    link = next(k for k in legibility.all_links() if k.name == name)
    with chromium() as browser:
        page, (_, _, errors) = page_at(browser, WIDTH, HEIGHT)
        legibility.open_link(page, en_de.url, link, WIDTH, HEIGHT)
        found = legibility.problems(page, link.needs)
        assert found == [], found
        assert errors == []
