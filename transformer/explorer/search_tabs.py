"""The beam-search tree and compare tabs' events. Each returns a panel's value (`search_tree.tree_value`,
`compare.compare_value`); a compare that translates returns its session too, for the tab's gr.State (a search the
tree records is kept on the result itself)."""
from __future__ import annotations

from typing import Any

from .checks import user_errors, view_data
from .compare import CompareSession, compare_value
from .models import ModelService
from .results import Result, work_on
from .search_tree import record_search, tree_value
from . import limits
from .share import DEFAULT_BEAM
from .translation import TranslateService


class TreeService:
    """The tree of a result's search: recorded the first time its tab shows it (cached on the result), a node
    picked in it."""

    def __init__(self, models: ModelService):
        self.models = models

    def on_tree_view(self, result: Result | None, tab: str, view_json: str) -> dict[str, Any] | None:
        """The tree panel's value after a translation or when its tab opens: while the tree tab (`tab`) is open,
        `result`'s search, recorded the first time (cached on the result) and drawn; otherwise None (the stale tree
        goes). Only the panel's value: the search is recorded on the result itself, so the session's result is not
        written back. Such a write, from an event that read the result before another event replaced it (one's own
        translation scored meanwhile, on a busy machine), would put the older result back."""
        if result is None or tab != "tree":
            return None
        models = self.models
        tr = models.translator(result.model)
        with models.results.using(result):
            if result.search is None:
                t = result.translation
                if t.method == "forced":  # a translation of one's own on screen: the tree of the model's own search
                    if result.own is None:
                        return None
                    t = result.own.translation
                with user_errors("Cannot draw the search"):
                    result.search = models.batcher.call(record_search, tr, result.source, t.method, t.beam_size,
                                                        result.length_penalty, t.head_mask,
                                                        work=work_on(result, t.beam_size))
            value = models.batcher.call(tree_value, tr, result.search, None, view_data(view_json),
                                        work=work_on(result))
        models.keep(result)  # the recorded search counts in the store's budget
        return value

    def tree_pick(self, result: Result | None, data: dict[str, Any]) -> dict[str, Any] | None:
        """A node (or layer / head) chosen in the tree panel (`data`: its pick event's): that node's prefix and
        cross-attention."""
        if result is None:
            return None
        models = self.models
        with models.results.using(result):
            if result.search is None:
                return None
            with_tree = data.get("tree_rev") != result.search.rev  # else the page has the tree already
            value = models.batcher.call(tree_value, models.translator(result.model), result.search,
                                        data.get("node"), data, with_tree, work=work_on(result))
        models.keep(result)  # the node's cross-attention is cached on the search
        return value


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
