"""The app's side column, top to bottom: the controls and the results of a translation ("Your translation", under
them, is the inside panel's: panels/inside/).

One `build_*` per panel: each makes its gradio components inside the layout block that is open when it is
called and returns them as a named tuple, so that `app.py` can wire their events and its handlers can answer
`{component: value}`. Nothing here computes anything: initial values come in as arguments.
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any

import gradio as gr

from transformer.explorer.core import texts
from transformer.explorer.core import limits
from transformer.explorer.core.view_state import ViewState

__all__ = ["Controls", "Results", "lenient", "build_controls", "build_results"]

Controls = namedtuple("Controls", "src examples model method beam lp translate api present")
Results = namedtuple("Results", "translation notice copy link note nbest candidate download download_file offer")


def lenient(slider: gr.Slider) -> gr.Slider:
    """`slider`, whose API input can be anything a client sends: what is no number goes on to the handler, which
    says what is wrong (gr.Slider's own check fails on it with a bare TypeError). An instance attribute, not a
    subclass: gradio writes a .pyi file beside the module of every component subclass."""
    check = slider.preprocess

    def preprocess(payload: Any) -> Any:
        if isinstance(payload, bool) or not isinstance(payload, (int, float)) or payload != payload:
            return payload
        return check(payload)

    slider.preprocess = preprocess
    return slider


def build_controls(view: ViewState, examples: list[str], models: list[str],
                   placeholder: str) -> tuple[Controls, gr.Textbox]:
    """The stage's side column, top: the source sentence, Translate and presentation mode, the translation;
    then the examples, the model (`models`: the selector's choices) and the decoding settings (returned with
    the translation box, which `build_results` files with the other results)."""
    src = gr.Textbox(label="Source sentence (press Enter to translate)", lines=1, max_lines=4,
                     placeholder="Type a sentence, e.g. " + placeholder, elem_id="source", autofocus=True)
    # one Tab from the sentence to the map (explorer.js focuses it), not a walk through the whole side column
    gr.HTML('<button type="button" class="skip-link">Go to the map</button>', elem_id="skip-to-map",
            apply_default_css=False, padding=False)
    with gr.Row(elem_id="translate-row"):
        translate = gr.Button("Translate", variant="primary", elem_id="translate", scale=2, min_width=120)
        api = gr.Button(visible=False)  # the /translate API's own event (app.py, wire_translation)
        present = gr.Checkbox(value=view.present, label="Presentation mode", elem_id="present", scale=1,
                              min_width=120)
    translation = gr.Textbox(label="Translation", interactive=False, elem_id="translation", buttons=["copy"],
                             lines=2, max_lines=4)
    with gr.Column(elem_id="side-more"):
        examples = gr.Dataset(components=[src], samples=[[e] for e in examples],
                              label="Examples (click to translate)", elem_id="examples")
        model = gr.Dropdown(choices=models, value=view.model, label="Model", elem_id="model")
        with gr.Row(elem_id="decoding-row"):
            method = gr.Radio(["greedy", "beam"], value=view.method, label="Decoding", elem_id="method", min_width=140)
            beam = lenient(gr.Slider(1, limits.UI_MAX_BEAM, value=view.beam, step=1, precision=0, label="Beam width",
                                     elem_id="beam", min_width=140))
        with gr.Accordion("Advanced", open=False):
            lp = gr.Slider(0.0, limits.MAX_LENGTH_PENALTY, value=view.length_penalty, step=0.1, label="Length penalty",
                           info=texts.LENGTH_PENALTY_INFO, elem_id="lp")
    return Controls(src, examples, model, method, beam, lp, translate, api, present), translation


def build_results(translation: gr.Textbox, serving_note: str, nbest: Any,
                  choices: list[tuple[str, int]]) -> Results:
    """Below the settings in the side column: the offer of the model that reads the sentence's language (hidden
    until a sentence needs it), the notes (first: `serving_note`), the n-best list (`nbest`: its
    empty table), the candidate shown (`choices`: the selector's empty choices) and its export, the link to this
    view."""
    with gr.Column(elem_id="side-results"):
        # shown when the sentence is in the language of another model on offer (TranslateService.other_model)
        offer = gr.Button("Translate with the other model", visible=False, elem_id="other-model")
        notice = gr.Textbox(label="Notes", interactive=False, elem_id="notice", value=serving_note)
        with gr.Column(elem_id="nbest-row"):
            table = gr.Dataframe(value=nbest, label=texts.NBEST_LABEL, interactive=False,
                                 elem_id="nbest", wrap=True, column_widths=["7%", "32%", "20%", "18%", "23%"])
            with gr.Row():
                candidate = gr.Dropdown(choices=choices, value=0, type="value",
                                        label="Candidate shown", interactive=False, elem_id="candidate", min_width=160)
                # written when asked for (app.py: Page.on_export), then saved through the hidden button's link
                download = gr.Button("Download attention (.npz)", elem_id="download", min_width=160)
                download_file = gr.DownloadButton("attention.npz", elem_id="download-file", visible="hidden")
        with gr.Column(elem_id="share-row"):
            copy = gr.Button("Copy link to this view", elem_id="copy-link")
            link = gr.Textbox(label="Link (the address bar follows the view too)", interactive=False,
                              elem_id="share-link", buttons=["copy"], max_lines=1)
            note = gr.Textbox(label="Shared link", interactive=False, elem_id="link-note", visible=False)
        with gr.Accordion("How to read this", open=False, elem_id="howto"):
            gr.Markdown(texts.HOW_TO_READ)
    return Results(translation, notice, copy, link, note, table, candidate, download, download_file, offer)

