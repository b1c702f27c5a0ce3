"""`python app.py` with the class quiz's routes mounted: the real app (`app.create_app()`, served by
`launch.serve` as `app.main` does), plus `/class` (transformer/explorer/panels/quiz/) once gradio has launched.

What bench/class_quiz.py starts, until the teacher's panel mounts the routes in app.py itself. The class database
is TRANSFORMER_CLASS_DB (else ~/.cache/transformer-explorer/classes.sqlite3); GRADIO_SERVER_NAME/PORT as app.py.

    python bench/class_quiz_app.py
"""
from __future__ import annotations

import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import app
from transformer.explorer import launch
from transformer.explorer.panels.quiz.model_quiz import QuizMaker
from transformer.explorer.panels.quiz.routes import mount_class_routes
from transformer.explorer.panels.quiz.store import ClassStore, default_path


def main() -> None:
    """Start the app, then serve it with the class routes until stopped."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    explorer_app = app.create_app()
    models = explorer_app.explorer.models
    label = models.default_model

    def translate(text: str):
        """The quiz's translation: through the batcher, in turn with every other model request."""
        return models.batcher.translate(models.translator(label), text, method="beam")

    maker = QuizMaker(translate, models.registry.directory(label), language=models.reads(label) or "en")
    store = ClassStore(default_path())

    def when_up() -> None:
        mount_class_routes(explorer_app.demo, store, maker)
        models.preload()

    launch.serve(explorer_app.demo, when_up=when_up)


if __name__ == "__main__":
    main()
