"""How the app is launched, and how its model events are limited and ordered per session.

`launch_options()` is what `python app.py` passes to `demo.launch`; `session_limited(slots)` wraps an event
handler so that it holds one of its session's model slots (`checks.SessionSlots`) while it runs;
`newest_answer(generations)` makes a handler's answer count only while it answers the session's newest request
(`SessionGenerations`).
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import gradio as gr
import httpx
from gradio import networking
from starlette.middleware import Middleware

from . import browser, limits
from .checks import SessionSlots, event_data

Handler = Callable[..., Any]
log = logging.getLogger(__name__)
# the session of the event running on this thread (set by `per_session`) and the generation it answers
SESSION: ContextVar[str | None] = ContextVar("session", default=None)
GENERATION: ContextVar[int | None] = ContextVar("generation", default=None)


def launch_options() -> dict[str, Any]:
    """What `python app.py` passes to `demo.launch` (Gradio 6 takes theme and head here, not in Blocks; the
    stylesheet goes in the head, not `css=`: `browser.page_head`)."""
    return dict(server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
                share=False, allowed_paths=None, ssr_mode=False, mcp_server=False, show_error=False,
                state_session_capacity=200, head=browser.page_head(), theme=gr.themes.Default(),
                max_file_size=limits.MAX_UPLOAD, app_kwargs={"middleware": [Middleware(RevalidateModules)]})


class RevalidateModules:
    """ASGI middleware: the page's ES modules (`browser.STATIC_DIR`) go out with `Cache-Control: no-cache`, so a
    browser asks again each time (an unchanged module costs a 304) and never runs a cached old module beside the
    new ones after the app is updated; the modules import each other, so one stale file breaks the page."""

    def __init__(self, app) -> None:
        self.app = app
        self.marker = browser.STATIC_DIR.as_posix() + "/"

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or self.marker not in scope.get("path", ""):
            return await self.app(scope, receive, send)

        async def send_revalidated(message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"cache-control"]
                message = {**message, "headers": [*headers, (b"cache-control", b"no-cache")]}
            await send(message)

        await self.app(scope, receive, send_revalidated)


def serve(demo: gr.Blocks, when_up: Callable[[], Any] = lambda: None) -> None:
    """`python app.py`: launch `demo` with `launch_options()`, call `when_up()`, then serve until interrupted.

    Gradio's launch fetches its own page once, with a 3 s limit, and exits (a `ValueError` about a share link)
    if that fetch times out, although the page answers. Launch waits longer for it (`patient_self_check`), and
    start-up work that can wait, such as the search process's model load, is started by `when_up`, after it."""
    with patient_self_check():
        demo.launch(**launch_options(), prevent_thread_lock=True)
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


def session_limited(slots: SessionSlots, generations: SessionGenerations | None = None) -> Callable[..., Handler]:
    """A decorator over `slots` and the sessions' `generations`: see `per_session` inside (its `newest` is
    `newest_answer(generations)`, for a handler called inside another; its `translating` says whether the
    session's new translation is in flight)."""
    sessions = generations or SessionGenerations()
    newest = newest_answer(sessions)

    def per_session(fn: Handler, kind: str | None = None) -> Handler:
        """`fn` as an event handler that holds one of its session's model slots while it runs (a request beyond
        the session's limit is a message at once); with a `kind` (NEW, EDIT), its answer counts only while it
        answers the session's newest request (`newest_answer`). Gradio passes the request into the added last
        parameter, found by its gr.Request annotation; the other parameters, their names (the API's) and their
        annotations (gr.EventData) stay `fn`'s."""
        fn = newest(kind)(fn) if kind is not None else fn
        signature = inspect.signature(fn)
        request = inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                                    annotation=gr.Request)

        @functools.wraps(fn)
        def limited(*args: Any) -> Any:
            *inputs, req = args
            session = getattr(req, "session_hash", None)
            with slots.hold(session):
                token = SESSION.set(session)
                try:
                    return fn(*inputs)
                finally:
                    SESSION.reset(token)

        limited.__signature__ = signature.replace(parameters=[*signature.parameters.values(), request])
        limited.__annotations__ = {**gr.utils.get_type_hints(fn), "request": gr.Request}
        del limited.__wrapped__  # gradio reads the signature above, not fn's
        return limited

    def translating() -> bool:
        """Inside a `per_session` handler: whether a new translation of its session is in flight."""
        return sessions.translating(SESSION.get())

    per_session.newest, per_session.translating = newest, translating
    return per_session


def reads_event(fn: Handler) -> Handler:
    """`fn`, whose last parameter takes an event's data as a plain dict, as a gradio handler: gradio passes the
    event there (found by its gr.EventData annotation) and `fn` gets what it carries (`checks.event_data`: {} when
    it is not a dict), so the explorer's services take plain values and nothing builds an event to call them."""
    signature = inspect.signature(fn)
    *inputs, last = signature.parameters.values()

    @functools.wraps(fn)
    def handler(*args: Any) -> Any:
        *values, evt = args
        return fn(*values, event_data(evt))

    handler.__signature__ = signature.replace(parameters=[*inputs, last.replace(annotation=gr.EventData)])
    handler.__annotations__ = {**gr.utils.get_type_hints(fn), last.name: gr.EventData}
    del handler.__wrapped__  # gradio reads the signature above, not fn's
    return handler


# ----------------------------------------------------------------------------- the newest request wins

NEW, EDIT = "new", "edit"  # a new translation; an edit of the result on screen (heads off, a candidate)


@dataclass
class _Session:
    latest: int = 0
    running: set[int] = field(default_factory=set)
    replacing: set[int] = field(default_factory=set)


class SessionGenerations:
    """Which of a session's answers may still be written. Requests are reordered on purpose (an expensive search
    pauses for cheaper ones), so an answer can come after the answer to a newer request of the same session:
    each request that writes the session's result takes the next generation as it starts, and its answer is
    written only if no request of the session started after it. A change of the result on screen (heads off,
    another candidate, one's own translation scored) that starts while a new translation is in flight is void:
    the result it would change is about to be replaced (the page asks again for the new one)."""

    def __init__(self):
        # one counter for every session, from the clock: a session's numbers only grow, across restarts of the app too
        # (a page left open); microseconds stay below 2**53, exact in the browser
        self._count = itertools.count(time.time_ns() // 1000)
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()

    def begin(self, session: str, kind: str) -> int | None:
        """The generation of a request of `kind` (NEW or EDIT) starting now; None when it is void."""
        with self._lock:
            s = self._sessions.setdefault(session, _Session())
            if kind == EDIT and s.replacing:
                if not s.running:
                    del self._sessions[session]
                return None
            s.latest = next(self._count)
            s.running.add(s.latest)
            if kind == NEW:
                s.replacing.add(s.latest)
            return s.latest

    def finish(self, session: str, generation: int) -> bool:
        """The request of `generation` is done: whether it is still the session's newest (its answer counts)."""
        with self._lock:
            s = self._sessions[session]
            s.running.discard(generation)
            s.replacing.discard(generation)
            if not s.running:  # nothing in flight: nothing left to compare with
                del self._sessions[session]
            return s.latest == generation

    def translating(self, session: str | None) -> bool:
        """Whether a new translation of `session` is in flight (its answer will replace the result on screen)."""
        with self._lock:
            s = self._sessions.get(session)
            return bool(s and s.replacing)

    def sessions(self) -> int:
        """Sessions with a request in flight (what is kept)."""
        with self._lock:
            return len(self._sessions)


def newest_answer(generations: SessionGenerations) -> Callable[[str], Callable[[Handler], Handler]]:
    """A decorator over `generations`: see `newest` inside."""

    def newest(kind: str) -> Callable[[Handler], Handler]:
        """`fn` (called inside `per_session`) answers only as its session's newest request: an older one's answer
        is dropped (gr.skip: every output, the session's result too, stays as the newer request leaves it).
        `GENERATION` holds its number while it runs (the payload carries it: explorer.js ignores older ones).
        Called inside another such handler, or outside a session, it is `fn` itself."""

        if kind not in (NEW, EDIT):
            raise ValueError(f"kind must be {NEW!r} or {EDIT!r}, got {kind!r}")

        def wrap(fn: Handler) -> Handler:
            @functools.wraps(fn)
            def answer(*args: Any, **kwargs: Any) -> Any:
                session = SESSION.get()
                if session is None or GENERATION.get() is not None:
                    return fn(*args, **kwargs)
                generation = generations.begin(session, kind)
                if generation is None:
                    log.info("%s: void, a new translation of the session is in flight", fn.__name__)
                    return gr.skip()
                token = GENERATION.set(generation)
                try:
                    out = fn(*args, **kwargs)
                finally:
                    GENERATION.reset(token)
                    newest = generations.finish(session, generation)
                if not newest:
                    log.info("%s: answer %d dropped, the session asked for something newer", fn.__name__,
                             generation)
                    return gr.skip()
                return out

            return answer

        return wrap

    return newest


def stamped(payload: dict | None, answers: int | None = None) -> dict | None:
    """`payload` with the generation of the request it answers (`GENERATION`; explorer.js ignores one older than
    it has drawn) and, for a rerun, the page's ticket of its request (`answers`)."""
    generation = GENERATION.get()
    if payload is None or (generation is None and answers is None):
        return payload
    return {**payload, "gen": generation, "answers": answers}


def rerun_ticket(data: dict[str, Any]) -> int | None:
    """The page's number of a rerun request (explorer.js), sent back with its answer; None unless a small int."""
    value = data.get("ticket")
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2 ** 53 else None
