"""`python app.py` on a slow, busy machine: it starts, passes gradio's check of its own page, and stays up.

Gradio's launch fetches the app's own page once with a short limit and exits when that fetch times out, although
the page answers; start-up work that can wait (the search process's model load) runs after that check.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from app_server import running_app  # noqa: E402

pytestmark = pytest.mark.slow

SERVING = "serving at http"  # what `launch.serve` logs once gradio's launch, and its check, returned
PRELOADED = "search process loaded"  # what the search process logs once it has loaded a checkpoint


def busy_cores(per_core: int) -> list[subprocess.Popen]:
    """`per_core` spinning processes for every core."""
    spin = [sys.executable, "-c", "while True: pass"]
    return [subprocess.Popen(spin) for _ in range(per_core * (os.cpu_count() or 1))]


TOY = Path(__file__).resolve().parents[1] / "checkpoints" / "toy-reverse"


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
