"""What the page shows, as one object, and the shareable URL that carries it.

`ViewState` lists every field of a view (text, compare text, model, decoding, tab, attention kind,
layer, head, toggles). `ViewState.from_query(params, models, model_sizes)` reads a page URL's query
parameters, validating each one: anything unknown, out of range or suspicious falls back to its
default and is named in the returned notes (the page shows them as text). `to_query()` is the
inverse; static/share.js builds the same parameters in the browser (`share.params`) to keep the
address bar in sync. Text from a URL only ever becomes a textbox value, never markup. The tree and compare
panels read their own kind, layer, head and rows from their event data the same way (`pick_view`).

No gradio, no torch: strings in, a dataclass and notes out.

URL parameters (all optional; layer and head are 1-based as on screen):
    text, compare   the source sentence and the "compare with" sentence
    yours           a translation of one's own, scored by the model (its maps shown); checked as text is
    model           a model label of the selector
    method          greedy | beam          beam   1..10         lp  0..2 (length penalty)
    tab             attention | tree | compare | training | heads | learn
    kind            encoder | decoder | cross | steps (the attention view)
    layer           1..n_layers             head   mean | 1..n_heads
    rows            input | predicted       hide, merge, present   0 | 1
    off             heads switched off, comma-separated KIND LAYER . HEAD with KIND e (encoder),
                    d (decoder) or c (cross), e.g. e1.3,c4.8
    measure         weight | norm (Kobayashi et al.'s ‖α f(x)‖, row-normalised)
    step            1..MAX_STEP: the decoding step the steps view shows (kind=steps; the page clamps it to
                    the translation's length)
    align           0 | 1: the cross view drawn the way aligners draw an alignment (the two sentences as rows of
                    words, a line from each translation word to the source word its row weighs most) instead of
                    its map; the rows of the kind on screen say which read-out (static/alignment_lines.js)
    cell            QUERY.KEY, e.g. 7.6: the cell of the map on screen whose weight the inside panel explains,
                    as token positions counting from 1 with <bos>/<eos> counted (a map's full axes, as
                    "hide special tokens" off shows them); only on the attention tab with kind encoder,
                    decoder or cross, a layer, a single head and merge off (the panel explains single
                    tokens); the model says if the translation has no such position
A link without layer and head opens each kind on its default (cross-attention: the read-out of the
checkpoint's alignment.json that aligns best, its rows included, else its strongest alignment head;
checkpoint_heads.opening_read_outs, static/views.js `autoPick`).
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from transformer.config import ATTENTION_KINDS, MEASURES

from transformer.explorer.core import limits

__all__ = ["ViewState", "VIEW_KINDS", "PARAMS", "MEASURES", "KIND_CODES", "off_text", "parse_off",
           "DEFAULT_BEAM", "DEFAULT_LENGTH_PENALTY", "MEAN_HEADS", "ROWS_INPUT", "ROWS_PREDICTED", "KINDS"]

DEFAULT_BEAM, DEFAULT_LENGTH_PENALTY = 5, 0.6
MEAN_HEADS = -1  # head selector value for "mean over heads"
ROWS_INPUT, ROWS_PREDICTED = "decoder input token", "predicted token"

KINDS = ATTENTION_KINDS  # the three attention kinds of a translation
VIEW_KINDS = KINDS + ("steps",)  # the attention tab's views (explorer.js `state.tab`)
ROWS_CODES = {"input": ROWS_INPUT, "predicted": ROWS_PREDICTED}
PARAMS = ("text", "compare", "model", "method", "beam", "lp", "tab", "kind", "layer", "head", "rows", "hide",
          "merge", "present", "off", "measure", "yours", "step", "cell", "align")
KIND_CODES = {"e": "encoder", "d": "decoder", "c": "cross"}  # `off`'s kind letters
_BOOLS = {"1": True, "true": True, "on": True, "yes": True, "0": False, "false": False, "off": False, "no": False}
MARKUP = re.compile(r"<\s*[a-zA-Z/!?]|javascript\s*:", re.IGNORECASE)  # a tag or a script URL in typed text
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Characters that change how text looks without being seen: bidirectional overrides and isolates (a link could
# show "gift" and translate "tfig"), zero-width spaces and joiners, the BOM, soft hyphen, invisible operators.
INVISIBLE_CHARS = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]")
_FRAMEWORK_PARAMS = ("view", "lang")  # gradio's own (`?view=api`, `?lang=de`), and any `__name` (`__theme`)


@dataclass
class ViewState:
    """Everything that says what the page shows, in one place: what a shareable URL holds.

    Server side, as Gradio controls: `text`, `compare`, `model`, `method`, `beam`,
    `length_penalty`, `present`, `tab` (the app's tab). Browser side, the `state` object of
    panels/attention/explorer.js (`client()` is its initial value): `kind` (an attention kind or "steps"),
    `layer` (0-based; None: the last), `head` (MEAN_HEADS: the mean), `rows`, `hide_special`,
    `merge_subwords`, `step` (1-based; in URLs of the steps view), `cell` (the (query, key) token positions,
    0-based, of the cell the inside panel explains once the link's translation is on screen), `align` (the
    cross view drawn as an alignment).
    """

    text: str = ""
    compare: str = ""
    model: str | None = None
    method: str = "beam"
    beam: int = DEFAULT_BEAM
    length_penalty: float = DEFAULT_LENGTH_PENALTY
    present: bool = False
    tab: str = "attention"
    kind: str = "encoder"
    layer: int | None = None
    head: int = MEAN_HEADS
    rows: str = ROWS_PREDICTED  # a decoder row labelled by the token it predicts: what a class reads it as
    hide_special: bool = False
    merge_subwords: bool = False
    step: int = 1
    off: tuple[tuple[str, int, int], ...] = ()  # heads switched off: (kind, layer, head), 0-based, sorted
    measure: str = "weight"
    yours: str = ""  # a translation of one's own to score (the "Your translation" box)
    cell: tuple[int, int] | None = None  # (query, key), 0-based: the clicked cell of the inside panel
    align: bool = False  # the cross view as lines between words (an aligner's drawing) instead of a map

    def client(self) -> dict[str, Any]:
        """The browser-side fields under the names explorer.js uses (`off` and `measure` when not the default)."""
        client = {"tab": self.kind, "layer": self.layer, "head": self.head, "rows": self.rows,
                  "hide": self.hide_special, "merge": self.merge_subwords, "step": self.step}
        if self.off:
            client["off"] = [list(h) for h in self.off]
        if self.measure != "weight":
            client["measure"] = self.measure
        if self.cell is not None:
            client["cell"] = list(self.cell)
        if self.align:
            client["align"] = True
        return client

    def to_query(self) -> dict[str, str]:
        """URL query parameters for this view (empty texts and an unknown layer are left out)."""
        query = {"text": self.text, "compare": self.compare, "model": self.model or "", "method": self.method,
                 "beam": str(self.beam), "lp": f"{self.length_penalty:g}", "tab": self.tab, "kind": self.kind,
                 "layer": "" if self.layer is None else str(self.layer + 1),
                 "head": "mean" if self.head < 0 else str(self.head + 1),
                 "rows": "predicted" if self.rows == ROWS_PREDICTED else "input",
                 "hide": str(int(self.hide_special)), "merge": str(int(self.merge_subwords)),
                 "present": str(int(self.present)), "off": off_text(self.off),
                 "measure": "" if self.measure == "weight" else self.measure, "yours": self.yours,
                 "step": str(self.step) if self.kind == "steps" and self.step > 1 else "",
                 "cell": "" if self.cell is None else f"{self.cell[0] + 1}.{self.cell[1] + 1}",
                 "align": "1" if self.align else ""}
        return {k: v for k, v in query.items() if v != ""}

    @classmethod
    def from_query(cls, params: Mapping[str, Any], models: Sequence[str] = (),
                   model_sizes: Callable[[str], tuple[int, int] | None] | None = None,
                   default_model: str | None = None,
                   default_length_penalty: float = DEFAULT_LENGTH_PENALTY,
                   tabs: Sequence[str] = ("attention",)) -> tuple[ViewState, list[str]]:
        """A view from URL query parameters, and one note per parameter that was ignored (and why).

        `models`: the model labels the app offers (any other `model` is ignored);
        `model_sizes(model)`: that model's (number of layers, number of heads), or None when
        unknown (then layer and head are only bounded by limits.MAX_LAYERS and clamped by the page).
        Values may be strings or lists of strings (the last one counts). A link without a valid `lp` gets
        `default_length_penalty` (the app's: its default model's, chosen on val). `tabs`: the tabs a link may open
        (the app's: `panels.registry.tab_ids()`).
        """
        view = cls(model=default_model, length_penalty=default_length_penalty)
        values, notes = _query_values(params)
        notes += _read_texts(view, values)
        notes += _drop_overlong(values)
        notes += _read_choices(view, values, models, default_model, tabs)
        if values.get("kind") not in VIEW_KINDS and (view.tab == "compare" or view.yours):
            # the encoder reads only the English: the same on both sides of greedy against beam, and the same
            # whatever German one scores; cross-attention is where either difference shows
            view.kind = "cross"
        notes += _read_decoding(view, values)
        notes += _read_toggles(view, values)
        # the model is settled now, and its size bounds the layer and the head
        sizes = model_sizes(view.model) if model_sizes is not None and view.model else None
        n_layers, n_heads = sizes[:2] if sizes else (limits.MAX_LAYERS, limits.MAX_LAYERS)
        kind_layers = sizes[2] if sizes and len(sizes) > 2 else dict.fromkeys(KIND_CODES.values(), n_layers)
        on_screen = "cross" if view.kind == "steps" else view.kind  # the steps view draws cross-attention
        notes += _read_layer_and_head(view, values, kind_layers.get(on_screen, n_layers), n_heads, on_screen)
        notes += _read_heads_off(view, values, kind_layers, n_heads)
        notes += _read_cell(view, values)
        return view, notes

    @staticmethod
    def notes_text(notes: Sequence[str]) -> str:
        """One line for the page: what a link asked for that was ignored (defaults were used instead)."""
        if not notes:
            return ""
        return "From the link, ignored (defaults used instead): " + "; ".join(notes) + "."


# ----------------------------------------------------------------------------- a panel's view


def pick_view(data: Any, n_layers: int, n_heads: int) -> tuple[str, int, int, str]:
    """(kind, layer, head, rows) from a panel's event data (untrusted: anything odd becomes a default).

    kind: an attention kind ("steps" and unknown values: cross); layer: 0-based, None or
    out of range: the last; head: MEAN_HEADS or 0..n_heads-1.
    """
    data = data if isinstance(data, Mapping) else {}
    kind = data.get("kind") if data.get("kind") in KINDS else "cross"
    layer, head = data.get("layer"), data.get("head")
    layer = layer if _is_index(layer, n_layers) else n_layers - 1
    head = head if _is_index(head, n_heads) else MEAN_HEADS
    rows = ROWS_PREDICTED if data.get("rows") == ROWS_PREDICTED else ROWS_INPUT
    return kind, int(layer), int(head), rows


def _is_index(value: Any, n: int) -> bool:
    """Whether `value` is an int (not a bool) in 0..n-1."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < n


def head_text(head: int) -> str:
    """A head as titles name it: "head 3", or "mean over heads" for MEAN_HEADS."""
    return "mean over heads" if head < 0 else f"head {head + 1}"


# ----------------------------------------------------------------------------- reading a URL's parameters
# Each `_read_*` sets the fields of `view` that `values` holds valid values for and returns a note for
# each value it ignored; `from_query` calls them in a fixed order, which is the order of the notes.


def _query_values(params: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    """The known parameters' values as strings (a list's last one), and a note per unknown parameter."""
    values: dict[str, str] = {}
    notes: list[str] = []
    for key, raw in params.items():
        key = str(key)
        value = raw[-1] if isinstance(raw, (list, tuple)) and raw else raw
        if key in PARAMS:
            values[key] = "" if value is None else str(value)
        elif not (key.startswith("__") or key in _FRAMEWORK_PARAMS):
            notes.append(f"unknown parameter {_show(key)}")
    return values, notes


def _ignored(values: Mapping[str, str], key: str, why: str) -> str:
    """The note for a parameter whose value is not used."""
    return f"{key} {_show(values[key])} ({why})"


def _read_texts(view: ViewState, values: Mapping[str, str]) -> list[str]:
    """`text`, `compare` and `yours`, when they can go into a textbox (`_check_text`)."""
    notes = []
    for key in ("text", "compare", "yours"):
        if key in values:
            text, why = _check_text(values[key])
            if why:
                notes.append(_ignored(values, key, why))
            else:
                setattr(view, key, text)
    return notes


def _drop_overlong(values: dict[str, str]) -> list[str]:
    """Removes every value but the texts longer than limits.MAX_VALUE_CHARS; no valid one is that long."""
    notes = []
    for key in [k for k in PARAMS if k in values and k not in ("text", "compare", "yours")]:
        limit = limits.MAX_OFF_CHARS if key == "off" else limits.MAX_VALUE_CHARS
        if len(values[key]) > limit:
            notes.append(f"{key} (longer than {limit} characters)")
            del values[key]
    return notes


def _read_choices(view: ViewState, values: Mapping[str, str], models: Sequence[str],
                  default_model: str | None, tabs: Sequence[str]) -> list[str]:
    """`model` (one of `models`), `method`, `tab` and `kind` (each one of a fixed list)."""
    notes = []
    if "model" in values:
        if values["model"] in models:
            view.model = values["model"]
        else:
            notes.append(_ignored(values, "model", "not a model of this app"
                                  + (f"; using {default_model}" if default_model else "")))
    choice = {"method": ("greedy", "beam"), "tab": tuple(tabs), "kind": VIEW_KINDS, "measure": MEASURES}
    for key, allowed in choice.items():
        if key in values:
            if values[key] in allowed:
                setattr(view, key, values[key])
            else:
                notes.append(_ignored(values, key, "must be one of " + ", ".join(allowed)))
    return notes


def _read_whole(view: ViewState, values: Mapping[str, str], key: str, attr: str, most: int) -> list[str]:
    """`key`, a whole number from 1 to `most`, into `view.attr`; else a note that it was ignored."""
    if key not in values:
        return []
    number = _whole(values[key])
    if number is not None and 1 <= number <= most:
        setattr(view, attr, number)
        return []
    return [_ignored(values, key, f"must be a whole number from 1 to {most}")]


def _read_decoding(view: ViewState, values: Mapping[str, str]) -> list[str]:
    """`beam` (a whole number, 1..UI_MAX_BEAM) and `lp` (a plain decimal, 0..MAX_LENGTH_PENALTY)."""
    notes = []
    notes += _read_whole(view, values, "beam", "beam", limits.UI_MAX_BEAM)
    if "lp" in values:
        lp = _finite(values["lp"])
        if lp is not None and 0.0 <= lp <= limits.MAX_LENGTH_PENALTY:
            view.length_penalty = lp
        else:
            why = f"the length penalty must be a number from 0 to {limits.MAX_LENGTH_PENALTY:g}"
            notes.append(_ignored(values, "lp", why))
    return notes


def _read_toggles(view: ViewState, values: Mapping[str, str]) -> list[str]:
    """`rows` (input | predicted), `step` and the switches `hide`, `merge`, `present` and `align` (0 | 1, or the
    like)."""
    notes = []
    if "rows" in values:
        if values["rows"] in ROWS_CODES:
            view.rows = ROWS_CODES[values["rows"]]
        else:
            notes.append(_ignored(values, "rows", "must be input or predicted"))
    notes += _read_whole(view, values, "step", "step", limits.MAX_STEP)
    for key, attr in (("hide", "hide_special"), ("merge", "merge_subwords"), ("present", "present"),
                      ("align", "align")):
        if key in values:
            if values[key].lower() in _BOOLS:
                setattr(view, attr, _BOOLS[values[key].lower()])
            else:
                notes.append(_ignored(values, key, "must be 0 or 1"))
    return notes


def _read_layer_and_head(view: ViewState, values: Mapping[str, str], n_layers: int, n_heads: int,
                         kind: str = "") -> list[str]:
    """`layer` (1..n_layers of the kind on screen) and `head` (mean or 1..n_heads), stored 0-based."""
    notes = []
    if "layer" in values:
        layer = _whole(values["layer"])
        if layer is not None and 1 <= layer <= n_layers:
            view.layer = layer - 1
        else:
            where = f" ({kind} attention has {n_layers} layers)" if kind and n_layers < limits.MAX_LAYERS else ""
            notes.append(_ignored(values, "layer", f"must be a whole number from 1 to {n_layers}{where}"))
    if "head" in values:
        head = _whole(values["head"])
        if values["head"] == "mean":
            view.head = MEAN_HEADS
        elif head is not None and 1 <= head <= n_heads:
            view.head = head - 1
        else:
            notes.append(_ignored(values, "head", f"must be mean or a whole number from 1 to {n_heads}"))
    return notes


def _read_heads_off(view: ViewState, values: Mapping[str, str], kind_layers: Mapping[str, int],
                    n_heads: int) -> list[str]:
    """`off`: heads switched off, each within its kind's layers and the model's heads; one bad entry drops it all."""
    if "off" not in values:
        return []
    off, why = parse_off(values["off"], kind_layers, n_heads)
    if why:
        return [_ignored(values, "off", why)]
    view.off = off
    return []


def _read_cell(view: ViewState, values: Mapping[str, str]) -> list[str]:
    """`cell` (QUERY.KEY, each 1..MAX_STEP), stored 0-based; only where the view shows one head's map of single
    tokens (the attention tab, a kind of attention, a layer and a head given, merge off), as a click needs."""
    if "cell" not in values:
        return []
    match = re.fullmatch(r"([0-9]{1,4})\.([0-9]{1,4})", values["cell"])
    if not match or not all(1 <= int(n) <= limits.MAX_STEP for n in match.groups()):
        why = f"must be query.key, two whole numbers from 1 to {limits.MAX_STEP}, e.g. 7.6"
        return [_ignored(values, "cell", why)]
    if view.tab != "attention" or view.kind == "steps" or view.layer is None or view.head < 0 or view.merge_subwords:
        return [_ignored(values, "cell", "needs tab attention, kind encoder, decoder or cross, a layer, a single head "
                                         "and merge=0")]
    view.cell = (int(match[1]) - 1, int(match[2]) - 1)
    return []


def parse_off(text: str, kind_layers: Mapping[str, int], n_heads: int
              ) -> tuple[tuple[tuple[str, int, int], ...], str | None]:
    """"e1.3,c4.8" -> ((("encoder", 0, 2), ("cross", 3, 7)), None), sorted without repeats; ((), why) if bad."""
    heads = set()
    for item in filter(None, text.split(",")):
        match = re.fullmatch(r"([edc])([0-9]{1,3})\.([0-9]{1,3})", item)
        if not match:
            return (), "each head must be written like e1.3 (e, d or c, then layer.head)"
        kind, layer, head = KIND_CODES[match[1]], int(match[2]), int(match[3])
        if not (1 <= layer <= kind_layers.get(kind, 0) and 1 <= head <= n_heads):
            return (), f"{item}: this model's {kind} has {kind_layers.get(kind, 0)} layers of {n_heads} heads"
        heads.add((kind, layer - 1, head - 1))
    order = {kind: i for i, kind in enumerate(KIND_CODES.values())}
    return tuple(sorted(heads, key=lambda h: (order[h[0]], h[1], h[2]))), None


def off_text(off: Sequence[Sequence[Any]]) -> str:
    """The inverse of `parse_off`: ((kind, layer, head), ...) 0-based -> "e1.3,c4.8"."""
    letters = {kind: code for code, kind in KIND_CODES.items()}
    return ",".join(f"{letters[k]}{layer + 1}.{head + 1}" for k, layer, head in off)


# ----------------------------------------------------------------------------- checking one value
def _show(value: str, max_chars: int = 40) -> str:
    """A value for a note: quoted, cut, control characters replaced (the page shows it as text)."""
    value = INVISIBLE_CHARS.sub("\ufffd", CONTROL_CHARS.sub("\ufffd", value))
    return repr(value if len(value) <= max_chars else value[: max_chars - 1] + "\u2026")


def _check_text(text: str) -> tuple[str, str | None]:
    """(text, None) when a URL's text can go into a textbox, else ("", why not)."""
    if len(text) > limits.MAX_INPUT_CHARS:
        return "", f"{len(text)} characters; at most {limits.MAX_INPUT_CHARS}"
    if CONTROL_CHARS.search(text):
        return "", "control characters"
    if INVISIBLE_CHARS.search(text):
        return "", "invisible characters (bidirectional overrides or zero-width marks) that change how it reads"
    if MARKUP.search(text):
        return "", "looks like HTML or script; type such text yourself if you mean it"
    return text, None


def _whole(value: str) -> int | None:
    return int(value) if re.fullmatch(r"[0-9]{1,4}", value) else None


def _finite(value: str) -> float | None:
    if not re.fullmatch(r"[0-9]{0,3}(\.[0-9]{0,6})?", value) or value in ("", "."):
        return None  # no signs, exponents, nan, inf: a plain decimal
    number = float(value)
    return number if math.isfinite(number) else None

