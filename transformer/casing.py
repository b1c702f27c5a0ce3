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
        plain = text.lower() if shouted else text
        if len(plain) != len(text):  # a letter whose lower case is longer ("İ"): leave the text alone
            return text
        tokens = self._tokenizer.tokenize(plain, escape=False)
        cased = self._truecaser.truecase(" ".join(tokens))
        if shouted:  # a word never seen in training, in a shouted sentence: a name
            cased = [t if self.knows(t) or not t.isalpha() else t.capitalize() for t in cased]
        if cased:
            cased[0] = cased[0][:1].upper() + cased[0][1:]  # training sources start with a capital
        return _recase(plain, cased)


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
