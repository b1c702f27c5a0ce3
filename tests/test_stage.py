"""The page as a stage, in real Chromium: one screen at projector sizes, no views drawn over each other after a
resize, every control from the keyboard, no critical or serious axe-core violation, and links that hold a view.

axe-core is a test-only asset, pinned in tests/a11y/package-lock.json (`npm ci --prefix tests/a11y`); the
accessibility test skips, saying so, when it is not installed.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
from conftest import require_asset

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_server import ROOT, SHIPPED_ENV, app_env, shared_app  # noqa: E402
from transformer.explorer.panels.registry import PANELS  # noqa: E402
from test_browser import TIMEOUT_MS, chromium, page_at, watch_page  # noqa: E402

ENV, WHICH = app_env()
AXE = ROOT / "tests" / "a11y" / "node_modules" / "axe-core" / "axe.min.js"
TEXT = "h e l l o w o r l d"  # the toy model reverses letters
EXPLORER = "(document.querySelector('#explorer .explorer') || {}).__explorer"
# (width, height, presentation mode): a projector's 720p and 768p, a 1080p screen, and the normal page at 1080p
GRADIO_DROPDOWN_ERROR = "Cannot read properties of undefined (reading '0')"
STAGES = ((1280, 720, True), (1366, 768, True), (1920, 1080, True), (1920, 1080, False))


pytestmark = pytest.mark.slow  # Chromium: `pytest -m "not slow"` leaves it out


def open_at(browser, url: str, width: int, height: int):
    """`url` loaded at `width` x `height` on the kept page (test_browser.page_at), its first payload in: (page,
    what `watch_page` collects on it)."""
    page, problems = page_at(browser, width, height)
    page.goto(url)
    page.wait_for_function(f"(() => {{ const x = {EXPLORER}; return x && x.payload && x.asked === null; }})()")
    return page, problems


def link(server, **params) -> str:
    return server.url + "?" + urlencode({"text": TEXT, **params})


def box(page, selector: str) -> dict:
    return page.evaluate("(s) => { const e = [...document.querySelectorAll(s)].find((x) => x.offsetWidth);"
                         " if (!e) return null; const b = e.getBoundingClientRect();"
                         " return {x: b.left, y: b.top, right: b.right, bottom: b.bottom, height: b.height}; }",
                         selector)


def inside(b: dict, width: int, height: int) -> bool:
    return b is not None and b["x"] >= 0 and b["y"] >= 0 and b["right"] <= width + 0.5 and b["bottom"] <= height + 0.5


def views_drawn(page) -> None:
    """The attention tab's views are drawn for the payload on screen, and its focus map's draw has finished."""
    page.wait_for_function(f"""(() => {{ const x = {EXPLORER}, e = document.querySelector('#explorer .explorer');
      if (!x || !x.payload || e.dataset.views !== 'views-' + x.payload.rev) return false;
      const p = document.querySelector('#focus-' + x.state.tab + ' .plot');
      return !p || Boolean(p.dataset.drawn); }})()""")


def redrawn_after(page, resize) -> None:
    """Run `resize`, then wait until the focus map is drawn again and the tab's views are drawn."""
    before = page.evaluate(f"document.querySelector('#focus-' + {EXPLORER}.state.tab + ' .plot').__draw || 0")
    resize()
    page.wait_for_function(f"""(() => {{ const x = {EXPLORER}, p = document.querySelector('#focus-' + x.state.tab + ' .plot');
      return (p.__draw || 0) > {before} && Boolean(p.dataset.drawn) &&
        document.querySelector('#explorer .explorer').dataset.views === 'views-' + x.payload.rev; }})()""")


def focus_drawn(page, kind: str) -> None:
    """The `kind` tab's focus map and the views below it are drawn."""
    page.wait_for_selector(f"#focus-{kind} .js-plotly-plot g.hm")
    views_drawn(page)


def test_one_screen_holds_the_sentence_the_translation_and_the_whole_map():
    """At each size, after a translation and without scrolling: the source box, the translation, the layer and
    head pickers and the focus map with every axis label are inside the viewport; the map is at least half the
    window's height (360 px at 720p)."""
    server = shared_app(ENV)
    with chromium() as browser:
        for width, height, present in STAGES:
            page, (dialogs, external, errors) = open_at(
                browser, link(server, kind="cross", present=int(present)), width, height)
            focus_drawn(page, "cross")
            where = f"{width}x{height} present={present}"
            assert page.evaluate("window.scrollY") == 0, where
            for selector in ("#source textarea", "#translation textarea", "#layer select", "#head select",
                             "#focus-cross .plot"):
                b = box(page, selector)
                assert inside(b, width, height), (where, selector, b)
            for selector in ("#focus-cross .xtick text", "#focus-cross .ytick text", "#focus-cross .gtitle"):
                for i in range(page.locator(selector).count()):
                    b = page.locator(selector).nth(i).bounding_box()
                    assert b and inside({"x": b["x"], "y": b["y"], "right": b["x"] + b["width"],
                                         "bottom": b["y"] + b["height"]}, width, height), (where, selector, i, b)
            assert box(page, "#focus-cross .plot")["height"] >= height / 2, where
            assert page.evaluate("document.documentElement.scrollWidth") <= width, where
            assert dialogs == [] and external == [] and errors == [], where


def test_the_normal_page_and_a_phone_put_the_map_near_the_top():
    """1366x768: the map starts within 1.5 screens. 390x844: no sideways scrolling, and the map comes right after
    the translation (before the examples, the model, the notes and the n-best list)."""
    server = shared_app(ENV)
    with chromium() as browser:
        page, _ = open_at(browser, link(server, kind="cross"), 1366, 768)
        focus_drawn(page, "cross")
        assert box(page, "#focus-cross .plot")["y"] < 1.5 * 768
        page, (dialogs, external, errors) = open_at(browser, link(server, kind="cross"), 390, 844)
        focus_drawn(page, "cross")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        plot, translation = box(page, "#focus-cross .plot"), box(page, "#translation")
        assert plot["y"] > translation["bottom"]
        for after in ("#examples", "#model", "#notice", "#nbest"):
            assert box(page, after)["y"] > plot["bottom"], after
        assert errors == []


def test_a_resize_never_draws_one_view_over_another():
    """Presentation mode going fullscreen and back (1280x720 -> 1920x1080 -> 1366x768), and the normal page:
    the focus map, the head summary, the model view and the rollout keep apart."""
    server = shared_app(ENV)
    with chromium() as browser:
        for present in (1, 0):
            page, (_, _, errors) = open_at(browser, link(server, kind="encoder", present=present), 1280, 720)
            focus_drawn(page, "encoder")
            for width, height in ((1920, 1080), (1366, 768), (1280, 720)):
                redrawn_after(page, lambda: page.set_viewport_size({"width": width, "height": height}))
                boxes = {s: box(page, s) for s in ("#focus-encoder .plot", "#grid-encoder", "#model-encoder canvas",
                                                   "#rollout .plot")}
                assert all(b and b["height"] > 0 for b in boxes.values()), boxes
                names = list(boxes)
                for i, a in enumerate(names):
                    for b in names[i + 1:]:
                        p, q = boxes[a], boxes[b]
                        apart = (p["right"] <= q["x"] + 0.5 or q["right"] <= p["x"] + 0.5
                                 or p["bottom"] <= q["y"] + 0.5 or q["bottom"] <= p["y"] + 0.5)
                        assert apart, (present, width, height, a, p, b, q)
                # the plot's own drawing stays inside its box
                svg = page.locator("#focus-encoder .main-svg").first.bounding_box()
                plot = boxes["#focus-encoder .plot"]
                assert svg["y"] + svg["height"] <= plot["bottom"] + 1, (width, height, svg, plot)
            assert errors == []


def press_until(page, key: str, condition: str, limit: int = 200) -> None:
    """Press `key` until `condition` (JS, with `a` = document.activeElement) holds."""
    for _ in range(limit):
        page.keyboard.press(key)
        if page.evaluate(f"(() => {{ const a = document.activeElement; return Boolean({condition}); }})()"):
            return
    where = page.evaluate("document.activeElement.outerHTML.slice(0, 120)")
    raise AssertionError(f"{condition} never focused with {key}; focus on {where}")


def test_every_control_works_from_the_keyboard():
    """No mouse: type and translate with Enter, change the layer and the head, focus a head from the head summary,
    switch a head off with Space and Enter, change the view with the arrow keys and the app's tab; a focus
    ring is drawn on what has focus."""
    server = shared_app(ENV)
    with chromium() as browser:
        page, (_, _, errors) = page_at(browser, 1366, 768)
        page.goto(server.url)
        page.wait_for_selector(".explorer[data-ready]")
        press_until(page, "Tab", "a.closest('#source')")
        page.keyboard.type(TEXT)
        page.keyboard.press("Enter")
        page.wait_for_function(f"(() => {{ const x = {EXPLORER}; return x && x.payload; }})()")
        focus_drawn(page, "encoder")
        press_until(page, "Tab", "a.closest('#layer')")
        assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"
        before = page.evaluate(f"{EXPLORER}.state.layer")
        page.keyboard.press("ArrowUp" if before > 0 else "ArrowDown")
        page.wait_for_function(f"{EXPLORER}.state.layer !== {before}")
        press_until(page, "Tab", "a.closest('#head')")
        page.keyboard.press("ArrowDown")
        page.wait_for_function(f"{EXPLORER}.state.head === 0")
        press_until(page, "Tab", "a.dataset && a.dataset.testid === 'cell-0-2'")
        assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"
        page.keyboard.press("Enter")
        page.wait_for_function(f"{EXPLORER}.state.layer === 0 && {EXPLORER}.state.head === 1")
        page.wait_for_function("document.querySelector('#focus-encoder .gtitle').textContent.includes('layer 1 · head 2')")
        press_until(page, "Shift+Tab", "a.closest('#ablate')")
        page.keyboard.press("Space")
        assert page.evaluate("document.querySelector('#ablate input').checked")
        press_until(page, "Tab", "a.dataset && a.dataset.testid === 'cell-1-3'")
        page.keyboard.press("Enter")
        page.wait_for_function(f"(() => {{ const p = {EXPLORER}.payload; return p && p.ablation && "
                               "p.ablation.off.length === 1 && p.ablation.off[0][1] === 1; })()")
        press_until(page, "Shift+Tab", "a.getAttribute('role') === 'tab' && a.closest('.explorer')")
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"{EXPLORER}.state.tab === 'decoder'")
        focus_drawn(page, "decoder")
        press_until(page, "Shift+Tab", "a.getAttribute('role') === 'tab' && a.textContent.includes('Heads')", 200)
        page.keyboard.press("Enter")
        page.wait_for_selector("#tab-heads", state="visible")
        # gradio's Dropdown renders its closed list from stale indices when its choices shrink (the candidate
        # selector after heads are switched off, with the mouse as with the keyboard): its error, not the page's
        assert [e for e in errors if e != GRADIO_DROPDOWN_ERROR] == []


# axe audits a page at rest: no gradio event pending (its status trackers hidden, nothing faded as `.pending`) and no
# CSS transition running, for a whole second (gradio starts an event's follow-up a moment after the event ends)
AT_REST = """() => { const now = performance.now();
  if (document.querySelector("[data-testid='status-tracker']:not(.hide), .pending") ||
      document.getAnimations().some((a) => a.playState === 'running')) window.__busyAt = now;
  return now - window.__busyAt >= 1000; }"""


# what axe-core must not find: anything critical, serious or moderate
AXE_FAILS = ("critical", "serious", "moderate")
# a translation asked for and not answered yet: gradio's status tracker over the translation box
# (and gradio's fades at rest: axe measures contrast through an opacity half-way)
PENDING = ("() => Boolean(document.querySelector(\"#translation [data-testid='status-tracker']:not(.hide), "
           "#translation .pending\")) && [...document.querySelectorAll(\"[data-testid='status-tracker'], .pending\")]"
           ".every((e) => ['0', '1'].includes(getComputedStyle(e).opacity) || e.matches('.html-container'))")


def full_app():
    """The app on the shipped checkpoints (en-de first, app_server.SHIPPED_ENV) where they are here, else the test
    checkpoint."""
    if (ROOT / "checkpoints" / "en-de" / "model.safetensors").is_file():
        return shared_app(SHIPPED_ENV), "The small boat reached the harbour before the storm."
    return shared_app(ENV), TEXT


def test_axe_core_finds_no_critical_serious_or_moderate_violation():
    """axe-core (tests/a11y, pinned) in Chromium on the full en-de page: after a translation, every view of the
    attention tab, the other tabs, presentation mode, and while a translation is pending."""
    require_asset(AXE, "npm ci --prefix tests/a11y")
    server, text = full_app()
    found = []

    def audit(page, where: str, settle: bool = True) -> None:
        if settle:
            page.evaluate("window.__busyAt = performance.now()")
            page.wait_for_function(AT_REST, polling="raf")
        if not page.evaluate("Boolean(window.axe)"):
            page.add_script_tag(path=str(AXE))
        result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
        for v in result["violations"]:
            nodes = [n["target"] for n in v["nodes"]][:4]
            found.append((where, v["impact"], v["id"], len(v["nodes"]), nodes))

    with chromium() as browser:
        for present in (0, 1):
            page, _ = open_at(browser, server.url + "?" + urlencode({"text": text, "kind": "encoder",
                                                                     "present": present}), 1366, 768)
            focus_drawn(page, "encoder")
            for kind in ("encoder", "decoder", "cross", "steps"):
                page.locator(f"#tab-{kind}").click()
                page.wait_for_function(f"{EXPLORER}.state.tab === '{kind}'")
                if kind == "steps":
                    page.wait_for_selector("#step-plot .main-svg")
                else:
                    focus_drawn(page, kind)
                audit(page, f"present={present} {kind}")
            if not present:
                for panel in PANELS[1:]:  # every tab the registry declares, each audited once drawn
                    if not page.locator(f"#tab-{panel.id}-button").is_visible():
                        continue  # "Watch it learn" for a model without snapshots
                    page.get_by_role("tab", name=panel.title).click()
                    page.wait_for_function(f"() => {panel.ready}")
                    audit(page, panel.title)
                page.get_by_role("tab", name="Attention").click()
            # a translation on its way: the page as it is while the model works
            page.locator("#source textarea").fill(" ".join([text] * 6))  # long enough to audit while it runs (the page
            # fades every output's status tracker in and out: a shorter one could end between two checks of PENDING)
            page.locator("#translate").click()
            page.wait_for_function(PENDING, polling="raf")
            audit(page, f"present={present} pending", settle=False)
    print("\n".join(map(str, found)))
    assert not [f for f in found if f[1] in AXE_FAILS], found


def test_links_hold_the_step_and_heads_switched_off_without_a_flash():
    """step= opens the steps view at that step; off= shows the translation and maps without those heads from the
    first answer on (the intact ones never reach the page)."""
    server = shared_app(ENV)
    with chromium() as browser:
        page, _ = open_at(browser, link(server, kind="steps", step=4), 1366, 768)
        page.wait_for_function("document.querySelector('#step-text').textContent.startsWith('Step 4 of')")
        assert page.locator("#step input").input_value() == "4"
        assert parse_qs(urlparse(page.url).query).get("step") == ["4"]
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.set_default_timeout(TIMEOUT_MS)
        page.add_init_script("""window.__seen = []; setInterval(() => {
          const e = document.querySelector('#explorer .explorer'), x = e && e.__explorer;
          const t = document.querySelector('#translation textarea');
          const p = x && x.payload;
          window.__seen.push([p ? p.rev : null, p ? Boolean(p.ablation) : null, t ? t.value : null]); }, 5);""")
        off = "e1.1,e1.2,e1.3,e1.4,e2.1,e2.2"
        page.goto(link(server, kind="encoder", off=off))
        page.wait_for_function(f"(() => {{ const x = {EXPLORER}; return x && x.payload && x.payload.ablation; }})()")
        page.wait_for_timeout(300)
        seen = page.evaluate("window.__seen")
        payloads = {rev: ablated for rev, ablated, _ in seen if rev is not None}
        assert payloads and all(payloads.values()), payloads  # no payload without the heads off
        masked = page.locator("#translation textarea").input_value()
        assert {t for _, _, t in seen if t} == {masked}, {t for _, _, t in seen}
        page.close()


def test_greedy_vs_beam_leaves_the_second_sentence_out_of_the_link():
    server = shared_app(ENV)
    with chromium() as browser:
        page, _ = open_at(browser, link(server, tab="compare", compare="a b c"), 1366, 768)
        page.wait_for_selector("#compare-panel[data-ready^='compare-']")
        assert parse_qs(urlparse(page.url).query).get("compare") == ["a b c"]
        page.locator("#compare-methods").click()
        page.wait_for_function("document.querySelector('#compare-left .label').textContent.toLowerCase()"
                               ".includes('greedy')")
        page.wait_for_function("!new URLSearchParams(location.search).has('compare')")
        url = page.url
        page, _ = open_at(browser, url, 1366, 768)
        page.wait_for_function("document.querySelector('#compare-left .label').textContent.toLowerCase()"
                               ".includes('greedy')")


def test_cross_attention_opens_on_the_read_out_that_aligns_best():
    """A payload with en-de's head analysis and alignment scores (6+4 layers of 8 heads): cross-attention opens
    on the read-out with the lowest AER on the dev gold (alignment.json's `best`: its layer, head and rows) and
    says how far it agrees with a person; the steps on the best predicting read-out; the encoder on its last
    layer's mean, and the decoder gets its rows back; rows or a head chosen by hand then hold on every kind."""
    from playwright.sync_api import expect
    from test_payload import make_attention

    from transformer.explorer.core.checkpoint_heads import head_info
    from transformer.explorer.maps.payload import attention_payload

    checkpoint = ROOT / "checkpoints" / "en-de"
    heads = head_info(checkpoint)
    if heads is None or not (checkpoint / "alignment.json").is_file():
        pytest.skip("checkpoints/en-de has no head analysis or alignment scores")
    scores = json.loads((checkpoint / "alignment.json").read_text(encoding="utf-8"))
    best = scores["best"]
    rows = {"shifted": "decoder input token", "predicting": "predicted token"}[best["rows"]]
    shown = [r for r in scores["read_outs"] if r["rows"] == "predicting" and r["kind"] in ("head", "layer")]
    steps = min(shown, key=lambda r: r["dev"]["aer"])
    steps_head = "mean over heads" if steps["head"] is None else f"head {steps['head'] + 1}"
    payload = attention_payload(make_attention(6, 4, 8), model="en-de", heads=heads)
    server = shared_app(ENV)
    title = "(s) => { const t = document.querySelector(s + ' .gtitle'); return t ? t.textContent : ''; }"
    checked = "document.querySelector('#rows input:checked').value"
    with chromium() as browser:
        page, _ = page_at(browser, 1366, 768)
        page.goto(server.url)
        page.wait_for_selector(".explorer[data-ready]")
        page.wait_for_function(f"!!{EXPLORER}")  # the explorer's own object, not only a ready mark on the page
        # the page's own restore (its load event) sets the view when it answers: on a busy machine, after the
        # steps below had begun, which reset the rows and the kind they check
        page.wait_for_function("window.__attention && window.__attention.share.ready")
        page.evaluate(f"(p) => {EXPLORER}.setPayload(p)", payload)
        page.evaluate(f"{EXPLORER}.update({{tab: 'cross'}})")
        page.wait_for_function(f"({title})('#focus-cross').includes('layer {best['layer'] + 1} · head {best['head'] + 1}')")
        # the title, the rows and the note are each drawn by their own part of the page: wait on each
        page.wait_for_function(f"({checked}) === '{rows}'")
        note = page.locator("#agreement")
        expect(note).to_be_visible()
        expect(note).to_have_text(heads["opens_on"]["cross"]["agreement"])
        assert "in 100" in note.text_content()
        page.evaluate(f"{EXPLORER}.update({{tab: 'steps'}})")
        page.wait_for_function(f"({title})('#step-plot').includes('layer {steps['layer'] + 1}, {steps_head}')")
        expect(note).to_be_hidden()
        page.evaluate(f"{EXPLORER}.update({{tab: 'decoder'}})")
        page.wait_for_function(f"({title})('#focus-decoder').includes('layer 4 · mean over heads')")
        page.wait_for_function(f"({checked}) === 'predicted token'")  # the rows the cross default set are given back
        page.evaluate(f"{EXPLORER}.update({{tab: 'encoder'}})")
        page.wait_for_function(f"({title})('#focus-encoder').includes('layer 6 · mean over heads')")
        # rows chosen on the cross view end its default: its layer and head stay, the note says that read-out's numbers
        page.evaluate(f"{EXPLORER}.update({{tab: 'cross'}})")
        page.wait_for_function(f"({checked}) === '{rows}'")
        other = next(r for r in ("decoder input token", "predicted token") if r != rows)
        page.locator(f"#rows input[value='{other}']").check()
        page.evaluate(f"{EXPLORER}.update({{tab: 'encoder'}})")
        page.evaluate(f"{EXPLORER}.update({{tab: 'cross'}})")
        page.wait_for_function(f"({title})('#focus-cross').includes('layer {best['layer'] + 1} · head {best['head'] + 1}')")
        page.wait_for_function(f"({checked}) === '{other}'")
        said = heads["agreements"]
        numbers = said["read_outs"][f"{best['layer']}|{-1 if best['head'] is None else best['head']}|{other}"]
        expect(note).to_have_text(said["template"].format(precision=numbers[0], recall=numbers[1]))
        assert "eflomal" not in note.text_content()
        page.locator("#head select").select_option("2")
        page.evaluate(f"{EXPLORER}.update({{tab: 'encoder'}})")
        page.wait_for_function(f"({title})('#focus-encoder').includes('head 3')")


def test_a_map_saves_as_png_and_svg_at_projector_resolution_with_its_title():
    """The focus map's "Save PNG" and "Save SVG" buttons each download a file of that type: a 1920x1080 PNG and
    an SVG whose title names the sentence, the kind, the layer and the head."""
    import struct

    server = shared_app(ENV)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1366, "height": 768}, accept_downloads=True)
        page.set_default_timeout(TIMEOUT_MS)
        dialogs, external, errors = watch_page(page)
        page.goto(link(server, present=1))
        page.wait_for_function(f"(() => {{ const x = {EXPLORER}; return x && x.payload && x.asked === null; }})()")
        tab = page.evaluate(f"{EXPLORER}.state.tab")
        focus_drawn(page, tab)
        title = page.locator(f"#focus-{tab} .gtitle").first.text_content()
        files = {}
        for fmt in ("png", "svg"):
            with page.expect_download() as info:
                page.locator(f"#focus-{tab} .save button[data-format={fmt}]").click()
            download = info.value
            assert download.failure() is None
            assert download.suggested_filename.startswith(f"attention-{tab}-layer")
            assert download.suggested_filename.endswith(f".{fmt}"), download.suggested_filename
            files[fmt] = Path(download.path()).read_bytes()
        png = files["png"]
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
        assert struct.unpack(">II", png[16:24]) == (1920, 1080)
        svg = files["svg"].decode("utf-8")
        assert svg.lstrip().startswith("<svg") and 'width="1920"' in svg and 'height="1080"' in svg
        # the title: the sentence, then the focus view's own title (kind, layer, head)
        assert TEXT in svg and title.split(" · ")[0] in svg and " · layer " in title
        assert dialogs == [] and external == [] and errors == []
