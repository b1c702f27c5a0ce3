"""Dynamic batching: translations asked for at about the same time, from any threads, decoded together.

    batcher = Batcher()                                   # one worker thread: all model work of the process
    r = batcher.translate(tr, "A dog runs.", "beam", 5, 0.6)      # blocks; a `Translation` with attention
    f = batcher.submit(tr, "A cat sleeps.", "greedy", 1, 0.6)     # a Future of one
    batcher.call(tr.attention_for, r, 2)                  # any other model work, between batches

A class of 30 pressing Translate within a few seconds: decoded one by one, the last waits for all
30; as one padded batch, the 30 take little more than a few alone (`Translator.translate_sources`).
This is what model servers call a dynamic batcher (Triton's dynamic batcher, TorchServe's
`batch_size` / `max_batch_delay`, Ray Serve's `@serve.batch`), in process, for a Gradio app whose own
`batch=True` mode would hand every item of a batch the first user's session state.

How a batch forms. One worker thread runs all the model work, so two passes never compete for the
cores. It takes the oldest waiting request; if that request is a translation, it waits for company
until `window_s` after its arrival, then takes every waiting request, up to `max_batch`. While it
decodes, new requests queue and form the next batch, so under load batches grow by themselves; a lone
request waits `window_s` (10 ms) at most. During a burst (the last batch, less than `burst_gap_s` ago,
held at least `burst_min` translations) its users are about to come back: the next batch waits for as
many, as long as they keep arriving (no gap over `settle_s`, 100 ms) and at most `burst_window_s` (0.5 s)
after its first request, rather than decoding the first few alone while the others arrive (on 2 cores,
their arrival and the last batch's answers slow such a small batch to about the time of a full one).

Grouping. Translations with the same translator, method, beam width, length penalty and top-k are one
group; each group is decoded in length-sorted chunks of at most `max_batch` sentences and
`max_batch_tokens` padded source tokens. Every request has its own future and gets its own
`Translation` (n-best and attention cut out of the batch for its sentence alone): nothing of a batch is
shared between callers. If a chunk fails, its requests are decoded one by one, so a bad request fails
alone.

Back-pressure. At most `max_waiting` requests wait; one more raises `BatcherBusy` at once, with a
message for the user, instead of a hang. `translate(..., timeout_s=...)` gives up the same way.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .translator import Source, Translation, Translator, check_options

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_BATCH = 32  # sentences decoded together: a classroom; beam 5 makes it 160 rows per decoder step
WINDOW_S = 0.01  # how long a lone request waits for company (~5 % of one beam-5 press in the app)
BURST_WINDOW_S = 0.5  # during a burst, how long the first request of a batch may wait for the others
SETTLE_S = 0.1  # ... as long as they keep coming: a gap this long between two arrivals ends the wait
BURST_MIN = 4  # a batch this big starts (or continues) a burst
BURST_GAP_S = 1.0  # a burst is over when no batch was decoded for this long
MAX_WAITING = 64  # requests queued beyond this get BatcherBusy (the app's Gradio queue holds 64 too)
MAX_BATCH_TOKENS = 4096  # padded source tokens per chunk (32 sentences of 128 tokens)


class BatcherBusy(RuntimeError):
    """Too many requests are waiting (or one waited too long); the message is meant for the user."""


@dataclass
class _Translation:
    translator: Translator
    source: Source
    options: tuple[str, int, float, int, bool]  # method, beam width, length penalty, top-k, attention
    future: Future
    arrived: float = field(default_factory=time.monotonic)

    @property
    def key(self) -> tuple:
        return (id(self.translator),) + self.options


@dataclass
class _Call:
    fn: Callable[[], Any]
    future: Future


@dataclass
class BatchStats:
    """What the worker has done: batches run, translations decoded, the largest batch (all groups of a round)."""

    batches: int = 0
    translations: int = 0
    largest: int = 0
    sizes: list[int] = field(default_factory=list)  # of the last 100 rounds


_STOP = object()


class Batcher:
    """A queue of translation requests and one worker thread that decodes them in batches (module doc)."""

    def __init__(self, max_batch: int = MAX_BATCH, window_s: float = WINDOW_S, max_waiting: int = MAX_WAITING,
                 max_batch_tokens: int = MAX_BATCH_TOKENS, burst_window_s: float = BURST_WINDOW_S,
                 burst_min: int = BURST_MIN, burst_gap_s: float = BURST_GAP_S, settle_s: float = SETTLE_S,
                 name: str = "translation-batcher"):
        if max_batch < 1 or max_waiting < 1 or window_s < 0 or max_batch_tokens < 1 or burst_window_s < 0:
            raise ValueError("max_batch, max_waiting and max_batch_tokens must be positive, the windows >= 0")
        self.max_batch, self.window_s, self.max_batch_tokens = max_batch, window_s, max_batch_tokens
        self.max_waiting = max_waiting
        self.burst_window_s, self.burst_min, self.burst_gap_s = burst_window_s, burst_min, burst_gap_s
        self.settle_s = settle_s
        self._last_batch = (float("-inf"), 0)  # (when it ended, its translations)
        self.stats = BatchStats()
        self._queue: queue.Queue = queue.Queue(maxsize=max_waiting)
        self._stopped = False
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------------- callers (any thread)

    def submit(self, translator: Translator, text: str, method: str = "beam", beam_size: int | None = None,
               length_penalty: float | None = None, top_k: int = 5, return_attention: bool = True) -> Future:
        """Queue one translation; a Future of its `Translation`. Bad options or text raise ValueError here,
        a full queue `BatcherBusy`. Options left out (None) are the checkpoint's, as in `Translator.translate`."""
        beam_size, length_penalty = translator.generation.resolve(beam_size, length_penalty)
        check_options(method, beam_size, length_penalty, None)
        source = translator.source(text)  # tokenised on the caller's thread
        beam_size = 1 if method == "greedy" else beam_size
        options = (method, beam_size, float(length_penalty), int(top_k), bool(return_attention))
        return self._put(_Translation(translator, source, options, Future()))

    def translate(self, translator: Translator, text: str, method: str = "beam", beam_size: int | None = None,
                  length_penalty: float | None = None, top_k: int = 5, return_attention: bool = True,
                  timeout_s: float | None = None) -> Translation:
        """`translator.translate(text, ...)`, decoded with whatever else is asked for at the same time."""
        if threading.current_thread() is self._thread:  # model work that translates (a `call`): no queue
            return translator.translate(text, method, beam_size, length_penalty, None, return_attention, top_k)
        future = self.submit(translator, text, method, beam_size, length_penalty, top_k, return_attention)
        return self._wait(future, timeout_s)

    def call(self, fn: Callable[..., T], *args: Any, timeout_s: float | None = None, **kwargs: Any) -> T:
        """Run `fn(*args, **kwargs)` on the worker thread, between batches (other model work: no two passes
        at once); its result, or its exception raised here."""
        if threading.current_thread() is self._thread:  # already on the worker: run it now (no deadlock)
            return fn(*args, **kwargs)
        return self._wait(self._put(_Call(lambda: fn(*args, **kwargs), Future())), timeout_s)

    def close(self, timeout_s: float = 10.0) -> None:
        """Finish what is queued, then stop the worker."""
        if not self._stopped:
            self._stopped = True
            self._queue.put(_STOP)
            self._thread.join(timeout_s)

    def _put(self, item: _Translation | _Call) -> Future:
        if self._stopped or not self._thread.is_alive():
            raise RuntimeError("the translation batcher has stopped")
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            raise BatcherBusy(f"The translator is busy: {self.max_waiting} requests are already waiting. "
                              "Please try again in a few seconds.") from None
        return item.future

    @staticmethod
    def _wait(future: Future, timeout_s: float | None) -> Any:
        try:
            return future.result(timeout_s)
        except FutureTimeout:
            future.cancel()  # still queued: it is dropped, not decoded
            raise BatcherBusy(f"The translator is busy: no answer within {timeout_s:g} s. "
                              "Please try again in a few seconds.") from None

    # ------------------------------------------------------------------------- the worker thread

    def _work(self) -> None:
        while True:
            first = self._queue.get()
            if first is _STOP:
                return
            items, stop = self._gather(first)
            try:
                self._run(items)
            except BaseException as err:  # never leave a caller waiting
                log.exception("batch failed")
                for item in items:
                    if not item.future.done():
                        item.future.set_exception(err)
            if stop:
                return

    def _company(self, first: _Translation | _Call) -> tuple[int, float, float]:
        """(how many translations to wait for, until when at most, the longest gap between arrivals): none
        for a call; in a burst, as many as the last batch held, until `burst_window_s` after `first` arrived
        while they keep coming; otherwise until `window_s` after."""
        if not isinstance(first, _Translation):
            return 1, 0.0, 0.0
        ended, size = self._last_batch
        if size >= self.burst_min and time.monotonic() - ended < self.burst_gap_s:
            return min(size, self.max_batch), first.arrived + self.burst_window_s, self.settle_s
        return self.max_batch, first.arrived + self.window_s, float("inf")

    def _gather(self, first: _Translation | _Call) -> tuple[list, bool]:
        """`first` and whatever else is waiting (up to `max_batch`), after waiting for company (`_company`).
        Also whether the stop mark came."""
        items = [first]
        expected, deadline, gap = self._company(first)
        last = time.monotonic()
        while len(items) < self.max_batch:
            remaining = min(deadline, last + gap) - time.monotonic() if len(items) < expected else 0.0
            try:
                item = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                return items, True
            items.append(item)
            last = time.monotonic()
        return items, False

    def _run(self, items: list[_Translation | _Call]) -> None:
        """One round: calls and translation groups in order of first arrival; each group in chunks."""
        rounds: dict[Any, list] = {}
        for item in items:
            if item.future.set_running_or_notify_cancel():  # a cancelled request (its caller gave up) is dropped
                rounds.setdefault(item.key if isinstance(item, _Translation) else id(item), []).append(item)
        arrivals = [i.arrived for group in rounds.values() for i in group if isinstance(i, _Translation)]
        n, begun = len(arrivals), time.monotonic()
        for group in rounds.values():
            if isinstance(group[0], _Call):
                self._run_call(group[0])
            else:
                for chunk in self._chunks(group):
                    self._decode(chunk)
        if n:
            self._last_batch = (time.monotonic(), n)
            s = self.stats
            s.batches, s.translations, s.largest = s.batches + 1, s.translations + n, max(s.largest, n)
            s.sizes = (s.sizes + [n])[-100:]
            log.debug("decoded %d translations in %d group(s) in %.0f ms; they arrived over %.0f ms, the first "
                      "waited %.0f ms", n, len(rounds), 1000 * (time.monotonic() - begun),
                      1000 * (max(arrivals) - min(arrivals)), 1000 * (begun - min(arrivals)))

    def _chunks(self, group: list[_Translation]) -> list[list[_Translation]]:
        """Length-sorted chunks of at most `max_batch` sentences and `max_batch_tokens` padded tokens."""
        chunks: list[list[_Translation]] = []
        for item in sorted(group, key=lambda r: len(r.source.ids)):
            chunk = chunks[-1] if chunks else None
            if chunk is None or len(chunk) >= self.max_batch or \
                    (len(chunk) + 1) * len(item.source.ids) > self.max_batch_tokens:
                chunks.append([item])
            else:
                chunk.append(item)
        return chunks

    @staticmethod
    def _decode(chunk: list[_Translation]) -> None:
        method, beam_size, length_penalty, top_k, attention = chunk[0].options
        translator = chunk[0].translator
        try:
            results = translator.translate_sources([r.source for r in chunk], method, beam_size, length_penalty,
                                                   return_attention=attention, top_k=top_k)
        except Exception as err:
            if len(chunk) == 1:
                chunk[0].future.set_exception(err)
                return
            log.exception("a batch of %d failed; decoding its translations one by one", len(chunk))
            for request in chunk:
                Batcher._decode([request])
            return
        for request, result in zip(chunk, results):
            request.future.set_result(result)

    @staticmethod
    def _run_call(call: _Call) -> None:
        try:
            call.future.set_result(call.fn())
        except Exception as err:
            call.future.set_exception(err)
