"""The three ways into the model in a real browser (Playwright + Debian chromium), on the checkpoint of a short toy
run that ships training snapshots (tests/toy_snapshots.py): your translation scored and drawn, how a clicked weight
is computed, and the learning slider. The numbers on the page are checked against the Python model, not against
the page's own arithmetic. Skips, saying why, only when chromium or the playwright package is missing.
"""
from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_server import ROOT, SHIPPED_ENV, app_env, shared_app  # noqa: E402
from test_browser import CHROMIUM, SHOTS, chromium, docs_picture, open_page, sync_api, views_drawn  # noqa: E402,F401
from toy_snapshots import SNAPSHOT_STEPS, toy_run_with_snapshots  # noqa: E402
from transformer.explorer.web.page import PLOTLY_JS  # noqa: E402

SOURCE, YOURS = "a b c d e", "e d c a b"
PANEL = "document.querySelector('#inside-panel')"
LEARN = "document.querySelector('#learn-panel')"
READY = "(s) => ((document.querySelector(s) || {}).dataset || {}).ready || ''"
FOCUS_Z = "(k) => document.querySelector(`#focus-${k} .plot`).__view.z"
CELLS = "() => document.querySelector('#explorer .explorer').dataset.cells || '0'"  # clicks explorer.js handled


pytestmark = pytest.mark.slow  # Chromium: `pytest -m "not slow"` leaves it out


@pytest.fixture(scope="module")
def toy_run():
    return toy_run_with_snapshots(Path(tempfile.gettempdir()) / "attention-app-toy-learning")


@pytest.fixture(scope="module")
def server(toy_run):
    return shared_app({"TRANSFORMER_CHECKPOINT": str(toy_run), "TRANSFORMER_THREADS": "1"})


@pytest.fixture(scope="module")
def reference(toy_run):
    from transformer.translator import load_pretrained

    return load_pretrained(toy_run)


def translate(page, url: str, text: str = SOURCE) -> None:
    page.goto(url)
    page.locator("#source textarea, #source input").first.fill(text)
    page.locator("#translate").click()
    page.wait_for_selector("#focus-encoder .js-plotly-plot g.hm")


def toast(page, words: str) -> None:
    page.get_by_text(words).first.wait_for()


def test_browser_your_translation(server, reference):
    with chromium() as browser:
        page, (dialogs, external, errors) = open_page(browser)
        translate(page, server.url)
        own = page.locator("#translation textarea, #translation input").first.input_value()
        page.locator("#yours-own").click()
        page.wait_for_function("(t) => document.querySelector('#yours textarea').value === t", arg=own)
        page.locator("#yours textarea").fill(YOURS)
        page.locator("#yours-score").click()
        page.wait_for_function(f"({READY})('#yours-panel').startsWith('scored')")
        value = page.evaluate("document.querySelector('#yours-panel').__value")
        forced = reference.force(SOURCE, YOURS)
        assert value["log_prob"] == pytest.approx(forced.log_prob, abs=1e-4)
        assert [t["p"] for t in value["tokens"]] == pytest.approx([s.probability for s in forced.steps], rel=1e-4)
        own_steps = reference.force(SOURCE, own).steps
        assert value["own"]["log_prob"] == pytest.approx(sum(math.log(s.probability) for s in own_steps), abs=1e-4)
        chips = page.locator("#yours-panel .yours-token")
        assert chips.count() == len(forced.steps) and chips.nth(0).text_content().strip() == "e"
        assert f"{value['log_prob']:.2f}" in page.locator("#yours-panel .yours-total").text_content()
        # hover: the model's own top choices at that token
        chips.nth(3).hover()
        tip = page.locator("#yours-panel .yours-tip")
        assert tip.is_visible() and "top choices" in tip.text_content()
        assert forced.steps[3].top_k[0][0].replace("\u2581", "") in tip.text_content()
        # every map shows the attention for that translation (the float32 model's, through the payload)
        page.wait_for_function("(t) => document.querySelector('#caption').textContent.includes(t)", arg=YOURS)
        for kind in ("encoder", "decoder", "cross"):
            page.get_by_role("tab", name={"encoder": "Encoder self-attention", "decoder": "Decoder self-attention",
                                          "cross": "Cross-attention"}[kind]).click()
            page.wait_for_selector(f"#focus-{kind} .js-plotly-plot g.hm")
            z = np.array(page.evaluate(FOCUS_Z, kind))
            np.testing.assert_allclose(z, getattr(forced.attention, kind)[-1].mean(0), atol=1e-4)
        # a head switched off: the maps and the scores of your translation are the model's without it
        page.locator("#ablate input").check()
        page.locator("#grid-cross [data-testid='cell-0-1']").click()
        page.wait_for_selector("#yours-panel .yours-off", state="visible")
        masked = page.evaluate("document.querySelector('#yours-panel').__value")
        assert masked["text"] == YOURS and masked["heads_off"]
        assert masked["log_prob"] == pytest.approx(
            reference.force(SOURCE, YOURS, head_mask={"cross": [[0, 1]]}).log_prob, abs=1e-4)
        page.locator("#heads-on").click()
        page.wait_for_selector("#yours-panel .yours-off", state="hidden")
        page.locator("#ablate input").uncheck()
        # the link carries it; opening the link scores it again
        page.wait_for_function("window.location.search.includes('yours=')")
        link = page.evaluate("window.location.href")
        assert parse_qs(urlparse(link).query)["yours"] == [YOURS]
        page.goto(link)
        page.wait_for_function(f"({READY})('#yours-panel').startsWith('scored')")
        assert page.locator("#yours textarea").input_value() == YOURS
        assert page.evaluate("document.querySelector('#yours-panel').__value.log_prob") == pytest.approx(
            forced.log_prob, abs=1e-4)
        assert dialogs == [] and external == [] and errors == [], (dialogs, external, errors)


@pytest.mark.parametrize("yours,says", [("", "Type your translation"), ("<b>e d</b>", "looks like HTML"),
                                        ("e " * 1001, "at most 2000"), ("e " * 300, "too long for the model")])
def test_browser_your_translation_bad_input(server, yours, says):
    with chromium() as browser:
        page, (dialogs, external, errors) = open_page(browser)
        translate(page, server.url)
        page.locator("#yours textarea").fill(yours)
        page.locator("#yours-score").click()
        toast(page, says)
        assert page.evaluate("document.querySelector('#yours-panel').dataset.ready") == "empty"
        assert page.locator("b", has_text="e d").count() == 0
        assert dialogs == [] and errors == [], (dialogs, errors)


def test_browser_a_bad_yours_in_a_link_is_a_note(server):
    with chromium() as browser:
        page, _ = open_page(browser)
        page.goto(server.url + "?" + urlencode({"text": SOURCE, "yours": "<img src=x onerror=alert(1)>"}))
        page.wait_for_function("(document.querySelector('#link-note textarea, #link-note input') || {}).value")
        assert "yours" in page.locator("#link-note textarea, #link-note input").first.input_value()
        assert page.locator("#yours textarea").input_value() == ""
        assert page.locator("img[src='x']").count() == 0


def click_focus(page, kind: str, x: float, y: float) -> None:
    """One click at (x, y) px of the focus map of `kind`, once explorer.js says the map is drawn and can take it;
    waits until the page has handled it (its click count grew): a click the page drops fails the test."""
    views_drawn(page, kind)
    before = page.evaluate(CELLS)
    page.locator(f"#focus-{kind} .nsewdrag").first.click(position={"x": x, "y": y})
    page.wait_for_function(f"(n) => ({CELLS})() !== n", arg=before)


def click_cell(page, kind: str, i: int, j: int) -> dict:
    """Click cell (query i, key j) of the focus map of `kind` and wait for the panel's numbers."""
    views_drawn(page, kind)
    z = page.evaluate(FOCUS_Z, kind)
    box = page.locator(f"#focus-{kind} .nsewdrag").first.bounding_box()
    click_focus(page, kind, box["width"] * (j + 0.5) / len(z[0]), box["height"] * (i + 0.5) / len(z))
    page.wait_for_function(f"({READY})('#inside-panel').startsWith('cell-{kind}-')")  # "busy" until it answers
    return page.evaluate(f"{PANEL}.__value")


def test_browser_how_a_weight_is_computed(server, reference):
    with chromium() as browser:
        page, (dialogs, external, errors) = open_page(browser)
        translate(page, server.url)
        own = page.locator("#translation textarea, #translation input").first.input_value()
        maps = reference.force(SOURCE, own).attention  # the float32 maps of the app's translation
        page.locator("#head select").select_option(label="Head 2")
        for kind, name, (i, j) in (("encoder", "Encoder self-attention", (2, 3)),
                                   ("decoder", "Decoder self-attention", (3, 1)),
                                   ("cross", "Cross-attention", (1, 4))):
            page.get_by_role("tab", name=name).click()
            page.wait_for_function(f"document.querySelector('#focus-{kind} .gtitle').textContent.includes('head 2')")
            value = click_cell(page, kind, i, j)
            assert (value["kind"], value["layer"], value["head"], value["query"], value["key"]) == (kind, 0, 1, i, j)
            scores, allowed, weights = (np.array(value[k]) for k in ("scores", "allowed", "weights"))
            soft = np.where(allowed, np.exp(scores - scores[allowed].max()), 0.0)
            np.testing.assert_allclose(soft / soft.sum(), weights, atol=1e-5)  # softmax of its scores
            np.testing.assert_allclose(weights, getattr(maps, kind)[0, 1, i], atol=1e-5)  # the float32 map's row
            z = np.array(page.evaluate(FOCUS_Z, kind))
            np.testing.assert_allclose(weights, z[i], atol=1e-4)  # the row drawn (from the uint16 payload)
            assert page.locator("#inside-weights.js-plotly-plot").count() == 1
            if kind == "decoder":
                assert allowed.tolist() == [k <= i for k in range(len(allowed))]
                assert "masked" in page.locator("#inside-mask").text_content()
            docs_picture(page.locator("#inside-panel"), SHOTS / f"screenshot-inside-{kind}.png")
        # the mean over heads: no single head to explain
        page.locator("#head select").select_option(label="mean over heads")
        page.wait_for_function("document.querySelector('#focus-cross .gtitle').textContent.includes('mean')")
        click_focus(page, "cross", 5, 5)
        page.wait_for_function(f"{PANEL}.querySelector('.message').textContent.includes('single head')")
        # a head switched off: the panel says so
        page.locator("#head select").select_option(label="Head 1")
        page.locator("#ablate input").check()
        page.locator("#grid-cross [data-testid='cell-0-1']").click()
        page.wait_for_function("document.querySelector('#ablation').textContent.includes('switched off')")
        page.locator("#ablate input").uncheck()
        page.wait_for_function("document.querySelector('#focus-cross .gtitle').textContent.includes('switched off')")
        value = click_cell(page, "cross", 0, 0)
        assert value["head_on"] is False and sum(value["weights"]) == 0.0
        assert page.locator("#inside-off").is_visible() and "switched off" in page.locator("#inside-off").text_content()
        assert dialogs == [] and external == [] and errors == [], (dialogs, external, errors)


def test_browser_a_link_opens_the_inside_panel_on_its_cell(server, reference):
    """`cell` in a link: the panel explains that weight once the translation is drawn, the address bar keeps the
    cell while its map is on screen, and another head drops it (the panel's numbers are of the old head)."""
    with chromium() as browser:
        page, (dialogs, external, errors) = open_page(browser)
        page.goto(server.url + "?" + urlencode({"text": SOURCE, "kind": "cross", "layer": 1, "head": 2, "cell": "2.5"}))
        page.wait_for_function(f"({READY})('#inside-panel') === 'cell-cross-0-1-1-4'")
        value = page.evaluate(f"{PANEL}.__value")
        own = page.locator("#translation textarea, #translation input").first.input_value()
        maps = reference.force(SOURCE, own).attention
        np.testing.assert_allclose(value["weights"], maps.cross[0, 1, 1], atol=1e-5)  # the float32 map's row
        assert page.locator("#link-note").is_hidden()  # nothing in the link was ignored
        page.wait_for_function("new URLSearchParams(location.search).get('cell') === '2.5'")
        page.locator("#head select").select_option(label="Head 1")
        page.wait_for_function("new URLSearchParams(location.search).get('head') === '1'")
        assert "cell" not in parse_qs(urlparse(page.url).query)
        value = click_cell(page, "cross", 0, 2)  # a click puts its cell into the address bar
        page.wait_for_function("new URLSearchParams(location.search).get('cell') === '1.3'")
        assert (value["head"], value["query"], value["key"]) == (0, 0, 2)
        assert dialogs == [] and external == [] and errors == [], (dialogs, external, errors)


def test_browser_watch_it_learn(server, toy_run):
    with chromium() as browser:
        page, (dialogs, external, errors) = open_page(browser)
        page.goto(server.url)
        page.wait_for_function("window.__attention && window.__attention.share.ready")  # the page's restore done
        page.locator("#source textarea, #source input").first.fill(SOURCE)
        page.get_by_role("tab", name="Watch it learn").click()
        last = SNAPSHOT_STEPS[-1]
        page.wait_for_function(f"({READY})('#learn-panel') === 'step-{last}'")
        assert page.locator("#learn-source").text_content() == SOURCE
        recorded = {r["step"]: r for r in json.loads((toy_run / "snapshots" / "snapshots.json").read_text())}
        score = f"val sequence accuracy at this step: {recorded[last]['val_seq_acc']:.2f}"  # the run's own val score
        assert score in page.locator("#learn-score").text_content()
        slider = page.locator("#learn-step input")
        slider.focus()
        for n, step in enumerate(SNAPSHOT_STEPS[:-1]):  # every step once, from the first
            page.keyboard.press("Home")
            for _ in range(n):
                page.keyboard.press("ArrowRight")
            page.wait_for_function(f"({READY})('#learn-panel') === 'step-{step}'")
        asked = page.evaluate(f"{LEARN}.__learn.requests")
        assert asked == len(SNAPSHOT_STEPS)
        translations = {}
        for n, step in enumerate(SNAPSHOT_STEPS):  # seen steps: drawn from the page's cache, no request
            page.keyboard.press("Home")
            for _ in range(n):
                page.keyboard.press("ArrowRight")
            page.wait_for_function(f"({READY})('#learn-panel') === 'step-{step}'")
            translations[step] = page.locator("#learn-translation").text_content()
        assert page.evaluate(f"{LEARN}.__learn.requests") == asked
        assert translations[last] == "e d c b a" and translations[1] != translations[last]
        # the map follows the kind, layer and head chosen; the step's maps are the snapshot model's own
        from transformer.explorer.panels.inside.snapshots import LearningSnapshots
        from transformer.translator import load_pretrained

        snap = LearningSnapshots().translator("toy", load_pretrained(toy_run), toy_run, last)
        expected = snap.translate(SOURCE, method="greedy").attention.cross[0].mean(0)
        np.testing.assert_allclose(page.evaluate("document.querySelector('#learn-map').__grid"), expected, atol=1e-4)
        page.locator("#learn-head select").select_option(label="Head 1")
        page.wait_for_function("document.querySelector('#learn-map .gtitle').textContent.includes('head 1')")
        docs_picture(page.locator("#learn-panel"), SHOTS / "screenshot-learn.png")
        page.wait_for_function("window.location.search.includes('tab=learn')")
        assert dialogs == [] and external == [] and errors == [], (dialogs, external, errors)


def test_browser_a_step_that_comes_before_plotly_js_is_drawn_once_it_loads(server):
    """plotly.js (1.5 MB) comes in a script gradio adds with the attention component; on a slow network (or a
    busy machine) the learning panel's first step arrived before it had loaded, and drawing it threw "Cannot
    read properties of undefined (reading 'react')". Held back here until the step is on the page: no script
    error, and the map is drawn once plotly.js loads."""
    with chromium() as browser:
        page, (dialogs, external, errors) = open_page(browser)
        held = []
        page.route(f"**/{PLOTLY_JS.name}", lambda route: held.append(route))  # unanswered until the step is in
        page.goto(server.url)
        page.wait_for_function("window.__attention && window.__attention.share.ready")
        page.locator("#source textarea, #source input").first.fill(SOURCE)
        page.get_by_role("tab", name="Watch it learn").click()
        page.wait_for_function(f"({READY})('#learn-panel').startsWith('step-')")
        assert held and page.evaluate("typeof window.Plotly") == "undefined"
        assert page.locator("#learn-translation").text_content()
        assert page.locator("#learn-map .js-plotly-plot").count() == 0
        for route in held:
            route.continue_()
        page.wait_for_selector("#learn-map g.hm")
        page.wait_for_function("(document.querySelector('#learn-curve').data || []).length > 0")
        assert dialogs == [] and external == [] and errors == [], (dialogs, external, errors)


def test_browser_a_checkpoint_without_snapshots_hides_the_slider():
    env, _ = app_env()
    server = shared_app(env)
    with chromium() as browser:
        page, _ = open_page(browser)
        page.goto(server.url)
        page.wait_for_selector("#tab-attention-button")
        assert page.get_by_role("tab", name="Watch it learn").count() == 0


EN_DE = ROOT / "checkpoints" / "en-de"
EN_SOURCE = "My little cousin paints the kitchen after lunch."
EN_YOURS = "Mein kleiner Cousin streicht nach dem Mittagessen die Küche."


@pytest.mark.skipif(not (EN_DE / "model.safetensors").is_file(), reason="checkpoints/en-de is not here")
def test_browser_en_de_your_translation_and_a_cross_attention_weight():
    """The shipped English-German model: a German translation of one's own scored, and how one cross-attention
    weight of it is computed (the README's pictures, with UPDATE_SCREENSHOT=1)."""
    server = shared_app(SHIPPED_ENV)
    with chromium() as browser:
        page, (dialogs, external, errors) = open_page(browser)
        translate(page, server.url, EN_SOURCE)
        page.locator("#yours textarea").fill(EN_YOURS)
        page.locator("#yours-score").click()
        page.wait_for_function(f"({READY})('#yours-panel').startsWith('scored')")
        value = page.evaluate("document.querySelector('#yours-panel').__value")
        assert value["text"] == EN_YOURS and value["own"] is not None
        assert sum(t["log_p"] for t in value["tokens"]) == pytest.approx(value["log_prob"], abs=1e-3)
        page.locator("#yours-panel .yours-token").nth(2).hover()
        docs_picture(page.locator("#yours-panel"), SHOTS / "screenshot-yours.png")
        page.get_by_role("tab", name="Cross-attention").click()
        page.locator("#head select").select_option(label="Head 8")
        page.locator("#layer select").select_option(label="Layer 3")
        page.wait_for_function("document.querySelector('#focus-cross .gtitle').textContent.includes('head 8')")
        z = page.evaluate(FOCUS_Z, "cross")
        i = next(n for n, t in enumerate(page.evaluate("document.querySelector('#focus-cross .plot').__view.q.raw"))
                 if "streicht" in t or "\u2581stre" in t)
        j = int(np.argmax(z[i]))
        cell = click_cell(page, "cross", i, j)
        soft = np.exp(np.array(cell["scores"]) - max(cell["scores"]))
        np.testing.assert_allclose(soft / soft.sum(), cell["weights"], atol=1e-5)
        np.testing.assert_allclose(cell["weights"], z[i], atol=1e-4)
        docs_picture(page.locator("#inside-panel"), SHOTS / "screenshot-inside.png")
        assert dialogs == [] and external == [] and errors == [], (dialogs, external, errors)
