"""Our minimal-pair set and its check (`python -m transformer.training.minimal_pairs`)."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from transformer.training.minimal_pairs import DEFAULT_FILE, pair_rates, read_pairs
from transformer.translator import load_pretrained

CHECKPOINTS = Path(__file__).resolve().parents[1] / "checkpoints"


def test_the_set_holds_at_least_100_pairs_in_four_categories_each_with_one_error():
    rows = read_pairs(DEFAULT_FILE)
    counts = Counter(r[0] for r in rows)
    assert len(rows) >= 100 and set(counts) == {"np_agreement", "sv_agreement", "negation", "word_order"}
    assert min(counts.values()) >= 25
    for category, _, correct, wrong in rows:
        assert correct != wrong
        if category == "word_order":  # the same words, in another order
            words = [sorted(s.translate(str.maketrans("", "", ",.?!")).split()) for s in (correct, wrong)]
            assert words[0] == words[1]
        elif category != "negation":  # one word changed
            assert len(correct.split()) == len(wrong.split())
            assert sum(a != b for a, b in zip(correct.split(), wrong.split())) == 1


def test_a_malformed_line_is_a_clear_error(tmp_path):
    bad = tmp_path / "pairs.tsv"
    bad.write_text("np_agreement\tThe dog.\tDer Hund.\n", encoding="utf-8")
    with pytest.raises(ValueError, match="pairs.tsv:1"):
        read_pairs(bad)


def test_the_everyday_model_knows_negation_that_the_captions_model_never_saw():
    rows = [r for r in read_pairs(DEFAULT_FILE) if r[0] == "negation"]
    everyday = pair_rates(load_pretrained(CHECKPOINTS / "en-de"), rows)
    captions = pair_rates(load_pretrained(CHECKPOINTS / "multi30k-en-de"), rows)
    assert everyday["negation"]["rate"] >= 90  # 100 for the shipped en-de
    assert captions["negation"]["rate"] <= 50  # 20: image captions hardly ever say what is not there
    assert len(everyday["failures"]) + len(captions["failures"]) == round(
        (200 - everyday["negation"]["rate"] - captions["negation"]["rate"]) * len(rows) / 100)
