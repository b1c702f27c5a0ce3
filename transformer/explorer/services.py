"""What the explorer app's events compute, as plain values; `app.py` puts them into its components.

`Explorer` is the app's server side put together: the models it serves (`models.ModelService`: the registry,
the batcher every model call goes through, the results store every result is kept in) and one service per tab,
each with one job: translate and another candidate (`translation`), heads off and norms (`reruns`), the tree and
compare tabs (`panels/tree/service.py`, `panels/compare/service.py`), downloads (`exports`), a link's page load (`restore`). Start-up and configuration
(threads, heap, export folder, serving path, search process) are `startup.start_explorer`'s.
No gradio here: errors meant for the user are `checks.user_error`s.
"""
from __future__ import annotations

from pathlib import Path

from transformer.serving.batching import Batcher

from transformer.explorer.web.sessions import SessionSlots
from transformer.explorer.core.exports import ExportService
from transformer.explorer.core.models import ModelService
from transformer.explorer.core.model_registry import ModelRegistry
from transformer.explorer.panels.attention.reruns import RerunService
from transformer.explorer.core.restore import RestoreService
from transformer.explorer.panels.registry import tab_ids
from transformer.explorer.core.results import ResultStore
from transformer.explorer.panels.compare.service import CompareService
from transformer.explorer.panels.tree.service import TreeService
from transformer.explorer.core.translation import TranslateService


class Explorer:
    """The services of the app's events over one `ModelService`; `slots` caps the model requests one session
    runs at once. The default model is loaded as it is built (`ModelService`); exports go to `export_dir`."""

    def __init__(self, registry: ModelRegistry, export_dir: Path, strict: bool = False,
                 batcher: Batcher | None = None, results: ResultStore | None = None):
        self.models = ModelService(registry, batcher or Batcher(), results or ResultStore(), strict)
        self.slots = SessionSlots()
        self.translation = TranslateService(self.models)
        self.reruns = RerunService(self.models, self.translation)
        self.tree = TreeService(self.models)
        self.compare = CompareService(self.models, self.translation)
        self.exports = ExportService(self.models, export_dir)
        self.restore = RestoreService(self.models, tab_ids())
