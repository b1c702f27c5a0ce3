"""Per-session control of the app's model events: at most a few requests in flight per session (`SessionSlots`),
the wrapper that holds one of its slots while a handler runs (`session_limited`), and the newest answer wins: an
answer older than its session's newest request is dropped (`SessionGenerations`, `newest_answer`); the payload
carries the generation it answers (`stamped`) and a rerun its ticket (`rerun_ticket`).
"""
from __future__ import annotations

import functools
import inspect
import itertools
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from transformer.explorer.core import limits
from transformer.explorer.core.checks import user_error

Handler = Callable[..., Any]
log = logging.getLogger(__name__)
# the session of the event running on this thread (set by `per_session`) and the generation it answers
SESSION: ContextVar[str | None] = ContextVar("session", default=None)
GENERATION: ContextVar[int | None] = ContextVar("generation", default=None)


class SessionSlots:
    """At most `limit` model requests in flight per session (gradio's session hash; the API's clients have one
    too), so that one user cannot fill the model's queue with their own requests while everyone else waits.
    A request beyond the limit is refused at once with a message, never queued."""

    def __init__(self, limit: int = limits.MAX_IN_FLIGHT):
        self.limit = limit
        self._running: Counter[str] = Counter()
        self._lock = threading.Lock()

    def running(self, session: str) -> int:
        with self._lock:
            return self._running[session]

    @contextmanager
    def hold(self, session: str | None) -> Iterator[None]:
        """One slot of `session` for the body's duration (no session, as in-process calls: no limit)."""
        if session is None:
            yield
            return
        with self._lock:
            if self._running[session] >= self.limit:
                raise user_error(f"You already have {self._running[session]} requests running. Wait for them to "
                                 "finish, then try again: each person gets at most "
                                 f"{self.limit} at a time, so that everyone gets a turn.", "Busy")
            self._running[session] += 1
        try:
            yield
        finally:
            with self._lock:
                self._running[session] -= 1
                if self._running[session] <= 0:
                    del self._running[session]


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
