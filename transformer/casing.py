"""How a typed sentence becomes the model's input: the one preparation every path shares.

People type in lower case and in ALL CAPS; the model is trained mostly on cased sentences. A
sentence with no upper-case letter, or with no lower-case one, is truecased: each word gets the
casing it has most often in the training data (sacremoses' Moses truecaser), so "MY SISTER LIVES
IN BERLIN." and "my sister lives in berlin" both become "My sister lives in Berlin." In shouted
text a word the truecaser has never seen is most likely a name, so it is capitalised ("GRETA" ->
"Greta"); in lower-case text it stays as typed. Sentences typed with mixed case are left alone.

A checkpoint without a truecase model (the toy tasks, older exports) falls back to what the app
did before: ALL-CAPS text is lowercased, everything else is unchanged.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from sacremoses import MosesTokenizer, MosesTruecaser

TRUECASE_FILE = "truecase.en"  # in a checkpoint directory, beside tokenizer.json


def case_form(text: str) -> str:
    """"upper", "lower" or "mixed": the casing of the letters that have one (fewer than 2: "mixed")."""
    cased = [c for c in text if c.lower() != c.upper()]
    if len(cased) < 2:
        return "mixed"
    if all(c.isupper() for c in cased):
        return "upper"
    return "lower" if all(c.islower() for c in cased) else "mixed"


def unshout(text: str) -> str:
    """ALL-CAPS text in lower case ("DID PAULINE CALL?" -> "did pauline call?"); other text unchanged.
    The preparation of checkpoints that have no truecase model."""
    return text.lower() if case_form(text) == "upper" else text


class Truecaser:
    """Moses truecasing with Moses tokenisation around it (the truecaser works on tokens)."""

    def __init__(self, truecaser: MosesTruecaser, lang: str = "en"):
        self._truecaser = truecaser
        self._tokenizer = MosesTokenizer(lang=lang)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> Truecaser:
        return cls(MosesTruecaser(load_from=str(path)))

    @classmethod
    def train(cls, sentences: Iterable[str], lang: str = "en") -> Truecaser:
        """Learn each word's most frequent casing (sentence-initial words do not count)."""
        tokenizer = MosesTokenizer(lang=lang)
        documents = [tokenizer.tokenize(s, escape=False) for s in sentences]
        truecaser = MosesTruecaser()
        truecaser.train(documents, possibly_use_first_token=False)
        return cls(truecaser, lang)

    def save(self, path: str | os.PathLike) -> None:
        self._truecaser.save_model(str(path))

    def knows(self, word: str) -> bool:
        return word.lower() in self._truecaser.model["best"]

    def __call__(self, text: str) -> str:
        """`text` in its most likely casing (see the module docstring); only letters' case changes."""
        shouted = case_form(text) == "upper"
        plain = _lower(text) if shouted else text
        tokens = self._tokenizer.tokenize(plain, escape=False)
        cased = self._truecaser.truecase(" ".join(tokens))
        if shouted:
            cased = self._names_and_acronyms(cased)
        cased = self._name_parts(cased)
        if cased:
            cased[0] = cased[0][:1].upper() + cased[0][1:]  # training sources start with a capital
        return _restore_dotted(text, _recase(plain, cased))

    def _names_and_acronyms(self, cased: list[str]) -> list[str]:
        """Shouted text, after truecasing: a word never seen in training is a name ("GRETA" -> "Greta") or, when
        it has at most two letters or no vowel, an acronym ("UK", "AI", "BBC" stay in capitals). Not a first word
        of two letters: the truecaser never learns sentence-initial words ("WE", "IT")."""
        out = []
        for i, t in enumerate(cased):
            parts = t.split("-")  # "ANNE-MARIE": each part on its own
            if not all(p.isalpha() for p in parts):
                out.append(t)
            elif len(parts) > 1:
                best = self._truecaser.model["best"]  # each part in its most frequent casing, or a name
                out.append(t if self.knows(t) else "-".join(best.get(p.lower(), p.capitalize()) for p in parts))
            elif self.knows(t):
                out.append(t)
            elif (len(t) <= 2 and i > 0) or (t.isascii() and not set(t) & set("aeiouy")):
                out.append(t.upper())
            else:
                out.append(t.capitalize())
        for i in range(1, len(out)):  # "O'BRIEN": Moses splits it into "o" and "'brien"
            before, t = out[i - 1], out[i]
            if len(before) == 1 and before.isalpha() and t[:1] in "'’" and t[1:].isalpha() and not self.knows(t[1:]):
                out[i - 1], out[i] = before.upper(), t[0] + t[1:].capitalize()
        return out

    def _name_parts(self, cased: list[str]) -> list[str]:
        """A word just before a name is part of it where training writes it capitalised often enough ("NEW
        YORK" and "new york" -> "New York", not "new York")."""
        out = list(cased)
        casing = self._truecaser.model.get("casing", {})
        for i in range(len(out) - 2, -1, -1):  # right to left: "NEW YORK CITY" chains
            word, after = out[i], out[i + 1]
            if not (word.isalpha() and word.islower() and after[:1].isupper() and after.isalpha()):
                continue
            counts = casing.get(word, {})
            capitalised = sum(n for form, n in counts.items() if form[:1].isupper())
            if counts and capitalised >= NAME_PART_SHARE * sum(counts.values()):
                out[i] = word.capitalize()
        return out


NAME_PART_SHARE = 0.05  # above how often "new" is written "New" mid-sentence in en-de's training English


def _lower(text: str) -> str:
    """Lower case letter for letter: a letter whose lower case is longer ("İ" -> "i̇") becomes one letter ("i"),
    so that every position keeps its character (`_restore_dotted` puts the original back)."""
    return "".join(low if len(low := c.lower()) == 1 else low[0] for c in text)


def _restore_dotted(typed: str, cased: str) -> str:
    """`cased` with each letter that `_lower` had to shorten back as typed where it is still a capital."""
    if len(typed) != len(cased):
        return cased
    return "".join(t if len(t.lower()) > 1 and c.isupper() else c for t, c in zip(typed, cased))


def _recase(text: str, cased_tokens: list[str]) -> str:
    """`text` with each token's letters in the case of `cased_tokens` (matched in order); spacing,
    punctuation and anything the tokenizer changed stay exactly as typed."""
    out, lower, pos = list(text), text.lower(), 0
    for token in cased_tokens:
        at = lower.find(token.lower(), pos)
        if at < 0 or len(token.lower()) != len(token):
            continue
        out[at : at + len(token)] = token
        pos = at + len(token)
    return "".join(out)


def prepare_source(text: str, truecaser: Truecaser | None) -> str:
    """The model's input for a typed sentence: truecased when it is all lower or all upper case."""
    if truecaser is None:
        return unshout(text)
    return truecaser(text) if case_form(text) != "mixed" else text


def load_truecaser(directory: Path) -> Truecaser | None:
    path = Path(directory) / TRUECASE_FILE
    return Truecaser.from_file(path) if path.is_file() else None
