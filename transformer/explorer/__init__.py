"""The explorer app's server side and browser code, in layers (ARCHITECTURE.md maps them): `startup.py` (start-up)
and `deploy.py` (the Space upload) over `services.py` (`Explorer`: one service per job) over `panels/` (one folder
per tab, declared in `panels/registry.py`) over `web/` (the page's plumbing) over `core/` (shared state and
services) over `maps/` (pure map computations); `static/` holds the ES modules every panel shares.

Builds on the model core (`transformer.*`); never imports training. `app.py` at the repository root composes the
page and wires its events; here only `core/checks.py`, `web/` (launch, sessions, wiring) and each panel's
`panel.py` import gradio.
"""
