"""Dynamic batching: translations asked for at about the same time, from any threads, decoded together,
everyday ones in the order they came, expensive ones after them, the cheapest first. One worker thread runs all
the model work of the process; an expensive search serves cheaper waiting work at its pause points. Every
request gets what it gets alone, bit for bit. How and why: docs/serving.md.

    batcher = Batcher()                                   # one worker thread: all model work of the process
    options = tr.decoding_options("beam", 5, 0.6)         # resolved and checked by the caller, once
    r = batcher.translate(tr, tr.source("A dog runs."), options)  # blocks; a `Translation` with attention
    f = batcher.submit(tr, tr.source("A cat sleeps."), options)   # a Future of one
    batcher.call(tr.attention_for, r, 2, work=search_work(len(r.src_ids)))  # other model work, and its work
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, TypeVar, Union

import torch

from ..decoding import pause_points, source_bucket
from .search_process import SearchProcess, SearchProcessLost
from ..translator import DecodingOptions, Source, Translation, Translator

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_BATCH = 32  # sentences decoded together: a classroom; beam 5 makes it 160 rows per decoder step
WINDOW_S = 0.01  # how long a lone request waits for company: a small part of one beam-5 press
BURST_WINDOW_S = 0.5  # during a burst, how long the first request of a batch may wait for the others
SETTLE_S = 0.1  # ... as long as they keep coming: a gap this long between two arrivals ends the wait
BURST_MIN = 4  # a batch this big starts (or continues) a burst
BURST_GAP_S = 1.0  # a burst is over when no batch was decoded for this long
MAX_WAITING = 64  # requests queued beyond this get BatcherBusy (the app's Gradio queue holds 64 too)
# Work (`search_work`) one round may take: a class of 32 sentences of up to 32 tokens at beam 5, or about
# eight of the most expensive requests the app lets through (its work cap: 640 tokens × beam, unpadded).
MAX_WORK = 5120
PAUSE_S = 0.05  # how long an expensive search runs before cheaper waiting work may run at its pause points
MAX_SKIPS = 4  # rounds that may pass a request over for later, cheaper ones before it goes first
# Work up to which a request is an everyday one: a typed sentence of up to 64 tokens at beam 5. These go first,
# in the order they came, and a search of them never pauses (docs/serving.md says why).
LIGHT_WORK = 320


def search_work(source_tokens: int, beam_size: int = 1) -> int:
    """The batcher's work estimate, the unit requests are ordered and rounds bounded by: the source's padded
    length (`decoding.source_bucket` of its tokens, <eos> included) times the beam width. A pass that is not a
    search (a candidate's attention, norm maps, a forced translation, one head's row) counts as beam 1."""
    return source_bucket(max(1, int(source_tokens))) * max(1, int(beam_size))


class BatcherBusy(RuntimeError):
    """Too many requests are waiting (or one waited too long); the message is meant for the user."""


@dataclass
class _Translation:
    translator: Translator
    source: Source
    options: tuple[DecodingOptions, int, bool]  # the search's options, top-k, output_attentions
    future: Future
    work: int
    arrived: float = field(default_factory=time.monotonic)
    skipped: int = 0  # rounds that took a later request and left this one waiting

    @property
    def key(self) -> tuple:
        """What a search shares: the translator, the options and the source bucket."""
        return (id(self.translator),) + self.options + (source_bucket(len(self.source.ids)),)


@dataclass
class _Call:
    fn: Callable[[], Any]
    future: Future
    work: int
    arrived: float = field(default_factory=time.monotonic)
    skipped: int = 0


_Request = Union[_Translation, _Call]


@dataclass
class BatchStats:
    """What the worker has done: rounds run, translations decoded, the largest round (all groups of a round),
    and the rounds served at a pause point of more expensive work."""

    batches: int = 0
    translations: int = 0
    largest: int = 0
    sizes: list[int] = field(default_factory=list)  # of the last 100 rounds
    paused: int = 0


class Batcher:
    """A queue of model work and one worker thread that decodes translations in batches, everyday ones first
    (module doc)."""

    def __init__(self, max_batch: int = MAX_BATCH, window_s: float = WINDOW_S, max_waiting: int = MAX_WAITING,
                 max_work: int = MAX_WORK, burst_window_s: float = BURST_WINDOW_S, burst_min: int = BURST_MIN,
                 burst_gap_s: float = BURST_GAP_S, settle_s: float = SETTLE_S, pause_s: float = PAUSE_S,
                 max_skips: int = MAX_SKIPS, light_work: int = LIGHT_WORK, name: str = "translation-batcher",
                 searcher: SearchProcess | None = None):
        if max_batch < 1 or max_waiting < 1 or max_work < 1 or max_skips < 1 or min(window_s, burst_window_s,
                                                                                    pause_s) < 0:
            raise ValueError("max_batch, max_waiting, max_work and max_skips must be positive, the times >= 0")
        self.max_batch, self.window_s, self.max_work = max_batch, window_s, max_work
        self.max_waiting, self.pause_s, self.max_skips = max_waiting, pause_s, max_skips
        self.light_work = light_work
        self.burst_window_s, self.burst_min, self.burst_gap_s = burst_window_s, burst_min, burst_gap_s
        self.settle_s = settle_s
        self.searcher = searcher  # where everyday searches run, when given (module doc, "A search process")
        self._last_batch = (float("-inf"), 0)  # (when it ended, its translations)
        self.stats = BatchStats()
        self._waiting: list[_Request] = []
        self._cond = threading.Condition()
        self._stopped = False
        self._running_work = 0  # the work of the search or call running now (what a pause may run beside)
        self._resume_until = 0.0  # no pause before this (monotonic time)
        self._in_pause = False
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------------- callers (any thread)

    @property
    def waiting(self) -> int:
        """How many requests are waiting for the worker."""
        with self._cond:
            return len(self._waiting)

    def submit(self, translator: Translator, source: Source, options: DecodingOptions, top_k: int = 5,
               output_attentions: bool = True) -> Future:
        """Queue one translation of a prepared `source` (`Translator.source`, on the caller's thread) with checked
        `options` (`Translator.decoding_options`): nothing is tokenised or checked again here. A Future of its
        `Translation`; a full queue raises `BatcherBusy`."""
        work = search_work(len(source.ids), options.beam_size)
        return self._put(_Translation(translator, source, (options, int(top_k), bool(output_attentions)), Future(),
                                      work))

    def translate(self, translator: Translator, source: Source, options: DecodingOptions, top_k: int = 5,
                  output_attentions: bool = True, timeout_s: float | None = None) -> Translation:
        """`translator.translate_sources([source], options, ...)[0]`, decoded with whatever else is asked for at the
        same time."""
        if threading.current_thread() is self._thread:  # model work that translates (a `call`): no queue
            return translator.translate_sources([source], options, None, output_attentions, top_k)[0]
        future = self.submit(translator, source, options, top_k, output_attentions)
        return self._wait(future, timeout_s)

    def call(self, fn: Callable[..., T], *args: Any, timeout_s: float | None = None, work: int | None = None,
             **kwargs: Any) -> T:
        """Run `fn(*args, **kwargs)` on the worker thread (other model work: no two passes at once); its result,
        or its exception raised here. `work` (`search_work` units) orders it among the waiting requests like a
        translation's; left out, it counts as a full round (`max_work`), after any cheaper request."""
        if threading.current_thread() is self._thread:  # already on the worker: run it now (no deadlock)
            return fn(*args, **kwargs)
        work = self.max_work if work is None else max(1, int(work))
        return self._wait(self._put(_Call(lambda: fn(*args, **kwargs), Future(), work)), timeout_s)

    def close(self, timeout_s: float = 10.0) -> None:
        """Finish what is queued, then stop the worker."""
        with self._cond:
            if self._stopped:
                return
            self._stopped = True
            self._cond.notify_all()
        self._thread.join(timeout_s)

    def _put(self, item: _Request) -> Future:
        with self._cond:
            if self._stopped or not self._thread.is_alive():
                raise RuntimeError("the translation batcher has stopped")
            if len(self._waiting) >= self.max_waiting:
                raise BatcherBusy(f"The translator is busy: {self.max_waiting} requests are already waiting. "
                                  "Please try again in a few seconds.")
            self._waiting.append(item)
            self._cond.notify_all()
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
        with pause_points(self._pause):  # every search on this thread offers its steps to cheaper work
            while self._ready():
                self._serve(self._take(), paused=False)

    def _ready(self) -> bool:
        """Wait for a request, then for its company (`_company`); False once stopped with nothing waiting."""
        with self._cond:
            while not self._waiting:
                if self._stopped:
                    return False
                self._cond.wait()
            expected, deadline, gap = self._company(min(self._waiting, key=lambda r: r.arrived))
            seen, last = len(self._waiting), time.monotonic()
            while seen < expected and not self._stopped:
                remaining = min(deadline, last + gap) - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
                if len(self._waiting) > seen:
                    seen, last = len(self._waiting), time.monotonic()
        return True

    def _company(self, first: _Request) -> tuple[int, float, float]:
        """(how many requests to wait for, until when at most, the longest gap between arrivals), for the
        oldest waiting request `first`: none for a call; in a burst, as many as the last round held, until
        `burst_window_s` after the later of `first`'s arrival and the last round's end, while they keep coming
        (a round answers its searches one by one, so its first users may be back before it ends: counted from
        their arrival, the wait was over before the last users got their answers); otherwise until `window_s`
        after `first` arrived."""
        if not isinstance(first, _Translation):
            return 1, 0.0, 0.0
        ended, size = self._last_batch
        if size >= self.burst_min and time.monotonic() - ended < self.burst_gap_s:
            return min(size, self.max_batch), max(first.arrived, ended) + self.burst_window_s, self.settle_s
        return self.max_batch, first.arrived + self.window_s, float("inf")

    def _priority(self, item: _Request) -> tuple:
        """The order a round takes requests in: those passed over `max_skips` times first, oldest first;
        then everyday ones (work up to `light_work`), oldest first; then the rest, cheapest first."""
        if item.skipped >= self.max_skips:
            return (0, item.arrived, 0)
        if item.work <= self.light_work:
            return (1, 0, item.arrived)
        return (2, item.work, item.arrived)

    def _take(self, cheaper_than: int | None = None) -> list[_Request]:
        """The next round, out of the waiting requests: in `_priority` order, up to `max_batch` requests and
        `max_work` work (one request at least), only requests of less work than `cheaper_than` when given.
        Every request left waiting that arrived before one the round took counts one more skip."""
        with self._cond:
            self._waiting = [r for r in self._waiting if not r.future.cancelled()]  # their callers gave up
            taken: list[_Request] = []
            work = 0
            for item in sorted(self._waiting, key=self._priority):
                if cheaper_than is not None and item.work >= cheaper_than:
                    continue
                if taken and (len(taken) >= self.max_batch or work + item.work > self.max_work):
                    break
                taken.append(item)
                work += item.work
            if taken:
                latest, chosen = max(r.arrived for r in taken), set(map(id, taken))
                self._waiting = [r for r in self._waiting if id(r) not in chosen]
                for item in self._waiting:
                    item.skipped += item.arrived < latest
        return taken

    def _serve(self, items: list[_Request], paused: bool) -> None:
        """Run one round; never leave a caller waiting, whatever fails."""
        try:
            self._run(items, paused)
        except BaseException as err:
            log.exception("batch failed")
            for item in items:
                if not item.future.done():
                    item.future.set_exception(err)

    def _pause(self) -> None:
        """A pause point of the running search (`decoding.pause_points`): once it has run its slice, serve a
        round of the waiting requests cheaper than it, here, then let it run at least as long again."""
        if self._in_pause or not self._waiting or self._running_work <= self.light_work or \
                time.monotonic() < self._resume_until:
            return
        items = self._take(cheaper_than=self._running_work)
        if not items:
            return
        running, begun = self._running_work, time.monotonic()
        self._in_pause = True
        try:
            with torch.inference_mode(False), torch.enable_grad():  # as it runs between rounds, not as the search
                self._serve(items, paused=True)
        finally:
            self._in_pause, self._running_work = False, running
            now = time.monotonic()
            self._resume_until = now + max(self.pause_s, now - begun)

    def _run(self, items: list[_Request], paused: bool) -> None:
        """One round: its calls and searches, cheapest first."""
        live = [item for item in items if item.future.set_running_or_notify_cancel()]  # cancelled: dropped
        parts: list[list[Any]] = [[item] for item in live if isinstance(item, _Call)]
        parts += self._chunks([item for item in live if isinstance(item, _Translation)])
        parts.sort(key=lambda part: (max(r.work for r in part), min(r.arrived for r in part)))
        arrivals = [item.arrived for item in live if isinstance(item, _Translation)]
        begun = time.monotonic()
        for part in parts:
            self._running_work, self._resume_until = max(r.work for r in part), time.monotonic() + self.pause_s
            if isinstance(part[0], _Call):
                self._run_call(part[0])
            else:
                self._decode(part, remote=self._remote(part))
        self._count(arrivals, len(parts), begun, paused)

    def _count(self, arrivals: list[float], parts: int, begun: float, paused: bool) -> None:
        """The round's statistics; a round of translations not run at a pause point may start a burst."""
        n = len(arrivals)
        if not n:
            return
        if not paused:
            self._last_batch = (time.monotonic(), n)
        s = self.stats
        s.batches, s.translations, s.largest = s.batches + 1, s.translations + n, max(s.largest, n)
        s.sizes = (s.sizes + [n])[-100:]
        s.paused += paused
        log.debug("decoded %d translations in %d part(s) in %.0f ms%s; they arrived over %.0f ms, the first "
                  "waited %.0f ms", n, parts, 1000 * (time.monotonic() - begun), " at a pause" if paused else "",
                  1000 * (max(arrivals) - min(arrivals)), 1000 * (begun - min(arrivals)))

    def _chunks(self, translations: list[_Translation]) -> list[list[_Translation]]:
        """The searches a round's translations run as: one per `key` (translator, options, source bucket:
        what `translate_sources` searches together anyway), each of at most `max_batch` sentences and
        `max_work` work (a request over it alone)."""
        groups: dict[tuple, list[_Translation]] = {}
        for item in sorted(translations, key=lambda r: (r.work, len(r.source.ids))):
            groups.setdefault(item.key, []).append(item)
        chunks: list[list[_Translation]] = []
        for group in groups.values():
            chunk: list[_Translation] = []
            for item in group:
                if chunk and (len(chunk) >= self.max_batch or sum(r.work for r in chunk) + item.work > self.max_work):
                    chunks.append(chunk)
                    chunk = []
                chunk.append(item)
            chunks.append(chunk)
        return chunks

    def _remote(self, chunk: list[_Translation]) -> bool:
        """Whether `chunk` is searched in the search process: everyday work (a search over `light_work` stays
        here, where cheaper work can run at its pause points) of a translator the searcher can load."""
        return (self.searcher is not None and max(r.work for r in chunk) <= self.light_work
                and self.searcher.serves(chunk[0].translator))

    def _decode(self, chunk: list[_Translation], remote: bool = False) -> None:
        options, top_k, attention = chunk[0].options
        translator = chunk[0].translator
        sources = [r.source for r in chunk]
        try:
            if remote:
                try:
                    results = self.searcher.search(translator, sources, options, output_attentions=attention,
                                                   top_k=top_k)
                except SearchProcessLost:  # logged by the searcher; this chunk is searched here instead
                    remote = False
            if not remote:
                results = translator.translate_sources(sources, options, output_attentions=attention, top_k=top_k)
            if len(results) != len(chunk):  # zip would leave the rest of the callers waiting for good
                raise RuntimeError(f"the search answered {len(results)} translations for {len(chunk)} sources")
        except Exception as err:
            if len(chunk) == 1:
                chunk[0].future.set_exception(err)
                return
            log.exception("a batch of %d failed; decoding its translations one by one", len(chunk))
            for request in chunk:
                self._decode([request], remote)
            return
        for request, result in zip(chunk, results, strict=True):
            request.future.set_result(result)

    @staticmethod
    def _run_call(call: _Call) -> None:
        try:
            call.future.set_result(call.fn())
        except Exception as err:
            call.future.set_exception(err)
