"""What a request may ask, checked before any model work: its options, its text's work, the heads it switches
off, how many requests one session may have running at once, and the page's event data read safely. One of the
few modules of `transformer/` that import gradio (`.importlinter` names them): every error meant for the user is a
`gr.Error` with a plain message, raised here or, through `user_error`, by modules that never import gradio.
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import gradio as gr
import numpy as np

from transformer.translator import Translator

from transformer.explorer.core import limits
from transformer.explorer.core.view_state import KINDS


def user_error(message: str, title: str = "Error") -> gr.Error:
    """An error the page shows to the user as it is (a plain message, no traceback); raise it."""
    return gr.Error(message, title=title, print_exception=False)


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


def check_options(method: Any, beam_size: Any) -> int | None:
    """The beam width as an int (None, left out: the model's own), or gr.Error with what is allowed."""
    if method not in ("greedy", "beam"):
        raise gr.Error(f"method must be 'greedy' or 'beam', got {quoted(method)}.", title="Invalid option",
                       print_exception=False)
    if beam_size is None:
        return None
    if isinstance(beam_size, bool) or not isinstance(beam_size, (int, float)) or not math.isfinite(beam_size) \
            or beam_size != int(beam_size) or not 1 <= beam_size <= limits.UI_MAX_BEAM:
        raise gr.Error(f"beam_size must be a whole number from 1 to {limits.UI_MAX_BEAM}, got {quoted(beam_size)}.",
                       title="Invalid beam width", print_exception=False)
    return int(beam_size)


def check_length_penalty(value: Any) -> float | None:
    """The length penalty as a float (None, left out: the model's own), or gr.Error with what is allowed."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= limits.API_MAX_LENGTH_PENALTY:
        most = limits.API_MAX_LENGTH_PENALTY
        raise gr.Error(f"length_penalty must be a number from 0 to {most:g}, got {quoted(value)}.",
                       title="Invalid length penalty", print_exception=False)
    return float(value)


def quoted(value: Any, limit: int = 40) -> str:
    """A value as an error message may quote it: its repr, cut to `limit` characters, control characters and
    lone surrogates escaped (repr does), so a message never carries what it complains about."""
    text = ascii(value) if isinstance(value, str) else repr(value) if isinstance(value, (int, float)) else \
        f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def budgeted_beam(tr: Translator, text: str, method: str, beam: int) -> tuple[int, str]:
    """(beam width, notice): the beam width cut so that source tokens × beam width stays within
    `limits.MAX_BEAM_TOKENS`, so that one long request at a wide beam cannot hold the model for seconds while every
    other user waits; the notice says so ("" when nothing was cut). Greedy is never cut."""
    if method != "beam":
        return beam, ""
    try:
        tokens = len(tr.source(text).ids)
    except ValueError as err:
        raise gr.Error(str(err), title="Cannot translate this input", print_exception=False) from None
    allowed = max(1, limits.MAX_BEAM_TOKENS // tokens)
    if beam <= allowed:
        return beam, ""
    return allowed, (f"The beam width was cut from {beam} to {allowed} for this input of {tokens} tokens: one request "
                     f"may search at most {limits.MAX_BEAM_TOKENS} token-beams (tokens × beam width), so that it does "
                     "not hold up other people's translations.")


def head_mask_of(off: Sequence[Sequence[Any]], tr: Translator) -> dict[str, np.ndarray]:
    """(kind, layer, head) triples -> {kind: (L, H) of 0/1} for `translate(..., head_mask=...)`."""
    cfg = tr.model.config
    layers = {"encoder": cfg.n_encoder_layers, "decoder": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}
    masks = {kind: np.ones((n, cfg.n_heads), dtype=np.float32) for kind, n in layers.items()}
    for kind, layer, head in off:
        if kind not in masks or not (0 <= layer < layers[kind] and 0 <= head < cfg.n_heads):
            raise gr.Error(f"No head {kind} layer {layer + 1} head {head + 1} in this model.",
                           title="Cannot switch that head off", print_exception=False)
        masks[kind][layer, head] = 0.0
    return masks


def read_off(value: Any) -> tuple[tuple[str, int, int], ...]:
    """The page's list of [kind, layer, head] (0-based) as sorted triples; gr.Error when malformed."""
    if not isinstance(value, (list, tuple)) or len(value) > 1024 or not all(
            isinstance(h, (list, tuple)) and len(h) == 3 and h[0] in KINDS
            and all(isinstance(i, int) and not isinstance(i, bool) for i in h[1:]) for h in value):
        raise gr.Error("The heads to switch off must be a list of [kind, layer, head].", print_exception=False)
    return tuple(sorted({(k, int(layer), int(head)) for k, layer, head in value},
                        key=lambda h: (KINDS.index(h[0]), h[1], h[2])))
