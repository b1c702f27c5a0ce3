"""The class quiz's two pages in a real browser (Playwright + Debian chromium), nothing mocked: a teacher's board
and three students' pages (one a phone, 390x844, driven from the keyboard) run a whole question, from joining to
the reveal, over a launched gr.Blocks with the class routes. The quiz is `make_quiz` over fixed maps whose source
words are the teacher's sentence, markup included."""
from __future__ import annotations

import re
import socket
import sys
from pathlib import Path

import gradio as gr
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_browser import chromium  # noqa: E402  (skips without chromium or playwright)
from playwright.sync_api import expect  # noqa: E402

from transformer.explorer.panels.quiz.questions import Attended, HeadRole, make_quiz  # noqa: E402
from transformer.explorer.panels.quiz.routes import class_router, join_address  # noqa: E402
from transformer.explorer.panels.quiz.store import ClassStore  # noqa: E402

pytestmark = pytest.mark.slow
SENTENCE = "Four <b>geese</b> cross the <img src=x onerror=alert(1)> river ."
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


def sentence_quiz(body: dict) -> list:
    """Questions whose source words are the sentence's words, each output token looking at one of them."""
    src = [f"▁{w}" for w in body["sentence"].split()] + ["<eos>"]
    tgt = ["▁Vier", "▁Gänse", "▁überqueren", "▁den", "▁Fluss", "▁heute", ".", "<eos>"]
    cross = np.full((1, 2, len(tgt), len(src)), 0.01, np.float32)
    for t in range(len(tgt)):
        cross[:, :, t, min(t, len(src) - 1)] = 0.9
    roles = {("cross", 0, h): HeadRole(f"Role of head {h}.", 0.9 - h / 10) for h in range(2)}
    return make_quiz(Attended(body["sentence"], src, ["<bos>", *tgt[:-1]], tgt, {"cross": cross}), roles, n=2)


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    store = ClassStore(tmp_path_factory.mktemp("quiz") / "classes.sqlite3")
    with gr.Blocks() as demo:
        gr.Markdown("explorer")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    routes = class_router(store, sentence_quiz, join_address("127.0.0.1", port)).routes  # as python app.py gives them
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True,
                app_kwargs={"routes": routes})
    yield demo.local_url.rstrip("/")
    demo.close()
    store.close()


def smallest_text_px(page) -> float:
    return page.evaluate("""() => Math.min(...[...document.querySelectorAll('body *')]
        .filter((e) => e.offsetParent !== null && [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim()))
        .map((e) => parseFloat(getComputedStyle(e).fontSize)))""")


@pytest.mark.timeout(120)
def test_a_teacher_and_three_students_run_a_question(url):
    dialogs = []
    with chromium() as browser:
        board = browser.new_page(viewport={"width": 1280, "height": 900})
        board.goto(f"{url}/class/board")
        board.fill("#sentence", SENTENCE)
        board.click("button[type=submit]")
        expect(board.locator("#code")).to_have_text(re.compile(r"^[A-Z2-9]{6}$"))  # no string eval: the CSP forbids it
        code = board.text_content("#code")
        assert "phones cannot reach it" in board.text_content("#reach")
        assert board.locator("#qr").evaluate("img => img.decode().then(() => img.naturalWidth)") > 0
        assert code not in board.url and "token" not in board.url  # nothing secret on the projector's address
        pages = [browser.new_context(**PHONE).new_page()] + [browser.new_page() for _ in range(2)]
        for page in pages:
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(f"{url}/class/{code}")
            page.wait_for_selector("#words button")
        phone = pages[0]
        words = phone.locator("#words button")
        assert words.nth(1).text_content() == "<b>geese</b>" and phone.locator("#words b").count() == 0
        assert smallest_text_px(phone) >= 16
        assert phone.evaluate("document.scrollingElement.scrollWidth") <= 390
        phone.focus("#words button >> nth=0")
        phone.keyboard.press("Tab")  # the second word, from the keyboard
        phone.keyboard.press("Space")
        assert words.nth(1).get_attribute("aria-pressed") == "true"
        assert phone.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"
        phone.keyboard.press("Tab")
        phone.keyboard.press("Enter")  # a second word: at most two are chosen
        for page, word in ((phone, None), (pages[1], 1), (pages[2], 2)):
            if word is not None:
                page.locator("#words button").nth(word).click()
            page.click("#send")
            expect(page.locator("#status")).to_have_text(re.compile("^Sent"))
        expect(board.locator("#count")).to_have_text(re.compile("^3 of 3 answered"))
        board.click("#reveal")
        for page in pages:
            page.wait_for_selector("#reveal:not([hidden])")
            assert page.locator("#bars li.top .word").first.text_content() == "Four"
            assert page.text_content("#role") == "Role of head 0."
        assert phone.locator("#bars li.guess").count() == 2
        assert pages[2].locator("#bars li.guess .word").text_content() == "cross"
    assert dialogs == []  # the markup in the words never ran
