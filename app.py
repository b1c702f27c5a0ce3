"""Attention explorer: translate a sentence and look at every layer and head of the Transformer's attention.

    python app.py   # http://127.0.0.1:7860; GRADIO_SERVER_NAME/PORT, TRANSFORMER_PRECISION, TRANSFORMER_CHECKPOINT

Layout and wiring only: a builder per panel returns its components as a named tuple (the side column's in
`transformer.explorer.side_panels`, the tabs' in `transformer.explorer.tab_panels`); `build_demo` composes them
into a `Page`, whose handlers answer `{component: value}`, and wires the events. What an event
computes is `transformer.explorer.callbacks`. `demo` (queued, not launched) is what Spaces and the tests import.
API: `/translate` (text, method, beam_size) -> (translation, notice, n-best table), text only.
"""
from __future__ import annotations

import logging
import os
from collections import namedtuple
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no network at run time (telemetry, version check)
os.environ.setdefault("GOMP_SPINCOUNT", "1000")  # torch's OpenMP reads it as torch loads: spin briefly (docs/deploy.md)

import gradio as gr  # noqa: E402

from transformer.explorer import launch, page, texts  # noqa: E402
from transformer.explorer.callbacks import CompareSession, Explorer, ModelInfo, event_data, view_data  # noqa: E402
from transformer.explorer.inside import Inside  # noqa: E402
from transformer.explorer.registry import EXAMPLES_EN  # noqa: E402
from transformer.explorer.results import Result  # noqa: E402
from transformer.explorer.share import ViewState  # noqa: E402
from transformer.explorer.views import candidate_choices, nbest_select_candidate, nbest_table  # noqa: E402
from transformer.explorer.side_panels import build_controls, build_results, build_yours  # noqa: E402
from transformer.explorer.tab_panels import (  # noqa: E402
    build_attention_tab, build_compare_tab, build_inside_panel, build_learn_tab, build_model_tabs, build_tree_tab)

if __name__ == "__main__":  # before start-up, which logs what it chose for this machine (threads, serving path)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
EXPLORER = Explorer.start(Path(__file__).resolve().parent / "checkpoints")  # the default model loads now
# plotly.js from the installed plotly package; the attention downloads from the folder they are written to
gr.set_static_paths([page.PLOTLY_JS, EXPLORER.export_dir])  # (exports.py), never copied into gradio's cache
REGISTRY, EXPORT_DIR, DEFAULT_MODEL = EXPLORER.registry, EXPLORER.export_dir, EXPLORER.default_model
DEFAULT_TRANSLATOR, STARTUP_ERROR = EXPLORER.default_translator, EXPLORER.startup_error
per_session = launch.session_limited(EXPLORER.slots)  # a session's model requests: at most its slots in flight
launch_options = launch.launch_options  # what `python app.py` launches with (the tests read it here too)
INSIDE = Inside(EXPLORER)  # how one weight is computed, a translation of one's own, the model learning

# ----------------------------------------------------------------------------- the page: its panels and handlers
# per-session state (tab: the one on screen); view, restore: hidden boxes the browser writes its view into
States = namedtuple("States", "model lp result compare tab view restore")


class Page(namedtuple("Page", "states controls results tabs attention tree compare training heads")):
    """The page's panels, and the handlers of its events that update components ({component: value}); the
    tree and compare handlers whose outputs are plain values are `EXPLORER`'s own."""

    def show_result(self, result: Result | None, answers: int | None = None) -> dict:
        """The page's attention payload (drawn in the browser; `stamped`) and the candidate selector for a result."""
        n_cand, value = (len(result.translation.candidates), result.candidate) if result is not None else (1, 0)
        return {self.attention.view: launch.stamped(EXPLORER.payload(result), answers), self.results.candidate:
                gr.Dropdown(choices=candidate_choices(result), value=value, interactive=n_cand > 1)}

    def texts(self, result: Result, notice: str) -> dict:
        return {self.results.translation: result.translation.text, self.results.notice: notice,
                self.results.nbest: nbest_table(result)}

    def on_api_translate(self, text: str, method: str, beam_size: float, model: str | None, length_penalty: float):
        """API `/translate`: (translation, notice, n-best); no attention computed, nothing kept in the session."""
        return self.texts(*EXPLORER.translate(text, method, beam_size, model, length_penalty, return_attention=False))

    def on_translate(self, text: str, method: str, beam_size: float, model: str | None, length_penalty: float):
        """The page's translation: (translation, notice, n-best) and the result, kept as session state."""
        result, notice = EXPLORER.translate(text, method, beam_size, model, length_penalty)
        return self.texts(result, notice) | {self.states.result: EXPLORER.keep(result)}

    def on_translate_view(self, text: str, method: str, beam_size: float, model: str | None, length_penalty: float):
        """The page's Translate: the API's outputs and the attention payload in one response (one round trip)."""
        out = self.on_translate(text, method, beam_size, model, length_penalty)
        return out | self.show_result(out[self.states.result])

    def on_candidate(self, result: Result | None, index: int) -> dict:
        """Another n-best candidate: its attention (one teacher-forced pass, cached) straight to the page."""
        result = None if result is None else EXPLORER.select(result, index)
        return {self.states.result: result} | self.show_result(result)

    def on_rerun(self, result: Result | None, evt: gr.EventData) -> dict:
        return self.show_rerun(EXPLORER.rerun(result, evt), launch.rerun_ticket(event_data(evt)))

    def show_rerun(self, result: Result | None, answers: int | None = None) -> dict:
        """Heads switched off or on, or norms (attention tab): maps, translation, n-best list and notes together."""
        texts = dict(zip(((r := self.results).translation, r.nbest, r.notice), EXPLORER.rerun_texts(result)))
        return {self.states.result: result} | texts | self.show_result(result, answers)

    def on_nbest_select(self, result: Result | None, evt: gr.EventData) -> dict:
        """A row of the n-best table clicked: its candidate. `evt` is read as plain data (gr.SelectData would fail
        on an event without "index", before this handler could say anything)."""
        index = nbest_select_candidate(result, event_data(evt).get("index"))
        return self.on_candidate(result, index) if index is not None else \
            {self.states.result: result} | self.show_result(result)

    def show_model(self, info: ModelInfo) -> dict:
        return {self.controls.examples: gr.Dataset(samples=[[e] for e in info.examples]),
                self.training.plot: info.figure, self.training.table: info.metrics,
                self.heads.plot: info.heads[0], self.heads.table: info.heads[1]}

    def on_model_change(self, label: str, current: str | None = None):
        """Switch model: load it (cached), clear the old result, refresh examples and the training tab. The same
        model again (the dropdown sends its value when the keyboard's focus passes through it) changes nothing."""
        if current is not None and label == current:
            return gr.skip()
        info, r = EXPLORER.switch(label), self.results
        return {self.states.model: label, self.states.result: None, r.translation: "", r.notice: info.notice,
                r.nbest: nbest_table(None)} | self.show_model(info) | self.show_result(None)

    def on_restore(self, model: str | None, request: gr.Request) -> dict:
        """Page load: list the checkpoints present now and restore the view a shared link carries (validated)."""
        r = EXPLORER.restore(model, dict(request.query_params) if request is not None else {})
        v, s, c = r.view, self.states, self.controls
        out = {c.model: gr.Dropdown(choices=REGISTRY.choices(r.labels), value=v.model), s.model: v.model, s.tab: v.tab,
               s.restore: r.client, self.results.note: gr.Textbox(value=r.note, visible=bool(r.note))}
        linked = {"text": {c.src: v.text}, "compare": {self.compare.src: v.compare}, "method": {c.method: v.method},
                  "lp": {c.lp: v.length_penalty, s.lp: v.length_penalty}, "present": {c.present: v.present},
                  "tab": {self.tabs: gr.Tabs(selected=v.tab)},
                  "beam method": {c.beam: gr.Slider(value=v.beam, interactive=v.method == "beam")}}
        for keys, values in linked.items():  # a link sets what it carries; the rest stays as the user set it
            if r.given(*keys.split()):
                out |= values
        return out | self.show_model(r.model)

    def on_restore_translate(self, text: str, method: str, beam_size: float, model: str | None, lp: float, restored=""):
        """A link with text translates it; a page without one stays as it is (no error, no second translation)."""
        data = view_data(restored)
        if not data.get("translate") or not (text or "").strip():
            return gr.skip()  # every output kept: a translation the user made meanwhile stays
        linked = data.get("view") if isinstance(data.get("view"), dict) else {}
        plain, args = not linked.get("off") and linked.get("measure") != "norm", (text, method, beam_size, model, lp)
        return per_session.newest("new")(lambda: self.on_translate_view(*args) if plain else  # else heads off or norms:
                                         self.show_rerun(EXPLORER.translate_linked(*args, linked)))()  # theirs at once

    def on_export(self, result: Result | None) -> gr.DownloadButton:
        return gr.DownloadButton(value=str(path) if (path := EXPLORER.export(result)) else None, interactive=bool(path))

    def on_tree_pick(self, result: Result | None, evt: gr.EventData):
        return EXPLORER.tree_pick(result, evt)

    def on_compare_pick(self, session: CompareSession | None, evt: gr.EventData):
        return EXPLORER.compare_pick(session, evt)


# ----------------------------------------------------------------------------- three ways into the model


class InsidePanels(namedtuple("InsidePanels", "page yours inside learn")):
    """The "your translation" box, the panel of how one weight is computed and the learning tab, with the
    handlers of their events that update components; what they compute is `INSIDE`'s (explorer/inside.py)."""

    def on_score(self, text: str, yours: str, model: str | None, lp: float, result: Result | None) -> dict:
        """Your translation scored: the box's token view, and every map shows the attention for it."""
        forced, value = INSIDE.score(text, yours, model, lp, result)
        return {self.page.states.result: forced, self.yours.view: value} | self.page.show_result(forced)

    def on_cell(self, result: Result | None, evt: gr.EventData) -> dict:
        """A cell of one head's map clicked: how its weight is computed (one float32 pass)."""
        return INSIDE.cell(result, evt)

    def on_learn(self, label: str | None, text: str, evt: gr.EventData) -> dict:
        """The learning slider at a step: the sentence as the model translated it then."""
        return INSIDE.learn(label, text, evt)

    def on_model(self, label: str | None) -> dict:
        """Another model: the learning tab shows when it ships training snapshots."""
        index = INSIDE.learn_index(label)
        return {self.learn.tab: gr.Tab(visible=index is not None), self.learn.view: index,
                self.yours.view: None, self.inside: None}

    def on_restore_yours(self, text: str, model: str | None, lp: float, result: Result | None, restored: str) -> dict:
        """A link's page load: the learning tab of its model, and its translation (`yours`, validated) scored."""
        out = self.on_model(model)
        del out[self.inside], out[self.yours.view]  # both start empty: a cell or a score made meanwhile stays
        yours = view_data(restored).get("yours")
        if not isinstance(yours, str) or not yours or not (text or "").strip():
            return out
        scored = per_session.newest("edit")(self.on_score)(text, yours, model, lp, result)  # or gr.skip()
        return out | {self.yours.box: yours} | (scored if isinstance(scored, dict) else {})


def build_demo() -> tuple[gr.Blocks, Page]:
    """The page, top to bottom (every field of the initial view is set by the builders), and its events."""
    view = ViewState(model=DEFAULT_MODEL, length_penalty=EXPLORER.default_length_penalty)
    info = EXPLORER.model_info(DEFAULT_MODEL, DEFAULT_TRANSLATOR)
    with gr.Blocks(title="Transformer attention explorer", analytics_enabled=False, delete_cache=(900, 3600)) as demo:
        states = States(model=gr.State(view.model), lp=gr.State(view.length_penalty), tab=gr.State(view.tab),
                        result=gr.State(None, time_to_live=3600), compare=gr.State(None, time_to_live=3600),
                        view=gr.Textbox(visible=False), restore=gr.Textbox(visible=False))
        gr.Markdown(texts.INTRO, elem_id="intro")
        with gr.Row(elem_id="stage"):  # the stage: a side column of controls, the views beside it (page.py)
            with gr.Column(scale=1, min_width=320, elem_id="sidebar"):
                controls, translation = build_controls(view, info.examples, REGISTRY.choices() or (
                    [DEFAULT_MODEL] if DEFAULT_MODEL else []), EXAMPLES_EN[0])
                results = build_results(translation, EXPLORER.serving_note(), nbest_table(None),
                                        candidate_choices(None))
                yours = build_yours()
            with gr.Column(scale=3, min_width=320, elem_id="main"):
                with gr.Tabs(elem_id="tabs") as tabs:
                    p = Page(states, controls, results, tabs, build_attention_tab(view), build_tree_tab(),
                             build_compare_tab(), *build_model_tabs(info))
                    with p.attention.tab:
                        inside = build_inside_panel()
                    learn = build_learn_tab(INSIDE.learn_index(view.model))
        rerun, restored = wire_translation(demo, p)
        wire_tabs(p)
        wire_inside(p, InsidePanels(p, yours, inside, learn), restored, rerun)
    return demo, p


# ----------------------------------------------------------------------------- wiring

PRIVATE, QUIET = dict(api_visibility="private"), dict(api_visibility="private", show_progress="minimal")
MODEL = dict(concurrency_limit=EXPLORER.batcher.max_batch, concurrency_id="model")  # the batcher orders it
RESTORE = dict(concurrency_limit=8, concurrency_id="restore")  # page loads run no model: never behind model work
TRANSLATE = dict(concurrency_limit=EXPLORER.batcher.max_batch, concurrency_id="translate")
QUIET_MODEL = {**QUIET, **MODEL}


def wire_translation(demo: gr.Blocks, p: Page):
    """Translate (the page's, the API's and a shared link's), examples, candidates, model and settings."""
    s, c, r, xp = p.states, p.controls, p.results, EXPLORER
    inputs, shown = [c.src, c.method, c.beam, s.model, s.lp], [s.result, p.attention.view, r.candidate]
    outputs, training = [r.translation, r.notice, r.nbest] + shown, [c.examples, *p.training[1:], *p.heads[1:]]
    export = dict(fn=p.on_export, inputs=[s.result], outputs=[r.download], **QUIET)
    tree = dict(fn=per_session(xp.on_tree_view), inputs=[s.result, s.tab, s.view], outputs=[p.tree.view], **QUIET_MODEL)
    # /translate (3 outputs, gradio_client); the page's Translate: one response with the payload (bench/load.py)
    c.api.click(per_session(p.on_api_translate), inputs, outputs[:3], api_name="translate", **TRANSLATE,
                api_description="Translate text; returns (translation, notice, n-best table).")
    gr.on([c.translate.click, c.src.submit], per_session(p.on_translate_view, "new"), inputs, outputs,
          api_name="translate_view", api_visibility="undocumented", **TRANSLATE).success(**export).then(**tree)
    c.examples.click(lambda sample: sample[0], [c.examples], [c.src], queue=False, **PRIVATE).then(
        per_session(p.on_translate_view, "new"), inputs, outputs, **PRIVATE, **TRANSLATE).success(**export).then(**tree)
    r.candidate.input(per_session(p.on_candidate, "edit"), [s.result, r.candidate], shown, **QUIET_MODEL).then(**export)
    r.nbest.select(per_session(p.on_nbest_select, "edit"), [s.result], shown, **QUIET_MODEL).then(**export)
    rerun = p.attention.view.rerun(per_session(p.on_rerun, "edit"), [s.result], outputs, trigger_mode="always_last",
                                   **QUIET_MODEL)  # the texts with the maps: they change together
    rerun.then(**export)
    c.method.input(lambda m: gr.Slider(interactive=m == "beam"), [c.method], [c.beam], queue=False, **PRIVATE)
    c.lp.change(lambda v: v, [c.lp], [s.lp], queue=False, **PRIVATE)
    c.model.input(per_session(p.on_model_change), [c.model, s.model], outputs + [s.model] + training, **PRIVATE,
                  **MODEL).then(**export).then(**tree)
    c.present.change(None, [c.present], None, js=page.JS_PRESENT, **PRIVATE)
    # a shared link: validate its parameters (transformer/explorer/share.py), restore the view, translate
    r.copy.click(None, None, [r.link], js=page.JS_COPY_LINK, **PRIVATE)
    restored = [c.model, s.model, c.src, p.compare.src, c.method, c.beam, c.lp, s.lp, c.present, p.tabs, s.tab,
                r.note, s.restore] + training
    return rerun, demo.load(p.on_restore, [s.model], restored, **PRIVATE, **RESTORE).then(
        None, [s.restore], [s.view], js=page.JS_RESTORE, **PRIVATE).then(
        per_session(p.on_restore_translate), inputs + [s.restore], outputs, **PRIVATE, **TRANSLATE).success(
        **export).then(**tree).then(per_session(xp.on_restore_compare),
                                    [c.src, p.compare.src, c.method, c.beam, s.model, s.lp, s.tab, s.view],
                                    [p.compare.view, s.compare], **QUIET_MODEL)


def wire_tabs(p: Page) -> None:
    """The app's tabs (the URL follows them): the tree is recorded when its tab opens, compare's box is prefilled."""
    s, c, cmp, xp = p.states, p.controls, p.compare, EXPLORER
    entered = {}
    for tab in (p.attention.tab, p.tree.tab, cmp.tab, p.training.tab, p.heads.tab):
        entered[tab.id] = tab.select(None, None, [s.view], js=page.js_enter_tab(tab.id), **PRIVATE).then(
            (lambda name: lambda: name)(tab.id), None, [s.tab], queue=False, **PRIVATE)
    entered["tree"].then(per_session(xp.on_tree_view), [s.result, s.tab, s.view], [p.tree.view], **QUIET_MODEL)
    p.tree.view.pick(per_session(p.on_tree_pick), [s.result], [p.tree.view], **QUIET_MODEL)
    entered["compare"].then(lambda text, other: other or text, [c.src, cmp.src], [cmp.src], queue=False, **PRIVATE)
    cmp.run.click(None, None, [s.view], js=page.JS_VIEW, **PRIVATE).then(
        per_session(xp.on_compare), [c.src, cmp.src, c.method, c.beam, s.model, s.lp, s.view], [cmp.view, s.compare],
        **QUIET_MODEL)
    cmp.versus.click(None, None, [s.view], js=page.JS_VIEW, **PRIVATE).then(
        per_session(xp.on_greedy_vs_beam), [c.src, c.beam, s.model, s.lp, s.view], [cmp.view, s.compare], **QUIET_MODEL)
    cmp.view.pick(p.on_compare_pick, [s.compare], [cmp.view], **QUIET)


def wire_inside(p: Page, x: InsidePanels, restored, rerun) -> None:
    """Your translation (Score, Enter, the model's as a start, a link's), a clicked cell, the learning slider."""
    s, c, r, y = p.states, p.controls, p.results, x.yours
    score = dict(fn=per_session(x.on_score, "edit"), inputs=[c.src, y.box, s.model, s.lp, s.result],
                 outputs=[s.result, p.attention.view, r.candidate, y.view], **PRIVATE, **MODEL)
    gr.on([y.score.click, y.box.submit], **score).success(p.on_export, [s.result], [r.download], **QUIET)
    y.own.click(lambda own: own or "", [r.translation], [y.box], queue=False, **PRIVATE)
    gr.on([c.translate.click, c.src.submit, c.examples.click], lambda: (None, None), None, [y.view, x.inside],
          queue=False, **PRIVATE)
    # heads switched off or on with one's own translation on screen: its scores follow the result the rerun wrote
    rerun.then(INSIDE.yours_of, [s.result], [y.view], **QUIET)
    x.inside.cell(per_session(x.on_cell), [s.result], [x.inside], trigger_mode="always_last", **QUIET_MODEL)
    x.learn.view.learn(per_session(x.on_learn), [s.model, c.src], [x.learn.view], **QUIET_MODEL)
    x.learn.tab.select(None, None, [s.view], js=page.js_enter_tab("learn"), **PRIVATE).then(
        lambda: "learn", None, [s.tab], queue=False, **PRIVATE)
    c.model.input(x.on_model, [c.model], [x.learn.tab, x.learn.view, y.view, x.inside], **PRIVATE)
    restored.then(per_session(x.on_restore_yours), [c.src, s.model, s.lp, s.result, s.restore],
                  [x.learn.tab, x.learn.view, y.box, s.result, p.attention.view, r.candidate, y.view, x.inside],
                  **PRIVATE, **MODEL)


demo, PAGE = build_demo()
demo.queue(default_concurrency_limit=2, max_size=64)

if __name__ == "__main__":
    launch.serve(demo, when_up=EXPLORER.preload)  # the model's preload waits for gradio's check
