"""The compare tab's events: two sentences, or one sentence decoded greedily and with beam search, translated
and put side by side; each returns the panel's value (`compare_view.compare_value`), with the compare session kept
for the tab's gr.State when it translates."""
from __future__ import annotations

from typing import Any

from transformer.explorer.core import limits
from transformer.explorer.core.checks import view_data
from transformer.explorer.core.models import ModelService
from transformer.explorer.core.translation import TranslateService
from transformer.explorer.core.view_state import DEFAULT_BEAM
from transformer.explorer.panels.compare.compare_view import CompareSession, compare_value


class CompareService:
    """Two sentences, or one decoded greedily and with beam search, translated and put side by side."""

    def __init__(self, models: ModelService, translation: TranslateService):
        self.models, self.translation = models, translation

    def on_compare(self, text: Any, other: Any, method: Any, beam: Any, model: str | None, length_penalty: float,
                   view_json: str) -> tuple[dict[str, Any], CompareSession]:
        """Translate both sentences with the current settings and put their attention side by side."""
        left, _ = self.translation.translate(text, method, beam, model, length_penalty)
        right, _ = self.translation.translate(other, method, beam, model, length_penalty)
        session = CompareSession("sentences", (left.source, right.source), (left.source, right.source),
                                 (left.translation.text, right.translation.text), (left.attention, right.attention))
        return compare_value(session, view_data(view_json)), self.models.keep(session)

    def on_greedy_vs_beam(self, text: Any, beam: Any, model: str | None, length_penalty: float,
                          view_json: str) -> tuple[dict[str, Any], CompareSession]:
        """The same sentence decoded greedily and with beam search (the slider's width, or the default if 1)."""
        width = int(beam) if isinstance(beam, (int, float)) and 1 < beam <= limits.UI_MAX_BEAM else DEFAULT_BEAM
        greedy, _ = self.translation.translate(text, "greedy", 1, model, length_penalty)
        beamed, _ = self.translation.translate(text, "beam", width, model, length_penalty)
        session = CompareSession("methods", ("greedy", f"beam {width}"), (greedy.source, beamed.source),
                                 (greedy.translation.text, beamed.translation.text),
                                 (greedy.attention, beamed.attention))
        return compare_value(session, view_data(view_json)), self.models.keep(session)

    def compare_pick(self, session: CompareSession | None, data: dict[str, Any]) -> dict[str, Any] | None:
        """Another kind, layer or head in the compare panel (`data`: its pick event's): figures of the kept
        translations."""
        if session is None:
            return None
        with self.models.results.using(session):
            return compare_value(session, data)

    def on_restore_compare(self, text: str, other: str, method: str, beam: float, model: str | None,
                           length_penalty: float, tab: str, view_json: str):
        """A link to the compare tab: compare its two sentences, or greedy and beam when it has only one (the
        compare box may hold the source itself by then: the tab prefills it)."""
        if tab != "compare" or not (text or "").strip():
            return None, None
        if (other or "").strip() and other.strip() != text.strip():
            return self.on_compare(text, other, method, beam, model, length_penalty, view_json)
        return self.on_greedy_vs_beam(text, beam, model, length_penalty, view_json)
