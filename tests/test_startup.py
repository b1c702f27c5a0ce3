"""`python app.py` on a slow, busy machine: it starts, passes gradio's check of its own page, and stays up.

Gradio's launch fetches the app's own page once with a short limit and exits when that fetch times out, although
the page answers; start-up work that can wait (the search process's model load) runs after that check. And how
many threads the model gets (`startup.torch_threads`).
"""
from __future__ import annotations

import contextlib
import http.server
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from gradio import networking

from transformer.explorer.web import launch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from app_server import running_app  # noqa: E402

SERVING = "serving at http"  # what `launch.serve` logs once gradio's launch, and its check, returned
PRELOADED = "search process loaded"  # what the search process logs once it has loaded a checkpoint


def busy_cores(per_core: int) -> list[subprocess.Popen]:
    """`per_core` spinning processes for every core."""
    spin = [sys.executable, "-c", "while True: pass"]
    return [subprocess.Popen(spin) for _ in range(per_core * (os.cpu_count() or 1))]


TOY = Path(__file__).resolve().parents[1] / "checkpoints" / "toy-reverse"


@pytest.mark.slow  # a running app in its own process, every core busy
@pytest.mark.timeout(600)
def test_the_app_starts_and_stays_up_while_every_core_is_busy():
    """A checkpoint that loads in a moment (start-up is then mostly importing gradio and torch, the part every
    checkpoint shares), its preload in the search process included, with every core taken by a spinning process:
    the app passes gradio's check, stays alive while the search process loads the model, and answers the page and
    its API afterwards."""
    spinners = busy_cores(per_core=1)
    try:
        with running_app({"TRANSFORMER_CHECKPOINT": str(TOY)}, timeout_s=300) as server:
            deadline = time.monotonic() + 300
            # gradio's launch returned (its check passed), then the search process loaded the model
            for line in (SERVING, PRELOADED):
                while line not in server.log_path.read_text(encoding="utf-8", errors="replace"):
                    assert server.process.poll() is None, f"app.py exited:\n{server.log_tail()}"
                    assert time.monotonic() < deadline, f"no {line!r} in the log:\n{server.log_tail()}"
                    time.sleep(0.2)
            assert server.process.poll() is None, server.log_tail()
            for route in ("", "gradio_api/info"):
                with urllib.request.urlopen(server.url + route, timeout=120) as response:
                    assert response.status == 200, route
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


@contextlib.contextmanager
def page_answering_after(delay_s: float) -> Iterator[str]:
    """A local page whose HEAD answers 200 only after `delay_s` seconds, as a busy app renders its first page."""
    class Slow(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):  # noqa: N802 (http.server's name)
            time.sleep(delay_s)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow  # a page that answers after seconds
def test_launch_waits_for_a_page_slower_than_gradios_own_check():
    original = networking.url_ok
    with page_answering_after(3.5) as url:
        assert not networking.url_ok(url)  # gradio's own check gives up: the app exited at start
        with launch.patient_self_check(limit_s=20):
            assert networking.url_ok(url)  # what launch asks inside `serve`
    assert networking.url_ok is original
    with page_answering_after(1.5) as url:
        assert not launch.page_answers(url, limit_s=0.5)  # and it still gives up, at its own limit


def test_the_model_gets_every_core_but_one_unless_told(monkeypatch):
    """The model's torch threads (`startup.torch_threads`): every core but one, or TRANSFORMER_THREADS when it is a
    positive whole number."""
    from transformer.explorer.startup import torch_threads

    monkeypatch.delenv("TRANSFORMER_THREADS", raising=False)
    assert [torch_threads(cores) for cores in (1, 2, 4, 16)] == [1, 1, 3, 15]
    assert torch_threads() == max(1, (os.cpu_count() or 1) - 1)
    monkeypatch.setenv("TRANSFORMER_THREADS", "2")
    assert torch_threads(2) == 2
    for bad in ("0", "-1", "two", ""):
        monkeypatch.setenv("TRANSFORMER_THREADS", bad)
        assert torch_threads(4) == 3
