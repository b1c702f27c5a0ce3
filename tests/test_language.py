"""A sentence in the language the model does not read is said so, and the model that reads it offered: the detector
(transformer/explorer/core/language.py) both ways, on sentences of our own, and never on names or loanwords."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from transformer.explorer.core.language import counts, other_language

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_lesson_quotes import en_de_int8  # noqa: E402,F401  (the app on the shipped checkpoints, int8)

GERMAN = ["Das ist nachdeutig Satz.", "Ich bin heute sehr müde geworden.", "Wo ist der Bahnhof?", "Meine Schwester wohnt mit ihrem Mann in Berlin.",
          "Er hat keine Zeit für uns.", "Wir gehen heute ins Kino, weil es regnet."]
ENGLISH = ["This is a sentence.", "I am tired of it.", "Where is the old station of this town?", "My sister lives with her husband.",
           "He has no time for us.", "We are going to the cinema because it is raining."]
# names and loanwords in the model's own language: never flagged
EN_WITH_GERMAN_WORDS = ["Der Kindergarten", "I love Sauerkraut", "The Kindergarten is closed.",
                        "We ate Bratwurst at the Oktoberfest.", "Angst and Zeitgeist", "Das Boot is a film.",
                        'He said "Ich bin ein Berliner" to the crowd.', "Die Hard"]
DE_WITH_ENGLISH_WORDS = ["Ich liebe Sauerkraut", "Das Meeting ist um neun.", "Wir haben ein Update.",
                         "The Beatles", "Sie hört The Who.", "Der Computer ist kaputt."]


@pytest.mark.parametrize("text", GERMAN)
def test_german_into_en_de_reads_as_german(text):
    assert other_language(text, "en") == "de"
    assert other_language(text, "de") is None


@pytest.mark.parametrize("text", ENGLISH)
def test_english_into_de_en_reads_as_english(text):
    assert other_language(text, "de") == "en"
    assert other_language(text, "en") is None


@pytest.mark.parametrize("text", EN_WITH_GERMAN_WORDS)
def test_names_and_loanwords_in_english_are_not_flagged(text):
    assert other_language(text, "en") is None


@pytest.mark.parametrize("text", DE_WITH_ENGLISH_WORDS)
def test_names_and_loanwords_in_german_are_not_flagged(text):
    assert other_language(text, "de") is None


def test_one_small_word_alone_is_not_enough():
    """The price of never flagging a name: a sentence with only one small word of the other language is let
    through: about one in five of a corpus of short everyday sentences."""
    assert other_language("Meine Schwester wohnt in Berlin.", "en") is None
    assert other_language("I am sleepy today.", "de") is None


def test_short_or_empty_input_says_nothing():
    for text in ("", "   ", "Danke.", "Hello", "42", "Nakuru", "⟨1⟩"):
        assert other_language(text, "en") is None and other_language(text, "de") is None


def test_counts_ignore_case_and_read_curly_apostrophes():
    assert counts("DAS IST gut") == {"en": 0, "de": 2}
    assert counts("I don\u2019t know") == {"en": 2, "de": 0}


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="reads must be one of"):
        other_language("Hallo", "fr")
    assert other_language(None, "en") is None  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- the offer, in Chromium


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_page_offers_the_model_that_reads_the_sentence(en_de_int8):
    """German typed into en-de: the notes say so and "Translate with de-en" switches the model and translates in
    one press (the address bar follows); English into de-en offers en-de; a loanword sentence offers nothing."""
    from urllib.parse import urlencode

    from test_browser import chromium
    from test_stage import open_at, views_drawn

    offer, notes = "#other-model", "#notice textarea"
    with chromium() as browser:
        page, (_, _, errors) = open_at(browser, en_de_int8.url + "?" + urlencode({"text": GERMAN[0]}), 1280, 720)
        views_drawn(page)
        assert "looks German" in page.locator(notes).input_value()
        button = page.locator(offer)
        assert button.is_visible() and button.inner_text().strip() == "Translate with de-en"
        button.click()
        page.wait_for_function("document.querySelector('#explorer .explorer').__explorer.payload?.model === 'de-en'")
        views_drawn(page)
        page.wait_for_function("location.search.includes('model=de-en')")  # the address bar follows the model
        assert page.locator("#model input").input_value() == "de-en"
        assert "looks" not in page.locator(notes).input_value() and not page.locator(offer).is_visible()
        assert page.locator("#translation textarea").input_value().strip()
        for model, text, offered in (("de-en", ENGLISH[0], "Translate with en-de"), ("en-de", "I love Sauerkraut", None)):
            page, (_, _, more) = open_at(browser, en_de_int8.url + "?" + urlencode({"text": text, "model": model}),
                                         1280, 720)
            views_drawn(page)
            if offered:
                assert page.locator(offer).inner_text().strip() == offered
            else:
                assert not page.locator(offer).is_visible() and "looks" not in page.locator(notes).input_value()
            errors += more
        assert errors == []
