"""The app's wiring (app.py, transformer/explorer/web/page.py: the Page that build_page makes, its events): what the
page's handlers answer, how its events are grouped and chained, and the running app through its API (gradio_client).
What a service or module does on its own is tested in the file named after it (tests/test_results.py,
tests/test_reruns.py, tests/test_restore.py, ...).

Uses checkpoints/toy-reverse when it exists (the reversal is then asserted); otherwise an untrained
stand-in toy model, and the tests that need a trained model skip with that reason.
"""
from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_server import shared_app
from reference_views import decode_attention
from toy_app import ENV, EVIL, fake_result, needs_trained, values

gr = pytest.importorskip("gradio")
from gradio_client import Client  # noqa: E402
from gradio_client.exceptions import AppError  # noqa: E402

from transformer.explorer.core import model_registry  # noqa: E402
from transformer.explorer.core import results  # noqa: E402
from transformer.explorer.core import view_state  # noqa: E402


@pytest.fixture(scope="module")
def client():
    server = shared_app(ENV)
    return Client(server.url, verbose=False)


def test_the_app_serves_its_everyday_searches_from_a_search_process(app):
    """The app's batcher has a search process, a live child of this process, that serves the default model."""
    searcher = app.explorer.models.batcher.searcher
    assert searcher is not None and searcher.pid is not None
    assert searcher.serves(app.explorer.models.default_translator)
    assert app.explorer.translation.translate("h e l l o", "greedy", 1, app.explorer.models.default_model, 1.0)[0].translation.text


# the MIME types a browser runs a module script with (the HTML standard's JavaScript MIME type essences, the usual ones)
JAVASCRIPT_TYPES = {"text/javascript", "application/javascript", "application/x-javascript", "text/ecmascript"}


@pytest.mark.slow  # a running app in its own process
def test_the_app_serves_its_browser_modules_whole_as_javascript(tmp_path):
    """A browser runs an ES module only when it comes with a JavaScript MIME type: each module of static/, asked
    for on the running app's file route after the page (as the browser does), comes whole, as JavaScript. A file
    outside the served folders does not come."""
    import urllib.error
    import urllib.request

    from transformer.explorer.panels.registry import scripts
    from transformer.explorer.web import page

    server = shared_app(ENV)
    with urllib.request.urlopen(server.url, timeout=60) as answer:
        assert answer.status == 200
    modules = [*page.STATIC_DIR.glob("*.js"), *scripts()]  # the shared modules and every panel's
    assert {"explorer.js", "payload.js", "views.js", "share.js", "tree.js"} <= {m.name for m in modules}
    for module in modules:
        with urllib.request.urlopen(server.url + page.module_url(module), timeout=60) as answer:
            assert answer.status == 200 and answer.read() == module.read_bytes(), module.name
            assert answer.headers.get_content_type() in JAVASCRIPT_TYPES, (module.name, answer.headers["content-type"])
            assert answer.headers["cache-control"] == "no-cache", module.name  # never an old module after an update
    outside = tmp_path / "secret.js"
    outside.write_text("1")
    for private in (outside, page.EXPLORER_DIR / "panels" / "tree" / "service.py"):  # a panel's Python stays private
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{server.url}gradio_api/file={private.as_posix()}", timeout=60)
        assert refused.value.code == 403, private


def test_the_app_sets_openmps_spin_before_anything_imports_torch():
    """libgomp reads GOMP_SPINCOUNT once, when torch loads: the app's setting must come before its first import
    that loads torch (any of the project's modules), or it silently does nothing (docs/deploy.md)."""
    source = (Path(__file__).resolve().parents[1] / "app.py").read_text()
    setting = source.index('os.environ.setdefault("GOMP_SPINCOUNT"')
    first_import = min(source.index(line) for line in source.splitlines()
                       if line.startswith(("import torch", "from transformer", "import transformer")))
    assert setting < first_import


def test_show_result_sends_the_payload_and_candidate_selector(app):
    result = fake_result()
    payload, dropdown = values(app, app.page.show_result(result), "attention.view", "results.candidate")
    assert payload["model"] == "fake" and payload["candidate"] == 0 and payload["n_layers"] == 2
    assert dropdown.value == 0 and dropdown.interactive is False  # one candidate only
    back = decode_attention(payload)
    np.testing.assert_allclose(back.cross, result.attention.cross, atol=1e-4)
    # user text reaches the page raw (for textContent) or escaped (for Plotly), never as markup
    raw = json.dumps(payload)
    assert EVIL in payload["tokens"]["src"]["raw"]
    assert not [s for s in payload["tokens"]["src"]["label"] if "<" in s]
    assert "onerror" in raw
    empty, dropdown = values(app, app.page.show_result(None), "attention.view", "results.candidate")
    assert empty is None and dropdown.interactive is False


def test_candidate_change_sends_that_candidates_attention(app):
    tr = app.explorer.models.default_translator
    result, _ = results.run_translation(tr, app.explorer.models.default_model, "h e l l o", "beam", 3)
    shown = ("states.result", "attention.view", "results.candidate")
    result_out, payload, dropdown = values(app, app.page.on_candidate(result, 2), *shown)
    assert result_out.candidate == 2 and payload["candidate"] == 2 and dropdown.value == 2
    assert payload["tokens"]["tgt_out"]["raw"] == result.translation.candidates[2].tokens
    with pytest.raises(gr.Error):
        app.page.on_candidate(result, 7)
    assert values(app, app.page.on_candidate(None, 1), *shown[:2]) == [None, None]


def test_model_change_updates_examples_and_clears_result(app):
    label = app.explorer.models.default_model
    out = app.page.on_model_change(label)
    state, result, translation, notice, examples, payload = values(
        app, out, "states.model", "states.result", "results.translation", "results.notice", "controls.examples",
        "attention.view")
    assert state == label and result is None and translation == "" and label in notice
    assert [s[0] for s in examples.raw_samples] == model_registry.EXAMPLES_TOY  # a toy model gets letter examples
    assert payload is None  # the page's payload: views cleared
    with pytest.raises(gr.Error, match="Unknown model"):
        app.page.on_model_change("no-such-model")


def test_the_page_starts_with_its_controls_at_the_view_states_defaults(app):
    """What build_page draws before any link or press: each control, the page's states and the attention panel's
    browser-side view hold the default ViewState (the default model's own length penalty), the view a link
    without parameters restores."""
    page, models = app.page, app.explorer.models
    view = view_state.ViewState(model=models.default_model, length_penalty=models.default_length_penalty)
    controls = page.controls
    assert (controls.src.value or "", controls.model.value, controls.method.value, controls.beam.value,
            controls.lp.value, controls.present.value) == (view.text, view.model, view.method, view.beam,
                                                           view.length_penalty, view.present)
    assert (controls.method.value, controls.beam.value) == ("beam", view_state.DEFAULT_BEAM)
    assert (page.states.model.value, page.states.lp.value, page.states.tab.value) == (
        view.model, view.length_penalty, view.tab)
    explorer = page.attention.view  # the maps' gr.HTML: explorer.js starts from its `view`
    assert explorer.props["view"] == view.client() == {"tab": "encoder", "layer": None, "head": view_state.MEAN_HEADS,
                                                       "rows": view_state.ROWS_PREDICTED, "hide": False,
                                                       "merge": False, "step": 1}
    assert app.explorer.restore.restore(models.default_model, {}).view == view


@pytest.mark.slow  # a running app in its own process
def test_api_exposes_only_translate_with_three_inputs(client):
    api = client.view_api(print_info=False, return_format="dict")
    assert list(api["named_endpoints"]) == ["/translate"] and not api["unnamed_endpoints"]
    params = api["named_endpoints"]["/translate"]["parameters"]
    assert [p["parameter_name"] for p in params] == ["text", "method", "beam_size"]
    assert api["named_endpoints"]["/translate"]["returns"][0]["component"] == "Textbox"


@needs_trained
@pytest.mark.parametrize("method,beam", [("greedy", 1), ("beam", 1), ("beam", 5)])
@pytest.mark.slow  # a running app in its own process
def test_api_translates_reversal(client, method, beam):
    text, notice, table = client.predict("h e l l o", method, beam, api_name="/translate")
    assert text == "o l l e h" and notice == ""
    assert table["headers"][:2] == ["#", "translation"] and table["data"][0][1] == "o l l e h"
    assert len(table["data"]) == (1 if method == "greedy" else beam)


@pytest.mark.slow  # a running app in its own process
def test_api_runs_with_any_model(client):
    text, notice, table = client.predict("a b c", "beam", 3, api_name="/translate")
    assert isinstance(text, str) and 1 <= len(table["data"]) <= 3


@pytest.mark.slow  # a running app in its own process
def test_api_empty_input_is_a_friendly_error(client):
    for empty in ("", "   "):
        with pytest.raises(AppError, match="no sentence to translate yet") as info:
            client.predict(empty, "beam", 5, api_name="/translate")
        assert "Traceback" not in str(info.value)


@pytest.mark.parametrize("beam,match", [(0, "less than minimum value 1"), (17, "greater than maximum value 10")])
@pytest.mark.slow  # a running app in its own process
def test_api_beam_out_of_range_is_a_clear_error(client, beam, match):
    with pytest.raises(AppError, match=match):
        client.predict("h e l l o", "beam", beam, api_name="/translate")


@pytest.mark.slow  # a running app in its own process
def test_api_unknown_method_is_a_clear_error(client):
    with pytest.raises(AppError, match="not in the list of choices"):
        client.predict("h e l l o", "sampling", 3, api_name="/translate")


@pytest.mark.slow  # a running app in its own process
def test_api_html_input_comes_back_as_plain_text(client):
    text, notice, table = client.predict(EVIL + " h e l l o <b>x</b>", "beam", 2, api_name="/translate")
    for s in [text, notice] + [str(c) for row in table["data"] for c in row]:
        assert "&lt;" not in s and "&amp;" not in s  # nothing HTML-escaped server side: the UI shows text as text


@pytest.mark.slow  # a running app in its own process
def test_concurrent_presses_each_get_their_own_translation_as_alone(app, client):
    """Six users press Translate at once (the page's request): the server decodes them together
    (transformer/serving/batching.py); each gets its own translation, n-best and attention, as alone."""
    texts = ["h e l l o", "a b c d", "z y x w v", "g r a d i e n t", "t r a n s f o r m e r", "q u i c k"]
    settings = [("beam", 3), ("beam", 3), ("greedy", 1), ("beam", 2), ("beam", 3), ("greedy", 1)]
    clients = [client] + [Client(shared_app(ENV).url, verbose=False) for _ in texts[1:]]

    def press(i: int):
        return clients[i].predict(texts[i], *settings[i], api_name="/translate_view")

    with ThreadPoolExecutor(len(texts)) as pool:
        outputs = list(pool.map(press, range(len(texts))))
    tr = app.explorer.models.default_translator  # the server's model, loaded the same way (same precision)
    for text, (method, beam), out in zip(texts, settings, outputs, strict=True):
        alone = tr.translate(text, method=method, beam_size=beam, length_penalty=view_state.DEFAULT_LENGTH_PENALTY)
        translation, _, table, payload = out[:4]
        assert translation == alone.text and payload["source"] == text
        assert [row[1] for row in table["data"]] == list(dict.fromkeys(c.text for c in alone.candidates))
        shown = decode_attention(payload)  # what the page draws (uint16 steps of 1.5e-5, relative to the kept mass)
        for kind in ("encoder", "decoder", "cross"):
            np.testing.assert_allclose(getattr(shown, kind), getattr(alone.attention, kind), atol=2e-5)


@pytest.mark.slow  # a running app in its own process
def test_api_over_long_input_is_truncated_with_notice(client):
    text, notice, _ = client.predict("a " * 300, "greedy", 1, api_name="/translate")
    assert "only the first" in notice and "tokens were translated" in notice


@pytest.mark.slow  # a running app in its own process
def test_server_does_not_serve_repository_files(client):
    import urllib.error
    import urllib.request

    root = Path(__file__).resolve().parents[1]
    for target in (root / "app.py", root / "checkpoints" / "toy-reverse" / "config.json", Path("/etc/passwd")):
        url = f"{client.src.rstrip('/')}/gradio_api/file={target}"
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(url, timeout=10)
        assert info.value.code in (403, 404), (target, info.value.code)


def test_the_text_api_keeps_nothing_in_the_session_and_computes_no_attention(app, monkeypatch):
    seen = []
    real = app.explorer.models.batcher.translate

    def spy(*args, **kwargs):
        seen.append(kwargs.get("output_attentions", True))
        return real(*args, **kwargs)

    monkeypatch.setattr(app.explorer.models.batcher, "translate", spy)
    out = app.page.on_api_translate("h e l l o", "beam", 3, app.explorer.models.default_model, 0.6)
    assert set(out) == {app.page.results.translation, app.page.results.notice, app.page.results.nbest}
    assert out[app.page.results.translation] and seen == [False]
    page = app.page.on_translate("h e l l o", "beam", 3, app.explorer.models.default_model, 0.6)  # the page keeps its result
    assert page[app.page.states.result].attention is not None and seen == [False, True]


def test_a_page_loads_restore_has_a_concurrency_group_apart_from_the_model_events(app):
    """The restore a page load runs has its own concurrency group; compare, tree and heads-off share "model" (that a
    page load completes while the model is busy: test_limits.py)."""
    groups = {fn.name: fn.concurrency_id for fn in app.demo.fns.values()}
    assert groups["on_restore"] == "restore" and groups["on_compare"] == "model"


# the events whose answer is a new result on the page (Page.show_new_result)
NEW_RESULT_EVENTS = ("on_translate_view", "on_example", "on_restore_translate", "on_model_change", "on_decoding",
                     "on_offer")


def test_what_ends_a_page_load_or_follows_a_translation_leaves_the_users_newer_work(app):
    """On a busy machine these events can finish after the user's next one (a translation of one's own scored):
    a page without a link does not empty the score box, and the tree panel's events do not write back the
    session's result they read before (the tree is recorded on the result itself)."""
    fns = list(app.demo.fns.values())
    restore_yours = next(fn for fn in fns if fn.name == "on_restore_yours")
    out = restore_yours.fn("h e l l o", None, 0.6, None, "", None)  # a page load without a link's translation
    assert restore_yours.outputs and not [c for c in out if getattr(c, "elem_id", None) in ("yours-view", "inside")]
    trees = [fn for fn in fns if fn.name == "on_tree_view"]
    assert len(trees) == 1 and all(not any(isinstance(c, gr.State) for c in fn.outputs) for fn in trees)
    # a new result's tree comes in the translation's own answer, which never writes the result back twice
    tree_view = app.page.tree.view
    for fn in fns:
        if tree_view in fn.outputs and fn.name != "on_tree_view":
            assert fn.name in NEW_RESULT_EVENTS + ("tree_pick",), fn.name
    # heads switched off with one's own translation on screen: its scores come in the rerun's own answer
    rerun = next(fn for fn in fns if fn.name == "on_rerun")
    assert app.page.yours.view in rerun.outputs and not [fn for fn in fns if fn.name == "yours_of"]


def test_one_press_prepares_tokenises_and_checks_its_request_once(app, monkeypatch):
    """One way in: a Translate press resolves and checks its options once (`Translator.decoding_options`),
    prepares and tokenises its text once (`Translator.source`, `prepare`, the tokenizer), and hands the `Source`
    on; before, the text was prepared and tokenised twice (checked, then batched)."""
    from transformer.translator import Translator

    tr = app.explorer.models.default_translator
    calls: dict[str, int] = {}

    def counted(owner, name):
        real = getattr(owner, name)

        def count(*args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, count)

    for name in ("decoding_options", "source", "prepare"):
        counted(Translator, name)
    counted(type(tr.tokenizer), "encodings")
    model = app.explorer.models.default_model
    out = app.page.on_translate_view("h e l l o", "beam", 3, model, 0.6, "attention", "")
    assert out[app.page.results.translation]
    assert calls == {"decoding_options": 1, "source": 1, "prepare": 1, "encodings": 1}, calls
