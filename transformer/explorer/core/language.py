"""Which language a typed sentence is in, where the evidence is clear: English or German, from the small words every
sentence of a language is made with (articles, pronouns, auxiliaries, prepositions). Names and loanwords are not
among them, so "Der Kindergarten" or "I love Sauerkraut" read as nothing or as their own language; a sentence is
called the other language only when at least two of its words are that language's small words and they outnumber
the model's own language's two to one. Words both languages write alike ("in", "was", "will", "so") count for
neither. No model is run: the check is instant and the same for every checkpoint."""
from __future__ import annotations

import logging
import re

log = logging.getLogger(__name__)

FUNCTION_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset("""the a an and or but is are were be been being has have had do does did not to of on at for with
        from by this that these those it he she we they you i my your his her our their me him us them what who
        where when why how there here very can would should could if than then yes some just because about into out
        up its too isn't don't doesn't didn't can't won't i'm it's you're they're we're there's""".split()),
    "de": frozenset("""der die das den dem des ein eine einen einem einer eines und oder aber ist sind waren bin bist
        hat habe hast haben nicht kein keine keinen zu von mit auf für aus bei nach über unter ich du er sie es wir
        ihr mich mir dich dir uns euch mein meine meinen dein deine sein seine unser unsere wer wo wie warum wann
        hier dort sehr kann können muss auch noch schon nur dass weil wenn ob als gern heute jetzt ja nein doch im
        vom zum zur wird werden wurde sich diese dieser dieses gibt""".split()),
}
CODES = tuple(FUNCTION_WORDS)  # the languages told apart
MIN_EVIDENCE = 2  # the other language's small words a sentence needs at least
WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


def counts(text: str) -> dict[str, int]:
    """How many of `text`'s words are each language's small words (case ignored)."""
    words = [w.lower().replace("\u2019", "'") for w in WORD.findall(text.replace("\u2019", "'"))]
    return {lang: sum(w in FUNCTION_WORDS[lang] for w in words) for lang in CODES}


def other_language(text: str, reads: str) -> str | None:
    """The language `text` is clearly written in when it is not `reads` (the model's source language), else None.
    `reads` must be one of `CODES`."""
    if reads not in FUNCTION_WORDS:
        raise ValueError(f"reads must be one of {CODES}, got {reads!r}")
    if not isinstance(text, str):
        return None
    found = counts(text)
    own = found[reads]
    for lang, n in found.items():
        if lang != reads and n >= MIN_EVIDENCE and n > 2 * own:
            log.info("the sentence reads as %s (%d small words against %d of %s)", lang, n, own, reads)
            return lang
    return None
