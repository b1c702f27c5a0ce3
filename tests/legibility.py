"""What a class sees, read from what Chromium drew: the legibility guard of presentation mode.

`problems(page, needs)` reads the page as it is drawn and returns what a person at the back of the room would
trip over, one line each:

- two visible texts overlap: HTML text (its lines' Range rects) and Plotly's SVG texts (titles, tick labels,
  colour-bar titles, annotations, bar labels, the tree's node labels), each as the quadrilateral it is drawn in,
  so that slanted labels are judged by their own outline; a text drawn over a control counts too;
- a text is cut by its box (an ancestor that clips) or by the screen's edge;
- a word broken across two lines inside the word;
- a control is covered: the element at its centre is neither the control nor inside it;
- a visible text under 16 px (a figure's tick labels under 14 px);
- something a lesson step names (`needs`: CSS selectors) is neither on the first screen nor inside a region
  that scrolls by wheel and by keyboard (the page's own scrolling does not count: that is "below the screen").

Run as a script it starts the real app (the shipped checkpoints) and opens each lesson link of docs/teaching.md
and each app link of README.md in presentation mode:

    python tests/legibility.py [--only NAME ...] [--sizes] [--shots DIR] [--app CHECKOUT]

NAME picks the links whose name contains it ("lesson 10", "README: One decoding step"); --sizes adds 1366x768,
1920x1080 and a resize from 1920x1080 to 1280x720; --shots writes a screenshot of each view into DIR.
The exit status is 1 when a problem was found.
"""
from __future__ import annotations

import argparse
import logging
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_server import ROOT, SHIPPED_ENV, running_app

sys.path.insert(0, str(ROOT))

log = logging.getLogger("legibility")

TEXT_MIN, TICK_MIN = 16, 14  # px: any visible text; a figure's tick labels (a map's tokens)
OVERLAP_MIN = 2.0  # px: how deep two outlines must run into each other to count (anti-aliasing, rounding)
CUT_MIN = 1.5  # px: how far a text may run past its box before it counts as cut
SCROLL_WAIT_MS = 5000  # how long a region has to start scrolling after a wheel turn or a key (a busy machine)
APP = "http://127.0.0.1:7860/"
LESSON, README = ROOT / "docs" / "teaching.md", ROOT / "README.md"

# Every text drawn: {text, size, tick, quads (one per line, in window px), where, hit (its middle is its own),
# cut (a clipping box or the screen edge it runs past), broken (a word split across lines)}. Hidden things
# (visibility, opacity, display, a clip or clip-path on an ancestor: the screen-reader-only texts) are left out.
TEXTS_JS = r"""({CUT, CONTROL}) => {
  const W = innerWidth, H = innerHeight, out = [];
  const where = (e) => { const x = e.closest('[id]'); return x ? '#' + x.id : e.tagName.toLowerCase(); };
  const shown = (e) => { for (let a = e; a && a !== document.documentElement; a = a.parentElement) {
      const cs = getComputedStyle(a);
      if (cs.display === 'none' || +cs.opacity === 0 || (cs.clip && cs.clip !== 'auto') ||
          (cs.clipPath && cs.clipPath !== 'none' && !a.closest('svg'))) return false; }
    return getComputedStyle(e).visibility === 'visible'; };
  const own = (e, hit) => Boolean(hit) && (hit === e || e.contains(hit) || hit.contains(e));
  // whether `e` is seen at (x, y): the first thing there that paints (a background) is `e` or holds it; a text
  // drawn over it on a clear background hides nothing (that is an overlap)
  const paints = (h) => { const cs = getComputedStyle(h);
    return cs.backgroundImage !== 'none' || !/rgba\(.*, 0\)$|transparent/.test(cs.backgroundColor); };
  const seenAt = (e, x, y) => { if (x < 0 || y < 0 || x >= W || y >= H) return false;
    for (const h of document.elementsFromPoint(x, y)) {
      if (own(e, h)) return true;
      if (!(h instanceof SVGElement) && paints(h)) return false; }
    return false; };
  const rectQuad = (b) => [[b.left, b.top], [b.right, b.top], [b.right, b.bottom], [b.left, b.bottom]];
  // the boxes that clip `e` (overflow hidden or clip; a scrolling box is no cut: it scrolls), and the screen
  // (inside a box that scrolls, a text at its edge is half scrolled in: no cut, above it or below)
  const clips = (e) => { const boxes = []; let scrolled = false;
    for (let a = e; a && a !== document.body; a = a.parentElement) {
      const cs = getComputedStyle(a);
      if (/auto|scroll/.test(cs.overflowY) && a.scrollHeight > a.clientHeight + 1) { scrolled = true; break; }
      if (/hidden|clip/.test(cs.overflowX + cs.overflowY) && !/auto|scroll/.test(cs.overflowX + cs.overflowY)) {
        const b = a.getBoundingClientRect();
        boxes.push({name: where(a), left: b.left + a.clientLeft, top: b.top + a.clientTop,
          right: b.left + a.clientLeft + a.clientWidth, bottom: b.top + a.clientTop + a.clientHeight}); }
      if (cs.position === 'fixed') break; }  // the boxes around a fixed one do not clip it
    const scrolls = scrolled || document.documentElement.scrollHeight > H + 1;
    boxes.push({name: 'the screen', left: 0, top: scrolled ? -Infinity : 0, right: W, bottom: scrolls ? Infinity : H});
    return boxes; };
  const cutBy = (b, boxes) => { for (const c of boxes) {
      const past = Math.max(c.left - b.left, c.top - b.top, b.right - c.right, b.bottom - c.bottom);
      const inside = b.right > c.left && b.left < c.right && b.bottom > c.top && b.top < c.bottom;
      if (past > CUT && inside) return c.name; }
    return ''; };
  const brokenWord = (n, text) => { if (n.data.length > 400) return '';
    const r = document.createRange(); let top = null;
    for (let i = 0; i < n.data.length; i++) {
      if (/\s/.test(n.data[i])) continue;
      r.setStart(n, i); r.setEnd(n, i + 1); const b = r.getBoundingClientRect(); if (!b.height) continue;
      if (top !== null && b.top > top + b.height / 2 && i > 0 && !/[\s\-\u00ad\/]/.test(n.data[i - 1]))
        return n.data.slice(Math.max(0, i - 12), i) + ' / ' + n.data.slice(i, i + 12);
      top = b.top; }
    return ''; };
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const e = n.parentElement;
    if (!n.data.trim() || !e || e.closest('svg, script, style, option, noscript, textarea')) continue;
    const range = document.createRange(); range.selectNodeContents(n);
    const lines = [...range.getClientRects()].filter((b) => b.width >= 2 && b.height >= 2);
    const b = range.getBoundingClientRect();
    if (!lines.length || b.right <= 0 || b.bottom <= 0 || b.left >= W || b.top >= H || !shown(e)) continue;
    const mid = lines[0], x = (mid.left + mid.right) / 2, y = (mid.top + mid.bottom) / 2;
    out.push({text: n.data.trim().slice(0, 40), size: parseFloat(getComputedStyle(e).fontSize), tick: false,
      quads: lines.map(rectQuad), where: where(e), hit: seenAt(e, x, y), cut: cutBy(b, clips(e)),
      broken: lines.length > 1 ? brokenWord(n) : '', control: e.closest(CONTROL) ? where(e.closest(CONTROL)) : ''}); }
  // the text typed in a box: one text of the box's own
  for (const e of document.querySelectorAll('textarea, input[type=text], input:not([type])')) {
    const b = e.getBoundingClientRect();
    if (!e.value || b.width < 2 || b.right <= 0 || b.bottom <= 0 || b.left >= W || b.top >= H || !shown(e)) continue;
    const cut = e.scrollHeight > e.clientHeight + 2 && getComputedStyle(e).overflowY !== 'auto' ? where(e) : '';
    out.push({text: e.value.slice(0, 40), size: parseFloat(getComputedStyle(e).fontSize), tick: false,
      quads: [rectQuad(b)], where: where(e), hit: seenAt(e, (b.left + b.right) / 2, (b.top + b.bottom) / 2),
      cut: cut || cutBy(b, clips(e)), broken: '', control: where(e), box: true}); }
  for (const t of document.querySelectorAll('svg text')) {
    const text = t.textContent.trim(), svg = t.closest('svg.main-svg') || t.ownerSVGElement;
    if (!text || !svg || !shown(t) || t.closest('.hoverlayer') && !t.closest('.hovertext')) continue;
    const bb = t.getBBox(), m = t.getScreenCTM(); if (!m || bb.width < 1 || bb.height < 1) continue;
    const quad = [[bb.x, bb.y], [bb.x + bb.width, bb.y], [bb.x + bb.width, bb.y + bb.height], [bb.x, bb.y + bb.height]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
    const xs = quad.map((p) => p[0]), ys = quad.map((p) => p[1]);
    const b = {left: Math.min(...xs), right: Math.max(...xs), top: Math.min(...ys), bottom: Math.max(...ys)};
    if (b.right <= 0 || b.bottom <= 0 || b.left >= W || b.top >= H) continue;
    const plot = t.closest('.js-plotly-plot') || svg, pb = plot.getBoundingClientRect();
    const x = Math.min(Math.max((b.left + b.right) / 2, 0), W - 1), y = Math.min(Math.max((b.top + b.bottom) / 2, 0), H - 1);
    const frame = {name: where(plot) + ' (its figure)', left: pb.left, top: pb.top, right: pb.right, bottom: pb.bottom};
    const tick = Boolean(t.closest('[class*=tick]')) && !t.closest('.colorbar');
    // the size drawn: Plotly shrinks a bar's label that does not fit by a transform, not by its font size
    const drawn = parseFloat(getComputedStyle(t).fontSize) * Math.sqrt(Math.abs(m.a * m.d - m.b * m.c));
    out.push({text: text.slice(0, 40), size: Math.round(drawn * 10) / 10, tick, quads: [quad], frame,
      where: where(t), hit: seenAt(plot, x, y), cut: cutBy(b, [frame, ...clips(svg)]), broken: '',
      control: t.closest(CONTROL) ? where(t.closest(CONTROL)) : ''}); }
  return out; }"""

# what a person operates: every control seen on the screen, and whether the element at its centre is its own
CONTROL = ("button, select, textarea, input:not([type=hidden]), [role=tab], [role=slider], a[href], "
           "[tabindex]:not([tabindex='-1'])")
CONTROLS_JS = r"""(CONTROL) => { const W = innerWidth, H = innerHeight, out = [];
  const where = (e) => { const x = e.closest('[id]'); return (x ? '#' + x.id : '') + ' ' + e.tagName.toLowerCase() +
    (e.textContent.trim() ? ' "' + e.textContent.trim().slice(0, 24) + '"' : ''); };
  const shown = (e) => { for (let a = e; a && a !== document.documentElement; a = a.parentElement) {
      const cs = getComputedStyle(a);
      if (cs.display === 'none' || +cs.opacity === 0 || (cs.clip && cs.clip !== 'auto') ||
          (cs.clipPath && cs.clipPath !== 'none' && !a.closest('svg'))) return false; }
    return getComputedStyle(e).visibility === 'visible'; };
  for (const e of document.querySelectorAll(CONTROL)) {
    const b = e.getBoundingClientRect();
    if (b.width < 4 || b.height < 4 || e.closest('[hidden], [inert]') || !shown(e)) continue;
    const x = (b.left + b.right) / 2, y = (b.top + b.bottom) / 2;
    if (x < 0 || y < 0 || x >= W || y >= H) continue;
    const hit = document.elementFromPoint(x, y);
    const label = e.closest('label') || (e.id && document.querySelector(`label[for="${e.id}"]`));
    const mine = Boolean(hit) && (hit === e || e.contains(hit) || (label && label.contains(hit)));
    out.push({where: where(e), mine, over: hit ? where(hit) : 'nothing',
      quad: [[b.left, b.top], [b.right, b.top], [b.right, b.bottom], [b.left, b.bottom]]}); }
  return out; }"""

# A `needs` selector's element: on the first screen, or inside a region that scrolls (overflow auto or scroll,
# with more to show) and its name. Scrolling it by wheel and by keyboard is tried from Python (`scrolls`).
NEED_JS = r"""(s) => { const e = [...document.querySelectorAll(s)].find((x) => x.getClientRects().length);
  if (!e) return {found: false};
  const b = e.getBoundingClientRect(), W = innerWidth, H = innerHeight;
  const onScreen = scrollY === 0 && b.left >= -0.5 && b.top >= -0.5 && b.right <= W + 0.5 && b.bottom <= H + 0.5;
  let region = null;
  for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
    const cs = getComputedStyle(a);
    if (/auto|scroll/.test(cs.overflowY) && a.scrollHeight > a.clientHeight + 1) { region = a; break; } }
  if (region && !region.id) region.id = 'legibility-region-' + Math.random().toString(36).slice(2, 8);
  const r = region && region.getBoundingClientRect();
  const regionOnScreen = Boolean(r) && r.top >= -0.5 && r.bottom <= H + 0.5 && r.left >= -0.5 && r.right <= W + 0.5;
  return {found: true, onScreen, region: region ? '#' + region.id : null, regionOnScreen,
    box: [Math.round(b.left), Math.round(b.top), Math.round(b.right), Math.round(b.bottom)]}; }"""


def _project(quad: list, axis: tuple[float, float]) -> tuple[float, float]:
    values = [x * axis[0] + y * axis[1] for x, y in quad]
    return min(values), max(values)


def _axes(quad: list) -> list[tuple[float, float]]:
    out = []
    for (x0, y0), (x1, y1) in zip(quad, quad[1:] + quad[:1]):
        length = ((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5
        if length > 1e-6:
            out.append(((y0 - y1) / length, (x1 - x0) / length))
    return out


def overlap_depth(a: list, b: list) -> float:
    """How deep two convex quadrilaterals run into each other (px; 0 when apart): separating axes."""
    depth = float("inf")
    for axis in _axes(a) + _axes(b):
        (a0, a1), (b0, b1) = _project(a, axis), _project(b, axis)
        depth = min(depth, min(a1, b1) - max(a0, b0))
        if depth <= 0:
            return 0.0
    return depth


def clip_to(quad: list, box: dict) -> list:
    """The part of a convex polygon inside an axis-aligned `box` (Sutherland-Hodgman; [] when none)."""
    edges = ((0, box["left"], 1), (0, box["right"], -1), (1, box["top"], 1), (1, box["bottom"], -1))
    points = list(quad)
    for axis, edge, sign in edges:
        inside = [sign * (p[axis] - edge) >= 0 for p in points]
        out = []
        for i, p in enumerate(points):
            q, q_in = points[i - 1], inside[i - 1]
            if inside[i] != q_in:
                f = (edge - q[axis]) / (p[axis] - q[axis])
                out.append((q[0] + f * (p[0] - q[0]), q[1] + f * (p[1] - q[1])))
            if inside[i]:
                out.append(p)
        points = out
        if not points:
            return []
    return points


def _overlaps(texts: list[dict]) -> list[str]:
    """Every pair of seen texts whose outlines run into each other by more than OVERLAP_MIN px."""
    seen = [t for t in texts if t["hit"]]
    for t in seen:  # a figure draws only inside its frame: what runs past it is cut (said once), not overlapping
        if t.get("frame"):
            t["quads"] = [q for q in (clip_to(q, t["frame"]) for q in t["quads"]) if len(q) >= 3]
    found = []
    for i, a in enumerate(seen):
        for b in seen[i + 1:]:
            if a.get("box") and b["control"] == a["control"] or b.get("box") and a["control"] == b["control"]:
                continue  # the text typed in a box and the box's own text
            if any(overlap_depth(p, q) > OVERLAP_MIN for p in a["quads"] for q in b["quads"]):
                found.append(f"overlap: {a['text']!r} ({a['where']}) and {b['text']!r} ({b['where']})")
    return found


def _text_problems(texts: list[dict]) -> list[str]:
    found = []
    for t in texts:
        least = TICK_MIN if t["tick"] else TEXT_MIN
        if t["size"] < least - 0.01:
            found.append(f"small: {t['text']!r} ({t['where']}) is {t['size']:g} px, under {least}")
        if t["cut"]:
            found.append(f"cut: {t['text']!r} ({t['where']}) runs past {t['cut']}")
        if t["broken"]:
            found.append(f"broken word: {t['broken']!r} ({t['where']})")
    return found


def _control_problems(controls: list[dict], texts: list[dict]) -> list[str]:
    found = [f"covered: {c['where']} lies under {c['over']}" for c in controls if not c["mine"]]
    for c in controls:
        if not c["mine"]:
            continue
        for t in texts:
            if t["hit"] and not t["control"] and any(overlap_depth(q, c["quad"]) > OVERLAP_MIN for q in t["quads"]):
                found.append(f"text over a control: {t['text']!r} ({t['where']}) on {c['where']}")
    return found


def scrolls(page, region: str) -> tuple[bool, bool]:
    """Whether `region` scrolls by the wheel over it and by the keyboard (focus in it, PageDown); left at its top."""
    top = f"document.querySelector('{region}').scrollTop"
    b = page.locator(region).bounding_box()
    page.evaluate(f"{top} = 0")
    page.mouse.move(b["x"] + b["width"] / 2, b["y"] + min(b["height"] / 2, 200))
    page.mouse.wheel(0, 300)
    by_wheel = _moved(page, top)
    page.evaluate(f"{top} = 0")
    page.evaluate("([region, control]) => { const r = document.querySelector(region);"
                  " const f = r.matches('[tabindex]') ? r : r.querySelector(control);"
                  " if (f) f.focus({preventScroll: true}); }", [region, CONTROL])
    page.keyboard.press("PageDown")
    by_keys = _moved(page, top)
    page.evaluate(f"{top} = 0; document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)")
    return by_wheel, by_keys


def _moved(page, top: str) -> bool:
    """Whether the scroll position `top` leaves 0 (a smooth scroll's first frames included)."""
    from playwright.sync_api import TimeoutError as Timeout

    try:
        page.wait_for_function(f"{top} > 0", timeout=SCROLL_WAIT_MS, polling="raf")
        return True
    except Timeout:  # it did not move
        return False


def _need_problems(page, needs: tuple[str, ...]) -> list[str]:
    found, tried = [], {}  # each region's scrolling tried once
    for selector in needs:
        need = page.evaluate(NEED_JS, selector)
        if not need["found"]:
            found.append(f"missing: nothing shows {selector}")
        elif not need["onScreen"]:
            if not need["region"] or not need["regionOnScreen"]:
                found.append(f"off screen: {selector} at {need['box']}, in no region that scrolls on screen")
                continue
            if need["region"] not in tried:
                tried[need["region"]] = scrolls(page, need["region"])
            by_wheel, by_keys = tried[need["region"]]
            if not (by_wheel and by_keys):
                found.append(f"off screen: {selector} at {need['box']}, in {need['region']}, which scrolls "
                             f"by wheel: {by_wheel}, by keyboard: {by_keys}")
    return found


def screen_problems(page) -> list[str]:
    """What is wrong with the texts and controls on the screen as it is now."""
    texts = page.evaluate(TEXTS_JS, {"CUT": CUT_MIN, "CONTROL": CONTROL})
    controls = page.evaluate(CONTROLS_JS, CONTROL)
    return _overlaps(texts) + _text_problems(texts) + _control_problems(controls, texts)


def scrolled_problems(page, needs: tuple[str, ...]) -> list[str]:
    """The screen's problems with each region that holds a need scrolled down a screenful at a time (what
    scrolls into view is read too); each region left at its top."""
    regions = {r for r in (page.evaluate(NEED_JS, s).get("region") for s in needs) if r}
    found: list[str] = []
    for region in sorted(regions):
        pages = page.evaluate(f"(() => {{ const r = document.querySelector('{region}');"
                              " return Math.ceil((r.scrollHeight - r.clientHeight) / (0.8 * r.clientHeight)); })()")
        for k in range(1, pages + 1):
            page.evaluate(f"(() => {{ const r = document.querySelector('{region}');"
                          f" r.scrollTop = {k} * 0.8 * r.clientHeight; }})()")
            found += [p for p in screen_problems(page) if p not in found]
        page.evaluate(f"document.querySelector('{region}').scrollTop = 0")
    return found


def problems(page, needs: tuple[str, ...] = ()) -> list[str]:
    """What is wrong with the screen as drawn, one line each (an empty list: every text reads): the first screen,
    what a need's scrolling region shows further down, and the needs themselves."""
    found = screen_problems(page)
    found += [p for p in scrolled_problems(page, needs) if p not in found]
    return found + _need_problems(page, needs)


# ----------------------------------------------------------------------------- the runner: every link


@dataclass(frozen=True)
class Link:
    name: str
    query: dict[str, str]

    @property
    def tab(self) -> str:
        return self.query.get("tab", "attention")

    @property
    def needs(self) -> tuple[str, ...]:
        """What the link's step points at: its figure and what it is read with."""
        q, kind = self.query, self.query.get("kind", "cross")
        if self.tab == "tree":
            return ("#tree-plot .main-svg",)
        if self.tab == "compare":
            return ("#compare-pair .main-svg", "#compare-diff .main-svg")
        if self.tab == "heads":
            return ("#heads-plot .main-svg",)
        if kind == "steps":
            return ("#step-plot .main-svg", "#step input", "#step-text")
        needs = (f"#focus-{kind} .main-svg", "#layer select", "#head select", f"#grid-{kind}", "#translation textarea")
        if "off" in q:
            needs += ("#heads-on", "#notice")
        if "cell" in q:
            needs += ("#inside-title", "#inside-qk", "#inside-scores", "#inside-weights", "#inside-values")
        if "yours" in q:
            needs += ("#yours-panel .yours-tokens",)
        return needs


def app_links(page: Path) -> list[str]:
    return re.findall(re.escape(APP) + r"\?[^)\s`>\"]*", page.read_text(encoding="utf-8"))


def readme_names() -> dict[str, str]:
    """README's app links by the words they are written as."""
    found = re.findall(r"\[([^\]]+)\]\((" + re.escape(APP) + r"\?[^)]*)\)", README.read_text(encoding="utf-8"))
    return {url: name for name, url in found}


def all_links() -> list[Link]:
    """Each lesson link of docs/teaching.md (the board and practice links left out) and each README app link."""
    out = [Link(f"lesson {i}", dict(parse_qsl(urlsplit(u).query))) for i, u in enumerate(app_links(LESSON), 1)
           if "/class" not in u]
    names = readme_names()
    out += [Link(f"README: {names.get(u, u)}", dict(parse_qsl(urlsplit(u).query))) for u in app_links(README)
            if "/class" not in u]
    return out


ATTENTION_READY = """(needCell) => { const e = document.querySelector('#explorer .explorer'), x = e && e.__explorer;
  if (!x || !x.payload || x.asked !== null || e.dataset.views !== 'views-' + x.payload.rev) return false;
  const inside = (document.querySelector('#inside-panel') || {dataset: {}}).dataset.ready || '';
  if (needCell && !inside.startsWith('cell-')) return false;
  if (x.state.tab === 'steps') return Boolean(document.querySelector('#step-plot .main-svg'));
  const p = document.querySelector('#focus-' + x.state.tab + ' .plot');
  return Boolean(p && p.dataset.drawn); }"""
# at rest: no gradio event pending and no animation running, for half a second
AT_REST = """() => { const now = performance.now();
  if (window.__busyAt === undefined || document.querySelector("[data-testid='status-tracker']:not(.hide), .pending") ||
      document.getAnimations().some((a) => a.playState === 'running')) window.__busyAt = now;
  return now - window.__busyAt >= 500; }"""


def settled(page, link: Link) -> None:
    """Wait until the link's view is drawn and the page is at rest."""
    from transformer.explorer.panels.registry import PANELS

    if link.tab == "attention":
        page.wait_for_function(ATTENTION_READY, arg="cell" in link.query)
    else:
        panel = next(p for p in PANELS if p.id == link.tab)
        page.wait_for_function(f"() => {panel.ready}")
    if "yours" in link.query:
        page.wait_for_function("(document.querySelector('#yours-panel') || {dataset: {}}).dataset.ready"
                               "?.startsWith('scored-')")
    page.wait_for_function(AT_REST, polling="raf")


def open_link(page, base: str, link: Link, width: int, height: int, resized: bool = False) -> None:
    """Open `link` in presentation mode at `width` x `height` (from 1920x1080, resized, when `resized`)."""
    page.set_viewport_size({"width": 1920, "height": 1080} if resized else {"width": width, "height": height})
    page.goto(base + "?" + urlencode({**link.query, "present": "1"}))
    settled(page, link)
    if resized:
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_function("() => { const e = document.querySelector('#explorer .explorer');"
                               " return !e || e.dataset.views !== 'drawing'; }", polling="raf")
        page.evaluate("window.__busyAt = performance.now()")
        settled(page, link)


def check_link(page, base: str, link: Link, size: tuple[int, int], resized: bool, shots: Path | None) -> list[str]:
    width, height = size
    where = f"{link.name} at {width}x{height}" + (" after a resize from 1920x1080" if resized else "")
    open_link(page, base, link, width, height, resized)
    if shots is not None:
        name = re.sub(r"lesson (\d+)", lambda m: f"lesson {int(m[1]):02d}", link.name)  # in the lesson's order
        slug = re.sub(r"[^a-z0-9]+", "-", f"{name} {width}x{height}{' resized' if resized else ''}".lower())
        page.screenshot(path=str(shots / f"{slug.strip('-')}.png"))
    return [f"{where}: {p}" for p in problems(page, link.needs)]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from playwright.sync_api import sync_playwright

    links = [k for k in all_links() if not args.only or any(o.lower() in k.name.lower() for o in args.only)]
    sizes = [((1280, 720), False)]
    if args.sizes:
        sizes += [((1366, 768), False), ((1920, 1080), False), ((1280, 720), True)]
    if args.phone:
        sizes += [((390, 844), False)]
    if args.shots:
        Path(args.shots).mkdir(parents=True, exist_ok=True)
    total = 0
    with running_app(SHIPPED_ENV, app_dir=Path(args.app)) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        page.set_default_timeout(120_000)
        for link in links:
            for size, resized in sizes:
                found = check_link(page, server.url, link, size, resized, Path(args.shots) if args.shots else None)
                total += len(found)
                log.info("%s %dx%d%s: %d problems", link.name, *size, " resized" if resized else "", len(found))
                for line in found:
                    log.info("  %s", line)
        browser.close()
    log.info("%d problems in all", total)
    return 1 if total else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Open each lesson and README link in presentation mode and say "
                                                 "what a class cannot read.")
    parser.add_argument("--only", action="append", default=[],
                        help="only the links whose name contains this (e.g. 'lesson 10'); may be repeated")
    parser.add_argument("--sizes", action="store_true", help="also 1366x768, 1920x1080 and a resize from 1920x1080")
    parser.add_argument("--phone", action="store_true", help="also 390x844, a phone a shared link opens on")
    parser.add_argument("--shots", help="write a screenshot of each view into this folder")
    parser.add_argument("--app", default=str(ROOT), help="the checkout whose app.py to start (another version of "
                                                          "the app, side by side; default: this one)")
    return parser


if __name__ == "__main__":
    sys.exit(main())
