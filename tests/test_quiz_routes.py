"""The class quiz's routes (transformer/explorer/panels/quiz/routes.py) mounted on a real, launched gr.Blocks and
called over real HTTP (httpx): a whole question from start to summary, and every kind of bad input, each answered
with a clear JSON error that touches nothing else. The quiz is made by the real `make_quiz` over fixed maps (the
model's own quiz: tests/test_quiz_questions.py)."""
from __future__ import annotations

import itertools
import json
import re
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import gradio as gr
import httpx
import numpy as np
import pytest

from transformer.explorer.panels.quiz.questions import Attended, HeadRole, make_quiz, parse_specs, question_from_spec
from transformer.explorer.panels.quiz.routes import (
    FLOOD_ANSWERS,
    MAX_BODY,
    START_LIMIT,
    JoinAddress,
    class_router,
    client_address,
    join_address,
    owner_key,
    request_base,
    trusted_proxies,
)
from transformer.explorer.panels.quiz.store import MAX_LIVE_PER_OWNER, ClassStore, TooMany
from transformer.explorer.panels.quiz.stream import Streams

QUIZ_DIR = Path(__file__).resolve().parents[1] / "transformer" / "explorer" / "panels" / "quiz"
SRC = ["▁Two", "▁owls", "▁watch", "▁the", "▁moon", ".", "<eos>"]
TGT = ["▁Zwei", "▁Eulen", "▁beobachten", "▁den", "▁Mond", ".", "<eos>"]
MARKUP = "<script>alert(1)</script><img src=x onerror=alert(2)>"
MADE: list[dict] = []  # every request quiz_maker was given
AS_JSON = {"Content-Type": "application/json"}
ADDRESSES = itertools.count(1)
SLOW = threading.Semaphore(0)  # released by quiz_maker when a slow quiz starts
GO = threading.Event()  # a slow quiz waits for it


def quiz_maker(body: dict) -> list:
    """Questions over fixed maps (a teacher's specs, or a quiz), with the teacher's sentence as the questions'
    text (markup and all)."""
    MADE.append(body)
    if body.get("sentence") == "The model breaks.":
        raise RuntimeError("a model that fails")
    if body.get("sentence") == "The model is slow.":
        SLOW.release()
        GO.wait(timeout=30)
    cross = np.full((1, 3, len(TGT), len(SRC)), 0.02, np.float32)
    for t in range(len(TGT)):
        cross[:, :, t, t] = 0.88
    roles = {("cross", 0, h): HeadRole(f"role {h} {{source}}", 1 - h / 10) for h in range(3)}
    if "questions" in body:
        specs = parse_specs(body["questions"])
        return [question_from_spec(s, Attended(s.sentence, SRC, ["<bos>", *TGT[:-1]], TGT, {"cross": cross}), roles)
                for s in specs]
    return make_quiz(Attended(body.get("sentence", ""), SRC, ["<bos>", *TGT[:-1]], TGT, {"cross": cross}), roles, n=3)


class Clock:
    def __init__(self):
        self.now = 2_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def clock():
    return Clock()


@pytest.fixture(scope="module")
def quiz_store(tmp_path_factory, clock):
    store = ClassStore(tmp_path_factory.mktemp("quiz") / "classes.sqlite3", clock=clock)
    yield store
    store.close()


@pytest.fixture(scope="module")
def server(quiz_store, clock):
    """A tiny gr.Blocks, launched on a free port, with the class routes mounted: (client, store's clock)."""
    store = quiz_store
    with gr.Blocks() as demo:
        gr.Markdown("The explorer would be here.")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # as python app.py gives them, behind one proxy that sets X-Forwarded-For: each test's teacher its own client
    routes = class_router(store, quiz_maker, join_address("127.0.0.1", port), proxies=1).routes
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True,
                app_kwargs={"routes": routes})
    with httpx.Client(base_url=demo.local_url.rstrip("/"), timeout=10) as client:
        yield client, clock
    demo.close()


def teacher_address() -> dict:
    """A new teacher's client, as the proxy in front of the app says (X-Forwarded-For)."""
    n = next(ADDRESSES)
    return {"X-Forwarded-For": f"198.51.100.{n % 250}, 203.0.{n // 250}.{n % 250}"}


def start(client: httpx.Client, sentence: str = "Two owls watch the moon.") -> tuple[str, dict]:
    created = client.post("/class/api/classes", json={"sentence": sentence}, headers=teacher_address())
    assert created.status_code == 200, created.text
    body = created.json()
    return body["code"], {"X-Teacher-Token": body["teacher_token"]}


def join(client: httpx.Client, code: str) -> dict:
    joined = client.post(f"/class/api/{code}/join", json={})
    assert joined.status_code == 200, joined.text
    return {"X-Student-Token": joined.json()["student_token"]}


def error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    return response.json()["error"]


def test_a_whole_class_over_http(server):
    client, _ = server
    code, teacher = start(client)
    students = [join(client, code) for _ in range(3)]
    seen = client.get(f"/class/api/{code}/question", headers=students[0]).json()
    assert seen["index"] == 0 and seen["count"] == 3 and "weights" not in seen["question"]
    assert seen["question"]["words"] == ["Two", "owls", "watch", "the", "moon", "."]
    for student, words in zip(students, ([0], [0, 1], [2])):
        assert client.post(f"/class/api/{code}/answer", json={"question": 0, "words": words}, headers=student).json()[
            "changes"] == 1
    board = client.get(f"/class/api/{code}/board", headers=teacher).json()
    assert (board["answered"], board["students"], board["counts"][:3]) == (3, 3, [2, 1, 1])
    assert client.post(f"/class/api/{code}/reveal", json={}, headers=teacher).json()["revealed"]
    revealed = client.get(f"/class/api/{code}/question", headers=students[2]).json()
    assert revealed["question"]["answers"] == [0] and revealed["my_answer"] == [2]
    assert revealed["question"]["role"] == "role 0 English"
    for _ in range(3):
        client.post(f"/class/api/{code}/next", json={}, headers=teacher)
    summary = client.get(f"/class/api/{code}/summary", headers=teacher).json()["questions"]
    assert summary[0]["head"] == "1.1" and (summary[0]["answered"], summary[0]["missed"]) == (3, 1)
    assert summary[0]["missed_share"] == pytest.approx(1 / 3, abs=1e-3)


class EventReader:
    """A page's stream of changes (GET .../events) read over real HTTP: each Server-Sent Event's name and JSON."""

    def __init__(self, response: httpx.Response):
        self.response, self.lines = response, response.iter_lines()

    def next(self) -> tuple[str, dict]:
        name, data = "message", []
        for line in self.lines:
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif not line and data:
                return name, json.loads("\n".join(data))
        raise EOFError("the stream ended")


@contextmanager
def events(base: str, path: str, headers: dict) -> Iterator[EventReader]:
    with httpx.Client(base_url=base, timeout=10) as own, own.stream("GET", path, headers=headers) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        yield EventReader(response)


def test_a_student_and_the_board_hear_each_change_as_it_happens(server):
    """The question and the tally pushed over Server-Sent Events: the view at once, then each change (a join
    and an answer to the board, a reveal and a next to everyone), and the stream ends with the class."""
    client, _ = server
    code, teacher = start(client)
    student, base = join(client, code), str(client.base_url)
    with events(base, f"/class/api/{code}/events", student) as phone, \
            events(base, f"/class/api/{code}/board/events", teacher) as board:
        assert phone.next()[1]["index"] == 0 and board.next()[1]["students"] == 1
        join(client, code)
        assert board.next()[1]["students"] == 2
        client.post(f"/class/api/{code}/answer", json={"question": 0, "words": [1]}, headers=student)
        assert board.next()[1]["answered"] == 1
        client.post(f"/class/api/{code}/reveal", json={}, headers=teacher)
        seen = phone.next()[1]
        assert seen["revealed"] and seen["my_answer"] == [1] and seen["question"]["answers"] == [0]
        assert board.next()[1]["revealed"]
        for _ in range(3):
            client.post(f"/class/api/{code}/next", json={}, headers=teacher)
        views = [phone.next()[1] for _ in range(3)]
        assert [v["index"] for v in views] == [1, 2, 2] and views[-1]["finished"]
        with pytest.raises(EOFError):
            phone.next()  # finished: the app closes it


def test_a_stream_is_refused_with_json_where_a_poll_would_be(server):
    client, _ = server
    code = start(client)[0]
    base = str(client.base_url)
    assert "joined" in error(client.get(f"/class/api/{code}/events", headers={"X-Student-Token": "x" * 32}), 403)
    assert "Only the teacher" in error(client.get(f"/class/api/{code}/board/events", headers={"X-Teacher-Token": "y" * 32}), 403)
    assert error(client.get("/class/api/ABCDEF/events", headers=join(client, code)), 404)
    student = join(client, code)
    with events(base, f"/class/api/{code}/events", student) as one, events(base, f"/class/api/{code}/events", student):
        assert one.next()[1]["index"] == 0
        refused = client.get(f"/class/api/{code}/events", headers=student)
        assert "elsewhere" in error(refused, 429)  # a third for one token: the page polls instead
        assert client.get(f"/class/api/{code}/question", headers=student).status_code == 200


def stream_status(base: str, path: str, headers: dict) -> int:
    """The status a stream opens with (closed at once, as a page that goes away)."""
    with httpx.Client(base_url=base, timeout=10) as own, own.stream("GET", path, headers=headers) as response:
        return response.status_code


def test_a_page_that_goes_away_gives_its_stream_back(server):
    client, _ = server
    code = start(client)[0]
    student, base, path = join(client, code), str(client.base_url), f"/class/api/{code}/events"
    with events(base, path, student) as one, events(base, path, student) as two:
        assert one.next()[0] == two.next()[0] == "message"
        assert stream_status(base, path, student) == 429
    deadline = time.monotonic() + 10  # the server hears both go when their connections close
    while stream_status(base, path, student) == 429 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stream_status(base, path, student) == 200


def test_streams_are_bounded_per_client_and_in_all_and_a_closed_one_frees_its_place():
    streams = Streams(total=3, per_client=2)
    first = streams.open("a")
    streams.open("a")
    with pytest.raises(TooMany, match="elsewhere"):
        streams.open("a")
    streams.open("b")
    with pytest.raises(TooMany, match="Many pages"):
        streams.open("c")
    first()
    first()  # counted once, however often it is called
    assert streams.count == 2
    streams.open("c")
    assert streams.count == 3


def test_a_body_that_is_not_json_is_415_and_changes_nothing(server):
    """What a cross-site form can send (a form, plain text, nothing at all) never reaches a state-changing
    endpoint: only a JSON body, which another site's page cannot send without asking first."""
    client, _ = server
    code, teacher = start(client)
    student = join(client, code)
    posts = [("/class/api/classes", {}, b'{"sentence": "Two owls watch the moon."}'), (f"/class/api/{code}/join", {}, b"{}"),
             (f"/class/api/{code}/answer", student, b'{"question": 0, "words": [1]}'),
             (f"/class/api/{code}/reveal", teacher, b"{}"), (f"/class/api/{code}/next", teacher, b"{}")]
    made = len(MADE)
    for path, headers, body in posts:
        for kind in ("application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x", None):
            sent = headers | ({"Content-Type": kind} if kind else {})
            assert "application/json" in error(client.post(path, content=body if kind else b"", headers=sent), 415)
    board = client.get(f"/class/api/{code}/board", headers=teacher).json()
    assert (board["students"], board["answered"], board["index"], board["revealed"]) == (1, 0, 0, False)
    assert len(MADE) == made  # no model work either
    assert client.post(f"/class/api/{code}/join", content=b"{}",
                       headers={"Content-Type": "application/json; charset=utf-8"}).status_code == 200


def test_a_failing_database_is_a_json_503_and_reads_go_on(server, quiz_store):
    client, _ = server
    code, teacher = start(client)
    student = join(client, code)
    assert client.post(f"/class/api/{code}/answer", json={"question": 0, "words": [1]}, headers=student).status_code == 200
    db = quiz_store._connection()
    db.execute("PRAGMA query_only = 1")  # the database turns read-only mid-lesson
    try:
        for path, headers, body in ((f"/class/api/{code}/join", {}, {}), ("/class/api/classes", {}, {"sentence": "x y"}),
                                    (f"/class/api/{code}/answer", student, {"question": 0, "words": [2]}),
                                    (f"/class/api/{code}/reveal", teacher, {})):
            assert "read-only" in error(client.post(path, json=body, headers=headers), 503), path
        board = client.get(f"/class/api/{code}/board", headers=teacher).json()
        assert (board["answered"], board["counts"][1]) == (1, 1)  # the answer given before is kept
    finally:
        db.execute("PRAGMA query_only = 0")
    assert client.post(f"/class/api/{code}/reveal", json={}, headers=teacher).json()["revealed"]
    assert client.get("/class/api/status").json() == {"available": True, "notice": ""}


def test_a_store_call_that_waits_holds_up_no_other_request(server, quiz_store):
    """A join waits on the store (its lock held here, as a long write would) while other requests are answered
    at once: store calls run in worker threads, not on the server's one event loop."""
    client, _ = server
    code, _ = start(client)
    base = str(client.base_url)
    with ThreadPoolExecutor(1) as pool, httpx.Client(base_url=base, timeout=10) as other:
        with quiz_store._lock:
            waiting = pool.submit(other.post, f"/class/api/{code}/join", json={})
            seen, deadline = 0, time.monotonic() + 1.0
            while time.monotonic() < deadline:  # a second of other requests, each answered promptly
                assert client.get("/class/files/quiz.css", timeout=0.5).status_code == 200
                seen += 1
            assert not waiting.done() and seen > 5
        assert waiting.result(timeout=10).status_code == 200


def test_a_stranger_starting_classes_is_held_to_its_share_and_a_teacher_still_starts(server, quiz_store):
    client, _ = server
    stranger = teacher_address()
    statuses = [client.post("/class/api/classes", json={"sentence": "Two owls watch the moon."},
                            headers=stranger).status_code for _ in range(START_LIMIT + 4)]
    assert statuses == [200] * START_LIMIT + [429] * 4
    refused = client.post("/class/api/classes", json={"sentence": "Two owls."}, headers=stranger)
    assert "wait" in error(refused, 429) and refused.headers["retry-after"]
    code, teacher = start(client)  # another address: at once
    assert client.get(f"/class/api/{code}/board", headers=teacher).status_code == 200
    db = sqlite3.connect(quiz_store.path)
    most = db.execute("SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM classes WHERE expires > ? GROUP BY owner)",
                      (quiz_store.clock(),)).fetchone()[0]
    db.close()
    assert most <= MAX_LIVE_PER_OWNER  # its own oldest went as it started more


def test_model_work_waiting_is_bounded_per_client_and_in_all(server):
    client, _ = server
    GO.clear()
    one, two = teacher_address(), teacher_address()
    slow = {"sentence": "The model is slow."}
    base = str(client.base_url)
    with ThreadPoolExecutor(4) as pool, httpx.Client(base_url=base, timeout=30) as other:
        try:
            waiting = [pool.submit(other.post, "/class/api/classes", json=slow, headers=one) for _ in range(2)]
            assert SLOW.acquire(timeout=10) and SLOW.acquire(timeout=10)  # both are with the model
            assert "still being made" in error(client.post("/class/api/classes", json=slow, headers=one), 429)
            practice = client.get("/class/api/practice", params={"text": "Another sentence."}, headers=one)
            assert "still being made" in error(practice, 429)
            assert client.post("/class/api/classes", json={"sentence": "Two owls."}, headers=two).status_code == 200
        finally:
            GO.set()
        assert [w.result(timeout=30).status_code for w in waiting] == [200, 200]
    # the start refused while two were being made does not count: the client's other starts are all there
    more = [client.post("/class/api/classes", json={"sentence": "Two owls."}, headers=one) for _ in range(START_LIMIT - 1)]
    assert [r.status_code for r in more] == [200] * (START_LIMIT - 2) + [429], more[-1].text


def test_the_forwarded_address_counts_only_where_a_proxy_sets_it(monkeypatch):
    from starlette.requests import Request

    def request(forwarded: list[str]) -> Request:
        headers = [(b"x-forwarded-for", value.encode()) for value in forwarded]
        return Request({"type": "http", "method": "GET", "path": "/", "headers": headers, "client": ("10.0.0.9", 5)})

    assert client_address(request(["1.2.3.4"]), 0) == "10.0.0.9"  # no proxy: anyone can write the header
    assert client_address(request(["6.6.6.6, 1.2.3.4"]), 1) == "1.2.3.4"  # what the client wrote is not trusted
    assert client_address(request(["6.6.6.6", "1.2.3.4, 5.6.7.8"]), 2) == "1.2.3.4"
    assert client_address(request([]), 1) == client_address(request(["not an address"]), 1) == "10.0.0.9"
    monkeypatch.delenv("TRANSFORMER_TRUST_FORWARDED", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert trusted_proxies() == 0
    monkeypatch.setenv("SPACE_ID", "someone/quiz")
    assert trusted_proxies() == 1
    monkeypatch.setenv("TRANSFORMER_TRUST_FORWARDED", "0")
    assert trusted_proxies() == 0
    monkeypatch.setenv("TRANSFORMER_TRUST_FORWARDED", "yes")
    assert trusted_proxies() == 0
    secret = b"s" * 32
    assert owner_key("2001:db8::1", secret) == owner_key("2001:db8::ffff:1", secret)  # one /64, one client
    assert owner_key("1.2.3.4", secret) != owner_key("1.2.3.5", secret) and "1.2.3.4" not in owner_key("1.2.3.4", secret)


def test_wrong_and_expired_codes_are_404_with_a_message(server):
    client, clock = server
    for code in ("ZZZZZZ", "abc", "%3Cscript%3E"):
        assert "code" in error(client.post(f"/class/api/{code}/join", json={}), 404)
    code, teacher = start(client)
    student = join(client, code)
    clock.now += 5 * 3600
    try:
        assert "ended" in error(client.get(f"/class/api/{code}/question", headers=student), 404)
        assert error(client.get(f"/class/api/{code}/board", headers=teacher), 404)
    finally:
        clock.now -= 5 * 3600


def test_a_flood_from_one_student_is_429_and_others_still_answer(server):
    client, _ = server
    code, teacher = start(client)
    flooder, other = join(client, code), join(client, code)
    replies = [client.post(f"/class/api/{code}/answer", json={"question": 0, "words": [i % 2]}, headers=flooder)
               for i in range(FLOOD_ANSWERS + 2)]
    assert [r.status_code for r in replies] == [200] * 5 + [429] * (FLOOD_ANSWERS - 3)
    # both caps answer 429; each says which it is, so the flood limit is seen to answer once the change cap has
    assert "changed this answer" in replies[FLOOD_ANSWERS - 1].json()["error"]
    assert [r.json()["error"] for r in replies[FLOOD_ANSWERS:]] == ["Too many answers at once: wait a moment."] * 2
    assert client.post(f"/class/api/{code}/answer", json={"question": 0, "words": [3]}, headers=other).status_code == 200
    assert client.get(f"/class/api/{code}/board", headers=teacher).json()["answered"] == 2


def test_an_answer_to_a_question_not_open_is_409(server):
    client, _ = server
    code, teacher = start(client)
    student = join(client, code)
    assert "not open" in error(client.post(f"/class/api/{code}/answer", json={"question": 1, "words": [0]},
                                           headers=student), 409)
    client.post(f"/class/api/{code}/reveal", json={}, headers=teacher)
    error(client.post(f"/class/api/{code}/answer", json={"question": 0, "words": [0]}, headers=student), 409)


def test_huge_and_malformed_bodies_are_refused(server):
    client, _ = server
    code, teacher = start(client)
    student = join(client, code)
    url = f"/class/api/{code}/answer"
    huge = b'{"question": 0, "words": [' + b"0, " * MAX_BODY + b"0]}"
    assert "bytes" in error(client.post(url, content=huge, headers=student | AS_JSON), 413)
    chunks = (b" " * 1024 for _ in range(64))  # no Content-Length: read until the cap, then refused
    error(client.post(url, content=chunks, headers=student | AS_JSON), 413)
    for body in (b"{not json", b"\xff\xfe", b"[]", b'{"question": 0}', b'{"question": 0, "words": [1, 2, 3]}',
                 b'{"question": "0", "words": [1]}', b'{"question": 0, "words": [true]}',
                 b'{"question": 0, "words": [1, 1]}'):
        error(client.post(url, content=body, headers=student | AS_JSON), 400)
    error(client.post(url, json={"question": 0, "words": [0]}), 403)  # no token
    error(client.post(url, json={"question": 0, "words": [0]}, headers={"X-Student-Token": "x" * 20}), 403)
    error(client.post(f"/class/api/{code}/next", json={}, headers={"X-Teacher-Token": student["X-Student-Token"]}), 403)
    error(client.post("/class/api/classes", content=b"{" * 20000, headers=AS_JSON), 413)
    assert MARKUP not in error(client.post("/class/api/classes", json={"questions": [
        {"sentence": "x", "head": MARKUP, "target": 0}]}), 400)
    assert "2.1" in error(client.post("/class/api/classes", json={"questions": [
        {"sentence": "x", "head": "2.1", "target": 0}]}), 400)  # the model has 1 layer
    assert client.get(f"/class/api/{code}/board", headers=teacher).json()["answered"] == 0  # nothing touched


def test_markup_is_only_ever_data(server):
    client, _ = server
    code, _ = start(client, sentence=MARKUP)
    student = join(client, code)
    response = client.get(f"/class/api/{code}/question", headers=student)
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.json()["question"]["sentence"] == MARKUP  # stored and echoed as the text it is
    refused = client.post(f"/class/api/{code}/answer", json={"question": MARKUP, "words": [0]}, headers=student)
    assert MARKUP not in refused.text and refused.status_code == 400
    assert "<script" not in client.post("/class/api/%3Cscript%3Ealert(1)%3C%2Fscript%3E/join", json={}).text
    for name in ("quiz.js", "board.js"):  # the pages write every text with textContent
        assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write", (QUIZ_DIR / name).read_text())


def test_the_pages_and_their_files_are_served_light_and_closed(server):
    client, _ = server
    code, _ = start(client)
    for path in ("/class", f"/class/{code}", "/class/board", "/class/practice?text=x"):
        page = client.get(path)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert "http" not in re.sub(r'content="[^"]*"', "", page.text)  # nothing from the network
    assert client.get("/class/files/quiz.js").headers["content-type"].startswith("text/javascript")
    assert client.get("/class/files/quiz.css").status_code == 200
    assert client.get("/class/files/..%2Fstore.py").status_code == 404
    qr = client.get(f"/class/qr/{code}.svg")
    assert qr.headers["content-type"] == "image/svg+xml" and qr.text.startswith('<svg xmlns="http://www.w3.org/2000/svg"')
    assert client.get("/").status_code == 200  # gradio's own page is still there


def test_a_practice_link_is_a_whole_quiz_made_once_per_sentence(server):
    client, _ = server
    made = len(MADE)
    first = client.get("/class/api/practice", params={"text": "  Two owls   watch the moon. "})
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["sentence"] == "Two owls watch the moon." and body["count"] == 3 and body["more"] is None
    q = body["questions"][0]  # everything the page needs to reveal after the guess: nothing is asked again
    assert q["words"] == ["Two", "owls", "watch", "the", "moon", "."] and q["answers"] == [0]
    assert q["weights"][0] == pytest.approx(0.88, abs=0.01) and q["role"] == "role 0 English"
    again = client.get("/class/api/practice?text=Two+owls+watch+the+moon.")
    assert again.json() == body and len(MADE) == made + 1  # one quiz per sentence, kept for the next student
    assert MADE[-1] == {"sentence": "Two owls watch the moon."}


def test_a_teachers_question_links_ask_their_own_questions(server):
    client, _ = server
    one = client.get("/class/api/practice", params={"text": "Two owls watch the moon.", "head": "1.2",
                                                    "target": "3"}).json()
    assert one["count"] == 1 and one["more"] == "/class/practice?text=Two+owls+watch+the+moon."
    q = one["questions"][0]
    assert (q["head"], q["translation"][q["target"]], q["answers"]) == ("1.2", "den", [3])
    assert q["link"] == "/class/practice?text=Two+owls+watch+the+moon.&head=1.2&target=3"
    # a question's own link asks it again; several head/target pairs make a quiz of several questions
    assert client.get(q["link"]).status_code == 200
    again = client.get(q["link"].replace("/class/practice", "/class/api/practice")).json()
    assert again["questions"] == one["questions"]
    two = client.get("/class/api/practice?text=Two+owls.&head=1.1&target=0&head=1.3&target=4&kind=cross").json()
    assert [(x["head"], x["target"]) for x in two["questions"]] == [("1.1", 0), ("1.3", 4)]


@pytest.mark.parametrize("query, status, says", [
    ("", 400, "text"),
    ("text=", 400, "characters"),
    ("text=a&text=b", 400, "one text"),
    ("text=" + "a" * 2001, 400, "2000"),
    ("text=a%00b", 400, "control"),
    ("text=Two+owls.&head=9.1&target=0", 400, "1 layers"),
    ("text=Two+owls.&head=1.1&target=99", 400, "output tokens 0 to"),
    ("text=Two+owls.&head=1.1", 400, "each head with its target"),
    ("text=Two+owls.&head=%3Cscript%3E&target=0", 400, "layer.head"),
    ("text=Two+owls.&head=1.1&target=-1", 400, "number of an output token"),
    ("text=Two+owls.&head=1.1&target=%EF%BC%91", 400, "number of an output token"),  # a full-width digit
    ("text=Two+owls.&head=1.1&target=0&kind=encoder", 400, "kind must be"),
    ("text=Two+owls.&kind=cross", 400, "kind goes with"),
    ("text=Two+owls.&" + "&".join(["head=1.1&target=0"] * 11), 400, "at most 10"),
])
def test_bad_practice_links_get_a_clear_error(server, query, status, says):
    client, _ = server
    made = len(MADE)
    message = error(client.get(f"/class/api/practice?{query}"), status)
    assert says in message and "<" not in message
    assert len(MADE) <= made + 1  # the model is asked nothing it can refuse up front
    assert client.get(f"/class/practice?{query}").status_code == 200  # the page shows the error it gets


def test_a_huge_practice_link_is_refused_and_the_server_goes_on(server):
    client, _ = server
    made = len(MADE)
    assert "2000" in error(client.get("/class/api/practice?text=" + "a" * 5000), 400)  # a text over the cap
    try:  # an address longer than the server reads at all: refused, or the connection closed
        assert 400 <= client.get("/class/api/practice?text=" + "a" * 60_000).status_code < 500
    except httpx.RemoteProtocolError:
        pass
    assert len(MADE) == made
    assert client.get("/class/api/practice?text=Two+owls+watch+the+moon.").status_code == 200


def test_a_model_that_fails_is_a_json_error_and_is_asked_again(server):
    client, _ = server
    made = len(MADE)
    for path in ("/class/api/practice?text=The+model+breaks.", "/class/api/practice?text=The+model+breaks."):
        assert "could not make" in error(client.get(path), 503)
    assert "could not make" in error(client.post("/class/api/classes", json={"sentence": "The model breaks."}), 503)
    assert len(MADE) == made + 3  # a failure is not kept


def test_markup_in_a_practice_link_is_data(server):
    client, _ = server
    body = client.get("/class/api/practice", params={"text": MARKUP}).json()
    assert body["sentence"] == MARKUP and body["questions"][0]["sentence"] == MARKUP
    assert "innerHTML" not in (QUIZ_DIR / "quiz.js").read_text()


def test_join_addresses_say_where_phones_connect():
    local = join_address("127.0.0.1", 7860)
    assert not local.reachable and "phones cannot reach it" in local.note and "0.0.0.0" in local.note
    assert not join_address("localhost", 80).reachable
    lan = join_address("0.0.0.0", 7860)
    assert lan.base.endswith(":7860")
    assert lan.reachable == (not lan.base.startswith("http://127.")), lan  # a machine with no network says so
    assert join_address("192.168.1.20", 8000) == JoinAddress("http://192.168.1.20:8000", True,
                                                             "Phones join at http://192.168.1.20:8000/class")


def test_a_space_joins_at_the_address_the_teacher_used():
    from starlette.requests import Request

    scope = {"type": "http", "method": "GET", "path": "/class/api/classes", "query_string": b"", "scheme": "http",
             "server": ("10.0.0.5", 7860), "headers": [(b"host", b"someone-quiz.hf.space"),
                                                      (b"x-forwarded-proto", b"https")]}
    where = request_base(Request(scope), join_address("127.0.0.1", 7860))
    assert where.base == "https://someone-quiz.hf.space" and where.reachable
    json.dumps(where.__dict__)


@pytest.mark.slow
def test_python_app_py_serves_the_class_quiz_beside_the_explorer(tmp_path):
    """`python app.py` mounts the quiz panel's routes once gradio has launched (`Panel.mount`): the board, the
    students' page and the API answer, and the explorer's Class quiz tab links to the board with the sentence."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from app_server import app_env, running_app

    env, _ = app_env()
    with running_app({**env, "TRANSFORMER_CLASS_DB": str(tmp_path / "classes.sqlite3")}) as server:
        url = server.url.rstrip("/")
        for path in ("/class/board", "/class", "/class/files/board.js", "/class/files/quiz.js"):
            assert httpx.get(url + path, timeout=30).status_code == 200, path
        missing = httpx.post(url + "/class/api/ABCDEF/join", json={}, timeout=30)
        assert missing.status_code == 404 and "error" in missing.json()
        page = httpx.get(url + "/", timeout=30).text
        assert "Class quiz" in page and (tmp_path / "classes.sqlite3").is_file()


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_python_app_py_starts_on_a_damaged_database_and_a_class_can_start(tmp_path):
    """Garbage in the file TRANSFORMER_CLASS_DB names: `python app.py` still starts, the explorer answers, the file
    is kept aside, the log and the board's status say so, and a class starts on a fresh database."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from app_server import app_env, running_app

    env, _ = app_env()
    database = tmp_path / "classes.sqlite3"
    database.write_bytes(b"this is not an SQLite database\n" * 64)
    with running_app({**env, "TRANSFORMER_CLASS_DB": str(database)}) as server:
        url = server.url.rstrip("/")
        assert httpx.get(url + "/", timeout=30).status_code == 200  # the explorer
        notice = httpx.get(url + "/class/api/status", timeout=30).json()
        assert notice["available"] and "damaged" in notice["notice"]
        created = httpx.post(url + "/class/api/classes", timeout=120, json={"questions": [
            {"sentence": "h e l l o", "head": "1.1", "target": 0}]})
        assert created.status_code == 200, created.text
        assert created.json()["notice"] == notice["notice"]
        assert "damaged" in server.log_tail(20000)
    kept = [p for p in tmp_path.glob("classes.sqlite3.damaged-*") if not p.name.endswith(("-wal", "-shm"))]
    assert len(kept) == 1 and kept[0].read_bytes().startswith(b"this is not an SQLite database")
    assert kept[0].name in notice["notice"]


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_python_app_py_starts_when_the_database_folder_is_unusable(tmp_path):
    """A class database that cannot be made at all: the explorer starts and answers, the quiz says it is
    unavailable (JSON), and no model work is spent on a class that could not be kept."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from app_server import app_env, running_app

    env, _ = app_env()
    blocker = tmp_path / "a-file"
    blocker.write_text("where the folder should be")
    with running_app({**env, "TRANSFORMER_CLASS_DB": str(blocker / "classes.sqlite3")}) as server:
        url = server.url.rstrip("/")
        assert httpx.get(url + "/", timeout=30).status_code == 200
        assert not httpx.get(url + "/class/api/status", timeout=30).json()["available"]
        refused = httpx.post(url + "/class/api/classes", json={"sentence": "h e l l o"}, timeout=30)
        assert refused.status_code == 503 and "unavailable" in refused.json()["error"]
        assert "class quiz unavailable" in server.log_tail(20000)


def test_a_quiz_is_made_by_the_model_its_sentence_was_on(server):
    client, _ = server
    created = client.post("/class/api/classes", json={"sentence": "Zwei Eulen.", "model": "de-en"},
                          headers=teacher_address())
    assert created.status_code == 200 and MADE[-1] == {"sentence": "Zwei Eulen.", "model": "de-en"}
    error(client.post("/class/api/classes", json={"sentence": "x", "model": 3}, headers=teacher_address()), 400)
    practice = client.get("/class/api/practice", params={"text": "Zwei Eulen.", "model": "de-en"}).json()
    assert MADE[-1] == {"sentence": "Zwei Eulen.", "model": "de-en"}
    assert practice["questions"][0]["link"].endswith("&model=de-en")  # a question's own link keeps its model
    made = len(MADE)
    client.get("/class/api/practice", params={"text": "Zwei Eulen."})  # the default model's quiz is another
    assert len(MADE) == made + 1 and "model" not in MADE[-1]


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_python_app_py_makes_a_german_sentences_quiz_with_de_en(tmp_path):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from app_server import SHIPPED_ENV, running_app

    with running_app({**SHIPPED_ENV, "TRANSFORMER_CLASS_DB": str(tmp_path / "c.sqlite3")}) as server:
        url = server.url.rstrip("/")
        sentence = "Gestern fand mein Bruder einen alten Schlüssel unter dem roten Sofa."
        made = httpx.get(url + "/class/api/practice", params={"text": sentence, "model": "de-en"}, timeout=120)
        assert made.status_code == 200, made.text
        question = made.json()["questions"][0]
        assert "Schlüssel" in question["words"] and "brother" in " ".join(question["translation"])
        unknown = httpx.get(url + "/class/api/practice", params={"text": sentence, "model": "xx-yy"}, timeout=60)
        assert "no model" in unknown.json()["error"] and unknown.status_code == 400
