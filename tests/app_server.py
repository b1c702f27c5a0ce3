"""Start `python app.py` in a subprocess on a free port and wait until it answers (tests and benches).

    with running_app({"TRANSFORMER_CHECKPOINT": "checkpoints/toy-reverse"}) as server:
        Client(server.url).predict("h e l l o", "greedy", 1, api_name="/translate")
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOY_CHECKPOINT = ROOT / "checkpoints" / "toy-reverse"
# The app on the shipped checkpoints (en-de first, the default of `python app.py`) with int8 search weights, the
# serving path the docs quote: one `shared_app` key for every test of the shipped models, so that a test process
# starts it once, whichever of them ask (each start loads the models and measures the serving path).
SHIPPED_ENV = {"TRANSFORMER_THREADS": "1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class AppServer:
    url: str
    process: subprocess.Popen
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_tail(self, n_chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-n_chars:]
        except OSError:
            return ""

    def log_size(self) -> int:
        """How many bytes the app has logged so far (`log_since` reads what comes after)."""
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def log_since(self, size: int) -> str:
        """What the app has logged after its first `size` bytes (a shared app's log holds earlier tests' lines)."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(size)
                return log.read().decode("utf-8", errors="replace")
        except OSError:
            return ""


@contextmanager
def running_app(env: dict[str, str] | None = None, timeout_s: float = 120.0,
                app_dir: Path = ROOT) -> Iterator[AppServer]:
    """`python app.py` (of `app_dir`, default this checkout) on 127.0.0.1:<free port> with `env` added;
    stopped (by its own pid) on exit."""
    port = free_port()
    full_env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port),
                "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1", **(env or {})}
    log_file = tempfile.NamedTemporaryFile(prefix="app-server-", suffix=".log", delete=False)
    app_dir = Path(app_dir).resolve()
    process = subprocess.Popen([sys.executable, str(app_dir / "app.py")], cwd=app_dir, env=full_env,
                               stdout=log_file, stderr=subprocess.STDOUT)
    server = AppServer(f"http://127.0.0.1:{port}/", process, Path(log_file.name))
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"app.py exited with {process.returncode}:\n{server.log_tail()}")
            try:
                with urllib.request.urlopen(server.url + "gradio_api/info", timeout=5) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"app.py did not answer within {timeout_s:.0f} s:\n{server.log_tail()}")
            time.sleep(0.25)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)
        log_file.close()
        Path(log_file.name).unlink(missing_ok=True)


_SHARED: dict[tuple, tuple[AppServer, object]] = {}


def shared_app(env: dict[str, str] | None = None, timeout_s: float = 120.0) -> AppServer:
    """One running app per `env` for the whole test process (every test module that asks), stopped at exit;
    paused between test modules (`pause_shared_apps`) and resumed here."""
    import atexit

    key = tuple(sorted((env or {}).items()))
    if key not in _SHARED or _SHARED[key][0].process.poll() is not None:
        context = running_app(env, timeout_s)
        server = context.__enter__()
        _SHARED[key] = (server, context)
        atexit.register(_stop_shared, server, context)
    server = _SHARED[key][0]
    server.process.send_signal(signal.SIGCONT)
    return server


def pause_shared_apps() -> None:
    """Stop (SIGSTOP) the shared apps until a test asks for one again (conftest.py does after every module): an
    idle gradio server polls its queue every millisecond, a share of a CPU that the running tests need."""
    for server, _ in _SHARED.values():
        if server.process.poll() is None:
            server.process.send_signal(signal.SIGSTOP)


def _stop_shared(server: AppServer, context) -> None:
    """At exit: resume a paused app so that it can handle its SIGTERM, then stop it."""
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGCONT)
    context.__exit__(None, None, None)


def app_env() -> tuple[dict[str, str], str]:
    """Environment for a test app: the real toy-reverse checkpoint when it exists, else a random tiny one.

    Returns (env, which) where `which` is "toy-reverse" or the path of the stand-in checkpoint.
    """
    env = {"TRANSFORMER_THREADS": "1"}
    if (TOY_CHECKPOINT / "model.safetensors").is_file():
        return {**env, "TRANSFORMER_CHECKPOINT": str(TOY_CHECKPOINT)}, "toy-reverse"
    path = Path(tempfile.gettempdir()) / "attention-app-test-ckpt"
    if not (path / "model.safetensors").is_file():
        make_standin_checkpoint(path)
    return {**env, "TRANSFORMER_CHECKPOINT": str(path)}, str(path)


def make_standin_checkpoint(path: Path) -> Path:
    """An untrained 2+2-layer toy-letter model (the app works; its outputs are noise)."""
    import torch

    sys.path.insert(0, str(ROOT))
    from transformer.config import ModelConfig
    from transformer.hub import PretrainedTransformer
    from transformer.tokenizer import TextTokenizer, toy_tokenizer

    torch.manual_seed(0)
    cfg = ModelConfig(src_vocab_size=30, tgt_vocab_size=30, d_model=32, n_heads=4, n_encoder_layers=2,
                      n_decoder_layers=2, d_ff=64, dropout=0.0, max_len=64)
    model = PretrainedTransformer(cfg)
    model.tokenizer = TextTokenizer(toy_tokenizer(26))
    model.save_pretrained(str(path))
    return path


_APP: list = []  # the one app built in this test process


def import_app(env: dict[str, str]):
    """The app (`app.create_app()`: an `ExplorerApp`) with `env` set (the test checkpoint as default) and the test
    session's torch thread count kept (start-up sets its own); the environment is restored afterwards. One app
    per test process, built by the first caller, as one import of the module was: each start-up starts a search
    process."""
    import importlib

    import torch

    if _APP:
        return _APP[0]
    saved = {k: os.environ.get(k) for k in env}
    threads = torch.get_num_threads()
    os.environ.update(env)
    try:
        _APP.append(importlib.import_module("app").create_app())
        return _APP[0]
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        torch.set_num_threads(threads)


# ----------------------------------------------------------------------------- any event, as the page sends it


def endpoints(url: str) -> dict[str, int]:
    """The app's events by name (gradio names each after its handler: "on_restore", "on_compare", ...) -> the
    index the page sends them by. gradio_client calls only the public ones; the page calls every one this way."""
    import json

    with urllib.request.urlopen(url + "config", timeout=30) as response:
        config = json.load(response)
    return {d["api_name"]: d["id"] for d in config["dependencies"] if d.get("api_name")}


class QueueSession:
    """One browser session (`session_hash`) sending events the way the page does: POST queue/join, answers read
    from the session's one event stream (gradio keeps one stream per session; one reader thread here hands each
    answer to its caller, so a session can have several events in flight)."""

    def __init__(self, url: str, session_hash: str | None = None):
        import threading
        import uuid

        self.url, self.session_hash = url, session_hash or str(uuid.uuid4())
        self._answers: dict[str, dict] = {}
        self._pending: set[str] = set()
        self._changed = threading.Condition()
        self._reader: threading.Thread | None = None

    def call(self, fn_index: int, data: list, event_data: object = None, timeout_s: float = 300.0) -> dict:
        """Gradio's last message for one event ({"success": ..., "output": {"data" | "error": ...}})."""
        import json
        import threading

        body = json.dumps({"data": data, "fn_index": fn_index, "session_hash": self.session_hash,
                           "event_data": event_data, "trigger_id": None}).encode()
        join = urllib.request.Request(self.url + "gradio_api/queue/join", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(join, timeout=timeout_s) as response:
            event_id = json.load(response)["event_id"]
        with self._changed:
            self._pending.add(event_id)
            if self._reader is None or not self._reader.is_alive():
                self._reader = threading.Thread(target=self._read, daemon=True)
                self._reader.start()
            if not self._changed.wait_for(lambda: event_id in self._answers, timeout_s):
                raise TimeoutError(f"event {fn_index} of session {self.session_hash}: no answer in {timeout_s} s")
            self._pending.discard(event_id)
            return self._answers.pop(event_id)

    def _read(self) -> None:
        """Read the session's stream while events are pending (it closes when none are; then it is reopened)."""
        import json

        while True:
            with self._changed:
                if not self._pending - set(self._answers):
                    self._reader = None
                    return
            try:
                stream = f"{self.url}gradio_api/queue/data?session_hash={self.session_hash}"
                with urllib.request.urlopen(stream, timeout=600) as response:
                    for raw in response:
                        line = raw.decode("utf-8").strip()
                        if not line.startswith("data:"):
                            continue
                        message = json.loads(line[5:])
                        if message.get("msg") == "process_completed":
                            with self._changed:
                                self._answers[message["event_id"]] = message
                                self._changed.notify_all()
                        elif message.get("msg") == "close_stream":
                            break
            except urllib.error.HTTPError:  # no event of this session is pending any more
                time.sleep(0.05)


def queue_call(url: str, fn_index: int, data: list, session_hash: str, event_data: object = None,
               timeout_s: float = 300.0) -> dict:
    """One event of a new `QueueSession` for `session_hash` (one call at a time per session)."""
    return QueueSession(url, session_hash).call(fn_index, data, event_data, timeout_s)
