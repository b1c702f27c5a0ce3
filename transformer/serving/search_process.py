"""The batcher's everyday searches in a process of their own, so that they never wait for the app's GIL.

    searcher = SearchProcess(threads=torch.get_num_threads())   # a child process: python -m transformer.serving.search_process
    searcher.preload(tr)                                         # tr from load_pretrained: the child loads the same
    translations = searcher.search(tr, [tr.source("A dog runs.")], "beam", 5, 0.6)   # = tr.translate_sources(...)
    searcher.close()

The child loads each checkpoint as the parent did and runs on the parent's threads and int8 kernels, so a search
gives there exactly what it gives here. Whatever goes wrong ends in `SearchProcessLost`, and the search runs in
the app instead; waits are bounded, and a failing child is tried again after a backoff. How and why:
docs/serving.md.
"""
from __future__ import annotations

import json
import logging
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import Any

from .. import quantize
from ..hub import checkpoint_digest
from ..translator import DecodingOptions, Source, Translation, Translator, load_pretrained

log = logging.getLogger("transformer.serving.search_process")  # the same name in the child, run as __main__

Origin = tuple  # `Translator.origin`: (checkpoint directory, quantize, checkpoint digest)

START_TIMEOUT_S = 120.0  # importing torch and loading a checkpoint, on a busy 2-core machine
SEARCH_TIMEOUT_S = 60.0  # far past an everyday round; a child silent this long holds up all model work
LOCK_WAIT_S = 1.0  # how long a search waits for a preload or a start to finish before it runs in the app
MAX_FAILURES = 3  # failures in a row retried at once; after these, each new child waits for a backoff
BACKOFF_S = 5.0  # the first backoff, doubled after each further failure ...
MAX_BACKOFF_S = 300.0  # ... up to this
_PIPE_CHUNK = 1 << 15  # a request this small fits in an empty pipe: its write never blocks


class SearchProcessLost(RuntimeError):
    """The child could not do the search (module doc, "Failures"); it is done in the app instead."""


class SearchProcess:
    """A child process that runs `Translator.translate_sources` for translators made by `load_pretrained`
    (module doc). It answers one request at a time: a lock makes other callers wait, each for a bounded time."""

    def __init__(self, threads: int, timeout_s: float = SEARCH_TIMEOUT_S, python: str = sys.executable,
                 backoff_s: float = BACKOFF_S, max_backoff_s: float = MAX_BACKOFF_S,
                 lock_wait_s: float = LOCK_WAIT_S, start_timeout_s: float = START_TIMEOUT_S):
        self.threads, self.timeout_s, self.python = int(threads), timeout_s, python
        self.backoff_s, self.max_backoff_s, self.lock_wait_s = backoff_s, max_backoff_s, lock_wait_s
        self.start_timeout_s = start_timeout_s
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._send: Connection | None = None
        self._receive: Connection | None = None
        self._failures = 0
        self._retry_at = 0.0  # monotonic time before which no new child is started (the backoff)
        self._closed = False
        self._loaded: set[Origin] = set()
        self._refused: dict[Origin, str] = {}  # checkpoints the child could not load (or found changed): why

    # ------------------------------------------------------------------------- the parent's side

    @property
    def available(self) -> bool:
        """False while the searcher backs off after failures (module doc) and once closed: searches stay here."""
        return not self._closed and (self._failures < MAX_FAILURES or time.monotonic() >= self._retry_at)

    @property
    def failures(self) -> int:
        """Failures in a row (0 after an answer)."""
        return self._failures

    @property
    def pid(self) -> int | None:
        """The running child's process id, if one runs."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def serves(self, translator: Translator) -> bool:
        """Whether `translator`'s searches can run in the child now: it came from `load_pretrained`, the child
        has not refused its checkpoint, and the searcher is not backing off."""
        origin = getattr(translator, "origin", None)
        return origin is not None and origin not in self._refused and self.available

    def start(self) -> None:
        """Start the child now (it imports torch while the parent does other work); idempotent. A child that
        cannot start raises `SearchProcessLost` (and counts as a failure)."""
        with self._locked(self.start_timeout_s):
            self._closed = False
            self._ensure_started()

    def preload(self, translator: Translator) -> None:
        """Load `translator`'s checkpoint in the child, so that its first search does not wait for it."""
        with self._locked(self.start_timeout_s):
            self._ask(("load", translator.origin), self.start_timeout_s)
            self._loaded.add(translator.origin)

    def preload_in_background(self, translator: Translator) -> threading.Thread:
        """`preload` on a thread of its own (it only waits on the pipe), so that the caller goes on; a search
        asked for meanwhile runs in the parent. A failure is logged: the search then loads, or runs in the
        parent."""
        def run() -> None:
            try:
                self.preload(translator)
            except Exception as err:
                log.error("the search process could not load %s: %s", translator.origin[0], err)

        thread = threading.Thread(target=run, name="search-process-preload", daemon=True)
        thread.start()
        return thread

    def search(self, translator: Translator, sources: list[Source], options: DecodingOptions,
               output_attentions: bool = True, top_k: int = 5) -> list[Translation]:
        """`translator.translate_sources(sources, options, output_attentions=..., top_k=...)`, run in the child: the
        same `Translation`s, bit for bit; `SearchProcessLost` when the child cannot (the caller searches itself)."""
        origin = translator.origin
        if origin in self._refused:
            raise SearchProcessLost(self._refused[origin])
        request = ("search", origin, sources, options, output_attentions, top_k)
        with self._locked(self.lock_wait_s):
            self._ensure_started()
            # after the start: a new child has loaded nothing, and loading counts against the start-up timeout
            timeout = self.timeout_s + (0 if origin in self._loaded else self.start_timeout_s)
            results = self._ask(request, timeout)
            if not isinstance(results, list) or len(results) != len(sources) or \
                    not all(isinstance(r, Translation) for r in results):
                self._fail()
                got = len(results) if isinstance(results, list) else type(results).__name__
                raise SearchProcessLost(f"the search process answered {got} for {len(sources)} sources")
            self._loaded.add(origin)
        return results

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the child (it finishes the search it runs, within `timeout_s`); no new child starts until
        `start`. Never waits longer than `timeout_s` for a preload or a search that holds the lock: it kills
        the child they wait on, which ends their wait."""
        self._closed = True
        if self._lock.acquire(timeout=timeout_s):
            try:
                self._stop(timeout_s)
            finally:
                self._lock.release()
            return
        process = self._process
        if process is not None and process.poll() is None:
            log.warning("search process %d busy at close: killed", process.pid)
            process.kill()
            try:
                process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                log.error("search process %d did not end within %.0f s of its kill", process.pid, timeout_s)

    @contextmanager
    def _locked(self, timeout_s: float) -> Iterator[None]:
        """The lock, waited for at most `timeout_s`: past it, `SearchProcessLost` (not a failure of the child)."""
        if not self._lock.acquire(timeout=timeout_s):
            raise SearchProcessLost(f"the search process was busy (loading or starting) for {timeout_s:g} s")
        try:
            yield
        finally:
            self._lock.release()

    def _fail(self) -> None:
        """Count a failure; from `MAX_FAILURES` in a row on, the next start waits for a backoff."""
        self._failures += 1
        if self._failures >= MAX_FAILURES:
            delay = min(self.backoff_s * 2 ** min(self._failures - MAX_FAILURES, 30), self.max_backoff_s)
            self._retry_at = time.monotonic() + delay
            log.error("search process: %d failures in a row; searching in the app, trying again in %.0f s",
                      self._failures, delay)

    def _ensure_started(self) -> None:
        if self._process is not None and self._process.poll() is None:
            return
        if self._closed:
            raise SearchProcessLost("the search process is closed")
        if not self.available:
            raise SearchProcessLost(f"the search process failed {self._failures} times in a row; searching in "
                                    f"the app, trying again in {self._retry_at - time.monotonic():.0f} s")
        self._stop(0)
        self._loaded.clear()
        fds: list[int] = []
        try:
            fds += os.pipe()  # to the child: (its end, ours)
            fds += os.pipe()  # from the child: (ours, its end)
            kernels = json.dumps([[k, n, kernel] for (k, n), kernel in quantize.process_int8_kernels().items()])
            command = [self.python, "-m", "transformer.serving.search_process", str(fds[0]), str(fds[3]), str(self.threads),
                       kernels]  # the int8 kernels the app measured fastest (`serving.kernels`): the child's too
            root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # holds transformer/
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
            process = subprocess.Popen(command, pass_fds=(fds[0], fds[3]), env=env, close_fds=True)
        except (OSError, subprocess.SubprocessError) as err:  # ENOMEM, EMFILE, EAGAIN, no such python
            for fd in fds:
                os.close(fd)
            self._fail()
            log.error("could not start the search process (%s: %s); %d failure(s) in a row", type(err).__name__,
                      err, self._failures)
            raise SearchProcessLost(f"could not start the search process: {err}") from err
        os.close(fds[0])
        os.close(fds[3])
        self._process = process
        self._send, self._receive = Connection(fds[1], readable=False), Connection(fds[2], writable=False)
        log.info("search process %d started (%d torch threads)", process.pid, self.threads)

    def _ask(self, request: tuple, timeout_s: float) -> Any:
        """Send `request`, wait at most `timeout_s` for the answer; the child's own exception raised as it is."""
        self._ensure_started()
        try:
            deadline = time.monotonic() + timeout_s
            self._post(ForkingPickler.dumps(request), timeout_s)
            data = self._read(deadline, timeout_s)
        except (OSError, EOFError, TimeoutError) as err:  # died (broken pipe, closed pipe) or hung
            self._fail()
            code = self._process.poll() if self._process is not None else None
            self._stop(0)
            log.error("search process lost (%s; exit code %s); %d failure(s) in a row", err, code, self._failures)
            raise SearchProcessLost(str(err)) from err
        try:
            status, value = pickle.loads(data)
        except Exception as err:  # the whole message was read: the child goes on, this search runs here
            self._fail()
            log.error("search process: its answer cannot be unpickled here (%s: %s)", type(err).__name__, err)
            raise SearchProcessLost(f"the answer could not be read: {type(err).__name__}: {err}") from err
        if status == "unavailable":  # the child runs but will not load this checkpoint: its searches stay here
            self._refused[request[1]] = value
            log.error("search process: %s; its searches run in the app", value)
            raise SearchProcessLost(value)
        if status == "unpicklable":  # the search ran, but its answer cannot travel: it runs here
            self._fail()
            log.error("search process: %s", value)
            raise SearchProcessLost(value)
        self._failures = 0
        if status == "error":
            raise value
        return value

    def _read(self, deadline: float, timeout_s: float) -> bytes:
        """One message from the child (`Connection`'s framing: a 4-byte size, or -1 and an 8-byte one), all of it
        by `deadline` (monotonic): a child that stops halfway through its answer is as lost as a silent one."""
        fd = self._receive.fileno()
        poller = select.poll()  # not select.select: no limit on the descriptor's number
        poller.register(fd, select.POLLIN)

        def exactly(n: int) -> bytes:
            chunks, left = [], n
            while left:
                if not poller.poll(max(0, int(1000 * (deadline - time.monotonic())) + 1)):
                    raise TimeoutError(f"no answer in {timeout_s:.0f} s")
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    raise EOFError("the search process closed its pipe")
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks)

        size, = struct.unpack("!i", exactly(4))
        if size == -1:
            size, = struct.unpack("!Q", exactly(8))
        return exactly(size)

    def _post(self, data: bytes | memoryview, timeout_s: float) -> None:
        """Send `data` as one message. A large one is written by a helper thread, waited for at most
        `timeout_s`: a child that does not read would block the write for good."""
        if len(data) <= _PIPE_CHUNK:
            self._send.send_bytes(data)
            return
        failed: list[BaseException] = []

        def write() -> None:
            try:
                self._send.send_bytes(data)
            except BaseException as err:  # reported to the waiting thread
                failed.append(err)

        writer = threading.Thread(target=write, name="search-process-send", daemon=True)
        writer.start()
        writer.join(timeout_s)
        if writer.is_alive():
            if self._process is not None:
                self._process.kill()  # the write then fails with a broken pipe, and the writer ends
            raise TimeoutError(f"the request was not read in {timeout_s:.0f} s")
        if failed:
            raise failed[0]

    def _stop(self, timeout_s: float) -> None:
        process, self._process = self._process, None
        for conn in (self._send, self._receive):
            if conn is not None:
                conn.close()
        self._send = self._receive = None
        if process is None or process.poll() is not None:
            return
        try:
            process.wait(timeout_s)  # the closed pipe ends its loop
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# ----------------------------------------------------------------------------- the child's side


class CheckpointChanged(RuntimeError):
    """The checkpoint's files are not the ones the app loaded (`hub.checkpoint_digest`)."""


def load_origin(origin: Origin) -> Translator:
    """The translator `origin` names, loaded here only if its files are still the ones the app loaded."""
    directory, precision, digest = origin
    if checkpoint_digest(directory) != digest:
        raise CheckpointChanged(f"{directory} changed on disk since the app loaded it")
    translator = load_pretrained(directory, quantize=precision)
    if translator.origin != tuple(origin):  # rewritten while this process loaded it
        raise CheckpointChanged(f"{directory} changed on disk since the app loaded it")
    return translator


def serve(receive: Connection, send: Connection) -> None:
    """The child's loop: answer ("load", origin) and ("search", origin, ...) requests until the pipe closes."""
    translators: dict[Origin, Translator] = {}

    def translator(origin: Origin) -> Translator:
        if origin not in translators:
            started = time.perf_counter()
            translators[origin] = load_origin(origin)
            log.info("search process loaded %s (%s) in %.1f s", origin[0], origin[1] or "fp32",
                     time.perf_counter() - started)
        return translators[origin]

    while True:
        try:
            request = receive.recv()
        except EOFError:  # the parent closed the pipe or ended
            return
        try:
            model = translator(request[1])
        except Exception as err:  # the checkpoint changed or went since the app loaded it: not the request's fault
            log.exception("search process could not load %s", request[1][0])
            send.send(("unavailable", f"could not load {request[1][0]}: {type(err).__name__}: {err}"))
            continue
        try:
            if request[0] == "load":
                answer: tuple = ("ok", None)
            else:
                _, _, sources, options, attention, top_k = request
                answer = ("ok", model.translate_sources(sources, options, output_attentions=attention, top_k=top_k))
        except Exception as err:  # the search's own error goes back to the caller
            answer = ("error", err)
        try:
            data = ForkingPickler.dumps(answer)  # as `Connection.send` pickles
        except Exception as err:  # pickled whole before a byte is written: the pipe stays in step
            if answer[0] == "ok":  # a good answer that cannot travel: the parent searches itself
                data = pickle.dumps(("unpicklable", f"the answer could not be pickled: {type(err).__name__}: {err}"))
            else:  # an exception that does not pickle: its text
                data = pickle.dumps(("error", RuntimeError(f"{type(answer[1]).__name__}: {answer[1]} ({err})")))
        send.send_bytes(data)


def kernels_from_argv(argv: list[str]) -> quantize.Int8Kernels:
    """The int8 kernels the parent put on the child's command line (after the pipes and the threads)."""
    return {(k, n): kernel for k, n, kernel in json.loads(argv[3] if len(argv) > 3 else "[]")}


def main(argv: list[str]) -> None:
    receive_fd, send_fd, threads = (int(a) for a in argv[:3])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    import torch

    from .. import heap

    torch.set_num_threads(threads)  # the parent's: float32 sums round by how they are split over threads
    quantize.use_int8_kernels(kernels_from_argv(argv))
    # A search's blocks are the same every step of every round: kept in the heap, not mapped afresh (docs/serving.md)
    heap.keep()
    serve(Connection(receive_fd, writable=False), Connection(send_fd, readable=False))


if __name__ == "__main__":
    main(sys.argv[1:])
