"""A quiz's questions: "When the model writes *spielt*, which English word does cross-attention head 3.6 look at
most?", each made from one row of one head's attention over one translation.

Pure: numpy arrays and token lists in, `Question`s out (no model, no torch). `head_roles` reads the per-head role
table from a checkpoint's head analysis (head_roles.json's tags, alignment.json's per-head agreement with a
person's word links); `make_quiz` picks about 5 questions whose answer one can reason out: heads with a clear
role, rows where the head's top word holds at least half the weight. `parse_specs` reads a teacher's own list of
questions (sentence, head, target token), `question_from_spec` builds one of them from its translation.
"""
from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from transformer.explorer.core.limits import MAX_INPUT_CHARS
from transformer.explorer.maps.token_labels import WORD_MARK, word_groups
from transformer.tokenizer import SPECIAL_TOKENS

KINDS = ("cross", "decoder")  # what a question may ask about: cross-attention, or the decoder's self-attention
MIN_TOP_WEIGHT = 0.5  # a row is asked about only when the head's top word holds at least this much
TIE = 0.05  # words within this of the top weight are answers too (at most 2)
MAX_CHOICES = 2  # a student picks one or two words
MIN_PRECISION = 75.0  # alignment.json: a head whose top word agrees with a person's link this often (in 100)
MAX_QUESTIONS = 10
ROLE_LINES = {
    ("cross", "align"): "An alignment head: it looks at the {source} word that the word being written translates.",
    ("decoder", "prev"): "A previous-word head: it looks at the word written just before.",
    ("decoder", "self"): "A same-word head: it looks at the word it reads now.",
    ("decoder", "rare"): "A rare-word head: it looks at the least common word written so far.",
    ("decoder", "sink"): "A resting head: it parks its attention on the sentence start or punctuation.",
}
PREDICTING = ("It lines up with word links: when the model writes a word, it looks at the {source} word that "
              "word translates (a person agrees {precision} times in 100).")
SHIFTED = ("It looks one step behind: at the {source} word of the word the model has just written (a person "
           "agrees {precision} times in 100).")


class SpecError(ValueError):
    """A teacher's question spec that cannot be used, with a message that says why."""


@dataclass(frozen=True)
class HeadRole:
    """What one head does, in one line, and how clearly (0..1: its role share or its agreement with people)."""

    line: str
    strength: float


@dataclass(frozen=True)
class Question:
    """One question: which of `words` does head `layer`.`head` (0-based) of `kind` look at most when the model
    writes `translation[target]`? `weights` are the head's true weights per word (a word's pieces summed);
    `answers` the top word and any near-tie; `role` the head's one-line role."""

    sentence: str
    words: list[str]
    translation: list[str]
    target: int  # the word of `translation` being written
    row: int  # the attention row (output token) asked about
    kind: str
    layer: int
    head: int
    weights: list[float]
    answers: list[int]
    role: str
    language: str = "English"  # the language of `words` (the question's wording)

    @property
    def head_label(self) -> str:
        """The head as the page names it: "3.6" (layer.head, from 1)."""
        return f"{self.layer + 1}.{self.head + 1}"

    def prompt(self) -> str:
        """The question as a sentence."""
        kind = "cross-attention" if self.kind == "cross" else "decoder self-attention"
        return (f"When the model writes “{self.translation[self.target]}”, which word does {kind} head "
                f"{self.head_label} look at most?")

    def public(self, revealed: bool) -> dict[str, Any]:
        """What a student sees: the question; with the weights, answers and role only once `revealed`."""
        shown = {"prompt": self.prompt(), "sentence": self.sentence, "words": self.words,
                 "translation": self.translation, "target": self.target, "head": self.head_label,
                 "kind": self.kind, "language": self.language}
        if revealed:
            shown |= {"weights": self.weights, "answers": self.answers, "role": self.role}
        return shown

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Question:
        return cls(**data)


@dataclass(frozen=True)
class QuestionSpec:
    """A teacher's question: a sentence, a head (layer, head from 0) of `kind`, the output token to ask about."""

    sentence: str
    layer: int
    head: int
    row: int
    kind: str = "cross"


@dataclass
class Attended:
    """One translation as `make_quiz` reads it: tokens and the attention maps of the kinds asked about."""

    sentence: str
    src_tokens: list[str]
    tgt_in_tokens: list[str]
    tgt_out_tokens: list[str]
    maps: dict[str, np.ndarray] = field(default_factory=dict)  # kind -> (L, H, T, keys)
    language: str = "English"


# ----------------------------------------------------------------------------- head roles


def head_roles(roles: dict[str, Any] | None, alignment: dict[str, Any] | None) -> dict[tuple[str, int, int], HeadRole]:
    """(kind, layer, head) -> the head's clearest role, from head_roles.json's tags and alignment.json's heads
    whose top word agrees with a person's links at least MIN_PRECISION times in 100. Heads with neither are
    left out: a question on them would have no answer one can reason out."""
    table: dict[tuple[str, int, int], HeadRole] = {}
    for kind in KINDS:
        entry = ((roles or {}).get("kinds") or {}).get(kind) or {}
        for layer, row in enumerate(entry.get("tags") or []):
            for head, tags in enumerate(row):
                for tag in tags:
                    line = ROLE_LINES.get((kind, tag))
                    if line is not None:
                        share = float(entry["shares"].get(tag, [[0.0] * (head + 1)] * (layer + 1))[layer][head])
                        _keep(table, (kind, layer, head), HeadRole(line, share))
    for read_out in (alignment or {}).get("read_outs") or []:
        role = _alignment_role(read_out)
        if role is not None:
            _keep(table, ("cross", read_out["layer"], read_out["head"]), role)
    return table


def _keep(table: dict[tuple[str, int, int], HeadRole], key: tuple[str, int, int], role: HeadRole) -> None:
    if key not in table or table[key].strength < role.strength:
        table[key] = role


def _alignment_role(read_out: dict[str, Any]) -> HeadRole | None:
    """A single head's read-out of alignment.json as a role, when it agrees with people clearly enough."""
    try:
        if read_out.get("kind") != "head" or read_out.get("rows") not in ("predicting", "shifted"):
            return None
        precision = float(read_out["test"]["precision"])
    except (KeyError, TypeError, ValueError):
        return None
    if precision < MIN_PRECISION or not isinstance(read_out.get("layer"), int):
        return None
    template = PREDICTING if read_out["rows"] == "predicting" else SHIFTED
    return HeadRole(template.replace("{precision}", str(round(precision))), precision / 100)


# ----------------------------------------------------------------------------- one question


def _is_word(label: str) -> bool:
    """A word a student may pick: not a special token, not punctuation alone."""
    return label not in SPECIAL_TOKENS and any(c.isalnum() for c in label)


def word_weights(tokens: Sequence[str], row: np.ndarray) -> tuple[list[str], list[float]]:
    """The words of `tokens` (pieces merged, specials left out) and `row`'s weight on each (its pieces summed)."""
    group, labels = word_groups(tokens)
    sums = np.zeros(len(labels), dtype=np.float64)
    np.add.at(sums, np.asarray(group), np.asarray(row, dtype=np.float64)[: len(group)])
    kept = [i for i, label in enumerate(labels) if label not in SPECIAL_TOKENS]
    return [labels[i] for i in kept], [round(float(sums[i]), 4) for i in kept]


def answers_of(words: Sequence[str], weights: Sequence[float]) -> list[int]:
    """The top word's index and a near-tie's (within TIE), words only; [] when no word can be picked."""
    ranked = sorted((i for i, w in enumerate(words) if _is_word(w)), key=lambda i: -weights[i])
    if not ranked:
        return []
    top = weights[ranked[0]]
    return sorted(i for i in ranked[:MAX_CHOICES] if weights[i] >= top - TIE)


def _translation_words(tgt_out: Sequence[str]) -> tuple[list[int], list[str]]:
    group, labels = word_groups(tgt_out)
    return group, labels


def question_at(attended: Attended, kind: str, layer: int, head: int, row: int, role: str) -> Question:
    """The question on row `row` (an output token) of head `layer`.`head` of `kind`: the keys are the source's
    words for cross-attention, the words written so far for the decoder's own."""
    grid = attended.maps[kind]
    keys = attended.src_tokens if kind == "cross" else attended.tgt_in_tokens[: row + 1]
    words, weights = word_weights(keys, grid[layer, head, row, : len(keys)])
    group, translation = _translation_words(attended.tgt_out_tokens)
    language = attended.language if kind == "cross" else "translated"
    return Question(sentence=attended.sentence, words=words, translation=translation, target=group[row], row=row,
                    kind=kind, layer=layer, head=head, weights=weights, answers=answers_of(words, weights),
                    role=role.replace("{source}", attended.language), language=language)


def clear(question: Question, min_weight: float = MIN_TOP_WEIGHT) -> bool:
    """Whether a question has an answer one can reason out: a word holds at least `min_weight`."""
    return bool(question.answers) and max(question.weights[i] for i in question.answers) >= min_weight


# ----------------------------------------------------------------------------- a quiz


def askable_rows(tgt_out: Sequence[str]) -> list[int]:
    """Output tokens a question may ask about: the first piece of each real word (no punctuation, no <eos>)."""
    return [t for t, tok in enumerate(tgt_out)
            if tok not in SPECIAL_TOKENS and tok.startswith(WORD_MARK) and _is_word(tok.lstrip(WORD_MARK))]


def make_quiz(attended: Attended, roles: dict[tuple[str, int, int], HeadRole], n: int = 5,
              min_weight: float = MIN_TOP_WEIGHT) -> list[Question]:
    """About `n` questions on one translation: heads with a clear role (strongest first), each on its row with
    the clearest top word (at least `min_weight`), a different written word for each question where possible;
    a head gets a second question only when there are fewer such heads than `n`."""
    candidates = {key: _clear_rows(attended, key, role.line, min_weight)
                  for key, role in sorted(roles.items(), key=lambda kv: -kv[1].strength) if key[0] in attended.maps}
    candidates = {key: rows for key, rows in candidates.items() if rows}
    chosen: list[Question] = []
    used_rows: set[int] = set()
    for _ in range(n):
        for rows in candidates.values():
            if len(chosen) >= n:
                break
            fresh = [q for q in rows if q.row not in used_rows] or rows
            if fresh:
                pick = fresh[0]
                rows.remove(pick)
                chosen.append(pick)
                used_rows.add(pick.row)
    return chosen


def _clear_rows(attended: Attended, key: tuple[str, int, int], role: str, min_weight: float) -> list[Question]:
    """A head's clear questions over the translation, clearest first."""
    kind, layer, head = key
    grid = attended.maps[kind]
    if layer >= grid.shape[0] or head >= grid.shape[1]:
        return []
    questions = [question_at(attended, kind, layer, head, row, role) for row in askable_rows(attended.tgt_out_tokens)]
    questions = [q for q in questions if clear(q, min_weight)]
    return sorted(questions, key=lambda q: -max(q.weights[i] for i in q.answers))


# ----------------------------------------------------------------------------- a teacher's own questions

HEAD = re.compile(r"(\d{1,2})\.(\d{1,2})")


def parse_specs(raw: Any) -> list[QuestionSpec]:
    """A teacher's questions: a list of 1..MAX_QUESTIONS objects {"sentence": text, "head": "3.6" (layer.head,
    from 1), "target": output token index (from 0), "kind": "cross" (default) or "decoder"}. SpecError says
    what is wrong with the first bad one."""
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_QUESTIONS:
        raise SpecError(f"questions must be a list of 1 to {MAX_QUESTIONS} objects")
    return [_parse_spec(item, i + 1) for i, item in enumerate(raw)]


def _parse_spec(item: Any, number: int) -> QuestionSpec:
    if not isinstance(item, dict) or set(item) - {"sentence", "head", "target", "kind"}:
        raise SpecError(f"question {number}: an object with sentence, head, target and optionally kind")
    sentence, head, target, kind = item.get("sentence"), item.get("head"), item.get("target"), item.get("kind", "cross")
    if not isinstance(sentence, str) or not sentence.strip() or len(sentence) > MAX_INPUT_CHARS:
        raise SpecError(f"question {number}: sentence must be text of 1 to {MAX_INPUT_CHARS} characters")
    match = HEAD.fullmatch(head) if isinstance(head, str) else None
    if match is None or int(match.group(1)) < 1 or int(match.group(2)) < 1:
        raise SpecError(f"question {number}: head must be layer.head counted from 1, such as \"3.6\"")
    if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < 1000:
        raise SpecError(f"question {number}: target must be the index of an output token, from 0")
    if kind not in KINDS:
        raise SpecError(f"question {number}: kind must be one of {', '.join(KINDS)}")
    return QuestionSpec(sentence.strip(), int(match.group(1)) - 1, int(match.group(2)) - 1, target, kind)


def question_from_spec(spec: QuestionSpec, attended: Attended, roles: dict[tuple[str, int, int], HeadRole]) -> Question:
    """The question a spec asks, on its sentence's translation; SpecError when its head or token is not there."""
    grid = attended.maps[spec.kind]
    if spec.layer >= grid.shape[0] or spec.head >= grid.shape[1]:
        raise SpecError(f"head {spec.layer + 1}.{spec.head + 1}: the model has {grid.shape[0]} layers of "
                        f"{grid.shape[1]} heads")
    last = len(attended.tgt_out_tokens) - 1
    if spec.row >= last:
        raise SpecError(f"target {spec.row}: the translation has output tokens 0 to {last - 1}")
    role = roles.get((spec.kind, spec.layer, spec.head))
    line = role.line if role else "No clear role was found for this head: what it does here is for the class to see."
    return question_at(attended, spec.kind, spec.layer, spec.head, spec.row, line)


def quiz_json(questions: Sequence[Question]) -> str:
    """The questions as the store keeps them."""
    return json.dumps([q.to_json() for q in questions], ensure_ascii=False)


def quiz_from_json(text: str) -> list[Question]:
    return [Question.from_json(item) for item in json.loads(text)]
