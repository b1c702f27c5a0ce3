"""How the app is launched: `launch_options()` is what `python app.py` passes to `demo.launch`; `serve` launches,
waits for gradio's check of its own page (`patient_self_check`), then starts the work that can wait. Per-session
control of the model events is `sessions.py`'s."""
from __future__ import annotations

import contextlib
import functools
import logging
import os
import time
from collections.abc import Callable
from typing import Any

import gradio as gr
import httpx
from gradio import networking
from starlette.middleware import Middleware

from transformer.explorer.web import page
from transformer.explorer.core import limits

log = logging.getLogger(__name__)


def launch_options(head: str = "") -> dict[str, Any]:
    """What `python app.py` passes to `demo.launch` (Gradio 6 takes theme and head here, not in Blocks; the
    stylesheets go in the `head`, not `css=`: `page.page_head`)."""
    return dict(server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
                share=False, allowed_paths=None, ssr_mode=False, mcp_server=False, show_error=False,
                state_session_capacity=200, head=head, theme=gr.themes.Default(),
                max_file_size=limits.MAX_UPLOAD, app_kwargs={"middleware": [Middleware(RevalidateModules)]})


class RevalidateModules:
    """ASGI middleware: the page's ES modules (the explorer's files served: `static/` and each panel's scripts) go
    out with `Cache-Control: no-cache`, so a
    browser asks again each time (an unchanged module costs a 304) and never runs a cached old module beside the
    new ones after the app is updated; the modules import each other, so one stale file breaks the page."""

    def __init__(self, app) -> None:
        self.app = app
        self.marker = page.EXPLORER_DIR.as_posix() + "/"

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or self.marker not in scope.get("path", ""):
            return await self.app(scope, receive, send)

        async def send_revalidated(message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"cache-control"]
                message = {**message, "headers": [*headers, (b"cache-control", b"no-cache")]}
            await send(message)

        await self.app(scope, receive, send_revalidated)


def serve(demo: gr.Blocks, head: str = "", routes: Callable[[str, int], list[Any]] = lambda host, port: [],
          when_up: Callable[[], Any] = lambda: None) -> None:
    """`python app.py`: launch `demo` with `launch_options(head)` and `routes(host, port)` (the panels' own, beside
    gradio's), call `when_up()`, then serve until interrupted.

    Gradio's launch fetches its own page once, with a 3 s limit, and exits (a `ValueError` about a share link)
    if that fetch times out, although the page answers. Launch waits longer for it (`patient_self_check`), and
    start-up work that can wait, such as the search process's model load, is started by `when_up`, after it."""
    with patient_self_check():
        options = launch_options(head)
        # routes of the app's own beside gradio's, in the app gradio makes (they answer from its first request)
        options["app_kwargs"]["routes"] = routes(options["server_name"], options["server_port"])
        demo.launch(**options, prevent_thread_lock=True)
    log.info("serving at %s", demo.local_url)
    when_up()
    demo.block_thread()


SELF_CHECK_OK = (200, 301, 302, 303, 307, 308, 401)  # what gradio's own check takes as "the page answers"


def page_answers(url: str, limit_s: float) -> bool:
    """Whether `url` answers a HEAD request within `limit_s` seconds, asking again while it refuses."""
    deadline = time.monotonic() + limit_s
    while True:
        try:
            left = max(deadline - time.monotonic(), 0.1)
            if httpx.head(url, timeout=left, verify=False).status_code in SELF_CHECK_OK:
                return True
        except (httpx.ConnectError, httpx.TimeoutException):
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.25)


@contextlib.contextmanager
def patient_self_check(limit_s: float = 60.0):
    """Inside: gradio's launch checks its page with `page_answers(url, limit_s)` instead of one 3 s request.
    Rendering the page's config for the first time can take longer on a busy laptop, and the app then exited
    at start although it was up."""
    original = networking.url_ok
    networking.url_ok = functools.partial(page_answers, limit_s=limit_s)
    try:
        yield
    finally:
        networking.url_ok = original
