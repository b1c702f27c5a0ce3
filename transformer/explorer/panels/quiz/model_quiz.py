"""A quiz from the model: translate the sentence(s), read the checkpoint's head roles, build the questions.

`QuizMaker(translate, directory)` is what the class routes call when a teacher starts a class or a student opens
a practice link: its maps are computed here once per class (and once per sentence: the last few translations are
kept), never per student. `translate` is any `text -> Translation` (the app passes its batcher's, so the quiz
waits its turn with everyone else's model work).
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformer.explorer.core.checkpoint_heads import read_alignment, read_analysis
from transformer.hub import LANGUAGES
from transformer.translator import Translation

from .questions import (
    Attended,
    HeadRole,
    Question,
    SpecError,
    head_roles,
    make_quiz,
    parse_specs,
    question_from_spec,
)

log = logging.getLogger(__name__)
KEEP_TRANSLATIONS = 32  # sentences whose attention is kept (a class's and its practice links' sentence)


def roles_of(directory: Path | None) -> dict[tuple[str, int, int], HeadRole]:
    """The per-head role table of a checkpoint directory (empty without its head analysis)."""
    analysis = read_analysis(directory)
    return head_roles(analysis[1] if analysis else None, read_alignment(directory))


def attended(sentence: str, translation: Translation, language: str = "English") -> Attended:
    """A translation with its attention, as the questions read it."""
    a = translation.attention
    if a is None:
        raise ValueError("the translation carries no attention")
    return Attended(sentence, a.src_tokens, a.tgt_in_tokens, a.tgt_out_tokens,
                    {"cross": a.cross, "decoder": a.decoder}, language)


class QuizMaker:
    """Questions for a class: from one sentence (`make_quiz`) or a teacher's specs (`parse_specs`)."""

    def __init__(self, translate: Callable[[str], Translation], directory: Path | None, language: str = "en"):
        self.translate = translate
        self.roles = roles_of(directory)
        self.language = LANGUAGES.get(language, language)
        self._kept: OrderedDict[str, Attended] = OrderedDict()
        self._lock = threading.Lock()
        log.info("class quiz: %d heads with a clear role in %s", len(self.roles), directory)

    def __call__(self, request: dict[str, Any]) -> list[Question]:
        """`{"sentence": text}` or `{"questions": [spec, ...]}` -> the class's questions; SpecError when
        there is no question to ask."""
        if "questions" in request:
            return [self.from_spec(spec) for spec in parse_specs(request["questions"])]
        sentence = request.get("sentence")
        if not isinstance(sentence, str) or not sentence.strip():
            raise SpecError("give a sentence or a list of questions")
        questions = make_quiz(self.attend(sentence.strip()), self.roles)
        if not questions:
            raise SpecError("no head looks clearly enough at one word of this sentence: try a longer sentence")
        return questions

    def from_spec(self, spec: Any) -> Question:
        return question_from_spec(spec, self.attend(spec.sentence), self.roles)

    def attend(self, sentence: str) -> Attended:
        """`sentence` translated with its attention: the model runs once for the last KEEP_TRANSLATIONS
        sentences (a teacher's questions on one sentence, a practice link opened by a whole class)."""
        with self._lock:
            if sentence in self._kept:
                self._kept.move_to_end(sentence)
                return self._kept[sentence]
        result = attended(sentence, self.translate(sentence), self.language)
        with self._lock:
            self._kept[sentence] = result
            while len(self._kept) > KEEP_TRANSLATIONS:
                self._kept.popitem(last=False)
        return result
