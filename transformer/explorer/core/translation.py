"""The Translate press and another n-best candidate: validated, decoded through the batcher with whatever else is
asked for at the same time, kept in the results store, and the attention payload the page draws."""
from __future__ import annotations

from typing import Any

from transformer.hub import LANGUAGES
from transformer.translator import DecodingOptions, Source, Translation

from transformer.explorer.core import limits
from transformer.explorer.core.language import CODES, other_language
from transformer.explorer.core.models import ModelService
from transformer.explorer.core.results import Result, run_translation, select_candidate, work_on
from transformer.explorer.core.result_view import result_payload


class TranslateService:
    """A sentence translated (with attention unless told not to), another candidate of a result, and the payload
    of a result for the attention tab."""

    def __init__(self, models: ModelService):
        self.models = models

    def translate(self, text: Any, method: Any, beam_size: Any, model: str | None,
                  length_penalty: Any, output_attentions: bool = True) -> tuple[Result, str]:
        """Validate and translate (with attention unless told not to), decoded with whatever else is asked for at
        the same time: (Result, notice text for the user). The request's options and text are checked and
        prepared once, by `run_translation`, and handed to the batcher as they are."""
        tr = self.models.translator(model)

        def batched(source: Source, options: DecodingOptions, output_attentions: bool) -> Translation:
            return self.models.batcher.translate(tr, source, options, output_attentions=output_attentions,
                                                 timeout_s=limits.REQUEST_TIMEOUT_S)

        result, notice = run_translation(tr, model, text, method, beam_size, length_penalty, translate=batched,
                                         output_attentions=output_attentions)
        _, note = self.other_model(text, model)
        return result, " ".join(part for part in (note, notice) if part)

    def other_model(self, text: Any, model: str | None) -> tuple[str | None, str]:
        """(the model that reads the language `text` is in, a note saying so) when `text` is clearly in another
        language than `model` reads (`language.other_language`); (None, "") otherwise. The label is None where no
        model on offer reads it (the note still says what happened)."""
        reads = self.models.reads(model)
        lang = other_language(text, reads) if reads in CODES and isinstance(text, str) else None
        if lang is None:
            return None, ""
        other = self.models.model_reading(lang)
        label, written, read = model or self.models.default_model, LANGUAGES.get(lang, lang), LANGUAGES[reads]
        note = f"This sentence looks {written}, but {label} reads {read}: its translation is a guess."
        if other is not None:
            note += f" Press “Translate with {other}” to use the model that reads {written}."
        return other, note

    def select(self, result: Result, index: Any) -> Result:
        """Another n-best candidate of `result` (its attention: one teacher-forced pass, cached)."""
        models = self.models
        with models.results.using(result):
            out = models.batcher.call(select_candidate, models.translator(result.model), result, index,
                                      guard=models.results.lock, work=work_on(result))
        return models.keep(out)

    def payload(self, result: Result | None) -> dict[str, Any] | None:
        """What the attention tab gets for a result: `result_view.result_payload` with its model's head analysis."""
        return None if result is None else result_payload(result, self.models.heads(result.model))
