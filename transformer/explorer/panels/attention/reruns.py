"""The attention tab's model passes: heads switched off or on, and the norm maps (gr.HTML's `rerun` event), and a
link's translation that opens with them."""
from __future__ import annotations

from typing import Any

import pandas as pd

from transformer.explorer.core import limits
from transformer.explorer.core.checks import user_errors
from transformer.explorer.core.models import ModelService
from transformer.explorer.core.results import Result, ablate, with_norms, work_on
from transformer.explorer.core.translation import TranslateService
from transformer.explorer.core.result_view import ablation_notice, nbest_table


class RerunService:
    """A result rerun with heads off or with norms, its texts for the side column, and a link's rerun."""

    def __init__(self, models: ModelService, translation: TranslateService):
        self.models, self.translation = models, translation

    def rerun(self, result: Result | None, off: Any, measure: Any = "weight") -> Result | None:
        """A model pass the attention tab asks for (its 'rerun' event's {"off": [[kind, layer, head], ...],
        "measure": "weight" | "norm"}, read by the page): the translation with the heads `off` switched off (none:
        every head on again), with ‖α f(x)‖ maps when `measure` is "norm"."""
        if result is None:
            return None
        models = self.models
        tr, guard = models.translator(result.model), models.results.lock

        def model_work() -> Result:  # on the batcher's thread, between batches: never two passes at once
            out = ablate(tr, result, off, guard)
            return with_norms(tr, out, guard) if measure == "norm" else out

        with models.results.using(result), user_errors("Cannot switch those heads off"):
            out = models.batcher.call(model_work, timeout_s=limits.REQUEST_TIMEOUT_S,
                                      work=work_on(result, result.root.translation.beam_size))
        return models.keep(out)

    @staticmethod
    def rerun_texts(result: Result | None) -> tuple[str, pd.DataFrame, str]:
        """After `rerun`'s maps: the translation, the n-best list and the notes (the translation with every head
        while heads are off). With a translation of one's own on screen, the texts stay the model's own."""
        shown = result.own if result is not None and result.own is not None else result
        return (shown.translation.text if shown else "", nbest_table(shown), ablation_notice(result))

    def translate_linked(self, text: str, method: str, beam_size: Any, model: str | None, length_penalty: Any,
                         linked: dict[str, Any]) -> Result | None:
        """A link's translation with its heads switched off or its norm maps (`linked`: the link's view): the
        first answer is already the model's without those heads, never a flash of the intact translation."""
        result, _ = self.translation.translate(text, method, beam_size, model, length_penalty)
        return self.rerun(result, linked.get("off") or [], linked.get("measure", "weight"))
