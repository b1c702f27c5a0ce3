"""How the page names a token: the model's pieces as shown, escaped for Plotly, and grouped into words.

The model's pieces carry "▁" (U+2581, the SentencePiece word-start mark): "▁ri" starts a word, "des" continues
it. On screen a piece that starts a word is shown bare ("ri") and a piece that continues one gets a leading "·"
("·des"); a lone "▁" (a word about to start) shows as "␣" (`display_token`). Word labels (`word_groups`) have no
mark at all. Every label that goes into a Plotly figure goes through `escape_label`, because Plotly renders a
subset of HTML in text. `token_text` is how the inside panels name a token ("▁" as a space, a placeholder with
the entity it stands for).

No plotly, no torch: strings in, strings out.
"""
from __future__ import annotations

import functools
import html
import re
import unicodedata
from collections.abc import Sequence

from transformer.placeholders import placeholder_text
from transformer.tokenizer import SPECIAL_TOKENS

__all__ = ["WORD_MARK", "HIDDEN_BY_DEFAULT", "PLACEHOLDER_TOKEN", "escape_label", "display_token", "choice_label",
           "labels", "short_label", "word_groups", "token_text", "named_token", "read_tokens"]

WORD_MARK = "\u2581"  # "▁", SentencePiece's word-start mark
PLACEHOLDER_TOKEN = re.compile(r"⟨\d⟩")  # a name or number the model reads as one token (transformer.placeholders)
HIDDEN_BY_DEFAULT = ("<bos>", "<eos>", "<pad>")  # what "Hide <bos>/<eos>" hides
CONTINUES = "\u00b7"  # "·": the piece continues the word before it
SPACE = "\u2423"  # "␣": a lone word-start mark (the next piece starts a new word)
LABEL_CACHE = 1 << 14  # labels remembered: a payload labels the same few hundred pieces over and over


@functools.lru_cache(maxsize=LABEL_CACHE)
def escape_label(token: str) -> str:
    """Make a token safe to show literally in Plotly text, ticks and hover.

    Escapes &, <, > (Plotly parses tags such as <b>, <br>, <a href>) and $ (a
    "$...$" string is typeset as LaTeX when MathJax is on the page); Plotly
    decodes the entities back, so the token displays unchanged. An empty token
    becomes "∅" so that it does not vanish from an axis.
    """
    if token == "":
        return "\u2205"
    return html.escape(token, quote=False).replace("$", "&#36;")


@functools.lru_cache(maxsize=LABEL_CACHE)
def display_token(token: str) -> str:
    """A piece as the page shows it: no "▁"; "·" before a piece that continues a word; "␣" for a lone "▁";
    special tokens, punctuation and placeholders as they are."""
    if token in SPECIAL_TOKENS or PLACEHOLDER_TOKEN.fullmatch(token) or _is_punctuation(token):
        return token.lstrip(WORD_MARK) or token
    if token.startswith(WORD_MARK):
        return token[len(WORD_MARK):] or SPACE
    return CONTINUES + token if token else token


def choice_label(token: str) -> str:
    """A next-token choice (the steps view): as `display_token`, and a lone "▁" says what it is."""
    return SPACE + " (a new word starts)" if token == WORD_MARK else display_token(token)


def labels(tokens: Sequence[str]) -> list[str]:
    """Each token as a figure shows it: `display_token`, escaped."""
    return [escape_label(display_token(t)) for t in tokens]


def short_label(token: str, max_chars: int) -> str:
    """The token cut to `max_chars` characters (with "…"), then escaped."""
    token = display_token(token)
    return escape_label(token if len(token) <= max_chars else token[: max_chars - 1] + "\u2026")


def _is_punctuation(piece: str) -> bool:
    core = piece.lstrip(WORD_MARK)
    return bool(core) and all(unicodedata.category(c).startswith("P") for c in core)


def word_groups(tokens: Sequence[str], specials: Sequence[str] = SPECIAL_TOKENS) -> tuple[list[int], list[str]]:
    """Map BPE pieces to words: (word index per piece, word labels).

    A word starts at a piece beginning with "▁", at a special token, at a
    punctuation-only piece, at a placeholder ("⟨1⟩": a whole name or number, never
    the end of the word before it), and right after a special or punctuation-only
    piece (so "▁bike" "." stay two words and "." never swallows the next piece).
    Labels are the joined pieces without "▁" (a lone "▁" shows as "␣").
    """
    group: list[int] = []
    words: list[list[str]] = []
    prev_closed = True  # the previous piece cannot be continued
    for tok in tokens:
        special, punct = tok in specials, _is_punctuation(tok)
        if prev_closed or tok.startswith(WORD_MARK) or special or punct or PLACEHOLDER_TOKEN.fullmatch(tok):
            words.append([])
        words[-1].append(tok)
        group.append(len(words) - 1)
        prev_closed = special or punct
    word_labels = ["".join(p).replace(WORD_MARK, "") or SPACE for p in words]
    return group, word_labels


def token_text(token: str, entities: Sequence[str] = ()) -> str:
    """A model token as a person reads it: the word-start mark "▁" as a space, a placeholder with its entity."""
    for k, entity in enumerate(entities):
        if token == placeholder_text(k):
            return f"{token} {entity}"
    return token.replace(WORD_MARK, " ") if token != WORD_MARK else SPACE


def named_token(token: str, entities: Sequence[str] = ()) -> str:
    """A token named on its own (quoted in a sentence, a hover): as the maps' labels show it (`display_token`: no
    "▁", which read as a stray space inside quotes), a placeholder with its entity."""
    return token_text(token, entities) if PLACEHOLDER_TOKEN.fullmatch(token) else display_token(token)


def read_tokens(tokens: Sequence[str]) -> str:
    """Tokens read as the text they make ("▁Ein", "▁Hund" -> "Ein Hund")."""
    return "".join(token_text(t) for t in tokens).strip()
