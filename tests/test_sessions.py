"""A session's answers count only while they answer its newest request (`sessions.SessionGenerations`,
`sessions.newest_answer`), and the heads-off answer carries its texts with its maps. The browser side of the same
rule is tests/test_browser_order.py."""
from __future__ import annotations

import sys
import threading
from pathlib import Path

import gradio as gr
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_server import app_env, import_app  # noqa: E402

from transformer.explorer.web.sessions import (EDIT, GENERATION, NEW, SESSION, SessionGenerations, newest_answer,
                                         rerun_ticket, stamped)


def test_the_newest_request_of_a_session_wins_and_nothing_is_kept_after():
    generations = SessionGenerations()
    old = generations.begin("s", EDIT)
    new = generations.begin("s", NEW)
    assert new > old
    assert generations.finish("s", old) is False  # heads off asked before the translation: dropped
    assert generations.finish("s", new) is True
    later = generations.begin("s", NEW)
    assert later > new and generations.finish("s", later) is True  # numbers keep growing for the page


def memory_growth(run) -> int:
    """Bytes still allocated after `run()` that were not before (tracemalloc)."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        run()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_nothing_is_kept_of_a_session_once_its_requests_are_done():
    """Thousands of sessions, each a translation, a heads-off request void beside it and another after it, all
    finished: the generations hold no more memory than before (a session left with a request in flight, as the
    control, holds some)."""
    generations, sessions = SessionGenerations(), [f"session-{i}" for i in range(1000)]

    def finished():
        for session in sessions:
            translation = generations.begin(session, NEW)
            assert generations.begin(session, EDIT) is None
            generations.finish(session, translation)
            generations.finish(session, generations.begin(session, EDIT))

    def left_running():
        for session in sessions:
            generations.begin(session, NEW)

    assert memory_growth(finished) < 10_000
    assert memory_growth(left_running) > 100_000  # what is kept per session in flight shows


def test_an_edit_that_starts_during_a_new_translation_is_void():
    generations = SessionGenerations()
    translation = generations.begin("s", NEW)
    assert generations.begin("s", EDIT) is None  # it would change the result about to be replaced
    assert generations.finish("s", translation) is True
    edit = generations.begin("s", EDIT)
    assert edit is not None and generations.finish("s", edit) is True


def test_sessions_never_drop_each_others_answers():
    generations = SessionGenerations()
    mine, theirs = generations.begin("a", EDIT), generations.begin("b", NEW)
    newer = generations.begin("a", EDIT)
    assert newer is not None  # b's translation is not a's
    assert generations.finish("b", theirs) is True
    assert generations.finish("a", mine) is False  # a's second request is newer
    assert generations.finish("a", newer) is True  # b's end forgot nothing of a


def run_in_session(session: str, fn, *args):
    token = SESSION.set(session)
    try:
        return fn(*args)
    finally:
        SESSION.reset(token)


def test_an_older_answer_is_skipped_and_the_newer_one_carries_its_generation():
    newest = newest_answer(SessionGenerations())
    started, release = threading.Event(), threading.Event()

    def slow(text: str) -> dict:
        started.set()
        release.wait(10)
        return {"text": text, "gen": GENERATION.get()}

    def fast(text: str) -> dict:
        return {"text": text, "gen": GENERATION.get()}

    answers = {}
    thread = threading.Thread(target=lambda: answers.update(old=run_in_session("s", newest(EDIT)(slow), "long")))
    thread.start()
    assert started.wait(10)
    answers["new"] = run_in_session("s", newest(NEW)(fast), "short")
    release.set()
    thread.join(10)
    assert answers["new"]["text"] == "short" and isinstance(answers["new"]["gen"], int)
    assert answers["old"] == gr.skip()  # every output, the session's result too, kept


def test_a_handler_called_inside_another_answers_as_one_request_and_outside_a_session_as_itself():
    newest = newest_answer(SessionGenerations())
    inner = newest(EDIT)(lambda: GENERATION.get())
    outer = newest(NEW)(lambda: (GENERATION.get(), inner()))
    generation, nested = run_in_session("s", outer)
    assert nested == generation  # not a second, newer request that would drop the first
    assert newest(NEW)(lambda: GENERATION.get())() is None  # in-process callers (tests, benches): no ordering
    with pytest.raises(ValueError):
        newest("sometimes")


@pytest.mark.parametrize("data, ticket", [({"ticket": 3}, 3), ({"ticket": True}, None), ({"ticket": "3"}, None),
                                          ({"ticket": 0}, None), ({"ticket": 2 ** 60}, None), ({}, None)])
def test_a_reruns_ticket_is_sent_back_only_when_it_is_a_small_positive_int(data, ticket):
    assert rerun_ticket(data) == ticket


def test_a_payload_carries_its_generation_and_ticket_without_changing_the_one_kept():
    kept = {"rev": 1}
    token = GENERATION.set(7)
    try:
        out = stamped(kept, 2)
    finally:
        GENERATION.reset(token)
    assert out == {"rev": 1, "gen": 7, "answers": 2} and kept == {"rev": 1}
    assert stamped(kept) is kept and stamped(None, 2) is None


def test_the_heads_off_answer_carries_the_texts_with_the_maps():
    """One response: the translation box and the maps cannot change seconds apart."""
    app = import_app(app_env()[0])
    reruns = [fn for fn in app.demo.fns.values() if fn.name == "on_rerun"]
    assert len(reruns) == 1
    outputs = {getattr(c, "elem_id", None) for c in reruns[0].outputs}
    assert {"translation", "nbest", "notice", "explorer"} <= outputs, outputs
    assert not [fn for fn in app.demo.fns.values() if fn.name == "rerun_texts"]
