"""How the app's events are wired, shared by `app.py` and every panel that wires its own events (a registered
panel's `wire`): gradio's options per kind of event (private to the page, quiet, the concurrency group it
queues in), a service's method wired straight to an event that carries data (`with_event`), and the handler that
records the tab a user enters."""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import gradio as gr

from transformer.explorer.core.checks import event_data

PRIVATE = dict(api_visibility="private")
QUIET = dict(api_visibility="private", show_progress="minimal")
RESTORE = dict(concurrency_limit=8, concurrency_id="restore")  # page loads run no model: never behind model work


def model_group(explorer: Any) -> dict[str, Any]:
    """Model events other than Translate: as many at once as the `explorer`'s batcher takes (it orders them)."""
    return dict(concurrency_limit=explorer.models.batcher.max_batch, concurrency_id="model")


def translate_group(explorer: Any) -> dict[str, Any]:
    """The Translate presses: their own group, as many at once as the batcher takes."""
    return dict(concurrency_limit=explorer.models.batcher.max_batch, concurrency_id="translate")


def tab_entered(tab_id: str) -> Callable[[str], tuple[str, str]]:
    """A handler that writes `tab_id` and the view on entering it into the session's state (the URL follows the tab
    on screen; a Translate on the tree tab draws its tree in that view)."""

    def entered_tab(view_json: str) -> tuple[str, str]:
        return tab_id, view_json

    return entered_tab


def with_event(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn(*inputs, data)`, a service's method whose last parameter takes an event's data as a plain dict, as the
    event's handler: gradio passes the event there (found by its gr.EventData annotation) and `fn` gets what it
    carries (`core.checks.event_data`: {} when it is not a dict), so the services take plain values, import no
    gradio, and nothing builds an event to call them."""
    signature = inspect.signature(fn)
    *inputs, event = signature.parameters.values()

    @functools.wraps(fn)
    def handler(*args: Any) -> Any:
        *values, evt = args
        return fn(*values, event_data(evt))

    handler.__signature__ = signature.replace(parameters=[*inputs, event.replace(annotation=gr.EventData)])
    handler.__annotations__ = {**gr.utils.get_type_hints(fn), event.name: gr.EventData}
    del handler.__wrapped__  # gradio reads the signature above, not fn's
    return handler
