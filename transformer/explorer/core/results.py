"""One translation as a session keeps it (`Result`), how it changes (another candidate, heads switched off, norm
maps), and where it is kept: `ResultStore`, one byte budget for the whole process.

A session's gr.State holds its `Result` object; the store holds the same objects, least recently used first,
and counts their arrays' bytes. When the total passes the budget, the oldest are released: their arrays
dropped (the texts stay, so the page's text boxes still read right), and an event that needs them says, in
words, that the translation is no longer kept (`ResultStore.using`). The text-only API keeps nothing.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import sys
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from transformer.serving.batching import BatcherBusy, search_work
from transformer.placeholders import placeholder_text
from transformer.translator import Attention, DecodingOptions, Source, Translation, Translator, quoted

from transformer import heap
from transformer.explorer.core import limits
from transformer.explorer.core.checks import budgeted_beam, head_mask_of, read_off, user_error, user_errors
from transformer.explorer.core.view_state import DEFAULT_LENGTH_PENALTY

log = logging.getLogger(__name__)


@dataclass
class Result:
    """What one translation leaves in a session's gr.State; views are drawn from it, never by re-decoding."""

    model: str
    source: str
    translation: Translation
    length_penalty: float
    attentions: dict[int, Attention] = field(default_factory=dict)  # per n-best candidate, filled lazily
    candidate: int = 0
    search: Any = None  # search_tree.SearchView: recorded when the tree tab first shows this result
    norms: dict[int, Attention] = field(default_factory=dict)  # ‖α f(x)‖ per candidate, only when asked
    off: tuple[tuple[str, int, int], ...] = ()  # heads switched off in `translation` (kind, layer, head)
    base: Result | None = None  # with heads off: the result with every head on (the same source and settings)
    ablated: dict[tuple, Result] = field(default_factory=dict)  # on the base: recent ablations, by `off`
    own: Result | None = None  # a translation of one's own (method "forced"): the model's result it was scored beside
    released: bool = False  # its arrays were dropped by the `ResultStore` (the texts stay)

    @property
    def attention(self) -> Attention:
        return self.attentions[self.candidate]

    @property
    def norm(self) -> Attention | None:
        return self.norms.get(self.candidate)

    @property
    def root(self) -> Result:
        """The result the store counts this one under: the base of an ablation, else itself. (`own` is kept under
        its own root: it is the model's translation, which the session kept before it scored one of its own.)"""
        return self.base or self

    def release(self) -> None:
        """Drop every array (attention, norms, the recorded search, the ablations); keep the texts."""
        for ablation in self.ablated.values():
            ablation.release()
        self.attentions, self.norms, self.ablated, self.search = {}, {}, {}, None
        self.translation = dataclasses.replace(self.translation, attention=None)
        self.released = True


def work_on(result: Result, beam_size: int = 1) -> int:
    """What model work on `result`'s source costs the batcher (`batching.search_work`, which orders the work
    waiting for the model): a search at `beam_size`, or, at 1, one teacher-forced pass (a candidate's
    attention, norm maps, one head's row, a node of the tree)."""
    return search_work(len(result.translation.src_ids), beam_size)


# an empty Translate: what to do, in words that hold on every page (presentation mode hides the examples)
EMPTY_TEXT = "There is no sentence to translate yet: type one in the box at the top, then press Enter or Translate."
MAX_ABLATIONS = 16  # ablated translations a result keeps (a click back to an earlier mask needs no model pass)


def ablate(tr: Translator, result: Result, off: Any, guard: AbstractContextManager = nullcontext()) -> Result:
    """`result`'s source translated again with the heads `off` switched off (the same method, beam and length
    penalty): a new Result whose `base` is the one with every head on. No heads: the base itself. Cached; the
    new one is added holding `guard` (the store's lock: `ResultStore`)."""
    base = result.base or result
    off = read_off(off)
    if not off:
        return base
    if off not in base.ablated:
        t = base.translation
        if t.method == "forced":  # a translation of one's own: the same tokens, scored and drawn without the heads
            translation = tr.force(base.source, t.text, head_mask=head_mask_of(off, tr), ids=t.candidates[0].ids)
        else:
            translation = tr.translate(base.source, method=t.method, beam_size=t.beam_size,
                                       length_penalty=base.length_penalty, head_mask=head_mask_of(off, tr))
        made = Result(base.model, base.source, translation, base.length_penalty, {0: translation.attention},
                      off=off, base=base, own=base.own)
        with guard:
            if len(base.ablated) >= MAX_ABLATIONS:
                base.ablated.pop(next(iter(base.ablated)))
            base.ablated[off] = made
            if base.released:  # released while it ran: the new arrays go too
                made.release()
        return made
    return base.ablated[off]


def with_norms(tr: Translator, result: Result, guard: AbstractContextManager = nullcontext()) -> Result:
    """The current candidate's ‖α f(x)‖ maps (one teacher-forced pass, with the result's heads off), cached;
    added holding `guard`."""
    if result.candidate not in result.norms:
        norms = tr.attention_for(result.translation, result.candidate, attention_measure="norm")
        with guard:
            result.norms[result.candidate] = norms
    return result



def select_candidate(tr: Translator, result: Result, index: Any,
                     guard: AbstractContextManager = nullcontext()) -> Result:
    """Point the result at n-best candidate `index` (one teacher-forced pass the first time; cached; added
    holding `guard`)."""
    n = len(result.translation.candidates)
    if isinstance(index, bool) or not isinstance(index, (int, float)) or index != int(index) or not 0 <= index < n:
        raise user_error(f"candidate must be 1 to {n}.", "No such candidate")
    index = int(index)
    if index not in result.attentions:
        attention = tr.attention_for(result.translation, candidate=index)
        with guard:
            result.attentions[index] = attention
    result.candidate = index
    return result



def run_translation(tr: Translator, model: str, text: Any, method: Any, beam_size: Any,
                    length_penalty: Any = DEFAULT_LENGTH_PENALTY,
                    translate: Callable[[Source, DecodingOptions, bool], Translation] | None = None,
                    output_attentions: bool = True) -> tuple[Result, str]:
    """Where a request enters the explorer: its options resolved and checked (`Translator.decoding_options`, within
    the app's limits), its text prepared and tokenised (`Translator.source`), each once, then translated (with
    attention unless `output_attentions` is False: the text-only API); (Result, notice text for the user).

    `translate(source, options, output_attentions)` is what decodes (default `tr.translate_sources`; the app's:
    its `Batcher`, which decodes concurrent requests together); it checks and tokenises nothing again."""
    # left out (None): the model's own, chosen on validation (its generation_config.json)
    with user_errors("Invalid option"):
        options = tr.decoding_options(method, beam_size, length_penalty, max_beam=limits.UI_MAX_BEAM,
                                      max_length_penalty=limits.API_MAX_LENGTH_PENALTY)
    if text is not None and not isinstance(text, str):
        raise user_error(f"text must be a string, got {quoted(text)}.", "Cannot translate this input")
    text = text or ""
    if not text.strip():
        raise user_error(EMPTY_TEXT, "Nothing to translate")
    notices = []
    if len(text) > limits.MAX_INPUT_CHARS:
        text = text[:limits.MAX_INPUT_CHARS]
        notices.append(f"The input was cut to its first {limits.MAX_INPUT_CHARS} characters.")
    with user_errors("Cannot translate this input"):
        source = tr.source(text)
    options, cut = budgeted_beam(source, options)
    if cut:
        notices.append(cut)
    if translate is None:
        def translate(source: Source, options: DecodingOptions, output_attentions: bool) -> Translation:
            return tr.translate_sources([source], options, output_attentions=output_attentions)[0]
    try:
        with user_errors("Cannot translate this input"):
            translation = translate(source, options, output_attentions)
    except BatcherBusy as err:
        raise user_error(str(err), "Busy") from None
    if translation.model_input != text:
        notices.append(f"Read as “{translation.model_input}”: text typed all in capitals or all in lower case is "
                       "recased the way the training sentences are written, so that names keep their capitals.")
    if translation.entities:
        shown = ", ".join(f"{placeholder_text(k)} {e}" for k, e in enumerate(translation.entities))
        notices.append(f"Names and numbers as placeholders ({shown}): the model reads and writes the placeholder "
                       "token, which is what the maps show, and the translation puts the name or number back.")
        counts = translation.placeholder_counts()
        missing = [f"{placeholder_text(k)} {e}" for k, (e, n) in enumerate(zip(translation.entities, counts)) if n == 0]
        repeated = [f"{placeholder_text(k)} {e}" for k, (e, n) in enumerate(zip(translation.entities, counts)) if n > 1]
        if missing:
            notices.append(f"The translation leaves out {', '.join(missing)}: the model did not write "
                           f"{'that placeholder' if len(missing) == 1 else 'those placeholders'}.")
        if repeated:
            notices.append(f"The translation repeats {', '.join(repeated)}.")
    if translation.as_text:
        notices.append(f"This model has {len(translation.entities)} placeholders; {', '.join(translation.as_text)} "
                       "read as ordinary text, copied piece by piece (check them).")
    if translation.truncated:
        notices.append(f"The input is longer than this model's limit of {tr.max_source_tokens} tokens: "
                       f"only the first {tr.max_source_tokens} tokens were translated.")
    result = Result(model, text, translation, options.length_penalty, {0: translation.attention})
    return result, " ".join(notices)



# ----------------------------------------------------------------------------- the store: one byte budget


ENV_RESULTS_MB = "TRANSFORMER_RESULTS_MB"  # the store's budget in MB (default `DEFAULT_RESULTS_MB`)
DEFAULT_RESULTS_MB = 256  # about 1,000 results of a 20-word sentence, or 7 of the longest input at beam 10


def results_budget() -> int:
    """The store's byte budget: $TRANSFORMER_RESULTS_MB megabytes where it is a positive number, else the default."""
    value = os.environ.get(ENV_RESULTS_MB, "").strip()
    try:
        mb = float(value) if value else DEFAULT_RESULTS_MB
    except ValueError:
        mb = -1
    if not mb > 0:
        log.warning("%s=%r is not a positive number of megabytes: using %d", ENV_RESULTS_MB, value, DEFAULT_RESULTS_MB)
        mb = DEFAULT_RESULTS_MB
    return int(mb * 1_000_000)


def held_bytes(value: Any, skip: Callable[[Any], bool] = lambda v: False) -> int:
    """The bytes `value` holds: every numpy array and tensor reachable through dataclasses, dicts, lists and tuples,
    each counted once, plus the containers and strings around them. Objects of other classes count their own
    size only (never a model a value might point to); `skip(v)` leaves a reachable value out."""
    seen: set[int] = set()
    stack, total = [value], 0
    while stack:
        v = stack.pop()
        if v is None or id(v) in seen or skip(v):
            continue
        seen.add(id(v))
        if isinstance(v, np.ndarray):  # a view keeps its whole base alive: count the base, once
            base = v
            while isinstance(base.base, np.ndarray):
                base = base.base
            if base is v or id(base) not in seen:
                seen.add(id(base))
                total += base.nbytes
        elif isinstance(v, torch.Tensor):
            total += v.numel() * v.element_size()
        elif isinstance(v, dict):
            total += sys.getsizeof(v)
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple, set, frozenset)):
            total += sys.getsizeof(v)
            stack.extend(v)
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            total += sys.getsizeof(v)
            stack.extend(getattr(v, f.name, None) for f in dataclasses.fields(v))
        else:
            total += sys.getsizeof(v)
    return total


def _size_of(root: Any) -> int:
    """A store entry's bytes: a Result with its ablations, norms and search (its `own` is another entry), or a
    compare session."""
    if isinstance(root, Result):
        return held_bytes(root, skip=lambda v: v is root.own and v is not None)
    return held_bytes(root)


class ResultStore:
    """Every result the sessions keep (their `Result`s and compare sessions), least recently used first, within
    `max_bytes` for the whole process; the oldest are released when a new or grown one passes it.

    `keep(x)` after a result is made or grows (another candidate, heads off, norms, the tree); `using(x)` around
    an event that reads one: a released result is a `gr.Error` that says to translate again. The entry just kept is
    never released by its own `keep`, so one result larger than the whole budget lives until the next; an entry
    over a quarter of the budget first drops its oldest ablations.

    Ownership: a kept result's arrays are added (`guard=store.lock`), dropped and released only under `lock`, and
    an event reads one only inside `using`, which pins it: a pinned result is never released or trimmed (the
    store may pass its budget until it is unpinned)."""

    def __init__(self, max_bytes: int | None = None):
        self.max_bytes = results_budget() if max_bytes is None else int(max_bytes)
        self._entries: OrderedDict[int, tuple[Any, int]] = OrderedDict()  # id(root) -> (root, bytes)
        self.lock = threading.RLock()  # reentrant: `keep` inside a model pass that adds under it
        self._lock = self.lock
        self._pins: Counter[int] = Counter()  # id(root) -> events reading it now
        self.released = 0  # entries released so far (for the logs and the benches)

    @property
    def bytes(self) -> int:
        with self._lock:
            return sum(size for _, size in self._entries.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, item: Any) -> bool:
        with self._lock:
            return id(_root(item)) in self._entries

    @contextmanager
    def using(self, item: Any) -> Iterator[Any]:
        """`item`, marked as just used (a `gr.Error` saying so when its arrays were released), and pinned until the
        block ends: not released nor trimmed under its reader."""
        if item is None:
            yield item
            return
        key = id(_root(item))
        with self._lock:
            self._check(item)
            self._pins[key] += 1
        try:
            yield item
        finally:
            with self._lock:
                self._pins[key] -= 1
                if self._pins[key] <= 0:
                    del self._pins[key]

    def _check(self, item: Any) -> None:
        """Under the lock: a `gr.Error` if `item` was released, else it becomes the most recently used."""
        if getattr(item, "released", False) or getattr(_root(item), "released", False):
            raise user_error("This translation is no longer kept on the server: the app keeps only the most recent "
                             "ones for everyone together. Press Translate again to see it.", "Translation expired")
        if id(_root(item)) in self._entries:
            self._entries.move_to_end(id(_root(item)))

    def keep(self, item: Any) -> Any:
        """Count `item` (a Result, one of its ablations, or a compare session) as it is now, newest; release the
        oldest entries while the store is over its budget. Returns `item`."""
        if item is None:
            return item
        root = _root(item)
        released = []
        with self._lock:  # released here, not after: a `using` that checked before must find it pinned or gone
            self._check(item)
            if isinstance(root, Result) and not self._pins[id(root)]:
                self._trim(root, keep=item)
            self._entries[id(root)] = (root, _size_of(root))
            self._entries.move_to_end(id(root))
            total = sum(s for _, s in self._entries.values())
            for key in [k for k in self._entries if k != id(root) and not self._pins[k]]:  # oldest first
                if total <= self.max_bytes:
                    break
                old, old_size = self._entries.pop(key)
                old.release()
                total -= old_size
                released.append(old)
            self.released += len(released)
        if released:
            heap.trim()  # what the arrays' small blocks freed goes back to the system too (heap.py)
            log.info("results store: released %d result(s); %d kept, %.1f MB of %.1f MB", len(released),
                     len(self), total / 1e6, self.max_bytes / 1e6)
        return item

    def _trim(self, root: Result, keep: Any) -> None:
        """Drop the oldest ablations of `root` (never `keep`) while it holds more than a quarter of the budget."""
        while len(root.ablated) > 1 and _size_of(root) > self.max_bytes // 4:
            oldest = next((k for k, r in root.ablated.items() if r is not keep), None)
            if oldest is None:
                return
            root.ablated.pop(oldest).release()


def _root(item: Any) -> Any:
    return item.root if isinstance(item, Result) else item
