"""The explorer app's server side: sessions and results, the attention payload, the shareable view
state, the page and its static files, the Plotly figures, and the Space deploy.

Builds on the model core (`transformer.*`); never imports training. `app.py` at the repository root
holds the Gradio layout and wiring, `callbacks.py` (`Explorer`: one service per tab) what its events compute,
`startup.py` the start-up; here only `checks.py`, `launch.py` and the panel builders import gradio.
"""
