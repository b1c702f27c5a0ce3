"""A page load: the checkpoints on offer now, and the view a shared link carries, validated against each model's
layers and heads (`view_state.ViewState.from_query`)."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from transformer.hub import read_config

from transformer.explorer.core.models import ModelInfo, ModelService
from transformer.explorer.core.view_state import ViewState


@dataclass
class Restored:
    """A page load: the models on offer, the view to show (a shared link's, validated) and what the
    link carried (`given`); `client` is the JSON the page restores its own view from."""

    labels: list[str]
    view: ViewState
    note: str
    client: str
    params: Mapping[str, Any]
    model: ModelInfo

    def given(self, *keys: str) -> bool:
        """Whether the link sets one of these parameters (the rest stays as the user may have set it)."""
        return any(k in self.params for k in keys)


class RestoreService:
    """A link's query read into the view a page load shows; no model work (a page load never waits for it)."""

    def __init__(self, models: ModelService, tabs: Sequence[str]):
        self.models, self.tabs = models, tuple(tabs)

    def model_sizes(self, label: str) -> tuple[int, int, dict[str, int]] | None:
        """(layers, heads, layers per kind) of a model, for validating a link's layer, head and heads switched
        off: the loaded model's, else its config.json's (a page load never waits for a model to load); None
        if neither can be read."""
        registry = self.models.registry
        try:
            if registry.is_loaded(label):
                cfg = registry.get(label).model.config
            else:
                directory = registry.directory(label)
                if directory is None:
                    return None
                cfg = read_config(directory)
        except Exception:
            return None
        kinds = {"encoder": cfg.n_encoder_layers, "decoder": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}
        return max(cfg.n_encoder_layers, cfg.n_decoder_layers), cfg.n_heads, kinds

    def restore(self, model: str | None, params: Mapping[str, Any]) -> Restored:
        """Page load: the checkpoints present now, and the view of a link's query `params` (validated)."""
        registry = self.models.registry
        labels = registry.labels()
        if model and model not in labels:
            labels = [model] + labels
        view, notes = ViewState.from_query(params, labels, model_sizes=self.model_sizes, default_model=model,
                                           default_length_penalty=self.models.default_length_penalty, tabs=self.tabs)
        # only a model loaded already: loading is model work, and a page load never waits for it (the link's
        # translation loads it, on the batcher's thread)
        tr = registry.get(view.model) if view.model and registry.is_loaded(view.model) else None
        client = json.dumps({"view": view.client(), "tab": view.tab, "translate": bool(view.text.strip()),
                             "yours": view.yours,
                             "known": {"lp": f"{view.length_penalty:g}", "compare": view.compare}})
        return Restored(labels, view, ViewState.notes_text(notes), client, params,
                        self.models.model_info(view.model, tr))
