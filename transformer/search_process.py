"""The batcher's everyday searches in a process of their own, so that they never wait for the app's GIL.

    searcher = SearchProcess(threads=torch.get_num_threads())   # a child process: python -m transformer.search_process
    searcher.preload(tr)                                         # tr from load_pretrained: the child loads the same
    translations = searcher.search(tr, [tr.source("A dog runs.")], "beam", 5, 0.6)   # = tr.translate_sources(...)
    searcher.close()

Why. A search is thousands of small torch operations, each a little Python. In the app's process that Python
shares one GIL with Gradio's event loop and the threads that build the page's payloads: during a class's burst
a round of 29 beam-5 translations took 1.0 to 1.2 s there, against 0.5 s alone (2 EPYC cores, one torch
thread; `bench/load.py`). The child has a GIL of its own; the worker thread that waits for it holds none. Its
heap keeps freed blocks for the next step (`heap.keep`), where the app's gives them back (`main`).

Same bits. The child loads the checkpoint the way the parent did (`Translator.origin`: the directory and the
`quantize` of `load_pretrained`) and runs torch on the parent's number of threads (float32 sums round by how
they are split over threads), so a search gives there exactly what it gives in the parent
(`tests/test_search_process.py`).

Failures. A child that dies or stops answering is killed and `SearchProcessLost` raised (the batcher then
searches in its own process); the next search starts a new child. A checkpoint the child cannot load (changed
on disk since the app loaded it) raises `SearchProcessLost` too. After `MAX_FAILURES` failures in a row the
searcher gives up and says so (`available`). An error of the search itself (a ValueError) comes back as itself.
The child ends when its parent does: its pipe closes.
"""
from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

from .translator import Source, Translation, Translator, load_pretrained

log = logging.getLogger("transformer.search_process")  # the same name in the child, run as __main__

START_TIMEOUT_S = 120.0  # importing torch and loading a checkpoint, on a busy 2-core machine
SEARCH_TIMEOUT_S = 60.0  # one everyday round takes about 1 s; a child silent this long holds up all model work
MAX_FAILURES = 3  # lost children in a row before the searcher stops starting new ones


class SearchProcessLost(RuntimeError):
    """The child died, or did not answer in time; the search was not done."""


class SearchProcess:
    """A child process that runs `Translator.translate_sources` for translators made by `load_pretrained`
    (module doc). It answers one request at a time: a lock makes other callers wait."""

    def __init__(self, threads: int, timeout_s: float = SEARCH_TIMEOUT_S, python: str = sys.executable):
        self.threads, self.timeout_s, self.python = int(threads), timeout_s, python
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._send: Connection | None = None
        self._receive: Connection | None = None
        self._failures = 0
        self.searches = 0  # searches the children answered
        self._loaded: set[tuple[str, str | None]] = set()

    # ------------------------------------------------------------------------- the parent's side

    @property
    def available(self) -> bool:
        """False once `MAX_FAILURES` children in a row were lost: searches then stay in the parent."""
        return self._failures < MAX_FAILURES

    @property
    def pid(self) -> int | None:
        """The running child's process id, if one runs."""
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    def serves(self, translator: Translator) -> bool:
        """Whether `translator`'s searches can run in the child: it came from `load_pretrained`."""
        return self.available and getattr(translator, "origin", None) is not None

    def start(self) -> None:
        """Start the child now (it imports torch while the parent does other work); idempotent."""
        with self._lock:
            self._ensure_started()

    def preload(self, translator: Translator) -> None:
        """Load `translator`'s checkpoint in the child, so that its first search does not wait for it."""
        with self._lock:
            self._ask(("load", translator.origin), START_TIMEOUT_S)
            self._loaded.add(translator.origin)

    def preload_in_background(self, translator: Translator) -> threading.Thread:
        """`preload` on a thread of its own (it only waits on the pipe), so that the caller goes on; a search
        asked for meanwhile waits for it (the lock). A failure is logged: the search then loads, or runs in the
        parent."""
        def run() -> None:
            try:
                self.preload(translator)
            except Exception as err:
                log.error("the search process could not load %s: %s", translator.origin[0], err)

        thread = threading.Thread(target=run, name="search-process-preload", daemon=True)
        thread.start()
        return thread

    def search(self, translator: Translator, sources: list[Source], method: str, beam_size: int,
               length_penalty: float, return_attention: bool = True, top_k: int = 5) -> list[Translation]:
        """`translator.translate_sources(sources, method, beam_size, length_penalty, return_attention=...,
        top_k=...)`, run in the child: the same `Translation`s, bit for bit."""
        request = ("search", translator.origin, sources, method, beam_size, length_penalty, return_attention, top_k)
        with self._lock:
            # a checkpoint the child has not loaded yet: loading it counts against the start-up timeout
            timeout = self.timeout_s + (0 if translator.origin in self._loaded else START_TIMEOUT_S)
            results = self._ask(request, timeout)
            self._loaded.add(translator.origin)
            self.searches += 1
        return results

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the child (it finishes the search it runs)."""
        with self._lock:
            self._stop(timeout_s)

    def _ensure_started(self) -> None:
        if self._process is not None and self._process.poll() is None:
            return
        if not self.available:
            raise SearchProcessLost(f"the search process failed {MAX_FAILURES} times in a row; searching in the app")
        self._stop(0)
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        command = [self.python, "-m", "transformer.search_process", str(to_child_r), str(from_child_w),
                   str(self.threads)]
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
        try:
            self._process = subprocess.Popen(command, pass_fds=(to_child_r, from_child_w), env=env, close_fds=True)
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self._send, self._receive = Connection(to_child_w, readable=False), Connection(from_child_r, writable=False)
        self._loaded.clear()
        log.info("search process %d started (%d torch threads)", self._process.pid, self.threads)

    def _ask(self, request: tuple, timeout_s: float) -> Any:
        """Send `request`, wait for the answer; the child's own exception raised as it is."""
        self._ensure_started()
        try:
            self._send.send(request)
            if not self._receive.poll(timeout_s):
                raise TimeoutError(f"no answer in {timeout_s:.0f} s")
            status, value = self._receive.recv()
        except (OSError, EOFError, TimeoutError) as err:  # died (broken pipe, closed pipe) or hung
            self._failures += 1
            code = self._process.poll() if self._process is not None else None
            self._stop(0)
            log.error("search process lost (%s; exit code %s); %d failure(s) in a row", err, code, self._failures)
            raise SearchProcessLost(str(err)) from err
        if status == "unavailable":  # the child runs but cannot load the model: the search is done in the app
            self._failures += 1
            log.error("search process: %s; %d failure(s) in a row", value, self._failures)
            raise SearchProcessLost(value)
        self._failures = 0
        if status == "error":
            raise value
        return value

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


def serve(receive: Connection, send: Connection) -> None:
    """The child's loop: answer ("load", origin) and ("search", origin, ...) requests until the pipe closes."""
    translators: dict[tuple[str, str | None], Translator] = {}

    def translator(origin: tuple[str, str | None]) -> Translator:
        if origin not in translators:
            started = time.perf_counter()
            translators[origin] = load_pretrained(origin[0], quantize=origin[1])
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
                _, _, sources, method, beam_size, length_penalty, attention, top_k = request
                answer = ("ok", model.translate_sources(sources, method, beam_size, length_penalty,
                                                        return_attention=attention, top_k=top_k))
        except Exception as err:  # the search's own error goes back to the caller
            answer = ("error", err)
        try:
            send.send(answer)
        except (TypeError, AttributeError, pickle.PicklingError) as err:  # an exception that does not pickle
            send.send(("error", RuntimeError(f"{type(answer[1]).__name__}: {answer[1]} ({err})")))


def main(argv: list[str]) -> None:
    receive_fd, send_fd, threads = (int(a) for a in argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    import torch

    from . import heap

    torch.set_num_threads(threads)  # the parent's: float32 sums round by how they are split over threads
    # A search's blocks are the same few MB every step of every round, freed once its answer is sent: served from
    # the heaps and kept there, not mmap'ed afresh (a page fault for every page) as the app's are (`heap.give_back`).
    # Beam 5, 30 sentences, one EPYC thread: the search took 246-269 ms so, against 543-623 ms given back.
    heap.keep()
    serve(Connection(receive_fd, writable=False), Connection(send_fd, readable=False))


if __name__ == "__main__":
    main(sys.argv[1:])
