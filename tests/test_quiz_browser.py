"""The class quiz's pages in a real browser (Playwright + Debian chromium), nothing mocked.

- Over the real app (`python app.py` on the shipped en-de checkpoint): a teacher's board and three students' pages
  (one a phone, 390x844, joining and answering from the keyboard) run a question from joining to the reveal; a
  student alone runs the practice quiz on a phone from the keyboard; axe-core (tests/a11y, pinned) finds nothing
  critical, serious or moderate on the student's page before and after a reveal, the practice page and the
  board with a class running.
- Over a launched gr.Blocks with the class routes and `make_quiz` over fixed maps whose source words are the
  teacher's sentence, markup included: the markup stays text on every page.
"""
from __future__ import annotations

import re
import socket
import sys
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
from conftest import require_asset

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_browser import TIMEOUT_MS, chromium  # noqa: E402, I001  (skips without chromium or playwright)
from playwright.sync_api import expect  # noqa: E402
from app_server import ROOT, running_app  # noqa: E402

from transformer.explorer.panels.quiz.questions import Attended, HeadRole, make_quiz  # noqa: E402
from transformer.explorer.panels.quiz.routes import class_router, join_address  # noqa: E402
from transformer.explorer.panels.quiz.store import ClassStore  # noqa: E402

pytestmark = pytest.mark.slow
SENTENCE = "Four <b>geese</b> cross the <img src=x onerror=alert(1)> river ."
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
EN_DE = ROOT / "checkpoints" / "en-de"
AXE = ROOT / "tests" / "a11y" / "node_modules" / "axe-core" / "axe.min.js"
AXE_FAILS = ("critical", "serious", "moderate")
OURS = "Yesterday my brother found an old key under the red sofa."  # our own sentence, not a corpus line


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


@pytest.fixture(scope="module")
def real_app(tmp_path_factory):
    """`python app.py` on the shipped en-de checkpoint, its classes in a fresh database."""
    if not (EN_DE / "model.safetensors").is_file():
        pytest.skip("checkpoints/en-de is not here")
    database = tmp_path_factory.mktemp("real-quiz") / "classes.sqlite3"
    with running_app({"TRANSFORMER_CHECKPOINT": str(EN_DE), "TRANSFORMER_CLASS_DB": str(database),
                      "TRANSFORMER_THREADS": "1"}, timeout_s=240) as server:
        yield server.url.rstrip("/")


def axe_problems(page, where: str) -> list[tuple]:
    """What axe-core finds on `page` at `impact` critical, serious or moderate (its script evaluated through the
    browser's protocol: the page's CSP allows no inline script)."""
    if not page.evaluate("Boolean(window.axe)"):
        page.evaluate(AXE.read_text())
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    assert len(result["passes"]) > 10, where  # axe ran its rules on the page
    return [(where, v["impact"], v["id"], [n["target"] for n in v["nodes"]][:4]) for v in result["violations"]
            if v["impact"] in AXE_FAILS]


def watched(page, dialogs: list, errors: list):
    page.set_default_timeout(TIMEOUT_MS)
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page


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


@pytest.mark.timeout(420)
def test_the_real_app_runs_a_class_question_from_join_to_reveal(real_app):
    """A teacher's board and three students (the first a phone joining and answering from the keyboard) over
    `python app.py` on en-de: the model's own questions, the live count, the reveal on every page."""
    require_asset(AXE, "npm ci --prefix tests/a11y")
    url, found, dialogs, errors = real_app, [], [], []
    with chromium() as browser:
        board = watched(browser.new_page(viewport={"width": 1280, "height": 900}), dialogs, errors)
        board.goto(f"{url}/class/board?text=" + OURS.replace(" ", "+"))
        expect(board.locator("#sentence")).to_have_value(OURS)
        board.click("button[type=submit]")
        expect(board.locator("#code")).to_have_text(re.compile(r"^[A-Z2-9]{6}$"))
        code = board.text_content("#code")
        expect(board.locator("#count")).to_have_text("0 of 0 answered")
        phone = watched(browser.new_context(**PHONE).new_page(), dialogs, errors)
        phone.goto(f"{url}/class")  # the phone types the room code shown on the board
        phone.focus("#code")
        phone.keyboard.type(code.lower())
        phone.keyboard.press("Enter")
        others = [watched(browser.new_page(), dialogs, errors) for _ in range(2)]
        for page in others:
            page.goto(f"{url}/class/{code}")
        for page in (phone, *others):
            page.wait_for_selector("body[data-question='0']")
        prompt = phone.text_content("#prompt")
        assert prompt.startswith("When the model writes") and "head" in prompt
        words = phone.locator("#words button")
        n = words.count()
        assert "brother" in words.all_text_contents() and n >= 8
        assert smallest_text_px(phone) >= 16
        assert phone.evaluate("document.scrollingElement.scrollWidth") <= 390
        found += axe_problems(phone, "student, phone, question open")
        phone.keyboard.press("Tab")  # the first word
        phone.keyboard.press("Tab")  # the second
        phone.keyboard.press("Space")
        assert words.nth(1).get_attribute("aria-pressed") == "true"
        assert phone.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"
        for _ in range(n - 1):  # past the other words, to "Send my guess"
            phone.keyboard.press("Tab")
        assert phone.evaluate("document.activeElement.id") == "send"
        phone.keyboard.press("Enter")
        expect(phone.locator("#status")).to_have_text(re.compile("^Sent"))
        for page, word in ((others[0], 0), (others[1], n - 2)):
            page.locator("#words button").nth(word).click()
            page.click("#send")
            expect(page.locator("#status")).to_have_text(re.compile("^Sent"))
        expect(board.locator("#count")).to_have_text("3 of 3 answered")
        assert sum(int(c.split()[0]) for c in board.locator("#tally td.num:nth-child(2)").all_text_contents()) == 3
        found += axe_problems(board, "board, class running")
        board.click("#reveal")
        expect(board.locator("#reveal")).to_be_disabled()
        top = board.locator("#tally tr.top td:first-child").first.text_content()
        for page in (phone, *others):
            page.wait_for_selector("body[data-question='0-revealed']")
            assert page.locator("#bars li.top .word").first.text_content() == top
            assert page.text_content("#role").strip()
        assert phone.locator("#bars li.guess .word").all_text_contents() == [words.nth(1).text_content()]
        assert phone.locator("#bars li.guess .tag.guess").text_content() == "your guess"
        assert smallest_text_px(phone) >= 16
        found += axe_problems(phone, "student, phone, revealed")
        found += axe_problems(board, "board, revealed")
    assert found == [] and dialogs == [] and errors == []


@pytest.mark.timeout(300)
def test_a_student_alone_practises_on_a_phone_from_the_keyboard(real_app):
    """The practice link on a phone: about 5 of the model's questions, each revealed after the guess with the
    guess and the head's top word named, then the score; a teacher's one-question link; a bad link's error."""
    require_asset(AXE, "npm ci --prefix tests/a11y")
    url, found, dialogs, errors = real_app, [], [], []
    with chromium() as browser:
        phone = watched(browser.new_context(**PHONE).new_page(), dialogs, errors)
        phone.goto(f"{url}/class/practice?text=" + OURS.replace(" ", "+"))
        phone.wait_for_selector("body[data-question='0']")
        assert phone.text_content("#progress") == "Question 1 of 5"
        assert phone.text_content("#send") == "Check my guess"
        assert smallest_text_px(phone) >= 16
        found += axe_problems(phone, "practice, question")
        for index in range(5):
            phone.keyboard.press("Tab")  # the first word (the focus is on the question's heading, or the page)
            phone.keyboard.press("Space")
            assert phone.locator("#words button").first.get_attribute("aria-pressed") == "true"
            for _ in range(phone.locator("#words button").count()):
                phone.keyboard.press("Tab")
            assert phone.evaluate("document.activeElement.id") == "send"
            phone.keyboard.press("Enter")
            phone.wait_for_selector(f"body[data-question='{index}-revealed']")
            first = phone.locator("#bars li").first
            assert "your guess" in first.text_content() and re.search(r"\d+%", first.text_content())
            assert phone.locator("#bars li.top .tag.top").count() >= 1 and phone.text_content("#role")
            assert phone.evaluate("document.activeElement.id") == "next"
            assert "&head=" in phone.get_attribute("#question-link", "href")  # the question's own link
            if index == 0:
                assert smallest_text_px(phone) >= 16
                assert phone.evaluate("document.scrollingElement.scrollWidth") <= 390
                found += axe_problems(phone, "practice, revealed")
            phone.keyboard.press("Enter")
        phone.wait_for_selector("body[data-question='end']")
        assert re.fullmatch(r"You matched the head's top word \d times? out of 5\.", phone.text_content("#score"))
        found += axe_problems(phone, "practice, the score")
        # a teacher's link asks one question of their own: when the model writes "fand" (output token 1)
        phone.goto(f"{url}/class/practice?text=" + OURS.replace(" ", "+") + "&head=3.6&target=1")
        phone.wait_for_selector("body[data-question='0']")
        assert phone.text_content("#progress") == "Question 1 of 1" and "“fand”" in phone.text_content("#prompt")
        assert "3.6" in phone.text_content("#prompt")
        phone.goto(f"{url}/class/practice?text=" + OURS.replace(" ", "+") + "&head=9.9&target=1")
        phone.wait_for_selector("body[data-question='error']")
        assert "layers" in phone.text_content("#error")
        found += axe_problems(phone, "practice, a bad link")
    assert found == [] and dialogs == [] and errors == []


def test_the_lessons_quiz_is_what_the_app_asks(real_app):
    """docs/teaching.md's 5-minute quiz: the board's and the practice links answer, and the questions, the words
    the heads look at and their weights are what the page says, on `python app.py` (en-de)."""
    import httpx

    lesson = (ROOT / "docs" / "teaching.md").read_text().split("## A 5-minute class quiz")[1]
    links = re.findall(r"\(http://127\.0\.0\.1:7860(/class/[^)\s]+)\)", lesson)
    assert len(links) == 4 and links[0].startswith("/class/board?text=") and OURS.replace(" ", "+") in links[0]
    quiz = httpx.get(real_app + links[1].replace("/class/practice", "/class/api/practice"), timeout=120).json()

    def said(q: dict) -> tuple:
        top = max(q["answers"], key=lambda i: q["weights"][i])
        return q["translation"][q["target"]], q["head"], q["words"][top], f"{round(100 * q['weights'][top])}%"

    table = re.findall(r'\| writing "(\w+)", head (\d\.\d) \| "(\w+)" \((\d+%)\)', lesson)
    assert [said(q) for q in quiz["questions"]] == table and len(table) == 5
    assert " ".join(quiz["questions"][0]["translation"][:-1]).replace(" .", ".") in " ".join(lesson.split())
    listed = re.findall(r'Writing "(\w+)", where does head (\d\.\d) look\?\]\([^)]*\)\s+\("(\w+)", (\d+%)', lesson)
    assert len(listed) == 2
    for link, (word, head, top, weight) in zip(links[2:], listed):
        one = httpx.get(real_app + link.replace("/class/practice", "/class/api/practice"), timeout=120).json()
        assert [said(q) for q in one["questions"]] == [(word, head, top, weight)]


def started_class(url: str) -> tuple[str, dict]:
    import httpx

    created = httpx.post(f"{url}/class/api/classes", json={"sentence": "Two owls watch the moon ."}, timeout=30).json()
    return created["code"], {"X-Teacher-Token": created["teacher_token"]}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("stream", ["followed", "refused"])
def test_a_phone_hears_the_next_question_by_its_stream_or_else_by_polling(url, stream):
    """The page follows the app's stream of changes and asks nothing while it lasts; where the stream cannot be
    had (a proxy refusing it here) the page polls, and the next question shows either way."""
    import httpx

    code, teacher = started_class(url)
    with chromium() as browser:
        phone = browser.new_context(**PHONE).new_page()
        phone.set_default_timeout(TIMEOUT_MS)
        if stream == "refused":
            phone.route("**/events", lambda route: route.fulfill(status=502, body="bad gateway"))
        asked = []
        phone.on("request", lambda r: asked.append(r.url) if r.url.endswith("/question") else None)
        phone.goto(f"{url}/class/{code}")
        phone.wait_for_selector("body[data-question='0']")
        assert httpx.post(f"{url}/class/api/{code}/next", json={}, headers=teacher, timeout=30).status_code == 200
        phone.wait_for_selector("body[data-question='1']")
        assert (asked == []) == (stream == "followed"), asked
