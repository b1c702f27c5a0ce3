"""Entity-swap augmentation: teach the model to copy names and numbers it has never seen.

A training pair whose source and target share a name ("Tom", "Boston") or a number ("1983",
"35", "6:45") is copied with that entity replaced on both sides by another: a number of 1-4
digits, a clock time, or a name drawn from a mixed pool of real names from many languages and
made-up ones (syllables joined at random). The model cannot memorise the substitutes, so it
learns to copy the subword pieces (digits are single tokens) from source to target.

Only entities written identically on both sides are swapped, which is what makes the swap safe:
"6:45" in the source and "6.45" in the target is left alone, and so is a word German inflects.
"""
from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence

from transformer.placeholders import Entity, candidates, entity_spans, is_number, mark_entities, write_spans

# Real first names and places from many languages. The held-out names-and-numbers test set
# (tests/data/names_numbers.tsv) uses other names, so its score measures copying, not recall.
NAMES = (
    "Aiko Akira Alejandro Amara Anouk Arjun Astrid Ayesha Bao Bjorn Bruno Camille Chidi Chiara Dalia Darius "
    "Deniz Dilnoza Elif Emeka Esra Farid Fatima Femi Florin Gaurav Giulia Hana Haruto Hamza Ines Ingrid Ivana "
    "Jae Jana Javier Jin Joaquim Kalinda Kamal Kenji Khadija Kiri Lars Leila Lindiwe Luca Maelle Malik Mateus "
    "Mei Mihail Milan Mira Nadia Naledi Nikos Noor Olek Omar Paulo Priya Quentin Rahel Rania Ravi Rosa Saanvi "
    "Sakura Samir Sanna Sebastien Shira Sione Soren Sunita Tadeo Taini Tamar Tariq Teodora Thabo Tomasz Uma "
    "Valentina Vikram Wanjiru Xiadani Yara Yusuf Zainab Zeynep Zoltan Amsterdam Ankara Asuncion Baku Bamako "
    "Bergen Bogota Bordeaux Brno Cusco Daegu Dakar Dhaka Durban Faro Fukuoka Gdansk Graz Hanoi Harare Izmir "
    "Jaipur Kampala Kaunas Kiev Kyoto Lagos Lima Lisbon Lyon Malmo Manila Medellin Minsk Mombasa Nantes Oaxaca "
    "Osaka Oslo Perth Porto Quito Riga Rosario Salvador Sapporo Seville Tallinn Tampere Toulouse Trieste "
    "Utrecht Valencia Vilnius Windhoek Yerevan Zagreb"
).split()

_SYLLABLES = ("ka ri to mi sa lu na be do fe gi ha jo ke la mo ne pi ra si ta vo wa ya zu an el in or us "
              "bri dra fla gro kle pra sta tri").split()

# Sounds spelled the ways many languages spell them ("Tbilisi", "Nguyen", "Oluwaseun", "Dzhamila"), so the
# model meets letter sequences no English or German word has and learns to copy any spelling.
_ONSETS = ("b br c ch d dj dm dz f g gw h j k kh kw l m mb n ng nk ny p ph q r s sh sk sv t tb th ts "
           "tz v w x y z zh").split()
_VOWELS = "a e i o u a e i o u a e i o u ai au ei ia ie io ou ue y".split()
_CODAS = ("",) * 12 + ("n", "r", "s", "l", "k", "m", "sh", "x", "t", "ng")

_NUMBER = re.compile(r"(?<![\d:.,])\d{1,4}(?![\d:.,]\d)")
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}\b")
_NAME = re.compile(r"\b[A-Z][a-z]{2,}\b")


def made_up_name(rng: random.Random) -> str:
    """A pronounceable name no corpus holds: two or three syllables, capitalised."""
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((2, 2, 3)))).capitalize()


def spelled_name(rng: random.Random) -> str:
    """A made-up name of 2-3 syllables from onsets, vowels and codas of many spelling systems."""
    syllables = (rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(rng.randint(2, 3)))
    return "".join(syllables).capitalize()


def substitute_name(rng: random.Random) -> str:
    """A real name from NAMES, a made-up syllable name or a made-up spelled name, a third each."""
    draw = rng.random()
    return rng.choice(NAMES) if draw < 1 / 3 else made_up_name(rng) if draw < 2 / 3 else spelled_name(rng)


def substitute_number(original: str, rng: random.Random) -> str:
    """A number of 1-4 digits; a year-like original gets a year-like substitute half the time."""
    if len(original) == 4 and rng.random() < 0.5:
        return str(rng.randint(1800, 2099))
    return str(rng.randint(0, 10 ** rng.randint(1, 4) - 1))


def shared_entities(src: str, tgt: str) -> list[tuple[str, str]]:
    """(kind, text) of every clock time, number and name written identically on both sides."""
    found = [("clock", m) for m in set(_CLOCK.findall(src)) if m in tgt]
    rest_src, rest_tgt = _CLOCK.sub(" ", src), _CLOCK.sub(" ", tgt)
    found += [("number", m) for m in set(_NUMBER.findall(rest_src)) if re.search(rf"(?<!\d){m}(?!\d)", rest_tgt)]
    found += [("name", m) for m in set(_NAME.findall(src)) if re.search(rf"\b{m}\b", tgt)]
    return sorted(found)


def _pattern(old: str, digits: bool) -> str:
    # a name also inside German's genitive ("Toms Auto"), keeping the s
    return rf"(?<!\d){re.escape(old)}(?!\d)" if digits else rf"\b{re.escape(old)}(?=s?\b)"


def _replace(text: str, old: str, new: str, digits: bool) -> str:
    return re.sub(_pattern(old, digits), lambda _: new, text)


def swap_entities(src: str, tgt: str, rng: random.Random) -> tuple[str, str] | None:
    """The pair with every shared entity replaced by a fresh one on both sides; None if it has none."""
    entities = shared_entities(src, tgt)
    if not entities:
        return None
    for kind, old in entities:
        if kind == "clock":
            new = f"{rng.randint(0, 23)}:{rng.randint(0, 59):02d}"
        elif kind == "number":
            new = substitute_number(old, rng)
        else:
            new = substitute_name(rng)
        src, tgt = _replace(src, old, new, kind != "name"), _replace(tgt, old, new, kind != "name")
    return src, tgt


def entity_swapped_pairs(sources: Sequence[str], targets: Sequence[str], name_copies: int, number_copies: int,
                         seed: int) -> tuple[list[str], list[str]]:
    """Swapped versions of every pair that shares an entity: `number_copies` of those holding a number
    or clock time (rare in the corpora, so oversampled), `name_copies` of the others (deterministic)."""
    rng = random.Random(seed)
    out_src, out_tgt = [], []
    for src, tgt in zip(sources, targets):
        entities = shared_entities(src, tgt)
        if not entities:
            continue
        copies = number_copies if any(kind != "name" for kind, _ in entities) else name_copies
        for _ in range(copies):
            swapped = swap_entities(src, tgt, rng)
            out_src.append(swapped[0])
            out_tgt.append(swapped[1])
    return out_src, out_tgt


def shared_source_entities(src: str, tgt: str) -> list[Entity]:
    """The entities training marks in a pair: each word or number of the source, as the app reads words and
    numbers (`placeholders.candidates`), that is a number or capitalised (or of a script without case) and
    that the target writes identically as a whole word (a name also with German's genitive s)."""
    in_target = {text for _, _, text in candidates(tgt)}
    found = []
    for start, end, text in candidates(src):
        if not (is_number(text) or text[:1].isupper() or text[:1].lower() == text[:1].upper()):
            continue
        if text in in_target or (not is_number(text) and re.search(rf"(?<![\w'’-]){re.escape(text)}s\b", tgt)):
            found.append(Entity(start, end, text))
    return found


def with_placeholders(src: str, tgt: str, limit: int, rng: random.Random | None = None) -> tuple[str, str] | None:
    """The pair with each shared entity written as a placeholder, marked where `placeholders.candidates`
    finds it (the app's reading) and numbered as the app numbers a sentence (`placeholders.entity_spans`):
    in source order, or, given `rng`, with distinct numbers drawn from 1..limit, so that ⟨5⟩..⟨8⟩ are
    learned too. None without shared entities or with more than `limit` distinct ones."""
    found = shared_source_entities(src, tgt)
    distinct = list(dict.fromkeys(e.text for e in found))
    if not found or len(distinct) > limit:
        return None
    numbers = rng.sample(range(limit), len(distinct)) if rng is not None else None
    spans, texts = entity_spans(found, numbers)
    return write_spans(src, spans), mark_entities(tgt, texts, numbers)


def placeholder_pairs(sources: Sequence[str], targets: Sequence[str], limit: int, seed: int | None = None
                      ) -> tuple[list[str], list[str]]:
    """`with_placeholders` of every pair that shares an entity; numbered at random (deterministic in `seed`)
    unless `seed` is None."""
    rng = random.Random(seed) if seed is not None else None
    out = [p for p in (with_placeholders(s, t, limit, rng) for s, t in zip(sources, targets)) if p is not None]
    return [s for s, _ in out], [t for _, t in out]


def copied_words(sources: Sequence[str], targets: Sequence[str], min_share: float = 0.5) -> set[str]:
    """Capitalised source words that the target writes unchanged in at least `min_share` of the pairs
    holding them ("Tom", "Boston"; not "Monday" or "Germany"): names the placeholders stand for."""
    seen: Counter[str] = Counter()
    copied: Counter[str] = Counter()
    for src, tgt in zip(sources, targets):
        seen.update({text for _, _, text in candidates(src) if text[:1].isupper()})
        copied.update({e.text for e in shared_source_entities(src, tgt) if e.text[:1].isupper()})
    return {w for w, n in copied.items() if n >= min_share * seen[w]}
