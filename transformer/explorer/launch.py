"""How the app is launched, and how its model events are limited per session.

`launch_options()` is what `python app.py` passes to `demo.launch`; `session_limited(slots)` wraps an event
handler so that it holds one of its session's model slots (`checks.SessionSlots`) while it runs.
"""
from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any

import gradio as gr

from . import page
from .checks import SessionSlots

Handler = Callable[..., Any]


def launch_options() -> dict[str, Any]:
    """What `python app.py` passes to `demo.launch` (Gradio 6 takes theme and css here, not in Blocks)."""
    return dict(server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
                share=False, allowed_paths=None, ssr_mode=False, mcp_server=False, show_error=False,
                state_session_capacity=200, css=page.stylesheet(), theme=gr.themes.Default(),
                max_file_size="1mb")  # the page uploads nothing; a request to gradio's upload route gets 1 MB


def session_limited(slots: SessionSlots) -> Callable[[Handler], Handler]:
    """A decorator over `slots`: see `per_session` inside."""

    def per_session(fn: Handler) -> Handler:
        """`fn` as an event handler that holds one of its session's model slots while it runs (a request beyond
        the session's limit is a message at once). Gradio passes the request into the added last parameter,
        found by its gr.Request annotation; the other parameters, their names (the API's) and their
        annotations (gr.EventData) stay `fn`'s."""
        signature = inspect.signature(fn)
        request = inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                                    annotation=gr.Request)

        @functools.wraps(fn)
        def limited(*args: Any) -> Any:
            *inputs, req = args
            with slots.hold(getattr(req, "session_hash", None)):
                return fn(*inputs)

        limited.__signature__ = signature.replace(parameters=[*signature.parameters.values(), request])
        limited.__annotations__ = {**gr.utils.get_type_hints(fn), "request": gr.Request}
        del limited.__wrapped__  # gradio reads the signature above, not fn's
        return limited

    return per_session
