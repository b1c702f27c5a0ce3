"""Changes pushed to the quiz's pages: Server-Sent Events over one long GET, so that a phone and the projector
hear of a new question, a reveal or an answer when it happens instead of asking every second or two.

    changes = Changes()
    changes.changed(code, question=True)        # after a reveal or a next: every page of the class wakes
    changes.changed(code)                       # after a join or an answer: the board wakes
    streams = Streams()
    response = stream(streams, token, read, changes, code, "question")   # or TooMany past a share of streams

A stream sends the page's view at once (the same JSON the page's poll gets), then each time it changes, a comment
every KEEPALIVE_S so that a dead connection is noticed, and ends after STREAM_S (the page opens another), when
the class is finished, or with an `event: error` when it ended or the store failed. The page polls instead when a
stream fails or a proxy buffers it (no first event in time), so nothing depends on it. Bounded: at most
MAX_STREAMS open in all and MAX_STREAMS_PER_CLIENT per token (a page and its reload); past either the request is
a JSON 429 and the page polls.
"""
from __future__ import annotations

import asyncio
import functools
import json
import logging
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from .store import ClassError, TooMany

log = logging.getLogger(__name__)

MAX_STREAMS = 2000  # open streams in all (a lecture of 500 phones and its boards is well under it)
MAX_STREAMS_PER_CLIENT = 2  # per student or teacher token
STREAM_S = 600.0  # a stream's longest life: the page then opens another
KEEPALIVE_S = 15.0  # a comment this often when nothing changes
BOARD_EVERY_S = 0.2  # the board's tally at most this often: a burst of answers is one event, not a hundred
HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no", "X-Content-Type-Options": "nosniff"}


class Changes:
    """Who is waiting for what: per class an asyncio.Event per kind ("question": a reveal or a next; "any": that
    or a join or an answer), set and dropped at a change; a waiter takes the current one before it reads, so a
    change while it reads still wakes it. Held weakly: a class nobody listens to costs nothing."""

    def __init__(self):
        self._events: weakref.WeakValueDictionary[tuple[str, str], asyncio.Event] = weakref.WeakValueDictionary()

    def event(self, code: str, kind: str) -> asyncio.Event:
        event = self._events.get((code, kind))
        if event is None:
            event = self._events[(code, kind)] = asyncio.Event()
        return event

    def changed(self, code: str, question: bool = False) -> None:
        for kind in ("any", "question") if question else ("any",):
            event = self._events.pop((code, kind), None)
            if event is not None:
                event.set()


class ClientCounts:
    """How many of something each client holds, and all clients together: `take` refuses past either cap
    (TooMany, with `busy` or `yours` as its message), `give_back` returns one."""

    def __init__(self, total: int, per_client: int, busy: str, yours: str):
        self.total, self.per_client, self.busy, self.yours = total, per_client, busy, yours
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def take(self, client: str) -> None:
        with self._lock:
            if sum(self._held.values()) >= self.total:
                raise TooMany(self.busy)
            if self._held.get(client, 0) >= self.per_client:
                raise TooMany(self.yours)
            self._held[client] = self._held.get(client, 0) + 1

    def give_back(self, client: str) -> None:
        with self._lock:
            self._held[client] -= 1
            if not self._held[client]:
                del self._held[client]

    @property
    def count(self) -> int:
        with self._lock:
            return sum(self._held.values())


class Streams(ClientCounts):
    """Open streams, per client (a token) and in all: `open` refuses past either cap (TooMany)."""

    def __init__(self, total: int = MAX_STREAMS, per_client: int = MAX_STREAMS_PER_CLIENT):
        super().__init__(total, per_client,
                         "Many pages are listening right now: this one asks every few seconds instead.",
                         "This page is open elsewhere already: close it there, or this one asks instead.")

    def open(self, client: str) -> Callable[[], None]:
        """Count a stream of `client`'s: its release, which counts only once however often it is called."""
        self.take(client)
        released = threading.Event()
        once = threading.Lock()

        def release() -> None:
            with once:
                if released.is_set():
                    return
                released.set()
            self.give_back(client)

        return release


def message(view: dict[str, Any], event: str | None = None) -> str:
    """One Server-Sent Event: the view as one line of JSON."""
    return (f"event: {event}\n" if event else "") + f"data: {json.dumps(view, separators=(',', ':'))}\n\n"


async def events(read: Callable[[], dict[str, Any]], wait: Callable[[], asyncio.Event], done: Callable[[], None],
                 coalesce_s: float = 0.0, life_s: float = STREAM_S) -> AsyncIterator[str]:
    """The stream: `read()`'s view (in a worker thread) at once and at each change that alters it, until the
    class is finished, `life_s` is over or the client goes; `wait()` gives the event of the next change;
    `done()` when it ends, however it ends."""
    deadline, last = time.monotonic() + life_s, None
    try:
        while time.monotonic() < deadline:
            change = wait()  # before the read: a change during it still wakes this stream
            try:
                view = await run_in_threadpool(read)
            except ClassError as err:
                yield message({"error": err.message, "status": err.status}, "error")
                return
            if view != last:
                yield message(view)
                last = view
            if view.get("finished"):
                return
            try:
                await asyncio.wait_for(change.wait(), min(KEEPALIVE_S, max(deadline - time.monotonic(), 0)))
            except TimeoutError:
                yield ": still here\n\n"
                continue
            await asyncio.sleep(coalesce_s)  # the answers of a burst, read as one
    finally:
        done()


def stream(streams: Streams, client: str, read: Callable[[], dict[str, Any]], changes: Changes, code: str,
           kind: str, coalesce_s: float = 0.0) -> StreamingResponse:
    """A response streaming `read()`'s view of class `code` at each change of `kind`, counted as one of `client`'s
    streams until it ends, or, should the server never start it, until it is dropped."""
    release = streams.open(client)
    body = events(read, functools.partial(changes.event, code, kind), release, coalesce_s)
    weakref.finalize(body, release)
    return StreamingResponse(body, media_type="text/event-stream", headers=HEADERS)
