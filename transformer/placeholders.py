"""Names and numbers as placeholders: the model reads and writes ⟨1⟩, ⟨2⟩, ... in their place.

A subword model copies a name it has never seen piece by piece, and long or unusual spellings come
out with pieces dropped or doubled ("Oluwaseun" -> "Oluwase"). A checkpoint trained with
placeholders (`ModelConfig.placeholders` > 0: the last ids of its vocabulary) instead reads each
name, number and clock time of the source as one placeholder token, writes that token where the
entity belongs, and the text of the translation puts the entity back. The attention maps show the
placeholder tokens themselves, because they are what the model read and wrote.

What counts as an entity (`find_entities`, over the words and numbers `candidates` finds): a number,
the whole expression as typed ("1,250", "12/05/1990", "$5", "3rd"); a capitalised word that the training
data copies unchanged into German ("Tom", "Berlin": `copied_words`) or that the training English never
holds ("Oluwaseun", "O'Brien"); a word of a script without case that it never holds; in text typed all
in one case, any word the training English never holds. Words German translates ("Monday", "Germany",
"English") are not entities. At most `ModelConfig.placeholders` distinct ones; the rest stay text.

Training marks the entities a pair shares with the same lexer and numbering
(`transformer.training.augment.with_placeholders`), writing the placeholder strings themselves ("My name
is ⟨1⟩."), and `encode_marked` turns each such span into the placeholder's id, as `splice` does for the
entity spans of a typed sentence.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Encoding

from .tokenizer import PLACEHOLDER, TextTokenizer

COPIED_WORDS_FILE = "copied_words.txt"  # in a checkpoint directory: one word a line
PLACEHOLDER_SPAN = re.compile(r"⟨(\d)⟩")
_MARK = 0xE000  # first of the private-use characters `write_placeholders` marks with

# What is one entity, as typed. Numbers keep their value, so a number is the whole expression: digit groups
# joined by separators ("1,000", "3.50", "12/05/1990", "3-1", "18-25", "555-1234", "6:45"), with a sign at a
# word start ("-5"), a currency sign ("$5", "€3.50", "5€"), "%" or an ordinal suffix ("3rd") attached, or an
# international phone number ("+49 30 1234567"). It is written back exactly as typed (not in German notation).
# A word: letters of any script, joined by hyphens ("Jean-Luc") or by an apostrophe before a capital
# ("O'Brien", "D'Angelo"); other apostrophes end it ("Tom's", "don't").
_SIGN, _CURRENCY, _SEPARATORS = "-−+", "$€£¥", ".,:/\\-–"
_NUMBER = (rf"(?:\+\d+(?:[ .\-/]\d+)+|(?:(?<!\S)[{_SIGN}](?=[{_CURRENCY}]?\d))?[{_CURRENCY}]?\d+(?:[{_SEPARATORS}]\d+)*"
           rf"(?:st|nd|rd|th|%|[{_CURRENCY}])?)(?!\w|[{_SEPARATORS}]\d)")


def _mark_ranges() -> str:
    """The combining marks of the Basic Multilingual Plane as a character-class body: Arabic vowel signs and
    Devanagari matras are no `\\w`, but they belong inside a word."""
    marks = [c for c in range(0x300, 0x10000) if unicodedata.category(chr(c)).startswith("M")]
    ranges, start = [], marks[0]
    for prev, cur in zip(marks, marks[1:] + [-1]):
        if cur != prev + 1:
            ranges.append(f"\\u{start:04x}-\\u{prev:04x}")
            start = cur
    return "".join(ranges)


_LETTERS = rf"[^\W\d_](?:[^\W\d_]|[{_mark_ranges()}])*"
_WORD = rf"{_LETTERS}(?:-{_LETTERS}|['’](?=[^\W\d_a-z]){_LETTERS})*"
_ELIDED = re.compile(rf"(?<![\w'’-])([^\W\d_])['’]({_LETTERS})(?![\w'’])")  # o'brien, d'angelo: cased or not
_TOKEN = re.compile(rf"(?<![\w{_SEPARATORS}{_CURRENCY}+])(?:{_NUMBER})|(?<![\w'’-]){_WORD}")


def is_number(text: str) -> bool:
    return any(c.isdigit() for c in text)


def candidates(text: str) -> list[tuple[int, int, str]]:
    """(start, end, text) of every word and number of `text` that could be an entity: the one lexer of the
    app's reading (`find_entities`) and of training's marking (`training.augment.with_placeholders`)."""
    return [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text)]


@dataclass(frozen=True)
class Entity:
    start: int  # character span in the prepared text
    end: int
    text: str


def placeholder_text(k: int) -> str:
    """The text of placeholder number `k` (0-based): "⟨1⟩" for 0."""
    return PLACEHOLDER.format(k + 1)


TITLES = ("Mr", "Mrs", "Ms", "Dr", "Prof", "St")  # before a name, with their dot: one entity with the name


def with_titles(text: str, words: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """`words` (`candidates(text)`) with each title, its dot and the capitalised word after it as one:
    "Mr. Tanaka". Apart, the title's dot read as a sentence's end ("Wir haben Mr getroffen. Tanaka ...")."""
    out: list[tuple[int, int, str]] = []
    i = 0
    while i < len(words):
        start, end, word = words[i]
        after = words[i + 1] if i + 1 < len(words) else None
        if (word in TITLES and after is not None and after[2][:1].isupper() and not is_number(after[2])
                and re.fullmatch(r"\.\s+", text[end:after[0]])):
            out.append((start, after[1], text[start:after[1]]))
            i += 2
            continue
        out.append(words[i])
        i += 1
    return out


def find_entities(text: str, known: Callable[[str], bool], copied: set[str], one_case: bool,
                  limit: int) -> list[Entity]:
    """The entities of a prepared sentence, left to right, at most `limit` distinct texts (later ones are
    left as text). `known(word)`: the training English holds the word; `copied`: capitalised words the
    training data copies; `one_case`: the sentence was typed all in lower or all in upper case. A title
    before a name is one entity with it (`with_titles`)."""
    found, distinct = [], set()
    elided = {}  # "o'brien" typed in one case: a letter, an apostrophe and a word the training English never holds
    if one_case:
        elided = {m.start(): (m.end(), m.group()) for m in _ELIDED.finditer(text) if not known(m.group(2))}
    for start, end, word in with_titles(text, candidates(text)):
        if start in elided:
            end, word = elided[start]
        if word.split(".", 1)[0] in TITLES and " " in word:  # "Mr. Smith": a name, whatever its words
            if word in distinct or len(distinct) < limit:
                distinct.add(word)
                found.append(Entity(start, end, word))
            continue
        unseen = not all(known(part) for part in word.split("-"))  # "O'Brien" is one part, "well-known" two
        if is_number(word):
            is_entity = True
        elif word[:1].isupper():
            is_entity = word in copied or unseen
        elif word[:1].lower() == word[:1].upper():  # a script without case (Arabic, Chinese, ...)
            is_entity = unseen
        else:
            is_entity = one_case and unseen
        if not is_entity or (word not in distinct and len(distinct) == limit):
            continue
        distinct.add(word)
        found.append(Entity(start, end, word))
    return found


def marked_spans(text: str) -> list[tuple[int, int, int]]:
    """(start, end, k) of every placeholder string ("⟨1⟩": k = 0) written in `text` (training data)."""
    return [(m.start(), m.end(), int(m.group(1)) - 1) for m in PLACEHOLDER_SPAN.finditer(text)]


def entity_spans(entities: Sequence[Entity], numbers: Sequence[int] | None = None
                 ) -> tuple[list[tuple[int, int, int]], list[str]]:
    """(start, end, k) of each entity, the same k for the same text, and the text of each distinct entity.
    k is the entity's rank among distinct texts, left to right (as the app reads a sentence), or
    `numbers[rank]` (training numbers them at random, so that every placeholder is learned)."""
    texts: list[str] = []
    spans = []
    for e in entities:
        if e.text not in texts:
            texts.append(e.text)
        rank = texts.index(e.text)
        spans.append((e.start, e.end, rank if numbers is None else numbers[rank]))
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


def write_placeholders(text: str, patterns: Sequence[str], numbers: Sequence[int] | None = None) -> str:
    """`text` with every match of `patterns[i]` (regular expressions) written as placeholder `numbers[i]`
    (default i). Each match becomes a private-use character first: "⟨1⟩" holds a digit that a later number's
    pattern would match."""
    numbers = list(range(len(patterns))) if numbers is None else list(numbers)
    for i, pattern in enumerate(patterns):
        text = re.sub(pattern, chr(_MARK + i), text)
    return "".join(placeholder_text(numbers[ord(c) - _MARK]) if _MARK <= ord(c) < _MARK + len(patterns) else c
                   for c in text)


def mark_entities(text: str, entities: Sequence[str], numbers: Sequence[int] | None = None) -> str:
    """`text` (a reference translation) with each whole-word occurrence of `entities[i]` written as placeholder
    `numbers[i]` (default i), as training marks targets (a name also before German's genitive s: "Ayos" ->
    "⟨1⟩s")."""
    ends = [rf"(?!\w|[{_SEPARATORS}]\d)" if is_number(e) else r"(?=s?\b)" for e in entities]
    starts = [rf"(?<![\w{_SEPARATORS}{_CURRENCY}+])" if is_number(e) else r"(?<![\w'’-])" for e in entities]
    return write_placeholders(text, [rf"{a}{re.escape(e)}{b}" for e, a, b in zip(entities, starts, ends)], numbers)


def write_spans(text: str, spans: Sequence[tuple[int, int, int]]) -> str:
    """`text` with each character span (start, end, k) written as placeholder k: a source marked exactly
    where the entities were found, so "Tom" is never found inside "Tomorrow"."""
    for start, end, k in sorted(spans, reverse=True):
        text = text[:start] + placeholder_text(k) + text[end:]
    return text


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
