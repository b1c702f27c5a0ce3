"""Every handler, fed any value (types, None, NaN, huge, nested, lone surrogates, control characters), answers or
says what is wrong in words: a `gr.Error` with a message, never another exception (which a client sees as a
bare "Error"). Property-based (hypothesis) over the handlers in-process; one test through the public HTTP API."""
from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_server import app_env, import_app, shared_app  # noqa: E402

gr = pytest.importorskip("gradio")

ENV, _ = app_env()
FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# any character, lone surrogates and control characters included
ANY_TEXT = st.text(st.characters(codec=None, categories=None), max_size=60)
NASTY_TEXT = st.sampled_from(["abc \ud800 def", "\udfff", "a\x00b\x1b[31m c", "\u202e evil \u200b", "x" * 5000,
                              "", "   ", "<script>alert(1)</script>", "\ufeff\u0301"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30),
                    st.floats(allow_nan=True, allow_infinity=True), ANY_TEXT, NASTY_TEXT)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(ANY_TEXT, inner, max_size=3)), max_leaves=8)


@pytest.fixture(scope="module")
def app():
    """The app (`app.create_app()`) with the test checkpoint as default (one torch thread for the tests)."""
    return import_app(ENV)


def answers_or_says_why(call) -> None:
    """`call()` returns, or raises a gr.Error whose message a person can read."""
    try:
        call()
    except gr.Error as err:
        assert str(err.message).strip() and str(err.message) != "Error", err
    except Exception as err:  # anything else reaches the client as a bare "Error"
        pytest.fail(f"{type(err).__name__}: {err}")


@FUZZ
@given(text=st.one_of(VALUES, NASTY_TEXT), method=st.one_of(st.sampled_from(["beam", "greedy"]), VALUES),
       beam=st.one_of(st.sampled_from([None, 1, 3, 5.0, "5", float("nan")]), VALUES),
       lp=st.one_of(st.sampled_from([None, 0.6, -1, float("inf")]), VALUES), model=st.one_of(st.none(), VALUES))
def test_translate_answers_every_input_in_words(app, text, method, beam, lp, model):
    model = app.explorer.models.default_model if model is None else model
    answers_or_says_why(lambda: app.page.on_api_translate(text, method, beam, model, lp))


@FUZZ
@given(text=st.one_of(NASTY_TEXT, ANY_TEXT), beam=st.sampled_from([None, 2, float("nan"), "5", [5]]))
def test_the_page_translate_compare_and_greedy_vs_beam_answer_in_words(app, text, beam):
    m = app.explorer.models.default_model
    answers_or_says_why(lambda: app.page.on_translate_view(text, "beam", beam, m, 0.6))
    answers_or_says_why(lambda: app.explorer.compare.on_compare(text, "a b", "beam", beam, m, 0.6, "{}"))
    answers_or_says_why(lambda: app.explorer.compare.on_greedy_vs_beam(text, beam, m, 0.6, "{}"))


class Event:
    """What a gradio event carries (`EventData._data`)."""

    def __init__(self, data):
        self._data = data


@FUZZ
@given(data=VALUES, view=st.one_of(VALUES, st.just("[" * 50_000 + "]" * 50_000), st.just("{" * 3000)))
def test_events_views_and_links_answer_in_words(app, data, view):
    from transformer.explorer.core.checks import event_data, view_data

    assert isinstance(view_data(view), dict) and isinstance(event_data(Event(data)), dict)
    result = app.page.on_translate("a b c", "greedy", 1, app.explorer.models.default_model, 0.6)[app.page.states.result]
    answers_or_says_why(lambda: app.page.on_nbest_select(result, Event(data)))
    answers_or_says_why(lambda: app.page.on_nbest_select(result, Event({"value": data})))  # no "index"
    answers_or_says_why(lambda: app.page.on_candidate(result, data))
    answers_or_says_why(lambda: app.page.on_rerun(result, Event(data)))
    answers_or_says_why(lambda: app.explorer.tree.tree_pick(result, event_data(Event(data))))
    params = data if isinstance(data, dict) else {"text": data, "beam": data, "layer": data}
    answers_or_says_why(lambda: app.explorer.restore.restore(app.explorer.models.default_model, {str(k): v for k, v in params.items()}))
    answers_or_says_why(lambda: app.page.on_restore_translate("a b", "beam", 2, app.explorer.models.default_model, 0.6, view))


def call_api(url: str, data: list) -> tuple[str, str]:
    """POST /translate's inputs as raw JSON (\\ud800 escapes and NaN as a client may send them; gradio_client's
    httpx refuses to encode those), then read its event stream: (event, data) of the last event."""
    body = json.dumps({"data": data}, ensure_ascii=True).encode()
    post = urllib.request.Request(f"{url}gradio_api/call/translate", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(post, timeout=60) as response:
        event_id = json.load(response)["event_id"]
    with urllib.request.urlopen(f"{url}gradio_api/call/translate/{event_id}", timeout=120) as response:
        lines = response.read().decode().splitlines()
    events = [line.split(":", 1)[1].strip() for line in lines if line.startswith("event:")]
    payloads = [line.split(":", 1)[1].strip() for line in lines if line.startswith("data:")]
    return events[-1], payloads[-1]


@pytest.mark.parametrize("args", [
    ["abc \ud800 def", "beam", 5],  # a lone surrogate
    ["a b", "beam", None],  # left out: the model's own beam width
    ["a b", "beam", "5"], ["a b", "beam", [5]], ["a\x00b\x1b c", "beam", 5], ["a b", "beam", 1e300],
    [None, None, None], [{"a": [1]}, "beam", 5], ["a b", "sideways", 1e300], ["[" * 5000 + "]" * 5000, "beam", 2],
])
@pytest.mark.slow  # a running app in its own process
def test_the_public_api_answers_bad_values_in_words(args):
    """/translate (text, method, beam width) over HTTP: a translation, or an error whose message says why."""
    event, data = call_api(shared_app(ENV).url, args)
    if event == "error":
        message = json.loads(data) if data not in ("", "null") else None  # {"error": the message, "title": ...}
        text = message.get("error") if isinstance(message, dict) else message
        assert isinstance(text, str) and text.strip() and text.strip() != "Error", data
    else:
        assert event == "complete" and isinstance(json.loads(data)[0], str), (event, data)
