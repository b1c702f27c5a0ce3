"""What the three ways into the model compute for the app's events, as plain values (`app.py` wires them):

* a click on a cell of one head's map: how that weight is computed (`weight_computation.inside_value`);
* a translation of one's own: scored by the model, its maps shown in place of the model's (`Translator.force`);
* the training snapshots' slider: the same sentence translated by the model at each snapshot (`learning`).

All model work runs on the explorer's `Batcher` thread, between translation batches. Errors meant for the
user are `checks.user_error`s; every result read is asked of the explorer's results store first.
"""
from __future__ import annotations

import logging
import math
from typing import Any

from transformer.serving.batching import search_work

from transformer.explorer.panels.inside.snapshots import LearningSnapshots, metric_of, snapshot_records
from transformer.explorer.core.models import ModelService
from transformer.explorer.core.checks import user_error
from transformer.explorer.core.model_registry import examples_for
from transformer.explorer.core.results import Result, work_on
from transformer.explorer.core import limits
from transformer.explorer.core.view_state import ROWS_INPUT, ROWS_PREDICTED
from transformer.explorer.panels.inside.weight_computation import inside_value, read_cell
from transformer.explorer.panels.inside.your_translation import check_yours, yours_value

log = logging.getLogger(__name__)


class Inside:
    """The events of the inside panel, the "your translation" box and the learning slider, over the app's models."""

    def __init__(self, models: ModelService):
        self.models = models
        self.snapshots = LearningSnapshots(store=models.results)  # the float32 snapshot models count there

    # ------------------------------------------------------------------------- how this weight is computed

    def cell(self, result: Result | None, data: dict[str, Any]) -> dict[str, Any]:
        """A cell of one head's map clicked (`data`, its event's: {kind, layer, head, query, key, rows}): the panel's
        numbers,
        from one float32 pass of the model (the result's candidate, its heads switched off as they are)."""
        if result is None:
            return {"message": "Translate a sentence first, then click a cell of a single head's map."}
        if data.get("merged"):
            return {"message": "Untick “Merge subwords into words” to click single tokens: a merged cell "
                               "mixes several tokens, and each has its own query and key."}
        tr = self.models.translator(result.model)
        cfg = tr.model.config
        limits = {"encoder": cfg.n_encoder_layers, "decoder": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}
        with self.models.results.using(result):  # a released result's gr.Error is a ValueError: checked first
            try:
                kind, layer, head, query, key = read_cell(data, limits, cfg.n_heads)
                row = self.models.batcher.call(tr.inside_head, result.translation, kind, layer, head, query,
                                           result.candidate, work=work_on(result))
                rows = ROWS_INPUT if data.get("rows") == ROWS_INPUT else ROWS_PREDICTED
                value = inside_value(row, result.attention, key, rows, result.translation.entities)
            except ValueError as err:
                return {"message": str(err)}
        value["measure_note"] = data.get("measure") == "norm"
        value["rev"] = data.get("rev")
        return value

    # ------------------------------------------------------------------------- your translation

    def score(self, text: Any, yours: Any, model: str | None, length_penalty: float,
              result: Result | None) -> tuple[Result, dict[str, Any]]:
        """Your translation of `text`, scored by the model: a Result whose one candidate is yours (its maps go to
        the explorer) and the box's value (per token, beside the model's own translation of `result`, when it
        translated this text). Typed as one of the model's candidates, it is forced in the candidate's own
        subword pieces, so the model's own translation scores exactly what its search found."""
        text = "" if text is None else str(text)
        if not text.strip():
            raise user_error("Type the English sentence in the source box first, then your translation.",
                             "Nothing to score")
        if len(text) > limits.MAX_INPUT_CHARS:
            raise user_error(f"The source sentence is longer than {limits.MAX_INPUT_CHARS} characters.", "Too long")
        try:
            yours = check_yours(yours)
        except ValueError as err:
            raise user_error(str(err), "Cannot score this translation") from None
        tr = self.models.translator(model)
        own = model_result(result, text, model)
        same = next((c for c in own.translation.candidates if c.text == yours), None) if own else None
        try:
            forced = self.models.batcher.call(tr.force, text, yours, ids=same.ids if same else None,
                                          work=search_work(len(tr.source(text).ids)))
        except ValueError as err:
            raise user_error(_plain(str(err)), "Cannot score this translation") from None
        length_penalty = own.length_penalty if own is not None else float(length_penalty)
        forced_result = Result(model or "", text, forced, length_penalty, {0: forced.attention}, own=own)
        return self.models.keep(forced_result), self.yours_of(forced_result)

    @staticmethod
    def yours_of(result: Result | None) -> dict[str, Any] | None:
        """The box's value for the translation of one's own on screen (with heads switched off: scored without
        them), beside the model's own translation scored the same way; None for a translation of the model's."""
        if result is None or result.translation.method != "forced" or result.released:
            return None
        own, mine = result.own, None
        if own is not None and 0 in own.attentions:  # a released one has none: shown without the model's beside
            steps = own.attentions[0].steps  # the float32 pass over the model's best candidate, as `force` scores
            mine = (own.translation.candidates[0].text, math.fsum(math.log(max(s.probability, 1e-45)) for s in steps))
        return yours_value(result.translation, mine)

    # ------------------------------------------------------------------------- watch it learn

    def learn_index(self, label: str | None) -> dict[str, Any] | None:
        """What the slider starts from for a model: its snapshots' steps and scores (None: it has none)."""
        try:
            directory = self.models.registry.directory(label)
        except Exception:  # a model that cannot be found has no snapshots to show
            return None
        records = snapshot_records(directory)
        if not records:
            return None
        metric = metric_of(records)
        return {"model": label, "steps": [r["step"] for r in records], "metric": metric,
                "history": [{"step": r["step"], "score": r.get(metric)} for r in records]}

    def learn(self, label: str | None, text: Any, data: dict[str, Any]) -> dict[str, Any]:
        """The slider at a step (`data`, its event's: {step, text}): the sentence translated by the model at that
        snapshot."""
        index = self.learn_index(label)
        if index is None:
            return {"message": "This model ships no training snapshots."}
        step = data.get("step")
        if isinstance(step, bool) or not isinstance(step, int) or step not in index["steps"]:
            return {**index, "message": f"Choose one of the snapshot steps {', '.join(map(str, index['steps']))}."}
        text = data.get("text") if isinstance(data.get("text"), str) else text
        tr = self.models.translator(label)
        text = (text or "").strip() or examples_for(tr, self.models.registry.directory(label))[0]
        if len(text) > limits.MAX_INPUT_CHARS:
            return {**index, "message": f"The sentence is longer than {limits.MAX_INPUT_CHARS} characters."}
        try:
            value = self.models.batcher.call(self.snapshots.value, label, tr, self.models.registry.directory(label),
                                         step, text, work=search_work(len(tr.source(text).ids)))
        except ValueError as err:
            return {**index, "message": str(err)}
        return {**index, **value}


def model_result(result: Result | None, text: str, model: str | None) -> Result | None:
    """The model's own result (every head on) behind what is on screen, if it translated `text` with `model`."""
    own = result.own if result is not None and result.own is not None else result
    own = own.base or own if own is not None else None
    if own is None or own.released or own.source != text or own.model != (model or "") or 0 not in own.attentions:
        return None
    return own


def _plain(message: str) -> str:
    """The model's ValueError as the box says it."""
    if message.startswith("translation is too long"):
        return "Your translation is too long for the model: " + message.split(": ", 1)[-1] + "."
    return message[:1].upper() + message[1:]
