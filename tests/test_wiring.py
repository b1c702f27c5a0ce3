"""How the app's events are wired (transformer/explorer/web/wiring.py): a service's method handed straight to an
event that carries data gets what the event carries, as a plain dict, in its last parameter (gradio's own argument
filling, as when the event fires); a tab's entry handler; the concurrency groups."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import gradio as gr
import pytest
from gradio.helpers import special_args

from transformer.explorer.web import wiring


class Service:
    """A service as the explorer writes one: no gradio, the event's data a plain dict."""

    def __init__(self):
        self.calls = []

    def pick(self, result: str, layer: int, data: dict[str, Any]) -> dict:
        """A panel's pick."""
        self.calls.append((result, layer, data))
        return {"result": result, "layer": layer, "node": data.get("node")}


def test_with_event_hands_the_service_what_the_event_carries_in_its_last_parameter():
    service = Service()
    handler = wiring.with_event(service.pick)
    assert handler.__name__ == "pick" and handler.__doc__ == "A panel's pick."
    assert not hasattr(handler, "__wrapped__")  # gradio reads the handler's own signature
    # what gradio does when the event fires: it finds the event parameter by its annotation and fills it
    args, *_ = special_args(handler, ["r", 1], None, gr.EventData(None, {"node": 7}))
    assert handler(*args) == {"result": "r", "layer": 1, "node": 7}
    args, *_ = special_args(handler, ["r", 1], None, gr.EventData(None, ["not", "a", "dict"]))
    assert handler(*args)["node"] is None  # data that is not a dict reaches the service as {}
    assert service.calls == [("r", 1, {"node": 7}), ("r", 1, {})]
    # without the wrapper, gradio sees no event parameter: the service would get None for it
    with pytest.warns(UserWarning, match="Unexpected argument"):
        bare, *_ = special_args(service.pick, ["r", 1], None, gr.EventData(None, {"node": 7}))
    assert bare == ["r", 1, None]


def test_a_tab_entry_writes_its_id_and_the_view():
    assert wiring.tab_entered("tree")('{"kind": "cross"}') == ("tree", '{"kind": "cross"}')


def test_model_events_and_translate_presses_queue_in_their_groups_as_wide_as_the_batcher():
    explorer = SimpleNamespace(models=SimpleNamespace(batcher=SimpleNamespace(max_batch=6)))
    assert wiring.model_group(explorer) == {"concurrency_limit": 6, "concurrency_id": "model"}
    assert wiring.translate_group(explorer) == {"concurrency_limit": 6, "concurrency_id": "translate"}
    assert wiring.RESTORE["concurrency_id"] == "restore" and wiring.QUIET["api_visibility"] == "private"
