"""The one input path, typed text to what the model reads and back, for every class of name and number:
which spans become placeholders (with the shipped en-de's own truecaser and copied words), and how the
translation writes them back. Training marks a pair's entities with the same lexer and numbering."""
from __future__ import annotations

import random
import re
import unicodedata
from pathlib import Path

import pytest

from transformer.hub import load_checkpoint
from transformer.placeholders import candidates, encode_marked, entity_spans, find_entities, write_spans
from transformer.translator import Translator
from transformer.training.augment import with_placeholders

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def translator() -> Translator:
    model = load_checkpoint(ROOT / "checkpoints" / "en-de")
    return Translator(model, model.tokenizer)


# typed -> the entities the model reads as placeholders ⟨1⟩, ⟨2⟩, ... (in order)
READS = [
    ("It costs 1,000 dollars.", ["1,000"]),
    ("It costs 3.50 euros.", ["3.50"]),
    ("It weighs 2.5 kilograms.", ["2.5"]),
    ("The town has 1,250,000 people.", ["1,250,000"]),
    ("It was -5 degrees outside.", ["-5"]),
    ("We met on 12/05/1990.", ["12/05/1990"]),
    ("The train leaves at 6:45.", ["6:45"]),
    ("The final score was 3-1.", ["3-1"]),
    ("Ages 18-25 only.", ["18-25"]),
    ("Call 555-1234 today.", ["555-1234"]),
    ("Call +49 30 1234567 today.", ["+49 30 1234567"]),
    ("It is my 3rd visit.", ["3rd"]),
    ("Prices rose by 12%.", ["12%"]),
    ("It costs $5 or €3.50.", ["$5", "€3.50"]),
    ("Zoë lives in Tórshavn.", ["Zoë", "Tórshavn"]),
    ("I met O'Brien yesterday.", ["O'Brien"]),
    ("D'Angelo is here.", ["D'Angelo"]),
    ("i met o'brien yesterday.", ["o'brien"]),  # typed in lower case: still one name
    ("it is 6 o'clock and i don't know.", ["6"]),  # a contraction is no name
    ("Oluwaseun-Ade is here.", ["Oluwaseun-Ade"]),
    ("My colleague 王芳 wrote.", ["王芳"]),
    ("I wrote سلمى on the card.", ["سلمى"]),
    ('He said "Wairimu" twice.', ["Wairimu"]),
    ("My friend (Oluwaseun) is here.", ["Oluwaseun"]),
    ("Ayo, Ebi, Kofi, Ama and Yaw came to the party.", ["Ayo", "Ebi", "Kofi", "Ama", "Yaw"]),
    ("I AM FROM THE UK.", ["UK"]),
    ("Tom's car is red.", ["Tom"]),  # the possessive stays English text
]


@pytest.mark.parametrize("typed,entities", READS, ids=[t for t, _ in READS])
def test_the_model_reads_each_entity_as_one_placeholder(translator, typed, entities):
    source = translator.source(typed)
    assert list(source.entities) == entities
    tokens = translator.tokenizer.ids_to_tokens(source.ids)
    assert [t for t in tokens if t.startswith("⟨")] == [f"⟨{k + 1}⟩" for k in range(len(entities))]


def test_decomposed_accents_read_as_the_composed_text(translator):
    typed = "Zoë lives in Tórshavn."
    nfd = unicodedata.normalize("NFD", typed)
    assert nfd != typed
    assert translator.source(nfd) == translator.source(typed)


# the model's output ids -> text: each placeholder written back with the punctuation around it as typed
WRITES = [
    ("Er sagte „⟨1⟩“ zweimal.", ["Wairimu"], "Er sagte „Wairimu“ zweimal."),
    ('Er sagte "⟨1⟩" und "⟨2⟩".', ["Wairimu", "Ayo"], 'Er sagte "Wairimu" und "Ayo".'),
    ("Mein Freund (⟨1⟩) ist hier (⟨2⟩).", ["Ayo", "14"], "Mein Freund (Ayo) ist hier (14)."),
    ("Er heißt »⟨1⟩« und wohnt in ‚⟨2⟩‘.", ["Ayo", "Kumasi"], "Er heißt »Ayo« und wohnt in ‚Kumasi‘."),
    ("Es kostet ⟨1⟩ Dollar.", ["1,000"], "Es kostet 1,000 Dollar."),
    ("⟨1⟩ wohnt in ⟨2⟩.", ["Zoë", "Tórshavn"], "Zoë wohnt in Tórshavn."),
    ("⟨1⟩s Auto.", ["Tom"], "Toms Auto."),
]


@pytest.mark.parametrize("written,entities,text", WRITES, ids=[t for *_, t in WRITES])
def test_placeholders_are_written_back_with_their_punctuation(translator, written, entities, text):
    tok = translator.tokenizer
    ids = encode_marked(tok, [written], tok.vocab_size)[0]  # what the model writes for that text
    assert sum(i >= tok.vocab_size for i in ids) == written.count("⟨")
    assert tok.decode(ids, entities) == text


def test_entities_past_the_placeholders_are_read_as_text_and_reported(translator):
    names = ["Ayo", "Ebi", "Kofi", "Ama", "Yaw", "Esi", "Kojo", "Adwoa", "Akosua", "Kwame"]
    result = translator.translate(", ".join(names[:-1]) + " and " + names[-1] + " came.", method="greedy")
    assert list(result.entities) == names[:8] and list(result.as_text) == names[8:]
    assert len(result.placeholder_counts()) == 8


MARKED = [  # a pair, and its source marked as training marks it (entities the target shares)
    ("Tomorrow Ayo will meet Tom.", "Morgen trifft Ayo Tom.", "Tomorrow ⟨1⟩ will meet ⟨2⟩."),
    ("Tom met Tomasz at 6:45 in 1983.", "Tom traf Tomasz um 6:45 im Jahr 1983.", "⟨1⟩ met ⟨2⟩ at ⟨3⟩ in ⟨4⟩."),
    ("It costs 1,250 dollars, not 12.", "Es kostet 1,250 Dollar, nicht 12.", "It costs ⟨1⟩ dollars, not ⟨2⟩."),
    ("I met O'Brien and Zoë.", "Ich traf O'Brien und Zoë.", "I met ⟨1⟩ and ⟨2⟩."),
    ("Ayo saw Ayo's dog.", "Ayo sah Ayos Hund.", "⟨1⟩ saw ⟨1⟩'s dog."),
]


@pytest.mark.parametrize("src,tgt,marked", MARKED, ids=[s for s, *_ in MARKED])
def test_training_marks_a_pair_where_the_app_reads_its_entities(src, tgt, marked):
    source, target = with_placeholders(src, tgt, limit=8)
    assert source == marked
    # the app, deciding the same words are names (copied), reads the same spans with the same numbers
    in_target = {text for _, _, text in candidates(tgt)}
    names = {text for _, _, text in candidates(src) if text[:1].isupper() and text in in_target}
    spans, texts = entity_spans(find_entities(src, lambda w: True, names, one_case=False, limit=8))
    assert write_spans(src, spans) == source
    assert sorted(set(re.findall(r"⟨\d⟩", target))) == sorted(set(re.findall(r"⟨\d⟩", source)))
    assert not any(text in target.split() for text in texts)


def test_random_numbering_keeps_the_spans_and_only_renames_the_placeholders():
    src, tgt = "Tomorrow Ayo will meet Tom.", "Morgen trifft Ayo Tom."
    in_order = with_placeholders(src, tgt, limit=8)
    seen = set()
    for seed in range(20):
        source, target = with_placeholders(src, tgt, limit=8, rng=random.Random(seed))
        numbers = re.findall(r"⟨(\d)⟩", source)
        assert len(set(numbers)) == 2 and re.findall(r"⟨(\d)⟩", target) == numbers
        rank = {n: str(i + 1) for i, n in enumerate(numbers)}
        assert re.sub(r"⟨(\d)⟩", lambda m: f"⟨{rank[m.group(1)]}⟩", source) == in_order[0]
        seen.update(numbers)
    assert len(seen) >= 6  # ⟨5⟩ to ⟨8⟩ are drawn too


def test_the_steps_view_lists_only_what_the_search_could_choose(translator):
    result = translator.translate("My friend Oluwaseun moved to Plovdiv.", method="greedy", top_k=20)
    assert len(result.entities) == 2
    listed = {token for step in result.steps for token, _ in step.top_k}
    allowed = {"⟨1⟩", "⟨2⟩"}
    assert not {t for t in listed if t.startswith("⟨")} - allowed
    assert not listed & {"<pad>", "<bos>"}
    for step in result.steps:  # the chosen token's probability is the one the list shows for it
        shown = dict(step.top_k)
        assert step.token not in shown or abs(shown[step.token] - step.probability) < 1e-6
