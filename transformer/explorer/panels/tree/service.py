"""The beam-search tree tab's events: the tree of a result's search (recorded the first time its tab shows it,
cached on the result) and a node picked in it; each returns the panel's value (`search_tree.tree_value`)."""
from __future__ import annotations

from typing import Any

from transformer.explorer.core.checks import user_errors, view_data
from transformer.explorer.core.models import ModelService
from transformer.explorer.core.results import Result, work_on
from transformer.explorer.panels.tree.search_tree import record_search, tree_value


class TreeService:
    """The tree of a result's search: recorded the first time its tab shows it (cached on the result), a node
    picked in it."""

    def __init__(self, models: ModelService):
        self.models = models

    def on_tree_view(self, result: Result | None, tab: str, view_json: str) -> dict[str, Any] | None:
        """The tree panel's value after a translation or when its tab opens: while the tree tab is open, the search
        of `result` (recorded the first time, cached on the result) drawn; otherwise None, so a stale tree goes.
        The session's result is not written back: the search is kept on the result itself, and such a write, from
        an event that read the result before another event replaced it (one's own translation scored meanwhile,
        on a busy machine), would put the older result back."""
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
        models.keep(result)  # its search is counted in the store's budget now
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
