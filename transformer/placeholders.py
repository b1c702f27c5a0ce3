"""Names and numbers as placeholders: the model reads and writes ⟨1⟩, ⟨2⟩, ... in their place.

A subword model copies a name it has never seen piece by piece, and long or unusual spellings come
out with pieces dropped or doubled ("Oluwaseun" -> "Oluwase"). A checkpoint trained with
placeholders (`ModelConfig.placeholders` > 0: the last ids of its vocabulary) instead reads each
name, number and clock time of the source as one placeholder token, writes that token where the
entity belongs, and the text of the translation puts the entity back. The attention maps show the
placeholder tokens themselves, because they are what the model read and wrote.

What counts as an entity (`find_entities`): a number of digits or a clock time; a capitalised word
that the training data copies unchanged into German ("Tom", "Berlin": `copied_words`) or that the
training English never holds ("Oluwaseun"); in text typed all in one case, any word the training
English never holds. Words German translates ("Monday", "Germany", "English") are not entities.

Training marks the same entities in its text with the placeholder strings themselves ("My name is
⟨1⟩."), and `encode_with_placeholders` turns each such span into the placeholder's id, as it does
for the entity spans of a typed sentence.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Encoding

from .tokenizer import PLACEHOLDER, TextTokenizer

COPIED_WORDS_FILE = "copied_words.txt"  # in a checkpoint directory: one word a line
PLACEHOLDER_SPAN = re.compile(r"⟨(\d)⟩")
_MARK = 0xE000  # first of the private-use characters `write_placeholders` marks with

# A clock time or a plain number: "3,500" and "2.5" stay text, as training never marks them (German writes
# "3.500" and "2,5"). A word: letters, or letters joined by hyphens ("Jean-Luc"); it ends at an apostrophe.
_CLOCK = r"\d{1,2}:\d{2}"
_WORD = r"[^\W\d_]+(?:-[^\W\d_]+)*"
_TOKEN = re.compile(rf"(?<![\w:.,])(?:{_CLOCK}|\d+)(?!\w|[.,:]\d)|(?<![\w'’-]){_WORD}")


@dataclass(frozen=True)
class Entity:
    start: int  # character span in the prepared text
    end: int
    text: str


def placeholder_text(k: int) -> str:
    """The text of placeholder number `k` (0-based): "⟨1⟩" for 0."""
    return PLACEHOLDER.format(k + 1)


def find_entities(text: str, known: Callable[[str], bool], copied: set[str], one_case: bool,
                  limit: int) -> list[Entity]:
    """The entities of a prepared sentence, left to right, at most `limit` distinct texts (later ones are
    left as text). `known(word)`: the training English holds the word; `copied`: capitalised words the
    training data copies; `one_case`: the sentence was typed all in lower or all in upper case."""
    found, distinct = [], set()
    for match in _TOKEN.finditer(text):
        word = match.group()
        unseen = not all(known(part) for part in word.split("-"))
        if word[:1].isdigit():
            is_entity = True
        elif word[:1].isupper():
            is_entity = word in copied or unseen
        else:
            is_entity = one_case and unseen
        if not is_entity or (word not in distinct and len(distinct) == limit):
            continue
        distinct.add(word)
        found.append(Entity(match.start(), match.end(), word))
    return found


def marked_spans(text: str) -> list[tuple[int, int, int]]:
    """(start, end, k) of every placeholder string ("⟨1⟩": k = 0) written in `text` (training data)."""
    return [(m.start(), m.end(), int(m.group(1)) - 1) for m in PLACEHOLDER_SPAN.finditer(text)]


def entity_spans(entities: Sequence[Entity]) -> tuple[list[tuple[int, int, int]], list[str]]:
    """(start, end, k) of each entity, the same k for the same text, and the text of each k."""
    texts: list[str] = []
    spans = []
    for e in entities:
        if e.text not in texts:
            texts.append(e.text)
        spans.append((e.start, e.end, texts.index(e.text)))
    return spans, texts


def splice(encoding: Encoding, spans: Sequence[tuple[int, int, int]], first_id: int) -> list[int]:
    """The ids of `encoding` with the tokens of each character span (start, end, k) replaced by the one
    id `first_id + k`. A bare word-start piece "▁" just before a span goes with it: the placeholder
    stands for the whole word."""
    ids, tokens, offsets = encoding.ids, encoding.tokens, encoding.offsets
    out: list[int] = []
    j = 0
    for start, end, k in sorted(spans):
        while j < len(ids) and offsets[j][1] <= start:
            out.append(ids[j])
            j += 1
        if out and tokens[j - 1] == "▁" and offsets[j - 1][1] == start:
            out.pop()
        covered = False
        while j < len(ids) and offsets[j][0] < end:
            covered, j = True, j + 1
        if covered:
            out.append(first_id + k)
    return out + list(ids[j:])


def write_placeholders(text: str, patterns: Sequence[str]) -> str:
    """`text` with every match of `patterns[k]` (regular expressions) written as placeholder k. Each match
    becomes a private-use character first: "⟨1⟩" holds a digit that a later number's pattern would match."""
    for k, pattern in enumerate(patterns):
        text = re.sub(pattern, chr(_MARK + k), text)
    return "".join(placeholder_text(ord(c) - _MARK) if _MARK <= ord(c) < _MARK + len(patterns) else c for c in text)


def mark_entities(text: str, entities: Sequence[str]) -> str:
    """`text` (a reference translation) with each whole-word occurrence of `entities[k]` written as placeholder
    k, as training marks targets (a name also before German's genitive s: "Ayos" -> "⟨1⟩s")."""
    ends = [r"(?!\w|[.,:]\d)" if e[:1].isdigit() else r"(?=s?\b)" for e in entities]
    return write_placeholders(text, [rf"(?<![\w:.,]){re.escape(e)}{end}" for e, end in zip(entities, ends)])


def encode_marked(tokenizer: TextTokenizer, texts: list[str], first_id: int) -> list[list[int]]:
    """`tokenizer.encode_batch(texts)`, with each placeholder string a text holds ("⟨1⟩") as the id
    `first_id + k` (training pairs from `transformer.training.augment.with_placeholders`)."""
    encodings = tokenizer.encodings(texts)
    return [splice(e, marked_spans(t), first_id) if "⟨" in t else e.ids for t, e in zip(texts, encodings)]


def read_copied_words(directory: Path) -> set[str]:
    path = Path(directory) / COPIED_WORDS_FILE
    return set(path.read_text(encoding="utf-8").split()) if path.is_file() else set()


def write_copied_words(words: set[str], directory: Path) -> None:
    (Path(directory) / COPIED_WORDS_FILE).write_text("".join(f"{w}\n" for w in sorted(words)), encoding="utf-8")
