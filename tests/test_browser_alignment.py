"""The cross view drawn as an aligner draws an alignment (static/alignment_lines.js), in Chromium: a link with
align=1 opens it on en-de's best read-out with one line per German word, the very links alignment.py's extraction
finds on the payload's maps; the switch goes back to the map and the address bar follows; the drawing saves as PNG
and SVG; the agreement line follows the read-out on screen; axe-core finds no critical or serious violation in it."""
from __future__ import annotations

import json
import struct
import sys
from pathlib import Path
from urllib.parse import urlencode

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_server import ROOT, app_env, shared_app  # noqa: E402
from test_browser import TIMEOUT_MS, chromium, sync_api, watch_page  # noqa: E402

pytestmark = pytest.mark.slow  # Chromium: `pytest -m "not slow"` leaves it out

ENV, _ = app_env()
EN_DE = ROOT / "checkpoints" / "en-de"
AXE = ROOT / "tests" / "a11y" / "node_modules" / "axe-core" / "axe.min.js"
EXPLORER = "(document.querySelector('#explorer .explorer') || {}).__explorer"
SENTENCE = "My sister reads a book in the garden."
PLOT = "#focus-cross .plot"


def expected_links(payload: dict) -> set[tuple[int, int]]:
    """alignment.py's links (English word, German word) of the read-out the cross view opens on, from the maps the
    page got, over the payload's words (specials are none)."""
    from test_js import word_incidence

    from reference_views import decode_attention
    from transformer.training import alignment

    opens = payload["heads"]["opens_on"]["cross"]
    rows = "shifted" if opens["rows"] == "decoder input token" else "predicting"
    cross = decode_attention(payload).cross
    tokens = payload["tokens"]
    maps = alignment.word_maps(cross, word_incidence(tokens["src"]), word_incidence(tokens["tgt_out"]), rows)
    word_map = maps[opens["layer"]].mean(0) if opens["head"] < 0 else maps[opens["layer"], opens["head"]]
    return alignment.links_from(word_map)


def drawing(page) -> dict:
    """Wait for the alignment drawing on screen (Plotly done: data-drawn) and return its links and line count."""
    page.wait_for_function(f"(() => {{ const p = document.querySelector('{PLOT}'); "
                           "return p && p.__alignment && p.dataset.drawn; })()")
    return page.evaluate(f"(() => {{ const p = document.querySelector('{PLOT}'); "
                         "return {links: p.__alignment.links.map((l) => [l.source, l.target]), "
                         "words: p.__alignment.target.label.length, "
                         "lines: p.querySelectorAll('.shapelayer path').length, "
                         "label: p.getAttribute('aria-label'), title: p.querySelector('.gtitle').textContent}; })()")


def test_a_link_opens_the_cross_view_as_an_alignment_drawing_with_one_line_per_word():
    if not (EN_DE / "alignment.json").is_file():
        pytest.skip("checkpoints/en-de has no alignment scores")
    server = shared_app(ENV)
    url = server.url + "?" + urlencode({"text": SENTENCE, "model": "en-de", "tab": "attention", "kind": "cross",
                                        "align": "1"})
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1366, "height": 900}, accept_downloads=True)
        page.set_default_timeout(TIMEOUT_MS)
        dialogs, external, errors = watch_page(page)
        page.goto(url)
        page.wait_for_function(f"(() => {{ const x = {EXPLORER}; return x && x.payload && x.asked === null "
                               f"&& x.payload.source === {json.dumps(SENTENCE)}; }})()")
        payload = page.evaluate(f"{EXPLORER}.payload")
        opens = payload["heads"]["opens_on"]["cross"]
        drawn = drawing(page)
        # every German word of the translation has its line, and the lines are alignment.py's links
        assert drawn["words"] == len(payload["translation"].replace(".", " .").split())
        assert drawn["lines"] == drawn["words"] == len(drawn["links"])
        assert {tuple(link) for link in drawn["links"]} == expected_links(payload)
        head = "mean over heads" if opens["head"] < 0 else f"head {opens['head'] + 1}"
        assert f"layer {opens['layer'] + 1} · {head} · word alignment" in drawn["title"]
        assert f"{drawn['lines']} lines" in drawn["label"]
        assert page.locator("#align input").is_checked()
        # the opening read-out says how far it agrees with a person, eflomal beside it
        assert page.locator("#agreement").text_content() == opens["agreement"]
        if AXE.is_file():
            # the drawing and its switch (test_stage's axe test audits the whole page, on the toy model). gradio
            # fades a component while a later event of the link (its own translation's panel) writes it, and a
            # faded text fails the contrast rule: the audit is repeated until the page has settled
            page.add_script_tag(path=str(AXE))
            audit = ("async () => (await axe.run({include: [['#focus-cross'], ['#align']]}, {resultTypes: "
                     "['violations']})).violations.filter((v) => ['critical', 'serious'].includes(v.impact))"
                     ".map((v) => [v.id, v.nodes.slice(0, 3).map((n) => [n.target, n.any.map((a) => a.data)])])")
            try:
                page.wait_for_function(f"async () => (await ({audit})()).length === 0", polling=500,
                                       timeout=TIMEOUT_MS)
            except sync_api.TimeoutError:
                pytest.fail(f"axe-core: {page.evaluate(audit)}")

        # it saves like the maps: a 1920x1080 PNG and an SVG titled with the sentence and the read-out
        files = {}
        for fmt in ("png", "svg"):
            with page.expect_download() as info:
                page.locator(f"#focus-cross .save button[data-format={fmt}]").click()
            assert info.value.failure() is None
            assert info.value.suggested_filename.startswith("alignment-cross-layer"), info.value.suggested_filename
            files[fmt] = Path(info.value.path()).read_bytes()
        assert struct.unpack(">II", files["png"][16:24]) == (1920, 1080)
        svg = files["svg"].decode("utf-8")
        assert svg.lstrip().startswith("<svg") and SENTENCE in svg and "word alignment" in svg

        # another head: its own lines and its own agreement numbers; the switch goes back to the map
        other = (opens["head"] + 1) % payload["n_heads"]
        page.locator("#head select").select_option(str(other))
        page.wait_for_function(f"document.querySelector('{PLOT} .gtitle').textContent.includes('head {other + 1} ·')")
        again = drawing(page)
        assert again["lines"] == len(again["links"]) == drawn["words"]
        numbers = payload["heads"]["agreements"]["read_outs"][f"{opens['layer']}|{other}|{opens['rows']}"]
        assert page.locator("#agreement").text_content() == payload["heads"]["agreements"]["template"].format(
            precision=numbers[0], recall=numbers[1])
        page.wait_for_function("window.location.search.includes('align=1')")
        page.locator("#align input").uncheck()
        page.wait_for_selector(f"{PLOT} g.hm")
        page.wait_for_function("!window.location.search.includes('align=')")
        assert page.evaluate(f"document.querySelector('{PLOT}').__alignment") is None
        assert page.evaluate(f"document.querySelector('{PLOT}').querySelectorAll('.shapelayer path').length") == 0
        assert dialogs == [] and external == [] and errors == [], (dialogs, external, errors)
        page.close()
