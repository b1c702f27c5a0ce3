"""Do names and numbers survive the default model? Our own set of 160 sentences (tests/data/names_numbers.tsv),
typed as written and in UPPER CASE, greedy decoding (the beam-5 rates are in the README).

The floor is a regression guard a few points below what the shipped model measures: 95.2 % greedy in each form
with placeholders (98.4 % at beam 5; the issue's goal is 95 %); 66.7 % before placeholders, 6.0 % before the
entity-swap fine-tunes (see the README)."""
from __future__ import annotations

from pathlib import Path

import pytest

from transformer.training.entities import entity_rates, read_entity_set
from transformer.translator import load_pretrained

ROOT = Path(__file__).resolve().parents[1]
FLOOR = 92.0  # greedy, en-de: 93.7 % in every form (98.4 % at beam 5)


@pytest.fixture(scope="module")
def en_de():
    """The shipped en-de, loaded once for the module's two tests of it (they only translate)."""
    return load_pretrained(ROOT / "checkpoints" / "en-de")


def test_names_and_numbers_survive_at_least_as_often_as_measured(en_de):
    rows = read_entity_set(ROOT / "tests" / "data" / "names_numbers.tsv")
    rates = entity_rates(en_de, rows, method="greedy",
                         forms=("as written", "UPPER CASE"))
    for form in ("as written", "UPPER CASE"):
        assert rates[form]["rate"] >= FLOOR, (form, rates[form]["rate"], rates[form]["lost"][:5])
        assert rates[form]["entities"] == sum(len(e) for _, e in rows)


# The second set (tests/data/names_numbers_forms.tsv): separators, dates, scores, currency, accents, apostrophes,
# other scripts, brackets, many names, acronyms. The shipped en-de measures 96.1 / 95.1 / 93.2 / 96.1 % greedy
# (as written, lower case, UPPER CASE, NFD; 99.0 / 99.0 / 97.1 / 99.0 % at beam 5); the floor leaves two of the
# 103 entities' room for another CPU's float32 rounding.
FORMS_FLOOR = 91.0


def test_every_input_form_keeps_the_harder_names_and_numbers_at_least_as_often_as_measured(en_de):
    rows = read_entity_set(ROOT / "tests" / "data" / "names_numbers_forms.tsv")
    rates = entity_rates(en_de, rows, method="greedy")
    for form in ("as written", "lower case", "UPPER CASE", "NFD"):
        assert rates[form]["rate"] >= FORMS_FLOOR, (form, rates[form]["rate"], rates[form]["lost"][:5])


# The same 160 sentences in German (tests/data/names_numbers_de.tsv), for the model that reads German: de-en
# keeps them as often as en-de keeps the English ones, greedy (docs/model.md has its rates).
FLOOR_DE_EN = 94.0


def test_names_and_numbers_survive_the_german_reading_model():
    rows = read_entity_set(ROOT / "tests" / "data" / "names_numbers_de.tsv")
    rates = entity_rates(load_pretrained(ROOT / "checkpoints" / "de-en"), rows, method="greedy",
                         forms=("as written", "UPPER CASE"))
    for form in ("as written", "UPPER CASE"):
        assert rates[form]["rate"] >= FLOOR_DE_EN, (form, rates[form]["rate"], rates[form]["lost"][:5])
        assert rates[form]["entities"] == sum(len(e) for _, e in rows) == 252
