"""What a request may ask, checked before any model work: its text's work (its options are the core's to check,
`Translator.decoding_options`), the heads it switches off, how many requests one session may have running at once,
and the page's event data read safely. One of the few modules of `transformer/` that import gradio
(`.importlinter` names them): every error meant for the user is a `gr.Error` with a plain message, made by
`user_error` (a ValueError becomes one in `user_errors`), also for the modules that never import gradio.
"""
from __future__ import annotations

import json

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import gradio as gr
import numpy as np

from transformer.translator import DecodingOptions, Source, Translator

from transformer.explorer.core import limits
from transformer.explorer.core.view_state import KINDS


def user_error(message: str, title: str = "Error") -> gr.Error:
    """An error the page shows to the user as it is (a plain message, no traceback); raise it."""
    return gr.Error(message, title=title, print_exception=False)


@contextmanager
def user_errors(title: str) -> Iterator[None]:
    """The body's ValueError (the core's and the explorer's checks say what is wrong in words a user can read) as
    the `user_error` the page shows, under `title`."""
    try:
        yield
    except ValueError as err:
        raise user_error(str(err), title) from None


def view_data(view_json: str | None) -> dict[str, Any]:
    """The page's view state (kind, layer, head, rows) sent as JSON by the browser; {} when unreadable."""
    if view_json is not None and not isinstance(view_json, str) or len(view_json or "") > limits.MAX_VIEW_CHARS:
        return {}
    try:
        data = json.loads(view_json or "{}")
    except (TypeError, ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
        return {}
    return data if isinstance(data, dict) else {}


def event_data(evt: Any) -> dict[str, Any]:
    """What a panel's 'pick' event carries (a gradio EventData's data); {} when it is not a dict."""
    data = getattr(evt, "_data", None)
    return data if isinstance(data, dict) else {}


def budgeted_beam(source: Source, options: DecodingOptions) -> tuple[DecodingOptions, str]:
    """(options, notice): the beam width cut so that the prepared `source`'s tokens × beam width stays within
    `limits.MAX_BEAM_TOKENS`, so that one long request at a wide beam cannot hold the model for seconds while every
    other user waits; the notice says so ("" when nothing was cut). Greedy is never cut."""
    tokens, beam = len(source.ids), options.beam_size
    allowed = max(1, limits.MAX_BEAM_TOKENS // tokens)
    if options.method != "beam" or beam <= allowed:
        return options, ""
    return replace(options, beam_size=allowed), (
        f"The beam width was cut from {beam} to {allowed} for this input of {tokens} tokens: one request may search "
        f"at most {limits.MAX_BEAM_TOKENS} token-beams (tokens × beam width), so that it does not hold up other "
        "people's translations.")


def head_mask_of(off: Sequence[Sequence[Any]], tr: Translator) -> dict[str, np.ndarray]:
    """(kind, layer, head) triples -> {kind: (L, H) of 0/1} for `translate(..., head_mask=...)`."""
    cfg = tr.model.config
    layers = {"encoder": cfg.n_encoder_layers, "decoder": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}
    masks = {kind: np.ones((n, cfg.n_heads), dtype=np.float32) for kind, n in layers.items()}
    for kind, layer, head in off:
        if kind not in masks or not (0 <= layer < layers[kind] and 0 <= head < cfg.n_heads):
            raise user_error(f"No head {kind} layer {layer + 1} head {head + 1} in this model.",
                             "Cannot switch that head off")
        masks[kind][layer, head] = 0.0
    return masks


def read_off(value: Any) -> tuple[tuple[str, int, int], ...]:
    """The page's list of [kind, layer, head] (0-based) as sorted triples; gr.Error when malformed."""
    if not isinstance(value, (list, tuple)) or len(value) > 1024 or not all(
            isinstance(h, (list, tuple)) and len(h) == 3 and h[0] in KINDS
            and all(isinstance(i, int) and not isinstance(i, bool) for i in h[1:]) for h in value):
        raise user_error("The heads to switch off must be a list of [kind, layer, head].")
    return tuple(sorted({(k, int(layer), int(head)) for k, layer, head in value},
                        key=lambda h: (KINDS.index(h[0]), h[1], h[2])))
