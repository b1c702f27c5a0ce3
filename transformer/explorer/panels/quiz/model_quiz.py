"""A quiz from the model: translate the sentence(s), read the checkpoint's head roles, build the questions.

`QuizMaker(translate, directory)` is what the class routes call when a teacher starts a class: its maps are
computed here once per class, never per student. `translate` is any `text -> Translation` (the app passes its
batcher's, so the quiz waits its turn with everyone else's model work).
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformer.explorer.core.checkpoint_heads import read_alignment, read_analysis
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
LANGUAGES = {"en": "English", "de": "German"}


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
        log.info("class quiz: %d heads with a clear role in %s", len(self.roles), directory)

    def __call__(self, request: dict[str, Any]) -> list[Question]:
        """`{"sentence": text}` or `{"questions": [spec, ...]}` -> the class's questions; SpecError when
        there is no question to ask."""
        if "questions" in request:
            return [self.from_spec(spec) for spec in parse_specs(request["questions"])]
        sentence = request.get("sentence")
        if not isinstance(sentence, str) or not sentence.strip():
            raise SpecError("give a sentence or a list of questions")
        questions = make_quiz(attended(sentence.strip(), self.translate(sentence.strip()), self.language), self.roles)
        if not questions:
            raise SpecError("no head looks clearly enough at one word of this sentence: try a longer sentence")
        return questions

    def from_spec(self, spec: Any) -> Question:
        return question_from_spec(spec, attended(spec.sentence, self.translate(spec.sentence), self.language),
                                  self.roles)
