"""A translation of one's own, as the "Your translation" box shows it: the text checked (`check_yours`) and scored
by the model token by token (`yours_value`, from `Translator.force`): log-probabilities, the model's own top
alternatives at each token, and the total beside the model's own translation. inside.js draws the value.

No gradio and no torch here: a `Translation` in, a JSON-ready dict out; errors are ValueErrors with a plain message.
"""
from __future__ import annotations

import math
from typing import Any

from transformer.translator import Translation

from transformer.explorer.core.limits import MAX_INPUT_CHARS
from transformer.explorer.core.view_state import CONTROL_CHARS, INVISIBLE_CHARS, MARKUP
from transformer.explorer.maps.token_labels import token_text

__all__ = ["check_yours", "yours_value"]


def check_yours(text: Any, limit: int = MAX_INPUT_CHARS) -> str:
    """A translation typed in the box, as a string to score; ValueError saying what is wrong with it."""
    text = "" if text is None else str(text)
    if not text.strip():
        raise ValueError("Type your translation in the box (or start from the model's), then press Score.")
    if len(text) > limit:
        raise ValueError(f"Your translation is {len(text)} characters long; the box takes at most {limit}.")
    if MARKUP.search(text):
        raise ValueError("Your translation looks like HTML or script (it has a “<” tag or “javascript:”). "
                         "Type it as plain words.")
    if CONTROL_CHARS.search(text) or INVISIBLE_CHARS.search(text):
        raise ValueError("Your translation holds control or invisible characters (such as zero-width spaces or "
                         "direction marks). Type it again as plain text.")
    return text


def yours_value(forced: Translation, own: tuple[str, float] | None = None) -> dict[str, Any]:
    """A translation scored token by token (`Translator.force`): each token with its probability, its
    log-probability and the model's own top alternatives there; the total, and `own` (the model's own
    translation and its log-probability scored the same way) beside it."""
    steps = forced.steps
    tokens = []
    for step in steps:
        tokens.append({
            "text": token_text(step.token, forced.entities), "p": float(step.probability),
            "log_p": math.log(max(step.probability, 1e-45)),
            "top": [[token_text(t, forced.entities), float(p)] for t, p in step.top_k],
            "top1": bool(step.top_k and step.top_k[0][0] == step.token),
        })
    n = max(len(tokens), 1)
    value = {"text": forced.text, "source": forced.model_input, "tokens": tokens, "log_prob": forced.log_prob,
             "mean_log_prob": forced.log_prob / n, "n_tokens": len(tokens),
             "n_top1": sum(t["top1"] for t in tokens), "own": None, "heads_off": forced.head_mask is not None}
    if own is not None:
        value["own"] = {"text": own[0], "log_prob": float(own[1])}
    return value
