"""How the app is launched (transformer/explorer/web/launch.py): host and port from the environment, no share
link, no extra served paths, a bounded queue.
"""
from __future__ import annotations

from transformer.explorer.web import launch


def test_launch_options_default_and_env(app, monkeypatch):
    monkeypatch.delenv("GRADIO_SERVER_NAME", raising=False)
    monkeypatch.delenv("GRADIO_SERVER_PORT", raising=False)
    opts = launch.launch_options()
    assert (opts["server_name"], opts["server_port"]) == ("127.0.0.1", 7860)
    assert opts["share"] is False and not opts["allowed_paths"]
    monkeypatch.setenv("GRADIO_SERVER_NAME", "0.0.0.0")
    monkeypatch.setenv("GRADIO_SERVER_PORT", "8123")
    opts = launch.launch_options()
    assert (opts["server_name"], opts["server_port"]) == ("0.0.0.0", 8123)
    assert app.demo._queue.max_size is not None  # bounded queue
