"""The class quiz's tab: where a teacher starts a class on the sentence on screen. The class itself runs on two
light pages of this folder, served beside gradio's app by `routes.py` (`routes`): the projector's board
(`board.html`, `board.js`) and the students' page on their phones (`quiz.html`, `quiz.js`); answers are kept in a
SQLite database (`store.py`), the questions made once per class from the model's translation and the head roles
(`model_quiz.py`, `questions.py`)."""
from __future__ import annotations

import html
import threading
from typing import Any
from urllib.parse import urlencode

import gradio as gr

from transformer.explorer.core.limits import MAX_INPUT_CHARS, REQUEST_TIMEOUT_S
from transformer.explorer.panels.quiz.model_quiz import QuizMaker
from transformer.explorer.panels.quiz.questions import SpecError
from transformer.explorer.panels.quiz.routes import class_router, join_address
from transformer.explorer.panels.quiz.store import ClassStore, default_path
from transformer.explorer.panels.start import HtmlTab, PanelStart

INTRO = ("**Where will it look?** Before the class sees a map, each student guesses, on their phone, which English "
         "word a head looks at when the model writes a German word; then the board reveals the head's true weights "
         "beside the class's guesses. The board opens in a new tab for the projector: start the class there, and "
         "the students join with its room code, link or QR code. No names or accounts; a class is deleted an "
         "hour after it was last used (20 minutes if nobody joins, 4 hours at the latest). A student working alone takes the same questions from the practice link, each revealed after "
         "the guess.")


def board_link(text: str | None, model: str | None = None) -> str:
    """The tab's content: the links that open the board on `text` (the sentence on screen, translated by
    `model`), or on its own, and the practice quiz on it for a student alone."""
    text = (text or "").strip()[:MAX_INPUT_CHARS]
    query = f"?{urlencode({'text': text} | ({'model': model} if model else {}))}" if text else ""
    on = f" on &ldquo;{html.escape(text)}&rdquo;" if text else ""
    board = (f'<a id="quiz-board" href="class/board{html.escape(query)}" target="_blank" rel="noopener">'
             f'Open the board{on}</a> (a new tab, for the projector)')
    if not text:
        return f'<p class="quiz-start">{board}</p>'
    practice = (f'<a id="quiz-practice" href="class/practice{html.escape(query)}" target="_blank" rel="noopener">'
                f'Practise alone on this sentence</a> (about 5 questions, each revealed after the guess: a link '
                f'to give students working on their own)')
    return f'<ul class="quiz-start"><li>{board}</li><li>{practice}</li></ul>'


def build(start: PanelStart) -> HtmlTab:
    """The tab: what a class quiz is, and the link to the board (on the sentence on screen, once translated)."""
    with gr.Tab("Class quiz", id="quiz", elem_id="tab-quiz") as tab:
        gr.Markdown(INTRO, elem_classes="further")
        view = gr.HTML(board_link(start.view.text), elem_id="quiz-link")
    return HtmlTab(tab, view)


def follow_result(explorer: Any, tab: HtmlTab, result: Any, tab_on_screen: str, view_json: str) -> dict:
    """A new translation: the board's link carries its sentence."""
    return {tab.view: board_link(getattr(result, "source", None), getattr(result, "model", None))}


class QuizMakers:
    """A quiz made by the model its sentence was on (the request's "model", else the default): one `QuizMaker`
    per model, made when first asked, its translations queued with every other model request."""

    def __init__(self, models: Any):
        self.models = models
        self._makers: dict[str, QuizMaker] = {}
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> list[Any]:
        label = request.get("model") or self.models.default_model
        if label not in self.models.registry.labels():
            raise SpecError("no model of this app has that name: open the board from the explorer again")
        with self._lock:
            if label not in self._makers:
                self._makers[label] = QuizMaker(self._translator(label), self.models.registry.directory(label),
                                                language=self.models.reads(label) or "en")
            maker = self._makers[label]
        return maker(request)

    def _translator(self, label: str) -> Any:
        models = self.models

        def translate(text: str) -> Any:
            tr = models.translator(label)
            try:
                source = tr.source(text[:MAX_INPUT_CHARS])
            except ValueError as err:
                raise SpecError(str(err)) from None
            return models.batcher.translate(tr, source, tr.decoding_options("beam"), timeout_s=REQUEST_TIMEOUT_S)

        return translate


def routes(explorer: Any, host: str, port: int) -> list[Any]:
    """The class routes and pages, given to gradio's app as it is made (so they answer from the first request),
    over the classes database (`default_path`) and the model each quiz's sentence was on; phones are told to join
    where the app listens."""
    return class_router(ClassStore(default_path()), QuizMakers(explorer.models), join_address(host, port)).routes
