"""Every answer on the page belongs to the session's newest request, in a real browser (Playwright + Debian chromium).

The serving path reorders work on purpose: an expensive search waits behind, or pauses for, cheaper requests. So a
heads-off rerun of a long sentence at beam 10 can finish after a short translation asked for later. Its answer
must then be dropped (the server numbers each session's requests: `sessions.SessionGenerations`) and the page must
keep the short sentence: its maps, its translation box, its source box and its address. Skips, saying why, when
chromium, the playwright package or checkpoints/en-de is missing.
"""
from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_server import ROOT, SHIPPED_ENV, QueueSession, endpoints, shared_app  # noqa: E402
from test_browser import TIMEOUT_MS, chromium, open_page, sync_api  # noqa: E402

EN_DE = ROOT / "checkpoints" / "en-de"
if not (EN_DE / "model.safetensors").is_file():
    pytest.skip(f"{EN_DE} is not here", allow_module_level=True)

# about 60 source tokens: at beam 10, just under the work cap, far above an everyday request
LONG = ("The old fisherman, who had lived in the small village by the sea for more than fifty years, told the "
        "children a long story about the storm that destroyed his first boat and the friends who helped him build "
        "a new one in the spring.")
SHORT = "A dog runs in the park."
OTHERS = ["The young teacher, who had moved to the quiet town in the mountains after many years in the capital, "
          "wrote her parents a long letter about the students, the snow and the old school by the river.",
          "My grandmother, who grew up on a farm far from any city, still remembers the winter when the river "
          "froze and the whole village walked across the ice to the market on the other side of the valley."]
EXPLORER = "((document.querySelector('#explorer .explorer') || {}).__explorer || {})"  # {} until it is mounted
# what the app logs when it drops the rerun's answer, or finds it void (transformer/explorer/web/sessions.py)
ENDED = ("on_rerun: answer", "on_rerun: void")


pytestmark = pytest.mark.slow  # Chromium: `pytest -m "not slow"` leaves it out


@pytest.fixture(scope="module")
def server():
    """The app on the shipped checkpoints, en-de the default (app_server.SHIPPED_ENV): the one other test
    modules share."""
    return shared_app(SHIPPED_ENV)


def payload_where(page, condition: str) -> dict:
    """Wait until the explorer's payload `p` meets `condition` with no rerun pending; return it."""
    page.wait_for_function(f"(() => {{ const x = {EXPLORER}; const p = x && x.payload; "
                           f"return Boolean(p && x.asked === null && ({condition})); }})()", timeout=TIMEOUT_MS)
    return page.evaluate(f"{EXPLORER}.payload")


def box(page, elem_id: str) -> str:
    return page.locator(f"#{elem_id} textarea, #{elem_id} input").first.input_value()


def busy_elsewhere(url: str) -> list[threading.Thread]:
    """Another session's expensive searches (a class at work): the rerun waits behind them, while an everyday
    translation is served first, so the order of the two answers does not depend on this machine's speed."""
    index = endpoints(url)["translate_view"]

    def ask(text: str) -> None:
        QueueSession(url).call(index, [text, "beam", 10, "en-de", 1.0, None, ""], timeout_s=TIMEOUT_MS / 1000)

    threads = [threading.Thread(target=ask, args=(text,), daemon=True) for text in OTHERS]
    for thread in threads:
        thread.start()
    return threads


def wait_for_the_long_rerun(page, server, logged: int, deadline_s: float = TIMEOUT_MS / 1000) -> None:
    """Until the app has dropped the long sentence's heads-off answer, or found it void (its log after its first
    `logged` bytes says so); fails as soon as the page shows that answer instead."""
    stale = f"(() => {{ const p = {EXPLORER}.payload; return Boolean(p && p.source === {LONG!r}); }})()"
    end = time.monotonic() + deadline_s
    while not any(line in server.log_since(logged) for line in ENDED):
        try:
            page.wait_for_function(stale, timeout=250)
        except sync_api.TimeoutError:
            assert time.monotonic() < end, f"the heads-off rerun was neither dropped nor shown:\n{server.log_tail()}"
            continue
        pytest.fail(f"the long sentence's older heads-off answer replaced the newer translation's maps under the "
                    f"source {box(page, 'source')!r} (translation box, for now: {box(page, 'translation')!r})")


def test_an_older_heads_off_answer_never_replaces_a_newer_translation(server):
    """Heads off on a long sentence at beam 10, then a short sentence translated: the short one is answered
    first; the rerun's answer, older, is dropped: the page keeps the short sentence, and its heads-off view."""
    logged = server.log_size()  # what the app logs from here on is this test's
    with chromium() as browser:
        page, (dialogs, external, errors) = open_page(browser)
        page.goto(server.url + "?" + urlencode({"text": LONG, "beam": 10, "model": "en-de"}))
        payload_where(page, f"p.source === {LONG!r}")
        page.wait_for_selector("#grid-encoder [data-testid='cell-0-2']")
        page.locator("#ablate input").check()
        source = page.locator("#source textarea, #source input").first
        source.fill(SHORT)
        others = busy_elsewhere(server.url)
        # a head switched off, then Translate, in one task of the page: the rerun is asked first, and the short
        # translation always while it runs, however slow this machine is
        page.evaluate("() => { document.querySelector(\"#grid-encoder [data-testid='cell-0-2']\").click(); "
                      "document.querySelector('#translate').click(); }")
        payload_where(page, f"p.source === {SHORT!r}")  # the short translation, served first

        wait_for_the_long_rerun(page, server, logged)
        # the page asks again for the heads it has off, now of the short sentence
        final = payload_where(page, f"p.source === {SHORT!r} && p.ablation && p.ablation.off.length === 1")
        page.wait_for_function("(t) => document.querySelector('#translation textarea, #translation input').value "
                               "=== t", arg=final["translation"])
        assert source.input_value() == SHORT
        assert parse_qs(urlparse(page.url).query).get("text") == [SHORT]
        assert final["ablation"]["off"] == [["encoder", 0, 1]]
        assert "switched off" in box(page, "notice")
        for thread in others:
            thread.join(TIMEOUT_MS / 1000)

        # every head on again: the maps and the translation box answer together, the short sentence's
        page.locator("#heads-on").click()
        unmasked = payload_where(page, f"p.source === {SHORT!r} && p.ablation === null")
        page.wait_for_function("(t) => document.querySelector('#translation textarea, #translation input').value "
                               "=== t", arg=unmasked["translation"])
        assert unmasked["translation"] == final["ablation"]["unmasked"]
        assert dialogs == [] and external == [] and errors == [], (dialogs, external, errors)
