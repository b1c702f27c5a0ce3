"""The Gradio app: pure state/view functions in-process, and the /translate API through gradio_client.

Uses checkpoints/toy-reverse when it exists (the reversal is then asserted); otherwise an untrained
stand-in toy model, and the tests that need a trained model skip with that reason.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from operator import attrgetter
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_server import app_env, import_app, shared_app  # noqa: E402
import reference_views  # noqa: E402
from reference_views import decode_attention  # noqa: E402

gr = pytest.importorskip("gradio")
from gradio_client import Client  # noqa: E402
from gradio_client.exceptions import AppError  # noqa: E402

from transformer.explorer.core import exports
from transformer.explorer.web import launch
from transformer.explorer.core import limits
from transformer.explorer.core import model_registry
from transformer.explorer.core import result_view
from transformer.explorer.core import results
from transformer.explorer.core import view_state
from transformer.explorer.panels.training import curves
from transformer.explorer.maps.token_labels import read_tokens  # noqa: E402
from transformer.translator import (  # noqa: E402
    Attention, Candidate, DecodingOptions, StepRecord, Translation, load_pretrained,
)

EVIL = "<img src=x onerror=alert(1)>"
ENV, WHICH = app_env()
TRAINED = WHICH == "toy-reverse"
needs_trained = pytest.mark.skipif(not TRAINED, reason="checkpoints/toy-reverse is not trained yet (stand-in model)")


@pytest.fixture(scope="module")
def app():
    """The app (`app.create_app()`), with the test checkpoint as default and one torch thread."""
    built = import_app({**ENV, "TRANSFORMER_PRECISION": ""})  # measured, whatever the caller's shell sets
    assert built.explorer.models.default_translator is not None, built.explorer.models.startup_error
    return built


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


def values(app, out: dict, *paths: str) -> list:
    """A handler's `{component: value}` answer, read by the components' names in `app.page` ("states.result")."""
    return [out[attrgetter(path)(app.page)] for path in paths]


def fake_result(app):
    """A Result with hand-made attention and HTML-looking tokens (no model needed)."""
    src = ["\u2581a", "b", EVIL, "<b>", "<eos>"]
    out = ["\u2581x", "<i>y</i>", "<eos>"]
    tin = ["<bos>"] + out[:-1]
    rng = np.random.default_rng(0)

    def maps(shape):
        a = rng.random(shape).astype(np.float32)
        return a / a.sum(-1, keepdims=True)

    dec = maps((2, 4, 3, 3)) * np.tril(np.ones((3, 3), np.float32))
    dec /= dec.sum(-1, keepdims=True)
    steps = [StepRecord(t, tok, 0.5, [(tok, 0.5), (EVIL, 0.3), ("<b>", 0.2)]) for t, tok in enumerate(out)]
    att = Attention(maps((2, 4, 5, 5)), dec, maps((2, 4, 3, 5)), src, tin, out, steps)
    cand = Candidate("x " + EVIL, out, [4, 5, 3], -1.0, -2.0)
    tr = Translation("x " + EVIL, src, out, -1.0, -2.0, False, [cand], "beam", 5, [4, 5, 6, 7, 3], att)
    return results.Result("fake", EVIL, tr, 0.6, {0: att})


# ----------------------------------------------------------------------------- pure functions


def test_page_and_links_start_at_the_default_models_length_penalty(app, tmp_path, make_model):
    from transformer.explorer.services import Explorer
    from transformer.hub import save_checkpoint
    from transformer.tokenizer import TextTokenizer, toy_tokenizer

    directory = save_checkpoint(make_model(), TextTokenizer(toy_tokenizer(12)), tmp_path / "en-de")
    (directory / "generation_config.json").write_text('{"num_beams": 5, "length_penalty": 1.7}')
    explorer = Explorer(model_registry.ModelRegistry(tmp_path), tmp_path / "exports", strict=True)
    try:
        assert explorer.models.default_length_penalty == 1.7  # what build_page starts the slider at
        assert explorer.restore.restore("en-de", {"text": "a b"}).view.length_penalty == 1.7  # a link without lp
        assert explorer.restore.restore("en-de", {"lp": "nan"}).view.length_penalty == 1.7  # a bad one: noted, default
        assert explorer.restore.restore("en-de", {"lp": "0.3"}).view.length_penalty == 0.3  # a link's own
    finally:
        explorer.models.batcher.close()
    assert app.explorer.models.default_length_penalty == view_state.DEFAULT_LENGTH_PENALTY  # the toy has no generation config


def test_the_explorer_loads_every_model_on_its_batchers_thread(app, tmp_path, make_model, caplog):
    """Loading, like all model work, runs on the batcher's thread: torch's OpenMP keeps a thread pool per thread
    that runs parallel work, and a second pool (a model loaded on the main thread) made every search of the app
    2.7x slower on 2 cores (bench/thread_pools.py). The default model at start-up, and another one loaded later
    from a request's thread."""
    from transformer.explorer.services import Explorer
    from transformer.hub import save_checkpoint
    from transformer.tokenizer import TextTokenizer, toy_tokenizer

    for name in ("en-de", "toy-other"):
        save_checkpoint(make_model(), TextTokenizer(toy_tokenizer(12)), tmp_path / name)
    caplog.set_level(logging.INFO, logger="transformer.explorer.core.model_registry")
    explorer = Explorer(model_registry.ModelRegistry(tmp_path), tmp_path / "exports", strict=True)
    try:
        request = threading.Thread(target=explorer.models.translator, args=("toy-other",), name="a-request")
        request.start()
        request.join()
        loads = [r for r in caplog.records if r.getMessage().startswith("loaded ")]
        assert [r.getMessage().split()[1] for r in loads] == ["en-de", "toy-other"]
        assert {r.threadName for r in loads} == {explorer.models.batcher._thread.name}
        assert explorer.models.registry.is_loaded("toy-other")
    finally:
        explorer.models.batcher.close()
    direct = model_registry.ModelRegistry(tmp_path)  # without the app's runner, on the caller's thread
    caplog.clear()
    direct.get("toy-other")
    assert [r.threadName for r in caplog.records if r.getMessage().startswith("loaded ")] == ["MainThread"]


def test_the_model_gets_every_core_but_one_unless_told(monkeypatch):
    from transformer.explorer.startup import torch_threads

    monkeypatch.delenv("TRANSFORMER_THREADS", raising=False)
    assert [torch_threads(cores) for cores in (1, 2, 4, 16)] == [1, 1, 3, 15]
    assert torch_threads() == max(1, (os.cpu_count() or 1) - 1)
    monkeypatch.setenv("TRANSFORMER_THREADS", "2")
    assert torch_threads(2) == 2
    for bad in ("0", "-1", "two", ""):
        monkeypatch.setenv("TRANSFORMER_THREADS", bad)
        assert torch_threads(4) == 3


def test_the_app_sets_openmps_spin_before_anything_imports_torch():
    """libgomp reads GOMP_SPINCOUNT once, when torch loads: the app's setting must come before its first import
    that loads torch (any of the project's modules), or it silently does nothing (docs/deploy.md)."""
    source = (Path(__file__).resolve().parents[1] / "app.py").read_text()
    setting = source.index('os.environ.setdefault("GOMP_SPINCOUNT"')
    first_import = min(source.index(line) for line in source.splitlines()
                       if line.startswith(("import torch", "from transformer", "import transformer")))
    assert setting < first_import


def test_registry_lists_default_models_first_then_sorted_and_override_first(app, tmp_path):
    for name in ("toy-b", "multi30k-en-de", "toy-a", "incomplete", ".hidden"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
        if name != "incomplete":
            (tmp_path / name / "model.safetensors").write_bytes(b"")
    (tmp_path / "stray.txt").write_text("not a checkpoint")
    assert model_registry.ModelRegistry(tmp_path).labels() == ["multi30k-en-de", "toy-a", "toy-b"]
    assert model_registry.ModelRegistry(tmp_path, str(tmp_path / "toy-b")).labels() == ["toy-b", "multi30k-en-de", "toy-a"]
    assert model_registry.ModelRegistry(tmp_path, "someone/some-model").labels()[0] == "someone/some-model"
    assert model_registry.ModelRegistry(tmp_path / "missing").labels() == []
    (tmp_path / "en-de").mkdir()
    (tmp_path / "en-de" / "config.json").write_text("{}")
    (tmp_path / "en-de" / "model.safetensors").write_bytes(b"")
    assert model_registry.ModelRegistry(tmp_path).labels() == ["en-de", "multi30k-en-de", "toy-a", "toy-b"]
    # a model exported before its schedule ended (trained over several sessions) goes last
    (tmp_path / "en-de" / "training.json").write_text(json.dumps(
        {"progress": {"step": 501}, "train_config": {"max_steps": 3000}}))
    assert model_registry.training_progress(tmp_path / "en-de") == (501, 3000)
    assert model_registry.ModelRegistry(tmp_path).labels() == ["multi30k-en-de", "toy-a", "toy-b", "en-de"]
    (tmp_path / "en-de" / "training.json").write_text(json.dumps(
        {"progress": {"step": 3000}, "train_config": {"max_steps": 3000}}))
    assert model_registry.training_progress(tmp_path / "en-de") is None
    assert model_registry.ModelRegistry(tmp_path).labels()[0] == "en-de"
    assert model_registry.ModelRegistry(tmp_path / "missing").default() is None
    with pytest.raises(LookupError, match="No model found"):
        model_registry.ModelRegistry(tmp_path / "missing").get(None)


def test_registry_loads_once_and_caches(app):
    label = app.explorer.models.default_model
    assert app.explorer.models.registry.is_loaded(label)
    assert app.explorer.models.registry.get(label) is app.explorer.models.default_translator
    assert app.explorer.models.registry.directory(label) is not None


@pytest.mark.parametrize("beam", [0, 11, 17, -1, 2.5, True, "5", float("nan"), [5]])
def test_a_request_with_a_bad_beam_is_refused_where_it_enters(app, beam):
    """`run_translation`, where a request enters the explorer, checks its options once (`decoding_options`, within
    the app's limits) and says what is wrong as a gr.Error."""
    tr, model = app.explorer.models.default_translator, app.explorer.models.default_model
    with pytest.raises(gr.Error, match="beam_size must be a whole number from 1 to 10"):
        results.run_translation(tr, model, "h e l l o", "beam", beam, 0.6)


def test_the_work_of_one_request_is_capped_and_the_notice_says_so(app, monkeypatch):
    """Source tokens × beam width within limits.MAX_BEAM_TOKENS: a long input at a wide beam is searched at a
    narrower beam, with a notice; a short one, and greedy, are left as asked. Page and API share the path."""
    monkeypatch.setattr(limits, "MAX_BEAM_TOKENS", 12)
    tr, model = app.explorer.models.default_translator, app.explorer.models.default_model
    long_text = "a b c d e f g h i j k"  # 11 letters + <eos>: 12 tokens, so beam 1 at most
    result, notice = results.run_translation(tr, model, long_text, "beam", 5, 0.6)
    assert result.translation.beam_size == 1 and "beam width was cut from 5 to 1" in notice
    out = app.page.on_api_translate(long_text, "beam", 4, model, 0.6)
    assert "cut from 4 to 1" in out[app.page.results.notice]
    result, notice = results.run_translation(tr, model, "a b", "beam", 4, 0.6)  # 3 tokens × 4 = 12: as asked
    assert result.translation.beam_size == 4 and "cut" not in notice
    result, notice = results.run_translation(tr, model, long_text, "greedy", 1, 0.6)
    assert result.translation.beam_size == 1 and "cut" not in notice


def test_beam_and_length_penalty_left_out_are_the_models_own(app):
    """The API's docs call them optional: None is the checkpoint's default, not an error."""
    result, _ = results.run_translation(app.explorer.models.default_translator, app.explorer.models.default_model, "a b c", "beam", None, None)
    generation = app.explorer.models.default_translator.generation
    assert (result.translation.beam_size, result.length_penalty) == (generation.num_beams, generation.length_penalty)
    for bad in (-0.5, float("inf"), "0.6", 1e9):
        with pytest.raises(gr.Error, match="length_penalty must be a finite number from 0 to 10"):
            results.run_translation(app.explorer.models.default_translator, "m", "a b c", "beam", 3, bad)


def test_options_are_resolved_once_and_methods_checked(app):
    tr = app.explorer.models.default_translator
    assert tr.decoding_options("beam", 5.0) == DecodingOptions("beam", 5, tr.generation.length_penalty)
    assert tr.decoding_options("greedy", 4, 1).beam_size == 1  # greedy searches one beam
    with pytest.raises(ValueError, match="method"):
        tr.decoding_options("sample", 3)
    with pytest.raises(gr.Error, match="method"):
        results.run_translation(tr, "m", "a b c", "sample", 3)


def test_run_translation_empty_and_truncated(app):
    tr = app.explorer.models.default_translator
    for empty in ("", "   \n", None):
        with pytest.raises(gr.Error, match="no sentence to translate yet"):
            results.run_translation(tr, "m", empty, "beam", 3)
    long = " ".join("abcdefghij"[i % 10] for i in range(tr.max_source_tokens + 20))
    result, notice = results.run_translation(tr, "m", long, "greedy", 1)
    assert result.translation.truncated and f"limit of {tr.max_source_tokens} tokens" in notice
    result, notice = results.run_translation(tr, "m", "a " * (limits.MAX_INPUT_CHARS + 10), "greedy", 1)
    assert f"first {limits.MAX_INPUT_CHARS} characters" in notice and len(result.source) == limits.MAX_INPUT_CHARS


def test_run_translation_says_how_it_read_all_caps_input(app):
    tr = app.explorer.models.default_translator  # a toy model: no truecase model, so ALL-CAPS input is read in lower case
    assert tr.truecaser is None
    shouted, notice = results.run_translation(tr, "m", "THE DOG IS SLEEPING.", "greedy", 1)
    quiet, quiet_notice = results.run_translation(tr, "m", "the dog is sleeping.", "greedy", 1)
    assert "Read as “the dog is sleeping.”" in notice and "Read as" not in quiet_notice
    assert shouted.translation.text == quiet.translation.text
    assert shouted.translation.src_tokens == quiet.translation.src_tokens


def test_run_translation_lists_the_placeholders_the_model_read(app):
    tr = load_pretrained(Path(__file__).resolve().parents[1] / "checkpoints" / "en-de")
    result, notice = results.run_translation(tr, "en-de", "My name is Wairimu and I was born in 1987.", "beam", 5)
    translation = result.translation
    assert "⟨1⟩ Wairimu, ⟨2⟩ 1987" in notice and translation.entities == ("Wairimu", "1987")
    assert "⟨1⟩" in translation.src_tokens and "⟨2⟩" in translation.src_tokens  # what the maps show
    assert "Wairimu" in translation.text and "1987" in translation.text  # what the translation says


def test_select_candidate_uses_attention_for_and_caches(app, monkeypatch):
    tr = app.explorer.models.default_translator
    result, _ = results.run_translation(tr, "m", "h e l l o", "beam", 4)
    n = len(result.translation.candidates)
    assert n >= 2
    calls = []
    original = tr.attention_for
    monkeypatch.setattr(tr, "translate", lambda *a, **k: pytest.fail("must not re-run decoding"))
    monkeypatch.setattr(tr, "attention_for", lambda r, candidate=0: calls.append(candidate) or original(r, candidate))
    results.select_candidate(tr, result, 1)
    results.select_candidate(tr, result, 0)
    results.select_candidate(tr, result, 1)
    assert calls == [1] and result.candidate == 1
    assert result.attention.tgt_out_tokens == result.translation.candidates[1].tokens
    with pytest.raises(gr.Error):
        results.select_candidate(tr, result, n)


def test_show_result_sends_the_payload_and_candidate_selector(app):
    result = fake_result(app)
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


def test_view_state_defaults_match_the_controls(app):
    view = view_state.ViewState()
    assert (view.method, view.beam, view.length_penalty) == ("beam", view_state.DEFAULT_BEAM,
                                                            view_state.DEFAULT_LENGTH_PENALTY)
    assert view.client() == {"tab": "encoder", "layer": None, "head": view_state.MEAN_HEADS,
                             "rows": view_state.ROWS_PREDICTED, "hide": False, "merge": False, "step": 1}


def test_focus_view_layer_clipping_mean_and_titles(app):
    att = fake_result(app).attention
    opts = reference_views.ViewOptions(layer=7, head=2)
    fig, hidden = reference_views.focus_view(att, "cross", opts)
    assert "layer 2" in fig.layout.title.text and "head 3" in fig.layout.title.text
    assert "this stack has 2 layers" in fig.layout.title.text and hidden is None
    fig, hidden = reference_views.focus_view(att, "encoder", reference_views.ViewOptions(layer=0, head=view_state.MEAN_HEADS, hide_special=True))
    assert "mean over heads" in fig.layout.title.text and 0.0 < hidden < 1.0
    z = np.array(fig.data[0].z)
    np.testing.assert_allclose(z.sum(1), 1.0, atol=1e-5)  # renormalised rows
    # decoder rows by predicted token: the last row is the one that predicted <eos>
    w, q, k = reference_views.kind_maps(att, "decoder", view_state.ROWS_PREDICTED)
    assert q == att.tgt_out_tokens and k == att.tgt_in_tokens


def test_step_view_and_hidden_text(app):
    att = fake_result(app).attention
    fig, text = reference_views.step_view(att, 2, reference_views.ViewOptions(layer=1, head=0))
    assert "Step 2 of 3" in text and "&lt;i&gt;y&lt;/i&gt;" in fig.layout.title.text
    fig, text = reference_views.step_view(att, 99, reference_views.ViewOptions())  # clamped
    assert "Step 3 of 3" in text
    assert "1.5%" in reference_views.hidden_text({"encoder": 0.015, "decoder": None, "cross": None})


def test_export_npz_round_trip_without_pickle(app, tmp_path):
    result = fake_result(app)
    path = exports.export_npz(result, tmp_path)
    assert path.parent == tmp_path and path.suffix == ".npz"
    with np.load(path, allow_pickle=False) as z:
        np.testing.assert_array_equal(z["cross"], result.attention.cross)
        assert list(z["src_tokens"]) == result.attention.src_tokens
        assert z["step_topk_tokens"].shape == (3, 3)
        meta = json.loads(str(z["meta"]))
    assert meta["source"] == EVIL and meta["candidate"] == 0


def test_training_helpers(app, tmp_path):
    (tmp_path / "train_log.jsonl").write_text('{"epoch": 1, "val_loss": 2.0}\nnot json\n[1]\n{"epoch": 2}\n')
    assert [r["epoch"] for r in curves.load_train_log(tmp_path)] == [1, 2]
    (tmp_path / "metrics.json").write_text(json.dumps({"bleu": 31.234567, "test": {"bleu": 30.0}, "n": [1, 2]}))
    table = curves.metrics_table(tmp_path)
    assert dict(zip(table["metric"], table["value"])) == {"bleu": "31.23", "test.bleu": "30", "n": "[1, 2]"}
    assert "no metrics.json" in curves.metrics_table(tmp_path / "nope")["metric"][0]
    (tmp_path / "metrics.json").write_text(json.dumps({
        "test/beam5": {"bleu": 23.456, "chrf": 45.7, "method": "beam", "signature": "x", "split": "test"},
        "val/greedy": {"bleu": 22.0, "method": "greedy", "batch_size": 64}}))
    table = curves.metrics_table(tmp_path)
    assert list(table.columns) == ["evaluation", "bleu", "chrf", "method"]
    assert table.values.tolist() == [["test/beam5", "23.46", "45.7", "beam"], ["val/greedy", "22", "", "greedy"]]


def test_launch_options_default_and_env(app, monkeypatch):
    monkeypatch.delenv("GRADIO_SERVER_NAME", raising=False)
    monkeypatch.delenv("GRADIO_SERVER_PORT", raising=False)
    opts = launch.launch_options()
    assert (opts["server_name"], opts["server_port"]) == ("127.0.0.1", 7860)
    assert opts["share"] is False and not opts["allowed_paths"]
    monkeypatch.setenv("GRADIO_SERVER_NAME", "0.0.0.0")
    monkeypatch.setenv("GRADIO_SERVER_PORT", "8123")
    opts = launch.launch_options()
    assert (opts["server_name"], opts["server_port"]) == ("0.0.0.0", 8123)
    assert app.demo._queue.max_size is not None  # bounded queue


# ----------------------------------------------------------------------------- the running app, through its API


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


def test_the_notes_say_which_precision_decodes_and_an_env_variable_switches_it(app, monkeypatch):
    from transformer.explorer.core import models
    from transformer.explorer import startup

    path = app.explorer.models.serving_path
    assert app.explorer.models.default_translator.precision == path.precision  # what the start-up probe measured fastest
    notice = values(app, app.page.on_model_change(app.explorer.models.default_model), "results.notice")[0]
    assert f"Decoding: {path.precision}" in notice and "TRANSFORMER_PRECISION" not in notice  # no settings on the page
    assert "measured fastest on this computer" in notice  # the serving path, and the timings behind it
    assert f"{path.step_ms[path.precision]:.1f} ms" in notice
    for value, overridden in (("fp32", "fp32"), (" FP32 ", "fp32"), ("int8", "int8"), ("", None), ("int4", None)):
        monkeypatch.setenv("TRANSFORMER_PRECISION", value)
        # the start-up's measurement, not again; where the variable asks for a precision, one measured the other
        # way, so that it really overrides (an int8 the probe chose anyway is "measured fastest", whichever this
        # machine measured: the test no longer depends on it)
        other = "int8" if overridden == "fp32" else "fp32"
        probed = dataclasses.replace(path, precision=other) if overridden else path
        choice = startup.serving_choice(probe=lambda config: probed)
        assert choice.precision == (overridden or path.precision)
        assert (choice.why == "set by TRANSFORMER_PRECISION") == bool(overridden)
    fp32 = model_registry.ModelRegistry(Path(app.explorer.models.registry.checkpoint_dir), app.explorer.models.registry.override, "fp32")
    assert fp32.get(app.explorer.models.default_model).precision == "fp32" and models.precision_note("fp32").startswith("Decoding: fp32")


def test_a_busy_batcher_is_a_clear_error_not_a_hang(app):
    from transformer.serving.batching import BatcherBusy

    def busy(*args, **kwargs):
        raise BatcherBusy("The translator is busy: 64 requests are already waiting. Please try again in a few seconds.")

    with pytest.raises(gr.Error, match="busy.*try again"):
        results.run_translation(app.explorer.models.default_translator, app.explorer.models.default_model, "h e l l o", "beam", 3, translate=busy)


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


# ----------------------------------------------------------------------------- issue 12: tree, compare, links


def test_main_path_records_no_search(app, monkeypatch):
    tr = app.explorer.models.default_translator
    calls = []
    original = tr.translate_sources  # what decodes, alone or in a batch (transformer/serving/batching.py)

    def spy(sources, options, max_len=None, output_attentions=True, top_k=5, record_search=False):
        calls.append(dict(record_search=record_search))
        return original(sources, options, max_len, output_attentions, top_k, record_search)

    monkeypatch.setattr(tr, "translate_sources", spy)
    searcher = app.explorer.models.batcher.searcher  # the search process searches without a trace: it has no such option
    original_search = searcher.search
    monkeypatch.setattr(searcher, "search", lambda *a, **k: calls.append({}) or original_search(*a, **k))
    result = app.page.on_translate("h e l l o", "beam", 3, app.explorer.models.default_model, 0.6)[app.page.states.result]
    assert [k.get("record_search", False) for k in calls] == [False]
    assert result.translation.search is None and result.search is None
    assert app.explorer.tree.on_tree_view(result, "attention", "") is None  # the tree tab is closed: nothing recorded
    assert len(calls) == 1 and result.search is None


def test_tree_is_recorded_once_when_opened_and_matches_the_translation(app, monkeypatch):
    from transformer.explorer.panels.tree import search_tree

    tr = app.explorer.models.default_translator
    result = app.page.on_translate("h e l l o", "beam", 4, app.explorer.models.default_model, 0.6)[app.page.states.result]
    calls = []
    original = tr.translate
    monkeypatch.setattr(tr, "translate", lambda *a, **k: calls.append(k) or original(*a, **k))
    value = app.explorer.tree.on_tree_view(result, "tree", '{"kind": "cross", "layer": 0, "head": 1}')
    assert [(k["method"], k["record_search"], k["output_attentions"]) for k in calls] == [
        ("beam", True, False), ("greedy", True, False)]
    trace = result.search.trace
    final = [trace.prefix_ids(i) for i in trace.nbest]
    assert final == [c.ids for c in result.translation.candidates]  # the tree of the translation shown
    assert value["choices"] == [[label, i] for label, i in search_tree.node_choices(trace)]  # plain text labels
    assert value["selected"] == trace.nbest[0] and (value["layer"], value["head"]) == (0, 1)
    reference = tr.attention_for_prefix(result.translation, trace.prefix_ids(value["selected"]))
    np.testing.assert_allclose(value["row"], reference.cross[0, 1, -1], atol=1e-6)
    np.testing.assert_allclose(json.loads(value["node"])["data"][0]["y"], reference.cross[0, 1, -1], atol=1e-6)
    assert json.loads(value["tree"])["data"] and value["tree_rev"] == result.search.rev
    # opening the tab again costs no decoding; a node, layer and head are one teacher-forced pass (cached)
    app.explorer.tree.on_tree_view(result, "tree", "")
    node = trace.nbest[-1]
    picked = app.explorer.tree.tree_pick(result, {"node": node, "layer": 1, "head": -1,
                                                         "tree_rev": result.search.rev})
    assert len(calls) == 2 and picked["tree"] is None  # the page has the tree already
    mean = tr.attention_for_prefix(result.translation, trace.prefix_ids(node)).cross[1].mean(axis=0)[-1]
    np.testing.assert_allclose(picked["row"], mean, atol=1e-6)
    assert picked["prefix"] == read_tokens(trace.prefix_tokens(node))  # the node's prefix, read as words
    # hostile event data falls back to defaults
    odd = app.explorer.tree.tree_pick(result, {"node": "<b>", "layer": 99, "head": True})
    assert odd["selected"] == trace.nbest[0] and odd["layer"] == odd["n_layers"] - 1 and odd["head"] == -1
    assert odd["tree"] is not None


def test_tree_of_a_greedy_translation_has_no_second_search(app):
    result = app.page.on_translate("a b c", "greedy", 1, app.explorer.models.default_model, 0.6)[app.page.states.result]
    app.explorer.tree.on_tree_view(result, "tree", "")
    assert result.search.greedy is None and result.search.trace.method == "greedy"
    assert [n.token_id for n in result.search.trace.best_path()] == result.translation.candidates[0].ids


def test_compare_figures_hold_both_results_arrays(app):
    from transformer.explorer.panels.compare.compare_view import select_map

    tr = app.explorer.models.default_translator
    value, session = app.explorer.compare.on_compare("h e l l o", "h e l l a", "beam", 3, app.explorer.models.default_model, 0.6,
                                    '{"kind": "cross", "layer": 1, "head": 2}')
    assert session.translations[0] == tr.translate("h e l l o", beam_size=3).text
    assert (value["kind"], value["layer"], value["head"], value["note"]) == ("cross", 1, 2, None)
    for side, text in enumerate(("h e l l o", "h e l l a")):
        own = tr.translate(text, beam_size=3).attention
        np.testing.assert_allclose(json.loads(value["pair"])["data"][side]["z"], own.cross[1, 2], atol=1e-6)
        assert value["sources"][side] == text
    w_a, *_ = select_map(session.attentions[0], "cross", 1, 2)
    w_b, *_ = select_map(session.attentions[1], "cross", 1, 2)
    np.testing.assert_allclose(json.loads(value["difference"])["data"][0]["z"], w_a - w_b, atol=1e-6)  # same lengths
    # another kind, layer and head from the panel: the same two translations, no decoding
    other = app.explorer.compare.compare_pick(session, {"kind": "encoder", "layer": 0, "head": -1})
    np.testing.assert_allclose(json.loads(other["pair"])["data"][1]["z"], session.attentions[1].encoder[0].mean(0),
                               atol=1e-6)


def test_difference_of_a_sentence_with_itself_is_zero(app):
    value, _ = app.explorer.compare.on_compare("g r a d i e n t", "g r a d i e n t", "beam", 2,
                                               app.explorer.models.default_model, 0.6, "")
    assert value["note"] is None
    difference = np.array(json.loads(value["difference"])["data"][0]["z"])
    assert difference.size and not np.any(difference)


def test_greedy_vs_beam_side_by_side(app):
    tr = app.explorer.models.default_translator
    value, session = app.explorer.compare.on_greedy_vs_beam("h e l l o", 1, app.explorer.models.default_model, 0.6, '{"kind": "decoder"}')
    assert value["labels"] == ["greedy", f"beam {view_state.DEFAULT_BEAM}"] and value["kind"] == "decoder"
    assert session.translations == (tr.translate("h e l l o", method="greedy").text,
                                    tr.translate("h e l l o", beam_size=view_state.DEFAULT_BEAM).text)
    with pytest.raises(gr.Error, match="no sentence to translate yet"):
        app.explorer.compare.on_compare("h e l l o", "   ", "beam", 3, app.explorer.models.default_model, 0.6, "")


def test_restore_from_a_link_validates_and_notes(app):
    from types import SimpleNamespace

    request = SimpleNamespace(query_params={"text": "a b c", "beam": "999", "tab": "tree", "layer": "2",
                                            "head": "9", "model": "nope", "compare": EVIL, "lp": "nan"})
    linked = ("controls.src", "compare.src", "controls.method", "controls.beam", "controls.lp", "states.lp",
              "controls.present", "tabs")  # what a link may set
    out = app.page.on_restore(app.explorer.models.default_model, request)
    text, compare, beam, lp, tabs = values(app, out, "controls.src", "compare.src", "controls.beam", "controls.lp",
                                           "tabs")
    model, tab, note, restored = values(app, out, "states.model", "states.tab", "results.note", "states.restore")
    assert (model, text, compare, beam.value, lp, tab) == (app.explorer.models.default_model, "a b c", "", 5, 0.6, "tree")
    assert tabs.selected == "tree" and note.visible
    for word in ("beam", "head", "model", "compare", "lp"):
        assert f"{word} " in note.value
    assert json.loads(restored)["view"]["layer"] == 1
    out = app.page.on_restore(app.explorer.models.default_model, SimpleNamespace(query_params={}))
    note, plain = values(app, out, "results.note", "states.restore")
    assert note.visible is False  # a plain page: no note
    assert not {attrgetter(path)(app.page) for path in linked} & out.keys()  # nothing typed is overwritten
    assert app.page.on_restore_translate("x", "beam", 5, app.explorer.models.default_model, 0.6, plain) == gr.skip()  # no link text
    assert app.page.on_restore_translate("", "beam", 5, app.explorer.models.default_model, 0.6, restored) == gr.skip()  # no error


def test_examples_follow_what_the_model_was_trained_on(app, tmp_path):
    captions_only = Path(__file__).resolve().parents[1] / "checkpoints" / "multi30k-en-de"
    assert model_registry.examples_for(None, captions_only) == model_registry.EXAMPLES_CAPTIONS
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "training.json").write_text(json.dumps(
        {"train_config": {"task": "translation", "corpora": ["tatoeba-en-de", "multi30k:2"]}}))
    assert model_registry.examples_for(None, mixed) == model_registry.EXAMPLES_EN
    assert model_registry.examples_for(None, tmp_path / "missing") == model_registry.EXAMPLES_EN


# ----------------------------------------------------------------------------- heads switched off, norms, roles


class Event:
    """What gr.HTML's 'rerun' event carries (`EventData._data`)."""

    def __init__(self, **data):
        self._data = data


def test_heads_switched_off_give_the_models_answer_without_them_beside_the_unmasked(app):
    result = app.page.on_translate("h e l l o", "beam", 3, app.explorer.models.default_model, 0.6)[app.page.states.result]
    cfg = app.explorer.models.default_translator.model.config
    every_cross = [["cross", layer, head] for layer in range(cfg.n_decoder_layers) for head in range(cfg.n_heads)]
    out = app.page.on_rerun(result, Event(off=every_cross + [["encoder", 0, 1]], measure="weight"))
    ablated, payload = values(app, out, "states.result", "attention.view")
    text, nbest, notice = app.explorer.reruns.rerun_texts(ablated)
    assert ablated.base is result and len(ablated.off) == len(every_cross) + 1
    mask = ablated.translation.head_mask
    assert int((mask.cross == 0).sum() + (mask.encoder == 0).sum()) == len(ablated.off)
    assert text == ablated.translation.text
    assert list(nbest["translation"]) == list(dict.fromkeys(c.text for c in ablated.translation.candidates))
    assert payload["ablation"]["unmasked"] == result.translation.text
    assert len(payload["ablation"]["off"]) == len(ablated.off)
    assert "switched off" in notice and result.translation.text in notice
    att = decode_attention(payload)
    assert not att.cross.any() and not att.encoder[0, 1].any() and att.encoder[0, 0].any()
    # the same heads again: cached, no model pass; none: the unmasked result itself
    assert app.explorer.reruns.rerun(result, every_cross + [["encoder", 0, 1]]) is ablated
    back = app.page.on_rerun(ablated, Event(off=[], measure="weight"))
    assert back[app.page.states.result] is result and back[app.page.attention.view]["ablation"] is None
    assert app.explorer.reruns.rerun_texts(result)[2] == "" and app.explorer.reruns.rerun_texts(None)[0] == ""
    # another candidate of the ablated result keeps its heads off
    if len(ablated.translation.candidates) > 1:
        shown = app.page.on_candidate(ablated, 1)
        assert not decode_attention(shown[app.page.attention.view]).cross.any()


def test_heads_off_and_norm_passes_run_on_the_batchers_thread(app, monkeypatch):
    """All model work goes through the Batcher: a heads-off translation and a norm pass never run on the
    handler's thread, beside another pass on the same cores."""
    import threading

    result = app.page.on_translate("x y z", "beam", 2, app.explorer.models.default_model, 0.6)[app.page.states.result]
    tr, seen = app.explorer.models.default_translator, []
    for name in ("translate", "attention_for"):
        def spy(*args, real=getattr(tr, name), name=name, **kwargs):
            seen.append((name, threading.current_thread().name))
            return real(*args, **kwargs)
        monkeypatch.setattr(tr, name, spy)
    app.page.on_rerun(result, Event(off=[["decoder", 0, 1]], measure="norm"))
    assert {name for name, _ in seen} == {"translate", "attention_for"}
    assert {thread for _, thread in seen} == {app.explorer.models.batcher._thread.name}


@pytest.mark.parametrize("off", [[["cross", 99, 0]], [["kernel", 0, 0]], "all", [["cross", 0]], [[None, 0, 0]]])
def test_bad_heads_to_switch_off_are_a_clear_error(app, off):
    result = app.page.on_translate("a b c", "greedy", 1, app.explorer.models.default_model, 0.6)[app.page.states.result]
    with pytest.raises(gr.Error):
        app.explorer.reruns.rerun(result, off)


def test_norms_come_only_when_asked_and_rows_are_shares(app):
    result = app.page.on_translate("h e l l o", "beam", 2, app.explorer.models.default_model, 0.6)[app.page.states.result]
    payload = app.page.show_result(result)[app.page.attention.view]
    assert "norm" not in payload["kinds"]["encoder"] and payload["measures"] == ["weight"]
    out = app.page.on_rerun(result, Event(off=[["decoder", 0, 0]], measure="norm"))
    ablated, payload = values(app, out, "states.result", "attention.view")
    assert payload["measures"] == ["weight", "norm"]
    norms = decode_attention(payload, "norm")
    assert norms.measure == "norm" and norms.encoder.shape == ablated.attention.encoder.shape
    sums = norms.cross.sum(-1)
    np.testing.assert_allclose(sums, 1.0, atol=1e-3)
    assert not norms.decoder[0, 0].any()  # the head switched off: no norm either
    expected = app.explorer.models.default_translator.attention_for(ablated.translation, attention_measure="norm").cross
    np.testing.assert_allclose(norms.cross, expected / expected.sum(-1, keepdims=True), atol=1e-4)


def test_head_analysis_reaches_the_payload_and_the_heads_tab(app, tmp_path):
    from transformer.explorer.core import checkpoint_heads
    from transformer.explorer.panels.heads.figures import head_figures

    assert checkpoint_heads.head_info(tmp_path) is None
    fig, table = head_figures("x", tmp_path)
    assert "head_analysis" in json.dumps(fig.to_plotly_json()) and table.empty
    grid = [[0.5, 1.0], [1.0, 0.0]]
    kinds = {k: {"shares": {"sink": grid, "rare": grid}, "tags": [[["sink"], []], [["sink", "rare"], []]],
                 "rows": {"sink": 10, "rare": 8}} for k in ("encoder", "decoder", "cross")}
    (tmp_path / "head_roles.json").write_text(json.dumps({
        "kinds": kinds, "names": {"sink": "sink <b>", "rare": "rare word"}, "thresholds": {"sink": 0.5, "rare": 0.5}}))
    curve = {"removed": [0, 2, 4], "bleu": [30.0, 29.8, 10.0]}
    (tmp_path / "head_importance.json").write_text(json.dumps({
        "importance": {k: grid for k in ("encoder", "decoder", "cross")},
        "pruning": {k: {"n_heads": 4, "importance": curve, "reverse": curve, "random": curve | {"seeds": [[1]]},
                        "removable": {"importance": 2}} for k in ("encoder", "decoder", "cross")}}))
    info = checkpoint_heads.head_info(tmp_path)
    assert info["kinds"]["cross"]["tags"][1][0] == ["sink", "rare"] and info["codes"]["sink"] == "K"
    fig, table = head_figures("x", tmp_path)
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    assert len(heatmaps) == 3 and heatmaps[0].text[1][0] == "KR" and "sink &lt;b&gt;" in heatmaps[0].customdata[0][0]
    assert len([t for t in fig.data if t.type == "scatter"]) == 9
    assert "2 of 4 heads go" in json.dumps(fig.to_plotly_json(), ensure_ascii=False)
    assert list(table["heads"]) == [2, 1] * 3
    payload = result_view.result_payload(fake_result(app), info)
    assert payload["heads"]["kinds"]["encoder"]["importance"] == grid


def test_the_nbest_list_shows_each_translation_once_and_rows_map_to_candidates():
    from transformer.explorer.core.results import run_translation
    from transformer.explorer.core.result_view import candidate_choices, nbest_row_candidate, nbest_table

    tr = load_pretrained(Path(__file__).resolve().parents[1] / "checkpoints" / "en-de")
    result = run_translation(tr, "en-de", "I know that the teacher speaks German.", "beam", 8, 1.4)[0]
    texts = [c.text for c in result.translation.candidates]
    table = nbest_table(result)
    assert list(table["translation"]) == list(dict.fromkeys(texts))  # distinct, best first
    assert int(table["spellings"].sum()) == len(texts) and len(table) < len(texts)  # this sentence repeats
    for row, text in enumerate(table["translation"]):
        index = nbest_row_candidate(result, row)
        assert texts[index] == text and texts.index(text) == index  # the best-scored spelling
    assert [i for _, i in candidate_choices(result)] == [nbest_row_candidate(result, r) for r in range(len(table))]


def test_the_model_list_marks_toy_tasks_and_keeps_their_names_as_values():
    models = model_registry.ModelRegistry(Path(__file__).resolve().parents[1] / "checkpoints")
    choices = dict((value, shown) for shown, value in models.choices())
    assert choices["en-de"] == "en-de" and choices["multi30k-en-de"] == "multi30k-en-de"
    assert choices["toy-reverse"] == "toy-reverse (a toy task, not a translator: it reverses letters)"
    assert all("toy task" in shown for value, shown in choices.items() if value.startswith("toy-"))


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


def test_exports_stay_within_their_byte_budget_oldest_first(tmp_path):
    for i in range(5):
        path = tmp_path / f"attention-1-{i}.npz"
        path.write_bytes(b"x" * 1000)
        os.utime(path, (1_000_000 + i, time.time() - 100 + i))  # older first
    exports._prune(tmp_path, max_age_s=900, max_bytes=2500)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["attention-1-3.npz", "attention-1-4.npz"]
    exports._prune(tmp_path, max_age_s=50)  # and anything older than max_age_s
    assert list(tmp_path.iterdir()) == []


def test_export_folders_of_apps_no_longer_running_are_removed_and_no_others(tmp_path):
    import subprocess

    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"{exports.EXPORT_DIR_PREFIX}{int(ended.stdout)}"
    alive = tmp_path / f"{exports.EXPORT_DIR_PREFIX}{os.getppid()}"  # a running process
    own = tmp_path / f"{exports.EXPORT_DIR_PREFIX}{os.getpid()}"
    other = tmp_path / "attention-explorer-notes"  # not an app's folder: no process id
    for d in (dead, alive, own, other):
        d.mkdir()
        (d / "attention-1-x.npz").write_bytes(b"x")
    assert exports.remove_stale_export_dirs(tmp_path, os.getpid()) == [dead]
    assert not dead.exists() and alive.exists() and own.exists() and other.exists()


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
