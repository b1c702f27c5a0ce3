"""Entity-swap augmentation (training/augment.py) and the rare-word selection split (training/rare_split.py)."""
from __future__ import annotations

import random

import pytest

from transformer.training.augment import (
    NAMES,
    entity_swapped_pairs,
    shared_entities,
    spelled_name,
    substitute_name,
    swap_entities,
)
from transformer.training.corpora import CorpusSpec
from transformer.training.data import DataError
from transformer.training.entities import read_entity_set, survives
from transformer.training.rare_split import normalise, rare_indices, split_rare, split_rare_between


def test_shared_entities_are_the_ones_written_the_same_on_both_sides():
    found = shared_entities("Ingeborg paid 35 euros at 6:45 in Kiel.", "Ingeborg zahlte um 6:45 in Kiel 35 Euro.")
    assert found == [("clock", "6:45"), ("name", "Ingeborg"), ("name", "Kiel"), ("number", "35")]
    assert shared_entities("The train leaves at 6:45.", "Der Zug fährt um 6.45 Uhr.") == []
    assert shared_entities("I have 135 books.", "Ich habe 13 Bücher.") == []  # 13 is no whole number there


def test_a_swap_replaces_each_entity_consistently_on_both_sides():
    rng = random.Random(3)
    for _ in range(50):
        src, tgt = swap_entities("Ingeborg met Ingeborg's brother in 1983.", "Ingeborg traf 1983 Ingeborgs Bruder.", rng)
        name, year = src.split()[0], src.split()[-1].rstrip(".")
        assert name != "Ingeborg" and src.count(name) == 2 and tgt.count(name) == 2
        assert year.isdigit() and year in tgt and "1983" not in tgt


def test_number_pairs_are_oversampled_and_pairs_without_entities_skipped():
    src = ["Ingeborg is here.", "We have 12 eggs.", "It is raining."]
    tgt = ["Ingeborg ist hier.", "Wir haben 12 Eier.", "Es regnet."]
    out_src, out_tgt = entity_swapped_pairs(src, tgt, name_copies=1, number_copies=4, seed=0)
    assert len(out_src) == 5 and sum("eggs" in s for s in out_src) == 4
    assert out_src == entity_swapped_pairs(src, tgt, 1, 4, seed=0)[0]  # deterministic


def test_the_names_and_numbers_set_holds_no_name_the_augmentation_draws():
    rows = read_entity_set("tests/data/names_numbers.tsv")
    assert len(rows) >= 150
    entities = {e for _, es in rows for e in es}
    assert not entities & set(NAMES)
    assert sum(e.isdigit() for e in entities) >= 50 and sum(e.isalpha() for e in entities) >= 50


def test_substitute_names_mix_real_syllable_and_spelled_names():
    rng = random.Random(3)
    names = [substitute_name(rng) for _ in range(600)]
    real = sum(n in NAMES for n in names)
    assert 120 < real < 280  # a third real names, the rest made up
    spelled = [spelled_name(random.Random(i)) for i in range(200)]
    assert all(n[0].isupper() and n[1:].islower() and n.isalpha() and 4 <= len(n) <= 21 for n in spelled)
    assert len(set(spelled)) > 190  # no corpus holds them, and they rarely repeat


def test_survival_rules():
    assert survives("6:45", "Der Zug fährt um 6.45 Uhr.") and survives("6:45", "um 6:45")
    assert not survives("6:45", "um 16:45") and not survives("35", "kostet 355 Euro") and survives("35", "35 Euro.")
    assert survives("Greta", "Mein Name ist Greta.") and not survives("Greta", "Mein Name ist Gretas.")
    assert survives("greta", "Ich heiße Greta.", any_case=True) and not survives("greta", "Ich heiße Greta.")


OWN_EN = ["I like the zeppelin.", "I like the sea.", "I like the sea!", "We like the sea.", "We saw a quokka.",
          "i like the ZEPPELIN", "We like the sea!"]
OWN_DE = ["Ich mag den Zeppelin.", "Ich mag das Meer.", "Ich mag das Meer!", "Wir mögen das Meer.",
          "Wir sahen ein Quokka.", "ich mag den Zeppelin", "Wir mögen das Meer!"]


def test_rare_split_takes_rare_words_and_drops_their_duplicates_from_train():
    assert rare_indices(OWN_EN, size=10, max_count=1) == [4]  # "quokka" once; "zeppelin" twice
    assert rare_indices(OWN_EN, size=10, max_count=2) == [0, 4, 5]
    (train_en, train_de), (held_en, held_de) = split_rare(OWN_EN, OWN_DE, size=1)
    assert len(held_en) == 1 and held_de[0] == OWN_DE[OWN_EN.index(held_en[0])]
    assert normalise(held_en[0]) not in {normalise(s) for s in train_en}
    dropped = [s for s in OWN_EN if normalise(s) == normalise(held_en[0]) and s != held_en[0]]
    assert sorted(train_en + held_en + dropped) == sorted(OWN_EN)
    (_, _), (held_zeppelin, _) = split_rare(OWN_EN[:1] + OWN_EN[1:], OWN_DE, size=3)
    assert "i like the ZEPPELIN" in held_zeppelin


def test_german_to_english_holds_out_the_pairs_english_to_german_does():
    """Chosen on the English side either way, so the two directions are compared on the same pairs."""
    forward = split_rare_between(OWN_EN, OWN_DE, "en", "de", size=3)
    backward = split_rare_between(OWN_DE, OWN_EN, "de", "en", size=3)
    assert backward[1] == (forward[1][1], forward[1][0]) and backward[0] == (forward[0][1], forward[0][0])
    assert split_rare(OWN_DE, OWN_EN, size=3)[1][0] != backward[1][0]  # the German side alone picks others


def test_the_tatoeba_rare_split_is_disjoint_from_train():
    corpus = CorpusSpec("tatoeba-en-de")
    try:
        src, tgt = corpus.load("train", "en", "de")
    except DataError:
        pytest.skip("Tatoeba data not present (../shared/data/tatoeba-en-de)")
    (train_en, _), (held_en, held_de) = split_rare(src, tgt)
    assert len(held_en) == 1000 and (held_en, held_de) == corpus.load("rare", "en", "de")
    assert not {normalise(s) for s in held_en} & {normalise(s) for s in train_en}
