"""The explorer app's server side: sessions and results, the attention payload, the shareable view
state, the page and its static files, the Plotly figures, and the Space deploy.

Builds on the model core (`transformer.*`); never imports training. `app.py` at the repository root
holds the Gradio layout and wiring, `callbacks.py` what its events compute; here only `checks.py` imports
gradio (for `gr.Error`).
"""
