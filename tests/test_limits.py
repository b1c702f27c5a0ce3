"""One user cannot stall, bloat or fill the app: results under one byte budget (the oldest released, with a
message for whoever acts on one), at most a few model requests in flight per session (the page's events and the
public API alike), a page load that never waits for model work, and one file on disk per export.

The in-flight and page-load tests run the app's own `demo` on a loopback port in this process, so that they can
hold the model's one worker thread busy (`Batcher.call` of a wait) for as long as they need: what they check
happens while the model is provably busy, with no timing in the assertions (the numbers are bench/hostile_load.py's).
"""
from __future__ import annotations

import sys
import threading
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_server import QueueSession, app_env, endpoints, free_port, import_app, queue_call  # noqa: E402

gr = pytest.importorskip("gradio")
from gradio import utils as gradio_utils  # noqa: E402

from transformer.explorer.web import launch, sessions
from transformer.explorer.core import limits
from transformer.explorer.panels.attention import reruns
from transformer.explorer.core import results
from transformer.explorer.panels.tree import service as tree_service

ENV, _ = app_env()
LONG = " ".join("abcdefghijklmnopqrstuvwxyz"[i % 26] for i in range(60))  # a long toy input: 60 letters
WAIT_S = 120  # how long a test waits for something that must happen (never a speed bound)


@pytest.fixture(scope="module")
def app():
    return import_app(ENV)


@pytest.fixture
def small_store(app, monkeypatch):
    """The explorer's results store replaced by one that holds three long results and a half."""
    one, _ = app.explorer.translation.translate(LONG, "beam", 5, app.explorer.models.default_model, 0.6)
    store = results.ResultStore(max_bytes=3 * results.held_bytes(one) + results.held_bytes(one) // 2)
    monkeypatch.setattr(app.explorer.models, "results", store)
    return store


def test_a_results_size_counts_its_arrays_once(app):
    result, _ = app.explorer.translation.translate(LONG, "beam", 5, app.explorer.models.default_model, 0.6)
    att = result.attention  # held twice (the translation's and the candidate's), counted once
    arrays = att.encoder.nbytes + att.decoder.nbytes + att.cross.nbytes
    assert result.translation.attention is att and arrays <= results.held_bytes(result) < 2 * arrays + 200_000


def test_many_sessions_of_long_inputs_stay_within_the_budget_oldest_released(app, small_store):
    store, page = small_store, app.page
    kept = [page.on_translate(LONG, "beam", 5, app.explorer.models.default_model, 0.6)[page.states.result] for _ in range(12)]
    assert store.bytes <= store.max_bytes and len(store) == 3
    assert [r.released for r in kept] == [True] * 9 + [False] * 3  # least recently used first
    assert kept[0].attentions == {} and kept[0].translation.attention is None  # its arrays are gone
    assert kept[0].translation.text == kept[-1].translation.text  # its texts stay for the page's boxes
    # heads switched off grow the newest result: still within the budget, and the next oldest goes
    ablated = app.explorer.reruns.rerun(kept[-1], [["cross", 0, 0]])
    assert ablated.base is kept[-1] and store.bytes <= store.max_bytes and kept[-3].released
    # a result used again is the most recent: the next translation releases another one
    page.on_candidate(kept[-2], 0)
    page.on_translate(LONG, "greedy", 1, app.explorer.models.default_model, 0.6)
    assert not kept[-2].released and kept[-1].released


@pytest.mark.parametrize("act", ["candidate", "rerun", "export", "tree", "cell", "score"])
def test_acting_on_a_released_result_says_so_in_words(app, small_store, act):
    page, xp = app.page, app.explorer
    old = page.on_translate(LONG, "beam", 5, app.explorer.models.default_model, 0.6)[page.states.result]
    for _ in range(4):
        page.on_translate(LONG, "beam", 5, app.explorer.models.default_model, 0.6)
    assert old.released
    calls = {"candidate": lambda: page.on_candidate(old, 0), "rerun": lambda: xp.reruns.rerun(old, []),
             "export": lambda: page.on_export(old), "tree": lambda: xp.tree.on_tree_view(old, "tree", "{}"),
             "cell": lambda: app.explorer.inside.cell(old, {"kind": "cross", "layer": 0, "head": 0, "query": 0,
                                                         "key": 0})}
    if act == "score":  # scoring one's own translation of the same text: scored alone, never from released arrays
        forced, _ = app.explorer.inside.score(LONG, "z y x", app.explorer.models.default_model, 0.6, old)
        assert forced.own is None and not forced.released
        return
    with pytest.raises(gr.Error, match="no longer kept on the server.*Press Translate again"):
        calls[act]()


def test_the_text_api_keeps_nothing(app, small_store):
    page = app.page
    page.on_translate(LONG, "beam", 5, app.explorer.models.default_model, 0.6)
    before = (len(small_store), small_store.bytes)
    page.on_api_translate(LONG, "beam", 5, app.explorer.models.default_model, 0.6)
    assert (len(small_store), small_store.bytes) == before


def test_a_sessions_slots_are_its_own():
    slots = sessions.SessionSlots(limit=2)
    with slots.hold("a"), slots.hold("a"):
        with pytest.raises(gr.Error, match="already have 2 requests running"):
            with slots.hold("a"):
                pass
        with slots.hold("b"), slots.hold(None):  # another session, and in-process calls, are not limited by "a"
            assert slots.running("a") == 2 and slots.running("b") == 1
    assert slots.running("a") == 0


# ----------------------------------------------------------------------------- the app served, its model held busy


@pytest.fixture(scope="module")
def served(app):
    """The app's demo on a loopback port of this process: (url, the events' indices by name)."""
    options = {**launch.launch_options(), "server_port": free_port(), "prevent_thread_lock": True, "quiet": True}
    app.demo.launch(**options)
    url = f"http://127.0.0.1:{options['server_port']}/"
    try:
        yield url, endpoints(url)
    finally:
        app.demo.close()


@pytest.fixture
def model_busy(app, monkeypatch):
    """The model's one worker thread held until the test ends (every model request waits behind it, for as long as
    the test needs: a slow machine must not turn the wait into the app's "busy" answer)."""
    monkeypatch.setattr(limits, "REQUEST_TIMEOUT_S", 10 * WAIT_S)
    release, started = threading.Event(), threading.Event()

    def hold() -> None:
        started.set()
        release.wait(WAIT_S)

    pool = ThreadPoolExecutor(1)
    held = pool.submit(app.explorer.models.batcher.call, hold)
    assert started.wait(WAIT_S)
    yield release  # set: the model is free again
    release.set()
    held.result(WAIT_S)
    pool.shutdown()


def wait_until(condition) -> None:
    done = threading.Event()
    for _ in range(WAIT_S * 20):
        if condition():
            return
        done.wait(0.05)
    pytest.fail("the condition never came true")


def test_a_page_load_completes_while_the_model_is_busy_with_another_session(app, served, model_busy):
    url, index = served
    other = str(uuid.uuid4())
    pool = ThreadPoolExecutor(2)
    compare = pool.submit(queue_call, url, index["on_compare"], [LONG, LONG[::-1], "beam", 10, None, None, "{}"],
                          other)  # the longest work the other session can ask for, waiting on the busy model
    wait_until(lambda: app.explorer.slots.running(other) == 1)
    page_load = queue_call(url, index["on_restore"], [None], str(uuid.uuid4()), timeout_s=WAIT_S)
    assert page_load["success"] and not compare.done()  # the page loaded while the compare still waits
    model_busy.set()
    assert compare.result(10 * WAIT_S)["success"]  # and the compare is answered once the model is free
    pool.shutdown()


def test_a_session_gets_at_most_two_model_requests_in_flight_on_the_page_and_the_api(app, served, model_busy):
    url, index = served
    session, inputs = QueueSession(url), ["h e l l o", "beam", 3, None, None, None, ""]
    pool = ThreadPoolExecutor(3)
    waiting = [pool.submit(session.call, index["translate_view"], inputs) for _ in range(2)]
    wait_until(lambda: app.explorer.slots.running(session.session_hash) == 2)
    for name in ("translate_view", "translate", "on_compare"):  # the page's Translate, the public API, compare
        data = inputs if name != "on_compare" else ["a b", "b a", "beam", 3, None, None, "{}"]
        refused = session.call(index[name], data, timeout_s=WAIT_S)
        assert not refused["success"] and "already have 2 requests running" in refused["output"]["error"], refused
    other = QueueSession(url)  # another session's request is taken, and waits for the model like the first two
    waiting.append(pool.submit(other.call, index["translate"], inputs))
    wait_until(lambda: app.explorer.slots.running(other.session_hash) == 1)
    assert not [f.result() for f in waiting if f.done()]  # all three still wait for the model
    pool.shutdown(wait=False)


def test_a_page_loads_model_events_do_not_queue_behind_another_sessions_model_work(app, served, model_busy):
    url, index = served
    other, pool = str(uuid.uuid4()), ThreadPoolExecutor(2)
    compare = pool.submit(queue_call, url, index["on_compare"], [LONG, LONG[::-1], "beam", 10, None, None, "{}"],
                          other)  # another session's model event, waiting on the busy model
    wait_until(lambda: app.explorer.slots.running(other) == 1)
    # the learning tab every page load sets (a model event): answered while the other session's compare still waits
    answer = queue_call(url, index["on_restore_yours"], ["", None, 0.6, None, ""], str(uuid.uuid4()),
                        timeout_s=WAIT_S)
    assert answer["success"] and not compare.done(), answer
    model_busy.set()
    assert compare.result(10 * WAIT_S)["success"]
    pool.shutdown()


@pytest.fixture(scope="module")
def long_results(app):
    """Two translations of the long input, made before a test holds the model busy."""
    return [app.explorer.translation.translate(LONG, "beam", 5, app.explorer.models.default_model, 0.6)[0] for _ in range(2)]


def test_a_short_translation_goes_before_long_model_work_that_waited_first(app, long_results, model_busy,
                                                                           monkeypatch):
    xp, ran = app.explorer, []

    def spied(name, real):  # the real model work, noting when the worker starts it
        def run(*args, **kwargs):
            ran.append(name)
            return real(*args, **kwargs)
        return run

    monkeypatch.setattr(reruns, "ablate", spied("heads off", reruns.ablate))
    monkeypatch.setattr(tree_service, "record_search", spied("tree", tree_service.record_search))
    pool = ThreadPoolExecutor(2)
    heads_off = pool.submit(xp.reruns.rerun, long_results[0], [["cross", 0, 0]], "norm")
    tree = pool.submit(xp.tree.on_tree_view, long_results[1], "tree", "{}")
    wait_until(lambda: xp.models.batcher.waiting == 2)
    tr = xp.models.translator(app.explorer.models.default_model)
    short = xp.models.batcher.submit(tr, tr.source("h e l l o"), tr.decoding_options("greedy", 1))  # came last
    short.add_done_callback(lambda _: ran.append("short"))
    model_busy.set()
    assert short.result(WAIT_S).text and heads_off.result(WAIT_S).off and tree.result(WAIT_S)
    assert ran[0] == "short" and sorted(ran[1:]) == ["heads off", "tree"]
    pool.shutdown()


def test_an_upload_over_the_cap_is_refused_and_one_under_it_taken(app, served):
    """The page uploads nothing, yet gradio's upload route is open to anyone: it takes at most the launch's cap."""
    url, _ = served
    cap = app.demo.max_file_size  # in bytes, as the launch set it

    def upload(size: int) -> int:
        boundary = uuid.uuid4().hex
        head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"x.bin\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n")
        body = head.encode() + b"x" * size + f"\r\n--{boundary}--\r\n".encode()
        request = urllib.request.Request(url + "gradio_api/upload", body,
                                         {"Content-Type": f"multipart/form-data; boundary={boundary}"})
        try:
            with urllib.request.urlopen(request, timeout=WAIT_S) as response:
                return response.status
        except urllib.error.HTTPError as err:
            return err.code

    assert cap is not None and upload(cap + 1) == 413 and upload(1024) == 200


def test_one_export_is_one_file_on_disk_served_from_where_it_was_written(app, served):
    url, index = served
    session, cache = str(uuid.uuid4()), Path(gradio_utils.get_upload_folder())
    translated = queue_call(url, index["translate_view"], ["h e l l o", "beam", 3, None, None, None, ""], session)
    assert translated["success"], translated
    before = set(cache.rglob("attention-*.npz")) if cache.is_dir() else set()
    exported = queue_call(url, index["on_export"], [None], session)  # the download asked for
    path = Path(exported["output"]["data"][0]["value"]["path"] if "value" in exported["output"]["data"][0]
                else exported["output"]["data"][0]["path"])
    after = set(cache.rglob("attention-*.npz")) if cache.is_dir() else set()
    assert path.parent == app.explorer.exports.export_dir and path.is_file()  # served from where it was written
    assert after == before  # and not copied into gradio's cache
