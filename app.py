"""Attention explorer: translate a sentence and look at every layer and head of the Transformer's attention.

    python app.py   # http://127.0.0.1:7860; GRADIO_SERVER_NAME/PORT, TRANSFORMER_INT8_KERNEL, TRANSFORMER_CHECKPOINT

A Hugging Face Space (README's front matter: `app_file: app.py`) runs the same command. Importing this module
starts nothing: `create_app()` starts the explorer (threads, heap, serving path, search process) and builds the
page; `main()` serves it. Layout and wiring only: a builder per panel returns its components as a named tuple
(the side column's in `transformer.explorer.panels.sidebar.panel`, each tab's declared in
`transformer.explorer.panels.registry`), `build_page` composes them into a `Page`, whose handlers answer
`{component: value}`, and the `wire_*` functions connect the events. What an event computes is
`transformer.explorer.services`.
API: `/translate` (text, method, beam_size) -> (translation, notice, n-best table), text only.
"""

from __future__ import annotations

import logging
import os
from collections import namedtuple
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# no network at run time (telemetry, version check)
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
# torch's OpenMP reads it as torch loads: spin briefly (docs/deploy.md)
os.environ.setdefault("GOMP_SPINCOUNT", "1000")

import gradio as gr  # noqa: E402

from transformer.explorer.core import limits, texts  # noqa: E402
from transformer.explorer.core.checks import event_data, user_error, view_data  # noqa: E402
from transformer.explorer.core.model_registry import EXAMPLES_EN  # noqa: E402
from transformer.explorer.core.models import ModelInfo  # noqa: E402
from transformer.explorer.core.results import Result  # noqa: E402
from transformer.explorer.core.view_state import ViewState  # noqa: E402
from transformer.explorer.panels.inside.panel import Yours, build_cell_panel, build_yours  # noqa: E402
from transformer.explorer.panels.inside.service import Inside  # noqa: E402
from transformer.explorer.panels.registry import PANELS, scripts, styles  # noqa: E402
from transformer.explorer.panels.sidebar.panel import Controls, Results, build_controls, build_results  # noqa: E402
from transformer.explorer.panels.start import PanelStart  # noqa: E402
from transformer.explorer.services import Explorer  # noqa: E402
from transformer.explorer.startup import start_explorer  # noqa: E402
from transformer.explorer.web import launch, page, sessions  # noqa: E402
from transformer.explorer.web.wiring import (
    PRIVATE,
    QUIET,
    RESTORE,
    model_group,
    tab_entered,
    translate_group,
    with_event,
)  # noqa: E402
from transformer.explorer.core.result_view import candidate_choices, nbest_select_candidate, nbest_table  # noqa: E402

CHECKPOINTS = Path(__file__).resolve().parent / "checkpoints"
# `sessions.session_limited(slots)`: wraps a handler so that it holds one of its session's model slots
PerSession = Callable[..., Callable[..., Any]]

# per-session state (tab: the one on screen, tab_view: the view when it was entered); view, restore: hidden boxes the
# browser writes its view into
States = namedtuple("States", "model lp result compare tab tab_view view restore")


# ----------------------------------------------------------------------------- the page: its panels and handlers


@dataclass(frozen=True)
class Page:
    """The page's panels and the explorer behind them, with the handlers of its events that update components
    ({component: value}); the tree and compare handlers whose outputs are plain values are the explorer's own."""

    explorer: Explorer
    per_session: PerSession
    states: States
    controls: Controls
    results: Results
    tabs: gr.Tabs
    panels: dict[str, Any]  # each registered panel's components (panels/registry.py), by id
    yours: Yours
    cell_panel: gr.HTML

    @property
    def attention(self) -> Any:
        return self.panels["attention"]

    @property
    def tree(self) -> Any:
        return self.panels["tree"]

    @property
    def compare(self) -> Any:
        return self.panels["compare"]

    def show_result(self, result: Result | None, answers: int | None = None) -> dict:
        """The page's attention payload (drawn in the browser; `stamped`) and the candidate selector for a result."""
        if result is None:
            candidates, selected = 1, 0
        else:
            candidates, selected = len(result.translation.candidates), result.candidate
        selector = gr.Dropdown(choices=candidate_choices(result), value=selected, interactive=candidates > 1)
        payload = sessions.stamped(self.explorer.translation.payload(result), answers)
        return {self.attention.view: payload, self.results.candidate: selector}

    def texts(self, result: Result, notice: str) -> dict:
        return {
            self.results.translation: result.translation.text,
            self.results.notice: notice,
            self.results.nbest: nbest_table(result),
        }

    def on_api_translate(self, text: str, method: str, beam_size: float, model: str | None, length_penalty: float):
        """API `/translate`: (translation, notice, n-best); no attention computed, nothing kept in the session."""
        result, notice = self.explorer.translation.translate(
            text, method, beam_size, model, length_penalty, output_attentions=False
        )
        return self.texts(result, notice)

    def on_translate(self, text: str, method: str, beam_size: float, model: str | None, length_penalty: float):
        """The page's translation: (translation, notice, n-best) and the result, kept as session state; the model
        that reads the sentence's language offered when it is not this one's."""
        result, notice = self.explorer.translation.translate(text, method, beam_size, model, length_penalty)
        kept = {self.states.result: self.explorer.models.keep(result)}
        return self.texts(result, notice) | kept | self.show_offer(text, model)

    def show_offer(self, text: str, model: str | None) -> dict:
        """The button that translates with the model reading the sentence's language; hidden when none is needed."""
        other, _ = self.explorer.translation.other_model(text, model)
        button = gr.Button(f"Translate with {other}", visible=True) if other else gr.Button(visible=False)
        return {self.results.offer: button}

    def on_offer(
        self,
        text: str,
        method: str,
        beam_size: float,
        model: str | None,
        length_penalty: float,
        tab: str | None = None,
        view_json: str = "",
    ):
        """The offer pressed: switch to the model that reads the sentence's language and translate with it, in one
        answer (the model is found again here, from the sentence, not taken from the button)."""
        other, _ = self.explorer.translation.other_model(text, model)
        if other is None:
            return gr.skip()
        switched = self.on_model_change(other, model)
        translated = self.per_session.newest("new")(self.on_translate_view)(
            text, method, beam_size, other, length_penalty, tab, view_json
        )
        return switched | {self.controls.model: other} | (translated if isinstance(translated, dict) else {})

    def on_translate_view(
        self,
        text: str,
        method: str,
        beam_size: float,
        model: str | None,
        length_penalty: float,
        tab: str | None = None,
        view_json: str = "",
    ):
        """The page's Translate: everything the page shows of the new result in one response (one server event):
        the API's outputs, the attention payload, the tree while its tab is open, and the old result's own
        translation scores and weight panel cleared."""
        out = self.on_translate(text, method, beam_size, model, length_penalty)
        return out | self.show_new_result(out[self.states.result], tab, view_json)

    def show_new_result(self, result: Result | None, tab: str | None, view_json: str) -> dict:
        """A new result on the page: its payload and candidates, its tree (only while the tree tab is open: else
        the old tree goes), and the panels of the result before cleared."""
        followed = {}
        for panel in PANELS:
            if panel.follows_result is not None:
                followed |= panel.follows_result(
                    self.explorer, self.panels[panel.id], result, tab or "", view_json or ""
                )
        cleared = {self.yours.view: None, self.cell_panel: None}
        return self.show_result(result) | followed | cleared

    def on_example(
        self,
        sample: list[str],
        method: str,
        beam_size: float,
        model: str | None,
        length_penalty: float,
        tab: str | None = None,
        view_json: str = "",
    ):
        """An example clicked: its sentence into the source box and translated, in the same response."""
        text = example_text(sample)
        return {self.controls.src: text} | self.on_translate_view(
            text, method, beam_size, model, length_penalty, tab, view_json
        )

    def on_decoding(
        self,
        text: str,
        method: str,
        beam_size: float,
        model: str | None,
        length_penalty: float,
        result: Result | None,
        tab: str | None = None,
        view_json: str = "",
    ):
        """Method, beam width or length penalty changed: the translation on screen (or in flight) is made again with
        them, as a new translation (the newest answer wins), so no answer of the old settings stays as current. The
        box's sentence, else the one on screen; nothing on screen or coming, nothing to do."""
        if result is None and not self.per_session.translating():
            return gr.skip()
        text = text if (text or "").strip() else getattr(result, "source", "")
        if not (text or "").strip():
            return gr.skip()
        return self.per_session.newest("new")(self.on_translate_view)(
            text, method, beam_size, model, length_penalty, tab, view_json
        )

    def on_candidate(self, result: Result | None, index: int) -> dict:
        """Another n-best candidate: its attention (one teacher-forced pass, cached) straight to the page."""
        result = None if result is None else self.explorer.translation.select(result, index)
        return {self.states.result: result} | self.show_result(result)

    def on_rerun(self, result: Result | None, evt: gr.EventData) -> dict:
        """The attention tab's `rerun` event (heads off, norms): read once, then rerun from its plain values."""
        data = event_data(evt)
        rerun = self.explorer.reruns.rerun(result, data.get("off", []), data.get("measure"))
        return self.show_rerun(rerun, sessions.rerun_ticket(data))

    def show_rerun(self, result: Result | None, answers: int | None = None) -> dict:
        """Heads switched off or on, or norms (attention tab): maps, translation, n-best list and notes together."""
        translation, nbest, notice = self.explorer.reruns.rerun_texts(result)
        texts = {self.results.translation: translation, self.results.nbest: nbest, self.results.notice: notice}
        return {self.states.result: result} | texts | self.show_result(result, answers)

    def on_nbest_select(self, result: Result | None, evt: gr.EventData) -> dict:
        """A row of the n-best table clicked: its candidate. `evt` is read as plain data (gr.SelectData would fail
        on an event without "index", before this handler could say anything)."""
        index = nbest_select_candidate(result, event_data(evt).get("index"))
        if index is None:
            return {self.states.result: result} | self.show_result(result)
        return self.on_candidate(result, index)

    def show_model(self, info: ModelInfo) -> dict:
        """A model on screen: its examples, and every panel that follows the model (training, heads)."""
        out = {self.controls.examples: gr.Dataset(samples=[[example] for example in info.examples])}
        for panel in PANELS:
            if panel.follows_model is not None:
                out |= panel.follows_model(self.panels[panel.id], info.label, info.directory)
        return out

    def model_outputs(self) -> list[Any]:
        """What `show_model` updates."""
        return [self.controls.examples, *(c for p in PANELS if p.follows_model for c in self.panels[p.id][1:])]

    def result_outputs(self) -> list[Any]:
        """The panels that follow a new result (`show_new_result`), besides the attention payload."""
        return [self.panels[p.id].view for p in PANELS if p.follows_result is not None]

    def on_model_change(self, label: str, current: str | None = None):
        """Switch model: load it (cached), clear the old result, refresh examples and the training tab. The same
        model again (the dropdown sends its value when the keyboard's focus passes through it) changes nothing."""
        if current is not None and label == current:
            return gr.skip()
        info = self.explorer.models.switch(label)
        cleared = {
            self.states.model: label,
            self.states.result: None,
            self.results.offer: gr.Button(visible=False),
            self.results.translation: "",
            self.results.notice: info.notice,
            self.results.nbest: nbest_table(None),
        }
        return cleared | self.show_model(info) | self.show_new_result(None, None, "")

    def on_restore(self, model: str | None, request: gr.Request) -> dict:
        """Page load: list the checkpoints present now and restore the view a shared link carries (validated)."""
        query = dict(request.query_params) if request is not None else {}
        restored = self.explorer.restore.restore(model, query)
        view, states, controls = restored.view, self.states, self.controls
        out = {
            controls.model: gr.Dropdown(
                choices=self.explorer.models.registry.choices(restored.labels), value=view.model
            ),
            states.model: view.model,
            states.tab: view.tab,
            states.restore: restored.client,
            self.results.note: gr.Textbox(value=restored.note, visible=bool(restored.note)),
        }
        linked = {
            "text": {controls.src: view.text},
            "compare": {self.compare.src: view.compare},
            "method": {controls.method: view.method},
            "lp": {controls.lp: view.length_penalty, states.lp: view.length_penalty},
            "present": {controls.present: view.present},
            "tab": {self.tabs: gr.Tabs(selected=view.tab)},
            "beam method": {controls.beam: gr.Slider(value=view.beam, interactive=view.method == "beam")},
        }
        for keys, values in linked.items():  # a link sets what it carries; the rest stays as the user set it
            if restored.given(*keys.split()):
                out |= values
        return out | self.show_model(restored.model)

    def on_restore_translate(
        self,
        text: str,
        method: str,
        beam_size: float,
        model: str | None,
        lp: float,
        tab: str | None = None,
        view_json: str = "",
        restored: str = "",
    ):
        """A link with text translates it; a page without one stays as it is (no error, no second translation)."""
        data = view_data(restored)
        if not data.get("translate") or not (text or "").strip():
            return gr.skip()  # every output kept: a translation the user made meanwhile stays
        linked = data.get("view") if isinstance(data.get("view"), dict) else {}
        plain = not linked.get("off") and linked.get("measure") != "norm"

        def translate_plain() -> dict:
            return self.on_translate_view(text, method, beam_size, model, lp, tab, view_json)

        def translate_as_linked() -> dict:  # heads off or norms: the link's view in the first answer
            result = self.explorer.reruns.translate_linked(text, method, beam_size, model, lp, linked)
            return self.show_rerun(result) | self.show_new_result(result, tab, view_json)

        return self.per_session.newest("new")(translate_plain if plain else translate_as_linked)()

    def on_export(self, result: Result | None) -> str:
        """The attention download asked for: the result on screen written as an .npz, now (never before asked)."""
        path = self.explorer.exports.export(result)
        if path is None:
            raise user_error(
                "Translate a sentence first: the download holds the attention of the translation on screen."
            )
        return str(path)


# ----------------------------------------------------------------------------- three ways into the model


@dataclass(frozen=True)
class InsidePanels:
    """The "your translation" box, the panel of how one weight is computed and the learning tab, with the
    handlers of their events that update components; what they compute is `Inside`'s (panels/inside/service.py)."""

    page: Page
    inside: Inside
    yours: Yours
    cell_panel: gr.HTML
    learn: Any  # the "Watch it learn" tab (panels/inside/panel.py)

    def on_rerun(self, result: Result | None, evt: gr.EventData) -> dict:
        """Heads switched off or on, or norms: the page's maps and texts (`Page.on_rerun`), and the scores of one's
        own translation on screen, computed without those heads too."""
        out = self.page.on_rerun(result, evt)
        return out | {self.yours.view: self.inside.yours_of(out[self.page.states.result])}

    def on_score(self, text: str, yours: str, model: str | None, lp: float, result: Result | None) -> dict:
        """Your translation scored: the box's token view, and every map shows the attention for it."""
        forced, value = self.inside.score(text, yours, model, lp, result)
        return {self.page.states.result: forced, self.yours.view: value} | self.page.show_result(forced)

    def on_model(self, label: str | None) -> dict:
        """Another model: the learning tab shows when it ships training snapshots."""
        index = self.inside.learn_index(label)
        return {
            self.learn.tab: gr.Tab(visible=index is not None),
            self.learn.view: index,
            self.yours.view: None,
            self.cell_panel: None,
        }

    def on_restore_yours(self, text: str, model: str | None, lp: float, result: Result | None, restored: str) -> dict:
        """A link's page load: the learning tab of its model, and its translation (`yours`, validated) scored."""
        out = self.on_model(model)
        del out[self.cell_panel], out[self.yours.view]  # both start empty: a cell or a score made meanwhile stays
        yours = view_data(restored).get("yours")
        if not isinstance(yours, str) or not yours or not (text or "").strip():
            return out
        scored = self.page.per_session.newest("edit")(self.on_score)(text, yours, model, lp, result)  # or gr.skip()
        return out | {self.yours.box: yours} | (scored if isinstance(scored, dict) else {})


# ----------------------------------------------------------------------------- the app


@dataclass(frozen=True)
class ExplorerApp:
    """What `create_app` builds: the queued, not launched, `demo`, its page and the services behind it."""

    demo: gr.Blocks
    page: Page

    @property
    def explorer(self) -> Explorer:
        return self.page.explorer

    @property
    def head(self) -> str:
        """The page's <head> additions: the page's stylesheet and every panel's (`demo.launch(head=...)`)."""
        return page.page_head(styles())


def create_app(checkpoint_dir: Path = CHECKPOINTS) -> ExplorerApp:
    """Start the explorer (torch threads, heap, export folder, serving path, search process: `start_explorer`;
    the default model loads now) and build the page over it, queued."""
    explorer = start_explorer(checkpoint_dir)
    # the page's ES modules (the shared ones, each panel's) and plotly.js; the attention downloads from the folder they are
    # written to (exports.py), never copied into gradio's cache
    gr.set_static_paths([*page.served_paths(scripts()), explorer.exports.export_dir])
    demo, app_page = build_page(explorer, sessions.session_limited(explorer.slots))
    demo.queue(default_concurrency_limit=2, max_size=limits.MAX_QUEUED)
    return ExplorerApp(demo, app_page)


def build_page(explorer: Explorer, per_session: PerSession) -> tuple[gr.Blocks, Page]:
    """The page, top to bottom (every field of the initial view is set by the builders), and its events."""
    models = explorer.models
    default_model = models.default_model
    view = ViewState(model=default_model, length_penalty=models.default_length_penalty)
    info = models.model_info(default_model, models.default_translator)
    choices = models.registry.choices() or ([default_model] if default_model else [])
    with gr.Blocks(title="Transformer attention explorer", analytics_enabled=False, delete_cache=(900, 3600)) as demo:
        states = States(
            model=gr.State(view.model),
            lp=gr.State(view.length_penalty),
            tab=gr.State(view.tab),
            tab_view=gr.State(""),
            result=gr.State(None, time_to_live=3600),
            compare=gr.State(None, time_to_live=3600),
            view=gr.Textbox(visible=False),
            restore=gr.Textbox(visible=False),
        )
        gr.Markdown(texts.INTRO, elem_id="intro")
        with gr.Row(elem_id="stage"):  # the stage: a side column of controls, the views beside it (static/explorer.css)
            with gr.Column(scale=1, min_width=320, elem_id="sidebar"):
                controls, translation = build_controls(view, info.examples, choices, EXAMPLES_EN[0])
                results = build_results(translation, models.serving_note(), nbest_table(None), candidate_choices(None))
                yours = build_yours()
            with gr.Column(scale=3, min_width=320, elem_id="main"):
                start = PanelStart(
                    view, default_model, info.directory, explorer.inside.learn_index(view.model), scripts()
                )
                with gr.Tabs(elem_id="tabs") as tabs:
                    built = {panel.id: panel.build(start) for panel in PANELS}  # the tabs, in the registry's order
                    with built["attention"].tab:  # under the maps
                        cell_panel = build_cell_panel()
        app_page = Page(explorer, per_session, states, controls, results, tabs, built, yours, cell_panel)
        link_restored = wire_translation(demo, app_page)
        wire_tabs(app_page)
        wire_inside(InsidePanels(app_page, explorer.inside, yours, cell_panel, built["learn"]), link_restored)
    return demo, app_page


# ----------------------------------------------------------------------------- wiring


def example_text(sample: list[str]) -> str:
    """A clicked example: its sentence into the source box."""
    return sample[0]


def beam_slider_for(method: str) -> gr.Slider:
    """The beam slider is live only for beam search."""
    return gr.Slider(interactive=method == "beam")


def same_length_penalty(value: float) -> float:
    """The length penalty slider's value, into the session's state."""
    return value


def own_translation_as_start(own: str | None) -> str:
    """The "Start from the model's" button: the model's translation into the box of one's own."""
    return own or ""


def decoding_inputs(controls: Controls) -> list[Any]:
    """The user's changes of a decoding setting: method, beam width, length penalty (not a link's restore)."""
    return [controls.method.input, controls.beam.input, controls.lp.input]


def wire_translation(demo: gr.Blocks, app_page: Page) -> Any:
    """Translate (the page's, the API's and a shared link's), examples, candidates, model and settings; returns
    the last step of a link's page load, which `wire_inside` continues. A press is one server
    event whose answer holds all the page shows (`Page.show_new_result`); the export waits until asked for."""
    states, controls, results, explorer = app_page.states, app_page.controls, app_page.results, app_page.explorer
    per_session = app_page.per_session
    model, translate, quiet_model = model_group(explorer), translate_group(explorer), QUIET | model_group(explorer)
    inputs = [controls.src, controls.method, controls.beam, states.model, states.lp]
    shown = [states.result, app_page.attention.view, results.candidate]
    outputs = [results.translation, results.notice, results.nbest, *shown, results.offer]
    new_result = [*outputs, *app_page.result_outputs(), app_page.yours.view, app_page.cell_panel]
    training = app_page.model_outputs()
    # /translate (3 outputs, gradio_client); the page's Translate: one response with the payload (bench/load.py)
    controls.api.click(
        per_session(app_page.on_api_translate),
        inputs,
        outputs[:3],
        api_name="translate",
        api_description="Translate text; returns (translation, notice, n-best table).",
        **translate,
    )
    gr.on(
        [controls.translate.click, controls.src.submit],
        per_session(app_page.on_translate_view, "new"),
        [*inputs, states.tab, states.tab_view],
        new_result,
        api_name="translate_view",
        api_visibility="undocumented",
        **translate,
    )
    controls.examples.click(
        per_session(app_page.on_example, "new"),
        [controls.examples, *inputs[1:], states.tab, states.tab_view],
        [controls.src, *new_result],
        **PRIVATE,
        **translate,
    )
    results.candidate.input(
        per_session(app_page.on_candidate, "edit"), [states.result, results.candidate], shown, **quiet_model
    )
    results.nbest.select(per_session(app_page.on_nbest_select, "edit"), [states.result], shown, **quiet_model)
    # the export is written when asked for, then the browser saves it (the hidden button's link)
    asked = results.download.click(app_page.on_export, [states.result], [results.download_file], **QUIET)
    asked.success(None, [results.download_file], None, js=page.JS_SAVE_DOWNLOAD, **PRIVATE)
    controls.method.input(beam_slider_for, [controls.method], [controls.beam], queue=False, **PRIVATE)
    controls.lp.change(same_length_penalty, [controls.lp], [states.lp], queue=False, **PRIVATE)
    # a decoding setting changed by the user: the translation on screen follows it (sliders: the last value)
    gr.on(
        decoding_inputs(controls),
        per_session(app_page.on_decoding),
        [
            controls.src,
            controls.method,
            controls.beam,
            states.model,
            controls.lp,
            states.result,
            states.tab,
            states.tab_view,
        ],
        new_result,
        trigger_mode="always_last",
        **PRIVATE,
        **translate,
    )
    controls.model.input(
        per_session(app_page.on_model_change),
        [controls.model, states.model],
        [*new_result, states.model, *training],
        **PRIVATE,
        **model,
    )
    wire_offer(app_page, [*new_result, states.model, controls.model, *training])
    controls.present.change(None, [controls.present], None, js=page.JS_PRESENT, **PRIVATE)
    results.copy.click(None, None, [results.link], js=page.JS_COPY_LINK, **PRIVATE)
    return wire_link(demo, app_page, new_result)


def wire_offer(app_page: Page, outputs: list[Any]) -> None:
    """The offer of the model that reads the sentence's language: the model switched and the sentence translated."""
    controls, states = app_page.controls, app_page.states
    app_page.results.offer.click(
        app_page.per_session(app_page.on_offer),
        [controls.src, controls.method, controls.beam, states.model, controls.lp, states.tab, states.tab_view],
        outputs,
        **PRIVATE,
        **translate_group(app_page.explorer),
    )


def wire_link(demo: gr.Blocks, app_page: Page, new_result: list[Any]) -> Any:
    """A shared link's page load: validate its parameters (explorer/core/view_state.py), restore the view, translate its
    text (with its tree, when the link opens that tab), then its compare; returns the last step."""
    states, controls, results, explorer = app_page.states, app_page.controls, app_page.results, app_page.explorer
    per_session = app_page.per_session
    inputs = [controls.src, controls.method, controls.beam, states.model, states.lp, states.tab, states.view]
    training = app_page.model_outputs()
    restored = [controls.model, states.model, controls.src, app_page.compare.src, controls.method, controls.beam]
    restored += [controls.lp, states.lp, controls.present, app_page.tabs, states.tab, results.note, states.restore]
    page_loaded = demo.load(app_page.on_restore, [states.model], [*restored, *training], **PRIVATE, **RESTORE)
    view_restored = page_loaded.then(None, [states.restore], [states.view], js=page.JS_RESTORE, **PRIVATE)
    link_translated = view_restored.then(
        per_session(app_page.on_restore_translate),
        [*inputs, states.restore],
        new_result,
        **PRIVATE,
        **translate_group(explorer),
    )
    compare_inputs = [controls.src, app_page.compare.src, controls.method, controls.beam, states.model, states.lp]
    return link_translated.then(
        per_session(explorer.compare.on_restore_compare),
        [*compare_inputs, states.tab, states.view],
        [app_page.compare.view, states.compare],
        **QUIET,
        **model_group(explorer),
    )


def wire_tabs(app_page: Page) -> None:
    """The app's tabs, as the registry lists them: entering one records it (the URL follows the tab on screen),
    then each panel wires its own events (`Panel.wire`), its tab's opening among them."""
    states = app_page.states
    for panel in PANELS:
        tab = app_page.panels[panel.id].tab
        view_written = tab.select(None, None, [states.view], js=page.js_enter_tab(tab.id), **PRIVATE)
        entered = view_written.then(
            tab_entered(tab.id), [states.view], [states.tab, states.tab_view], queue=False, **PRIVATE
        )
        if panel.wire is not None:
            panel.wire(app_page, app_page.panels[panel.id], entered)


def wire_inside(panels: InsidePanels, link_restored: Any) -> None:
    """Heads switched off or norms, your translation (Score, Enter, the model's as a start, a link's), a clicked
    cell, the learning slider."""
    app_page, yours = panels.page, panels.yours
    states, controls, results = app_page.states, app_page.controls, app_page.results
    per_session = app_page.per_session
    model, quiet_model = model_group(app_page.explorer), QUIET | model_group(app_page.explorer)
    # the texts with the maps, and one's own translation's scores: they change together
    app_page.attention.view.rerun(
        per_session(panels.on_rerun, "edit"),
        [states.result],
        [
            results.translation,
            results.notice,
            results.nbest,
            states.result,
            app_page.attention.view,
            results.candidate,
            yours.view,
        ],
        trigger_mode="always_last",
        **quiet_model,
    )
    gr.on(
        [yours.score.click, yours.box.submit],
        per_session(panels.on_score, "edit"),
        [controls.src, yours.box, states.model, states.lp, states.result],
        [states.result, app_page.attention.view, results.candidate, yours.view],
        **PRIVATE,
        **model,
    )
    yours.own.click(own_translation_as_start, [results.translation], [yours.box], queue=False, **PRIVATE)
    panels.cell_panel.cell(
        per_session(with_event(panels.inside.cell)),
        [states.result],
        [panels.cell_panel],
        trigger_mode="always_last",
        **quiet_model,
    )
    panels.learn.view.learn(
        per_session(with_event(panels.inside.learn)), [states.model, controls.src], [panels.learn.view], **quiet_model
    )
    learn_panels = [panels.learn.tab, panels.learn.view, yours.view, panels.cell_panel]
    controls.model.input(panels.on_model, [controls.model], learn_panels, **PRIVATE)
    link_restored.then(
        per_session(panels.on_restore_yours),
        [controls.src, states.model, states.lp, states.result, states.restore],
        [
            *learn_panels[:2],
            yours.box,
            states.result,
            app_page.attention.view,
            results.candidate,
            yours.view,
            panels.cell_panel,
        ],
        **PRIVATE,
        **model,
    )


def main() -> None:
    """`python app.py`, as run by hand and by a Hugging Face Space: start up, then serve until stopped."""
    # before start-up, which logs what it chose for this machine (threads, serving path)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    app = create_app()

    def routes(host: str, port: int) -> list[Any]:  # the panels' own HTTP routes, beside gradio's
        return [route for panel in PANELS if panel.routes for route in panel.routes(app.explorer, host, port)]

    launch.serve(app.demo, app.head, routes, when_up=app.explorer.models.preload)


if __name__ == "__main__":
    main()
