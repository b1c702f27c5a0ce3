"""The app in a real browser (Playwright + Debian chromium): translate, tabs, selectors, export, no script injection.

The attention views are drawn in the browser (transformer/explorer/panels/attention/explorer.js); `test_browser_views_match_python`
checks the arrays it plots against the Python views of tests/reference_views.py for a hand-made payload.
`UPDATE_SCREENSHOT=1 python -m pytest tests/test_browser.py` also writes the pictures of the docs: a full-page
screenshot as docs/screenshot.png (the flagship's cross-attention when checkpoints/multi30k-en-de exists, else the
toy's), the presentation mode at 1280x720 as docs/screenshot-present.png, and the others; without it no picture is
taken (no test reads one). Skips, saying why, only when chromium or the playwright package is missing.
"""
from __future__ import annotations

import html
import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_server import ROOT, app_env, shared_app  # noqa: E402
from gradio_client import Client  # noqa: E402

from transformer.explorer.core.view_state import DEFAULT_BEAM  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
EVIL = "<img src=x onerror=alert(1)>"
# Tests leave tracked files alone unless asked: the docs' pictures are taken on request only (`docs_picture`).
UPDATE_SCREENSHOT = bool(os.environ.get("UPDATE_SCREENSHOT"))
SHOTS = ROOT / "docs"
SCREENSHOT, SCREENSHOT_PRESENT = SHOTS / "screenshot.png", SHOTS / "screenshot-present.png"
SCREENSHOT_TREE, SCREENSHOT_COMPARE, SCREENSHOT_LINK, SCREENSHOT_HEADS, SCREENSHOT_ROLES = (
    SHOTS / f"screenshot-{name}.png" for name in ("tree", "compare", "link", "heads", "roles"))
FLAGSHIP = "multi30k-en-de"
ENV, WHICH = app_env()
TIMEOUT_MS = 60_000  # a busy 2-core machine


pytestmark = pytest.mark.slow  # Chromium: `pytest -m "not slow"` leaves it out


def focus_title(page, kind: str) -> str:
    return page.locator(f"#focus-{kind} .gtitle").first.text_content() or ""


def wait_for_title(page, kind: str, *parts: str) -> None:
    page.wait_for_function(
        "([sel, parts]) => { const t = document.querySelector(sel); "
        "return t && parts.every(p => t.textContent.includes(p)); }",
        arg=[f"#focus-{kind} .gtitle", list(parts)], timeout=TIMEOUT_MS)


def views_drawn(page, kind: str | None = None) -> None:
    """Wait for explorer.js's own signals: the views of the tab on screen drawn (`data-views`) and, for a `kind`, its
    focus map drawn by Plotly with its click handler attached (`data-drawn`)."""
    page.wait_for_function(
        "(k) => { const e = document.querySelector('#explorer .explorer'); if (!e) return false; "
        "const p = k && document.querySelector(`#focus-${k} .plot`); "
        "return (e.dataset.views || '').startsWith('views-') && (!k || Boolean(p && p.dataset.drawn)); }",
        arg=kind, timeout=TIMEOUT_MS)


def docs_picture(target, path: Path, **options) -> None:
    """Save `target`'s screenshot (a page's or a locator's) as `path`, a picture of the docs, with UPDATE_SCREENSHOT=1
    only: no assertion reads a picture, and taking one is slow on a busy machine."""
    if UPDATE_SCREENSHOT:
        path.parent.mkdir(exist_ok=True)
        target.screenshot(path=str(path), **options)


def painted(page) -> None:
    """Wait until the browser has painted what is on screen now (two animation frames), before a screenshot."""
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")


def choose(page, elem_id: str, option: str) -> None:
    """A gradio dropdown (the model selector)."""
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=option, exact=True).click()


def selected(page, elem_id: str) -> str:
    """The shown text of an explorer <select>."""
    return page.evaluate("(id) => { const s = document.querySelector(`#${id} select`); "
                         "return s.options[s.selectedIndex].textContent; }", elem_id)


_LAUNCHED: list = []  # [(playwright, browser)]: the Chromium of the test module running now
_KEPT: list = []  # [page]: the one page `page_at` hands out on that Chromium, kept from one test to the next
_WATCHERS: dict = {}  # page -> the handlers `watch_page` put on it, taken off when the page is handed out again


def close_chromium() -> None:
    """Close the module's Chromium (conftest.py does after every module): a running sync Playwright marks this
    thread's asyncio loop as running, which the tests of other modules must not inherit."""
    _KEPT.clear()
    _WATCHERS.clear()
    while _LAUNCHED:
        playwright, browser = _LAUNCHED.pop()
        try:
            browser.close()
        finally:
            playwright.stop()


@contextmanager
def chromium() -> Iterator[sync_api.Browser]:
    """The system's Chromium under Playwright, launched once per test module. Every `new_page`/`new_context` is a
    fresh context (no cookies, storage or cache from before); the test's contexts are closed when it ends, but for
    the page `page_at` keeps, and a test that fails takes the browser down with it, so the next one starts on a
    fresh launch."""
    if not (_LAUNCHED and _LAUNCHED[0][1].is_connected()):
        close_chromium()
        playwright = sync_api.sync_playwright().start()
        try:
            _LAUNCHED.append((playwright, playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)))
        except BaseException:
            playwright.stop()
            raise
    browser = _LAUNCHED[0][1]
    try:
        yield browser
    except BaseException:
        close_chromium()
        raise
    try:
        kept = {page.context for page in _KEPT if not page.is_closed()}
        for context in browser.contexts:
            if context not in kept:
                context.close()
    except BaseException:
        close_chromium()
        raise


def page_at(browser, width: int, height: int):
    """A page of `width` x `height` with the test timeout, and what `watch_page` collects on it from now on.

    One page, kept across the tests of the module's Chromium: a new tab costs Chromium a renderer process and the
    compile of gradio's and plotly's scripts (1.5-2 s of a busy 2-core machine's CPU, each time), and every test
    loads its page by `goto` anyway, a new document (its scripts run anew, a new gradio session). What a page
    could carry from a test before is taken off: the handlers of `watch_page`, routes, cookies, the storage of
    the origin it is on (the explorer keeps nothing there; gradio's tokens would), the mouse over a map (a
    hover label on the next document). A test that needs a page of its own (init scripts, downloads, two pages
    at once) makes one with `browser.new_page`."""
    page = _KEPT[0] if _KEPT and not _KEPT[0].is_closed() and _KEPT[0].context.browser is browser else None
    if page is None:
        _KEPT.clear()
        page = browser.new_page(viewport={"width": width, "height": height})
        _KEPT.append(page)
    else:
        try:
            for event, handler in _WATCHERS.pop(page, ()):
                page.remove_listener(event, handler)
            page.unroute_all(behavior="ignoreErrors")
            page.context.clear_cookies()
            page.evaluate("() => { try { localStorage.clear(); sessionStorage.clear(); } catch (e) {} }")
            page.mouse.move(0, 0)
            page.set_viewport_size({"width": width, "height": height})
        except sync_api.Error:  # left mid-navigation, or gone: a new page instead
            page.context.close()
            return page_at(browser, width, height)
    page.set_default_timeout(TIMEOUT_MS)
    return page, watch_page(page)


def open_page(browser):
    """A desktop-sized page with the test timeout, and what `watch_page` collects on it (`page_at`)."""
    return page_at(browser, 1400, 1000)


def watch_page(page) -> tuple[list[str], list[str], list[str]]:
    """Collect dialogs, requests that leave 127.0.0.1, and script errors."""
    dialogs: list[str] = []
    external: list[str] = []
    errors: list[str] = []
    handlers = (("dialog", lambda d: (dialogs.append(d.message), d.dismiss())),
                ("request", lambda r: external.append(r.url)
                 if not r.url.startswith(("http://127.0.0.1", "data:", "blob:")) else None),
                ("pageerror", lambda e: errors.append(str(e))))
    for event, handler in handlers:
        page.on(event, handler)
    _WATCHERS.setdefault(page, []).extend(handlers)
    return dialogs, external, errors


def check_views_and_steps(page) -> None:
    """Hiding specials, the three attention tabs, the layer and head selectors, the head summary, decoder rows
    by predicted token and the step slider, on a page with a translation (end to end, continued)."""
    # hiding <bos>/<eos> reports the hidden mass and renormalises the plotted rows
    page.locator("#hide input").check()
    page.wait_for_function("document.querySelector('#hidden-mass').textContent.includes('mass hidden')")
    z = page.evaluate("document.querySelector('#focus-encoder .plot').__view.z")
    np.testing.assert_allclose(np.array(z).sum(1), 1.0, atol=1e-5)

    # the three attention tabs: focus and model view render in each
    for name, kind in [("Decoder self-attention", "decoder"), ("Cross-attention", "cross"),
                       ("Encoder self-attention", "encoder")]:
        page.get_by_role("tab", name=name).click()
        page.wait_for_selector(f"#focus-{kind} .js-plotly-plot g.hm")
        assert page.locator(f"#model-{kind} canvas").is_visible()
        assert f"{name.split()[0]}" in focus_title(page, kind)

    # layer and head selectors redraw the focus view
    page.locator("#layer select").select_option(label="Layer 1")
    wait_for_title(page, "encoder", "layer 1", "mean over heads")
    page.locator("#head select").select_option(label="Head 2")
    wait_for_title(page, "encoder", "layer 1", "head 2")
    # a head-summary cell focuses that head (row 1 = layer 2, column 3 = head 3)
    page.locator("#grid-encoder [data-testid='cell-1-3']").click()
    wait_for_title(page, "encoder", "layer 2", "head 3")
    assert selected(page, "head") == "Head 3" and selected(page, "layer") == "Layer 2"
    # the layer column: the layer's mean over heads
    page.locator("#grid-encoder [data-testid='cell-0-0']").click()
    wait_for_title(page, "encoder", "layer 1", "mean over heads")
    # decoder rows by predicted token: the last row is the one that predicted <eos>
    page.get_by_role("tab", name="Decoder self-attention").click()
    page.locator("#hide input").uncheck()
    page.locator("#rows label", has_text="predicted token").click()
    page.wait_for_function("document.querySelector('#focus-decoder .plot').__view.q.raw.slice(-1)[0]"
                           " === '<eos>'")

    # step-by-step tab: the slider moves through the steps
    page.get_by_role("tab", name="Step by step").click()
    page.wait_for_selector("#step-plot .js-plotly-plot .barlayer")
    assert "Step 1 of" in page.locator("#step-text").text_content()
    page.locator("#step input").focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("document.querySelector('#step-text').textContent.includes('Step 2 of')")


def check_export(page, tmp_path) -> None:
    """The attention download of the translation on the page."""
    # export: the .npz downloads and holds the tensors and tokens
    with page.expect_download() as download_info:
        page.locator("#download").click()
    saved = tmp_path / "attention.npz"
    download_info.value.save_as(saved)
    with np.load(saved, allow_pickle=False) as z:
        assert {"encoder", "decoder", "cross", "src_tokens", "tgt_out_tokens"} <= set(z.files)
        assert z["cross"].ndim == 4


def check_example_and_markup(page, watched: tuple[list[str], list[str], list[str]]) -> None:
    """An example translates on click with greedy decoding; markup typed as a sentence stays text (`watched`: the
    page's dialogs, requests leaving the machine and errors, from `watch_page`)."""
    dialogs, external, errors = watched
    # an example translates on click; greedy decoding disables the beam width slider
    page.get_by_role("tab", name="Cross-attention").click()
    page.locator("#method label", has_text="greedy").click()
    page.wait_for_function("document.querySelector('#beam input[type=range]').disabled")
    page.locator("#examples button", has_text="a b c d e f g").click()
    page.wait_for_function(
        "document.querySelector('#source textarea, #source input').value === 'a b c d e f g' && "
        "document.querySelector('#nbest [data-testid=\\'cell-0-1\\']').textContent.trim() === "
        "document.querySelector('#translation textarea, #translation input').value && "
        "document.querySelectorAll('#nbest [data-testid^=\\'cell-\\'][data-testid$=\\'-0\\']').length === 1")
    if WHICH == "toy-reverse":
        assert page.locator("#translation textarea, #translation input").first.input_value() == "g f e d c b a"

    # HTML / script in the input: Enter submits, nothing runs, everything shows as text
    source = page.locator("#source textarea, #source input").first
    source.fill(EVIL)
    source.press("Enter")
    page.wait_for_function(
        "() => [...document.querySelectorAll('#focus-cross .xtick text')]"
        ".some(t => t.textContent.includes('<unk>') || t.textContent.includes('<img'))")
    views_drawn(page, "cross")  # every label of the markup's translation is on the page
    assert dialogs == []
    assert source.input_value() == EVIL
    assert page.locator("img[src='x']").count() == 0
    ticks = page.locator("#focus-cross .xtick text").all_text_contents()
    assert any(re.search(r"<unk>|<img", t) for t in ticks), ticks  # shown literally, not parsed
    assert "&lt;" not in " ".join(ticks)
    assert external == [], f"requests left the machine: {external}"
    assert errors == [], errors


def switch_to_flagship(page, url: str, errors: list[str]) -> None:
    """Switching model in a fresh session (the flagship, when trained): examples and views follow; its
    cross-attention replaces the toy screenshot."""
    if not (ROOT / "checkpoints" / FLAGSHIP / "model.safetensors").is_file():
        return
    page.goto(url)
    page.locator("#source textarea, #source input").first.fill("h e l l o")
    page.locator("#translate").click()
    page.wait_for_selector("#focus-encoder .js-plotly-plot g.hm")
    choose(page, "model", FLAGSHIP)
    page.wait_for_function("document.querySelector('#notice textarea, #notice input')"
                           f".value.includes('{FLAGSHIP} is ready')")
    page.wait_for_selector("#focus-encoder .js-plotly-plot g.hm", state="detached")
    example = page.locator("#examples button").first
    assert " " in example.text_content().strip() and "." in example.text_content()  # English now
    example.click()
    page.wait_for_selector("#focus-encoder .js-plotly-plot g.hm")
    page.get_by_role("tab", name="Cross-attention").click()
    page.wait_for_selector("#focus-cross .js-plotly-plot g.hm")
    assert page.locator("#translation textarea, #translation input").first.input_value().strip()
    docs_picture(page, SCREENSHOT, full_page=True)
    assert errors == [], errors


def test_browser_end_to_end(tmp_path):
    server = shared_app(ENV)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
        page.set_default_timeout(TIMEOUT_MS)
        dialogs, external, errors = watch_page(page)
        page.goto(server.url)

        # translate with the button
        source = page.locator("#source textarea, #source input").first
        source.fill("h e l l o")
        page.locator("#translate").click()
        page.wait_for_function(
            "document.querySelector('#translation textarea, #translation input').value.length > 0")
        page.wait_for_selector("#focus-encoder .js-plotly-plot g.hm")
        page.wait_for_selector("#rollout .js-plotly-plot g.hm")
        page.wait_for_selector("#grid-encoder [data-testid='cell-0-1']")
        n_maps = page.evaluate("document.querySelector('#model-encoder canvas').__maps.length")
        assert n_maps == 2 * 4  # every layer x head of the toy model
        translation = page.locator("#translation textarea, #translation input").first.input_value()
        # the server's own translation at the page's settings, whichever model serves (a trained toy-reverse or
        # the untrained stand-in); the reversal itself where the model was trained for it
        served = Client(server.url, verbose=False).predict("h e l l o", "beam", DEFAULT_BEAM, api_name="/translate")
        assert translation == served[0] and translation.strip()
        if WHICH == "toy-reverse":
            assert translation == "o l l e h"
        assert page.locator("#nbest [data-testid='cell-0-1']").text_content().strip() == translation
        # only the tab on screen is drawn
        assert page.locator("#focus-cross .js-plotly-plot").count() == 0

        # the screenshot for the docs: cross-attention of the best candidate, last layer, mean over heads
        page.get_by_role("tab", name="Cross-attention").click()
        page.wait_for_selector("#focus-cross .js-plotly-plot g.hm")
        wait_for_title(page, "cross", "mean over heads")
        docs_picture(page, SCREENSHOT, full_page=True)
        page.get_by_role("tab", name="Encoder self-attention").click()

        # another n-best candidate: every view switches to it (attention_for, no new beam search)
        page.locator("#nbest [data-testid='cell-1-1']").click()
        wait_for_title(page, "encoder", "candidate 2")
        assert page.locator("#candidate input").input_value().startswith("2:")

        check_views_and_steps(page)
        check_export(page, tmp_path)
        check_example_and_markup(page, (dialogs, external, errors))
        switch_to_flagship(page, server.url, errors)


def test_browser_views_match_python():
    """The arrays explorer.js plots equal the Python views (tests/reference_views.py) of the same payload.

    A hand-made payload (BPE pieces to merge, specials to hide, HTML in tokens, 3 encoder and 2 decoder
    layers) goes into the page; for every kind, row labelling, toggle and a few layer/head choices, the
    focus heatmap, the model view maps, the rollout and the step view are compared with Python's.
    """
    from test_payload import make_attention

    import reference_views as views
    from transformer.explorer.core import view_state
    from reference_views import decode_array, decode_attention
    from transformer.explorer.maps.payload import attention_payload

    src = ["\u2581A", "\u2581ri", "des", EVIL, "<unk>", ".", "<eos>"]
    out = ["\u2581Ein", "\u2581Rad", "fahr", "er", "<b>", ".", "<eos>"]
    payload = attention_payload(make_attention(3, 2, 4, src, out), model="fake", candidate=1, n_candidates=2)
    att = decode_attention(payload)
    server = shared_app(ENV)
    with chromium() as browser:
        page, (dialogs, external, errors) = open_page(browser)
        page.goto(server.url)
        page.wait_for_selector("#explorer .explorer[data-ready]")
        handle = "document.querySelector('#explorer .explorer').__explorer"
        page.evaluate(f"(p) => {handle}.setPayload(p)", payload)
        # views below the focus view are drawn after the next frame: read once they are
        read = f"""(s) => new Promise((done) => {{ {handle}.update(s);
          requestAnimationFrame(() => setTimeout(() => setTimeout(() => {{
            const plot = (id) => {{ const d = document.querySelector(id + ' .plot');
                                    return d && !d.hidden && d.__view ? d.__view : null; }};
            const f = plot('#focus-' + s.tab);
            const maps = document.querySelector('#model-' + s.tab + ' canvas').__maps;
            done({{focus: f && {{z: f.z, q: f.q.label, k: f.k.label, title: f.title}},
                     title: document.querySelector('#focus-' + s.tab + ' .gtitle').textContent,
                     maps: maps.map(m => m.z), rollout: s.tab === 'encoder' ? plot('#rollout').z : null,
                     hidden: document.querySelector('#hidden-mass').textContent}}); }}, 0), 0)); }})"""
        checked = 0
        for kind in views.KINDS:
            for rows in (view_state.ROWS_INPUT, view_state.ROWS_PREDICTED):
                for hide in (False, True):
                    for merge in (False, True):
                        for layer, head in ((0, view_state.MEAN_HEADS), (1, 2), (2, 0)):
                            opts = views.ViewOptions(layer, head, rows, hide, merge)
                            got = page.evaluate(read, {"tab": kind, "layer": layer, "head": head, "rows": rows,
                                                       "hide": hide, "merge": merge})
                            fig, _ = views.focus_view(att, kind, opts, " · candidate 2")
                            np.testing.assert_allclose(got["focus"]["z"], np.asarray(fig.data[0].z), atol=1e-5)
                            assert got["focus"]["k"] == list(fig.layout.xaxis.ticktext)
                            assert got["focus"]["q"] == list(fig.layout.yaxis.ticktext)
                            assert got["title"] == got["focus"]["title"]
                            assert got["focus"]["title"] == fig.layout.title.text
                            masses = {k: views.focus_view(att, k, opts)[1] for k in views.KINDS}
                            assert got["hidden"] == views.hidden_text(masses)
                            w, q, k = views.kind_maps(att, kind, rows)
                            ref, *_ = views.transform(w, q, k, hide, merge)
                            maps = np.array(got["maps"]).reshape(ref.shape)
                            np.testing.assert_allclose(maps, ref, atol=1e-5)
                            if kind == "encoder":
                                r, *_ = views.transform(decode_array(payload["rollout"]), src, src, hide,
                                                           merge)
                                np.testing.assert_allclose(got["rollout"], r, atol=1e-5)
                            checked += 1
        # the step view: the chosen step's cross-attention row, with the same toggles
        for step in (1, 4, 7):
            for hide, merge, head in ((False, False, view_state.MEAN_HEADS), (True, True, 1)):
                opts = views.ViewOptions(1, head, view_state.ROWS_INPUT, hide, merge)
                got = page.evaluate(
                    f"(s) => {{ {handle}.update(s); const v = document.querySelector('#step-plot .plot').__view;"
                    " return {row: v.z[0], keys: v.k.label,"
                    " title: document.querySelector('#step-plot .gtitle').textContent}; }",
                    {"tab": "steps", "step": step, "layer": 1, "head": head, "hide": hide, "merge": merge})
                fig, text = views.step_view(att, step, opts)
                np.testing.assert_allclose(got["row"], np.asarray(fig.data[1].y), atol=1e-5)
                assert got["keys"] == list(fig.layout.xaxis2.ticktext)
                # plotly shows the escaped title decoded; Python's title is the escaped text
                assert got["title"] == html.unescape(fig.layout.title.text).replace("&#36;", "$")
        assert checked == 72
        assert dialogs == [] and external == [] and errors == []
        assert page.locator("img[src='x']").count() == 0


def test_browser_presentation_mode():
    """?present=1 turns presentation mode on (large fonts, big focus view) at 1280x720; the checkbox turns it off."""
    server = shared_app(ENV)
    flagship = (ROOT / "checkpoints" / FLAGSHIP / "model.safetensors").is_file()
    with chromium() as browser:
        page, (dialogs, external, errors) = page_at(browser, 1280, 720)
        page.goto(server.url + "?present=1")
        page.wait_for_function("document.body.classList.contains('present')")
        assert page.locator("#present input").is_checked()
        if flagship:
            choose(page, "model", FLAGSHIP)
            page.wait_for_function("document.querySelector('#notice textarea, #notice input')"
                                   f".value.includes('{FLAGSHIP} is ready')")
            text = "The old fisherman repairs his nets on the beach."
        else:
            text = "t r a n s f o r m e r"
        page.locator("#source textarea, #source input").first.fill(text)
        page.locator("#translate").click()
        page.wait_for_selector("#focus-encoder .js-plotly-plot g.hm")
        page.get_by_role("tab", name="Cross-attention").click()
        page.wait_for_selector("#focus-cross .js-plotly-plot g.hm")
        page.locator("#tabs").scroll_into_view_if_needed()
        page.evaluate("document.querySelector('#explorer').scrollIntoView()")
        focus = page.locator("#focus-cross .plot").bounding_box()
        assert focus["height"] >= 360 and focus["width"] >= 480, focus  # the stage: the whole map on one screen
        tick_px = page.evaluate("parseFloat(getComputedStyle(document.querySelector('#focus-cross .xtick text'))"
                                ".fontSize)")
        assert tick_px >= 16, tick_px
        assert page.locator("#examples").is_hidden() and page.locator("#howto").is_hidden()
        docs_picture(page, SCREENSHOT_PRESENT)
        page.locator("#present input").uncheck()
        page.wait_for_function("!document.body.classList.contains('present')")
        assert page.locator("#examples").is_visible()
        assert dialogs == [] and external == [] and errors == []


# ----------------------------------------------------------------------------- issue 12: tree, compare, shared links

def flagship_or_toy(page) -> tuple[str, str, str]:
    """(model label, sentence, compare sentence): the flagship's English when it is trained, else the toy's."""
    if (ROOT / "checkpoints" / FLAGSHIP / "model.safetensors").is_file():
        return FLAGSHIP, "The dog bit the man in the park.", "The man bit the dog in the park."
    return page.locator("#model input").input_value(), "h e l l o", "h e l l a"


def ready(page, panel: str, prefix: str) -> None:
    page.wait_for_function("([id, p]) => (document.querySelector(id).dataset.ready || '').startsWith(p)",
                           arg=[panel, prefix], timeout=TIMEOUT_MS)


def window_address(page) -> str:
    return page.evaluate("window.location.href.split('#')[0]")


def check_tree(page) -> None:
    """The tree tab: recorded when opened, the best hypothesis's end selected; nodes chosen from the list and by
    a click (round trip, continued)."""
    # the tree tab: recorded when opened; the best hypothesis's end is selected
    page.get_by_role("tab", name="Beam-search tree").click()
    ready(page, "#tree-panel", "tree-")
    page.wait_for_selector("#tree-plot.js-plotly-plot .scatterlayer .points path", state="attached")
    best = page.evaluate("document.querySelector('#tree-panel').dataset.selected")
    labels = page.locator("#tree-node option").all_text_contents()
    assert len(labels) > 3 and any("n-best #1" in label for label in labels)
    assert "&lt;" not in " ".join(labels)  # plain text, not escaped markup
    assert page.locator("#tree-prefix").text_content().strip()
    # choose another node from the list: its prefix and attention row are shown
    page.locator("#tree-node select").select_option(index=1)
    page.wait_for_function(f"document.querySelector('#tree-panel').dataset.selected !== '{best}'")
    prefix = page.locator("#tree-prefix").text_content()
    assert labels[1].endswith(" \u00b7 " + prefix) and labels[1].startswith("step 1 ")
    # a click on a node in the figure selects it
    chosen = page.evaluate("document.querySelector('#tree-panel').dataset.selected")
    page.locator("#tree-plot .scatterlayer .trace .points path").last.click(force=True)
    page.wait_for_function(f"document.querySelector('#tree-panel').dataset.selected !== '{chosen}'")
    ready(page, "#tree-panel", "tree-")
    page.locator("#tree-node select").select_option(value=best)
    page.wait_for_function(f"document.querySelector('#tree-panel').dataset.selected === '{best}'")
    ready(page, "#tree-panel", "tree-")
    page.locator("#search").scroll_into_view_if_needed()
    painted(page)
    docs_picture(page.locator("#search"), SCREENSHOT_TREE)


def check_compare(page, text: str, other: str, translation: str) -> None:
    """Compare: prefilled with the source `text`; `other` compared with it, cross-attention, head 2."""
    # compare: prefilled with the source; change a word and compare
    page.get_by_role("tab", name="Compare").click()
    box = page.locator("#compare-source textarea, #compare-source input").first
    page.wait_for_function("(t) => document.querySelector('#compare-source textarea, #compare-source input')"
                           ".value === t", arg=text)
    box.fill(other)
    page.locator("#compare-run").click()
    ready(page, "#compare-panel", "compare-")
    page.wait_for_selector("#compare-pair.js-plotly-plot g.hm", state="attached")
    assert page.locator("#compare-left .output").text_content() == translation
    assert page.locator("#compare-right .source").text_content() == other
    page.locator("#compare-kind select").select_option("cross")
    page.wait_for_function("document.querySelector('#compare-pair .gtitle').textContent.startsWith('cross')")
    ready(page, "#compare-panel", "compare-")
    page.locator("#compare-head select").select_option(label="Head 2")
    page.wait_for_function("document.querySelector('#compare-pair .gtitle').textContent.includes('head 2')")
    ready(page, "#compare-panel", "compare-")
    painted(page)
    docs_picture(page.locator("#tabs"), SCREENSHOT_COMPARE)


def check_link_in_a_new_page(context, link: str, state: str, translation: str, model: str) -> None:
    """The copied `link` opens the same view (`state`: the shared view state as JSON) in a new page."""
    fresh = context.new_page()
    d2, x2, e2 = watch_page(fresh)
    fresh.goto(link)
    fresh.wait_for_selector("#focus-cross .js-plotly-plot g.hm")
    fresh.wait_for_function("(t) => document.querySelector('#translation textarea, #translation input')"
                            ".value === t", arg=translation)
    assert fresh.evaluate("JSON.stringify(window.__attention.state)") == state
    assert fresh.locator("#hide input").is_checked() and fresh.locator("#merge input").is_checked()
    assert fresh.evaluate("document.querySelector('#tab-cross').getAttribute('aria-selected')") == "true"
    wait_for_title(fresh, "cross", "layer 1", "head 2")
    assert fresh.locator("#model input").input_value() == model
    assert fresh.locator("#link-note").count() == 0 or not fresh.locator("#link-note").is_visible()
    views_drawn(fresh, "cross")
    painted(fresh)
    docs_picture(fresh, SCREENSHOT_LINK, full_page=True)
    assert d2 == [] and x2 == [] and e2 == [], (d2, x2, e2)


def test_browser_tree_compare_and_link_round_trip():
    """Tree tab (dropdown and click select a node), compare, greedy vs beam, copy link, open it in a new page."""
    server = shared_app(ENV)
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url.rstrip("/"))
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        dialogs, external, errors = watch_page(page)
        page.goto(server.url)
        page.wait_for_function("window.__attention && window.__attention.share.ready")
        model, text, other = flagship_or_toy(page)
        if model == FLAGSHIP:
            choose(page, "model", FLAGSHIP)
            page.wait_for_function("document.querySelector('#notice textarea, #notice input')"
                                   f".value.includes('{FLAGSHIP} is ready')")
        page.locator("#source textarea, #source input").first.fill(text)
        page.locator("#translate").click()
        page.wait_for_selector("#focus-encoder .js-plotly-plot g.hm")
        translation = page.locator("#translation textarea, #translation input").first.input_value()

        check_tree(page)
        check_compare(page, text, other, translation)

        # the link: copied to the clipboard and shown; the address bar follows too
        page.locator("#copy-link").click()
        page.wait_for_function("document.querySelector('#share-link textarea, #share-link input').value")
        link = page.locator("#share-link textarea, #share-link input").first.input_value()
        assert page.evaluate("navigator.clipboard.readText()") == link
        page.wait_for_function("(l) => window.location.href === l", arg=link)
        for part in ("tab=compare", "kind=cross", "head=2", f"model={model}"):
            assert part in link, (part, link)
        # colour bars drawn before the address changed must still find their gradients (Gradio's
        # <base> makes Plotly write url(<address>#id) references)
        fills = page.evaluate("[...document.querySelectorAll('#compare-panel .js-plotly-plot [style*=\"url(\"]')]"
                              ".map((el) => el.style.fill).filter((f) => f.startsWith('url('))")
        assert fills and all(window_address(page) in f for f in fills), fills

        # greedy vs beam, one click (after the link was taken)
        page.locator("#compare-methods").click()
        page.wait_for_function("document.querySelector('#compare-left .label').textContent === 'greedy'")

        # attention tab: toggles into the state, then the link opens the same view in a new page
        page.get_by_role("tab", name="Attention").click()
        page.locator("#hide input").check()
        page.locator("#merge input").check()
        page.locator("#rows label", has_text="predicted token").click()
        page.locator("#layer select").select_option(label="Layer 1")
        page.locator("#copy-link").click()
        page.wait_for_function("(l) => document.querySelector('#share-link textarea, #share-link input')"
                               ".value !== l", arg=link)
        link = page.locator("#share-link textarea, #share-link input").first.input_value()
        for part in ("tab=attention", "kind=cross", "layer=1", "head=2", "hide=1", "merge=1", "rows=predicted"):
            assert part in link, (part, link)
        state = page.evaluate("JSON.stringify(window.__attention.state)")
        assert dialogs == [] and external == [] and errors == [], (dialogs, external, errors)

        check_link_in_a_new_page(context, link, state, translation, model)


def test_browser_bad_link_parameters():
    """A hostile link: the note lists what was ignored, defaults are used, nothing runs, nothing leaves."""
    server = shared_app(ENV)
    from urllib.parse import urlencode

    with chromium() as browser:
        page, (dialogs, external, errors) = open_page(browser)
        query = urlencode({"model": "no-such-model", "beam": "999", "lp": "NaN", "tab": "evil", "kind": "x",
                           "layer": "99", "head": "99", "compare": EVIL, "present": "<b>",
                           "text": "<script>alert(1)</script>"})
        page.goto(server.url + "?" + query)
        page.wait_for_function("window.__attention && window.__attention.share.ready")
        note = page.locator("#link-note textarea, #link-note input").first
        page.wait_for_function("(document.querySelector('#link-note textarea, #link-note input') || {}).value")
        text = note.input_value()
        for word in ("model", "beam", "lp", "tab", "kind", "layer", "head", "compare", "present", "text"):
            assert f"{word} " in text, (word, text)
        assert page.locator("#source textarea, #source input").first.input_value() == ""
        assert page.locator("#beam input[type=number]").input_value() == "5"
        assert page.evaluate("document.querySelector('#tab-attention-button').getAttribute('aria-selected')") \
            == "true"
        assert not page.evaluate("document.body.classList.contains('present')")
        # a long text: ignored with a note
        page.goto(server.url + "?" + urlencode({"text": "a " * 2500, "beam": "3"}))
        page.wait_for_function("(document.querySelector('#link-note textarea, #link-note input') || {}).value")
        assert "5000 characters" in page.locator("#link-note textarea, #link-note input").first.input_value()
        assert page.locator("#beam input[type=number]").input_value() == "3"
        page.wait_for_function("window.__attention && window.__attention.share.ready")  # the page's restore done
        views_drawn(page)  # nothing translated: the explorer's empty views
        assert page.evaluate("document.querySelector('#explorer .explorer').dataset.ready") == "empty"
        assert dialogs == [] and external == [] and errors == [], (dialogs, external, errors)
        assert page.locator("img[src='x']").count() == 0


# ----------------------------------------------------------------------------- issue 20: heads off, norms, roles

EXPLORER_JS = "document.querySelector('#explorer .explorer').__explorer"
# one sentence of my own per role, each shown with the head of the highest share for that role (head_roles.json)
ROLE_EXAMPLES = [("encoder", "prev", "We will visit our cousins in Hamburg next summer."),
                 ("encoder", "next", "The xylophone player bowed before the concert began."),
                 ("encoder", "self", "Tom bought a new bicycle for his daughter yesterday."),
                 ("decoder", "rare", "The xylophone player bowed before the concert began."),
                 ("decoder", "sink", "A man with a red umbrella waits at the bus stop."),
                 ("cross", "align", "I can't find my keys anywhere!")]


def role_gallery(page, url: str) -> list[str]:
    """Each ROLE_EXAMPLES sentence opened by a link to the strongest head of its role; its focus view saved as
    screenshot-role-<kind>-<role>.png; returns one line per role (head, its share over the sample). Without
    UPDATE_SCREENSHOT, only the first role of each kind: the same links, one per attention kind."""
    from urllib.parse import urlencode

    roles = json.loads((ROOT / "checkpoints" / "en-de" / "head_roles.json").read_text(encoding="utf-8"))
    lines = []
    firsts = [next(e for e in ROLE_EXAMPLES if e[0] == kind) for kind in ("encoder", "decoder", "cross")]
    for kind, role, sentence in ROLE_EXAMPLES if UPDATE_SCREENSHOT else firsts:
        grid = np.array(roles["kinds"][kind]["shares"][role])
        layer, head = np.unravel_index(int(grid.argmax()), grid.shape)
        query = urlencode({"text": sentence, "model": "en-de", "kind": kind, "layer": layer + 1, "head": head + 1})
        page.goto(f"{url}?{query}")
        payload_where(page, f"p.model === 'en-de' && p.source === {json.dumps(sentence)}")
        wait_for_title(page, kind, f"layer {layer + 1}", f"head {head + 1}")
        docs_picture(page.locator(f"#focus-{kind} .plot"), SHOTS / f"screenshot-role-{kind}-{role}.png")
        lines.append(f"{kind} {role}: L{layer + 1} H{head + 1} ({grid[layer, head]:.0%}) on {sentence!r}")
    return lines


def payload_where(page, condition: str) -> dict:
    """Wait until the explorer's payload (`p`) meets `condition` and no request is outstanding; return it."""
    page.wait_for_function(f"(() => {{ const e = document.querySelector('#explorer .explorer'); "
                           f"const x = e && e.__explorer; const p = x && x.payload; "
                           f"return Boolean(p && x.asked === null && ({condition})); }})()", timeout=TIMEOUT_MS)
    return page.evaluate(f"{EXPLORER_JS}.payload")


def roles_and_heads_tab(page, url: str) -> None:
    """en-de (a head analysis): role letters and shares in the head summary, a head off, the Heads tab, and
    the role gallery (screenshots)."""
    page.goto(url)
    choose(page, "model", "en-de")
    page.wait_for_function("document.querySelector('#notice textarea, #notice input')"
                           ".value.includes('en-de is ready')")
    page.locator("#source textarea, #source input").first.fill("A young woman reads a thick book on a "
                                                                "wooden bench in the quiet park.")
    page.locator("#translate").click()
    payload = payload_where(page, "p.heads !== null && p.model === 'en-de'")
    page.get_by_role("tab", name="Cross-attention").click()
    page.wait_for_selector("#grid-cross [data-testid='cell-0-1']")
    tagged = [(layer, head) for layer, row in enumerate(payload["heads"]["kinds"]["cross"]["tags"])
              for head, tags in enumerate(row) if tags]
    title = page.locator("#grid-cross [data-testid='cell-0-1']").get_attribute("title")
    assert "roles:" in title and "alignment" in title and "importance" in title
    if tagged:
        layer, head = tagged[0]
        assert page.locator(f"#grid-cross [data-testid='cell-{layer}-{head + 1}'] .roles").text_content()
    page.locator("#ablate input").check()
    page.locator("#grid-cross [data-testid='cell-2-4']").click()
    payload_where(page, "p.ablation && p.ablation.off.length === 1")
    wait_for_title(page, "cross", "layer")
    page.locator("#explorer").scroll_into_view_if_needed()
    docs_picture(page, SCREENSHOT_ROLES, full_page=True)
    page.get_by_role("tab", name="Heads").click()
    page.wait_for_selector("#heads-plot .js-plotly-plot .hm")
    assert "heads go at" in page.locator("#heads-plot").text_content()
    assert page.locator("#head-roles [data-testid='cell-0-1']").count() == 1
    docs_picture(page, SCREENSHOT_HEADS, full_page=True)
    print("\n".join(role_gallery(page, url)))


def test_browser_heads_off_norms_and_roles():
    """Clicks switch heads off (translation, n-best, maps and URL follow; "All heads on" undoes it), the
    weight/norm toggle (one model pass, then in the browser), a link with heads off, and a model's roles
    and Heads tab."""
    from reference_views import decode_attention

    server = shared_app(ENV)
    with chromium() as browser:
        page, (dialogs, external, errors) = open_page(browser)
        page.goto(server.url)
        page.locator("#source textarea, #source input").first.fill("h e l l o")
        page.locator("#translate").click()
        page.wait_for_selector("#grid-encoder [data-testid='cell-0-1']")
        unmasked = payload_where(page, "true")["translation"]

        # the norm: asked for once, drawn row-normalised; back to the weight without the server
        page.locator("#measure label", has_text="norm").click()
        payload = payload_where(page, "p.measures.includes('norm')")
        wait_for_title(page, "encoder", "norm")
        norms = decode_attention(payload, "norm").encoder
        z = np.array(page.evaluate("document.querySelector('#focus-encoder .plot').__view.z"))
        np.testing.assert_allclose(z, norms[-1].mean(0), atol=1e-5)
        np.testing.assert_allclose(z.sum(1), 1.0, atol=1e-3)
        page.locator("#measure label", has_text="weight").click()
        wait_for_title(page, "encoder", "mean over heads")
        page.wait_for_function("!document.querySelector('#focus-encoder .gtitle').textContent.includes('norm')")
        assert page.evaluate(f"{EXPLORER_JS}.payload.rev") == payload["rev"]  # no model pass
        page.wait_for_function("!window.location.search.includes('measure=')")

        # a head switched off by a click: the model's answer without it, beside the unmasked translation
        page.locator("#ablate input").check()
        page.locator("#grid-encoder [data-testid='cell-0-2']").click()
        payload = payload_where(page, "p.ablation && p.ablation.off.length === 1")
        assert payload["ablation"] == {"off": [["encoder", 0, 1]], "unmasked": unmasked}
        assert not decode_attention(payload).encoder[0, 1].any()
        assert "off" in page.locator("#grid-encoder [data-testid='cell-0-2']").get_attribute("class")
        assert "switched off" in page.locator("#ablation").text_content() and unmasked in page.locator(
            "#ablation").text_content()
        page.wait_for_function("window.location.search.includes('off=e1.2')")
        page.wait_for_function("(t) => document.querySelector('#translation textarea, #translation input').value "
                               "=== t && document.querySelector('#notice textarea, #notice input').value"
                               ".includes('switched off')", arg=payload["translation"])
        page.locator("#ablate input").uncheck()  # clicks focus again: the head switched off shows nothing
        page.locator("#grid-encoder [data-testid='cell-0-2']").click()
        wait_for_title(page, "encoder", "layer 1", "head 2", "switched off")
        assert not np.array(page.evaluate("document.querySelector('#focus-encoder .plot').__view.z")).any()
        page.locator("#heads-on").click()
        payload_where(page, "p.ablation === null")
        page.wait_for_function("!window.location.search.includes('off=')")
        page.wait_for_function("(t) => document.querySelector('#translation textarea, #translation input').value "
                               "=== t", arg=unmasked)

        # a link with every cross-attention head off and the norm: the decoder no longer sees the source
        off = ",".join(f"c{layer}.{head}" for layer in (1, 2) for head in (1, 2, 3, 4))
        page.goto(server.url + f"?text=h+e+l+l+o&off={off}&measure=norm&kind=cross")
        payload = payload_where(page, "p.ablation && p.ablation.off.length === 8 && p.measures.includes('norm')")
        assert not decode_attention(payload).cross.any() and not decode_attention(payload, "norm").cross.any()
        assert payload["ablation"]["unmasked"] == unmasked
        wait_for_title(page, "cross", "norm")
        assert page.locator("#measure input[value=norm]").is_checked()
        assert dialogs == [] and external == [] and errors == [], (dialogs, external, errors)

        # a model with a head analysis: role letters and shares in the head summary, and the Heads tab
        if (ROOT / "checkpoints" / "en-de" / "head_roles.json").is_file():
            roles_and_heads_tab(page, server.url)
        assert dialogs == [] and external == [] and errors == [], (dialogs, external, errors)


def test_browser_layer_picker_offers_the_layers_of_the_kind_on_screen():
    """en-de has 6 encoder and 4 decoder layers: a link asking for layer 6 of cross-attention shows layer 4 under a
    picker of 4 layers; the encoder tab offers 6 and shows the layer asked for."""
    server = shared_app(ENV)
    with chromium() as browser:
        page, (dialogs, external, errors) = open_page(browser)
        page.goto(server.url + "?text=My+sister+reads+a+book.&model=en-de&tab=attention&kind=cross&layer=6&head=2")
        wait_for_title(page, "cross", "layer 4", "head 2")
        count = "(id) => document.querySelector(`#${id} select`).options.length"
        assert page.evaluate(count, "layer") == 4 and selected(page, "layer") == "Layer 4"
        page.get_by_role("tab", name="Encoder self-attention").click()
        wait_for_title(page, "encoder", "layer 6", "head 2")
        assert page.evaluate(count, "layer") == 6 and selected(page, "layer") == "Layer 6"
        assert dialogs == [] and external == [] and errors == []


EN_DE = ROOT / "checkpoints" / "en-de"
# in the page: `base64(typed array)`, its bytes as base64 (as JSON numbers, a long sentence's maps are megabytes)
BASE64_JS = """const base64 = (v) => { const u = new Uint8Array(v.buffer, v.byteOffset, v.byteLength); let text = '';
  for (let j = 0; j < u.length; j += 0x8000) text += String.fromCharCode.apply(null, u.subarray(j, j + 0x8000));
  return btoa(text); };"""
# our own sentences: a short one with a name and a number (placeholders, which merge as words of their own),
# and test_payload's long one, which reaches half the model's source length (a uint8 payload)
SHORT_NAMED = "My cousin Ngozi drove 240 kilometres to Tbilisi with her sleepy dog."
# in the page: set the view, wait until the views below the focus view are drawn, and hand back the focus map
# and every model-view map of the chosen layers as float32 bytes (base64): a 150-token encoder's 48 maps as JSON
# numbers would be tens of megabytes
READ_FLOAT32 = """(s) => new Promise((done) => { const x = document.querySelector('#explorer .explorer').__explorer;
  x.update(s.view);
  requestAnimationFrame(() => setTimeout(() => setTimeout(() => {""" + BASE64_JS + """
    const pack = (maps) => {
      let n = 0;
      for (const z of maps) for (const row of z) n += row.length;
      const f = new Float32Array(n);
      let i = 0;
      for (const z of maps) for (const row of z) for (const v of row) f[i++] = v;
      return base64(f);
    };
    const focus = document.querySelector('#focus-' + s.view.tab + ' .plot').__view;
    const all = document.querySelector('#model-' + s.view.tab + ' canvas').__maps;
    const maps = all.filter((_, i) => s.layers.includes(Math.floor(i / s.heads))).map((m) => m.z);
    done({focus: pack([focus.z]), maps: pack(maps), n: maps.length, q: focus.q.label.length,
          k: focus.k.label.length, mapQ: maps[0].length, mapK: maps[0][0].length});
  }, 0), 0)); })"""


def float32_views(page, view: dict, layers: list[int], heads: int) -> tuple[np.ndarray, np.ndarray]:
    """What the page shows for `view`: the focus map (Q, K) and the model view's maps of `layers` (n, H, Q, K)."""
    import base64
    got = page.evaluate(READ_FLOAT32, {"view": view, "layers": layers, "heads": heads})
    focus = np.frombuffer(base64.b64decode(got["focus"]), "<f4").reshape(got["q"], got["k"])
    maps = np.frombuffer(base64.b64decode(got["maps"]), "<f4").reshape(len(layers), heads, got["mapQ"], got["mapK"])
    return focus, maps


@pytest.mark.skipif(not (EN_DE / "model.safetensors").is_file(), reason="checkpoints/en-de is not here")
def test_browser_views_equal_the_float32_maps_at_short_and_long_lengths():
    """What explorer.js shows, with specials shown or hidden and subwords merged or not, equals the shipped
    en-de's float32 attention transformed in Python (transforms.hide_special renormalising rows, transforms.merge_subwords)
    within 0.005 per cell: the focus map (mean over heads) and the model view's maps of every head, every kind
    and both row labellings, for a short sentence with placeholders (uint16) and one of 150 tokens (uint8).
    The reference is the model's float32 maps, never the payload they were packed into."""
    from test_payload import LONG_EN

    import reference_views as views
    from transformer.explorer.core import view_state
    from transformer.explorer.maps.payload import attention_payload
    from transformer.translator import load_pretrained

    tr = load_pretrained(EN_DE)
    server = shared_app(ENV)
    with chromium() as browser:
        page, (dialogs, external, errors) = open_page(browser)
        page.goto(server.url)
        page.wait_for_selector("#explorer .explorer[data-ready]", timeout=3 * TIMEOUT_MS)  # a cold app, busy CPU
        for text, dtype in ((SHORT_NAMED, "uint16"), (LONG_EN, "uint8")):
            t = tr.translate(text, method="greedy")
            att = tr.attention_for(t, 0)
            payload = attention_payload(att, model="en-de", source=text, translation=t.text, entities=t.entities)
            assert payload["kinds"]["cross"]["weights"]["dtype"] == dtype
            if dtype == "uint16":  # the short sentence's names and numbers are placeholders, merged as words
                assert sum(tok.startswith("\u27e8") for tok in att.src_tokens) >= 2, att.src_tokens
            else:
                assert len(att.src_tokens) >= tr.max_source_tokens // 2, len(att.src_tokens)
            page.evaluate("(p) => document.querySelector('#explorer .explorer').__explorer.setPayload(p)", payload)
            worst: dict[str, float] = {}
            for kind in view_state.KINDS:
                w, *_ = views.kind_maps(att, kind, view_state.ROWS_INPUT)
                n_layers, n_heads = w.shape[:2]
                # every layer of the short sentence; the first and last of the long one (each read is megabytes)
                layers = list(range(n_layers)) if dtype == "uint16" else [0, n_layers - 1]
                # every combination of hidden specials and merged subwords for the short sentence; for the long one
                # neither and both (its other two cost a minute of drawing 150-token views; the same code draws
                # them, and test_payload checks every combination's decoded maps at this length in Python)
                combinations = [(h, m) for h in (False, True) for m in (False, True)] if dtype == "uint16" else \
                    [(False, False), (True, True)]
                for rows in ((view_state.ROWS_INPUT,) if kind == "encoder" else (view_state.ROWS_INPUT, view_state.ROWS_PREDICTED)):
                    w, q, k = views.kind_maps(att, kind, rows)
                    w = w.astype(np.float32)
                    for hide, merge in combinations:
                        view = {"tab": kind, "rows": rows, "hide": hide, "merge": merge,
                                "layer": n_layers - 1, "head": view_state.MEAN_HEADS}
                        focus, maps = float32_views(page, view, layers, n_heads)
                        ref_focus, *_ = views.transform(w[n_layers - 1].mean(0), q, k, hide, merge)
                        ref_maps, *_ = views.transform(w[layers], q, k, hide, merge)
                        assert focus.shape == ref_focus.shape and maps.shape == ref_maps.shape
                        key = f"{dtype} {kind} {rows} hide={hide} merge={merge}"
                        worst[key] = float(max(np.abs(focus - ref_focus).max(), np.abs(maps - ref_maps).max()))
            assert max(worst.values()) <= 0.005, {k: v for k, v in worst.items() if v > 0.005}
            assert max(worst.values()) > 0, "the page drew nothing"  # an empty comparison would pass
        assert dialogs == [] and external == [] and errors == []


def test_browser_inflates_every_block_type_deflate_makes():
    """explorer.js's own inflate (the payload's arrays are raw DEFLATE) against Python's zlib, exactly: stored
    blocks (incompressible bytes, or level 0), fixed and dynamic Huffman codes, long runs, uint8 and uint16."""
    import base64
    import zlib

    from reference_views import decode_array

    rng = np.random.default_rng(3)

    def entry(q: np.ndarray, level: int, strategy: int = zlib.Z_DEFAULT_STRATEGY) -> dict:
        packer = zlib.compressobj(level, zlib.DEFLATED, -15, 9, strategy)
        data = packer.compress(q.tobytes()) + packer.flush()
        return {"shape": list(q.shape), "scale": 255 if q.dtype.itemsize == 1 else 65535,
                "dtype": "uint8" if q.dtype.itemsize == 1 else "uint16", "codec": "deflate",
                "data": base64.b64encode(data).decode("ascii")}
    sparse = (rng.random((7, 300, 41)) ** 9 * 255).astype(np.uint8)
    noise = rng.integers(0, 65536, (3, 70_000), dtype=np.uint16).astype("<u2")  # more than one stored block
    entries = [entry(sparse, 9), entry(sparse, 1), entry(sparse, 0), entry(sparse, 9, zlib.Z_FIXED),
               entry(np.zeros((2, 5000), np.uint8), 9), entry(np.full((1, 1), 7, np.uint8), 9),
               entry(noise, 9), entry(np.concatenate([noise, noise], axis=1), 6)]
    server = shared_app(ENV)
    with chromium() as browser:
        page, (dialogs, external, errors) = open_page(browser)
        page.goto(server.url)
        page.wait_for_selector("#explorer .explorer[data-ready]", timeout=3 * TIMEOUT_MS)  # a cold app, busy CPU
        for e in entries:
            got = page.evaluate("(e) => { " + BASE64_JS + " return base64(document.querySelector('#explorer .explorer')"
                                ".__explorer.decodeArray(e).values); }", e)
            np.testing.assert_array_equal(np.frombuffer(base64.b64decode(got), "<f4"), decode_array(e).ravel())
        assert errors == []
