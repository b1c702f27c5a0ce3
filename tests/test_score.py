"""`Translator.score`: the log-probability of a given translation, through the same input path as `translate`."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from transformer.translator import load_pretrained

EN_DE = Path(__file__).resolve().parents[1] / "checkpoints" / "en-de"
OURS = ["We drink tea at five.", "My friend Oluwaseun moved to Plovdiv in 1983.", "The children play in the garden.",
        "She reads a book on the train.", "Tomorrow Ayo will meet Tom at 7:30.", "My grandmother bakes bread on Sundays.",
        "The train to Leipzig leaves at 8:15.", "Our teacher is very friendly.", "I have two brothers and one sister.",
        "The dog is sleeping under the table."]


@pytest.fixture(scope="module")
def translator():
    return load_pretrained(EN_DE)  # float32: the search and the score use the same weights


def test_the_models_own_output_scores_its_search_log_probability(translator):
    matched = 0
    for text in OURS:
        result = translator.translate(text, beam_size=4)
        (score,) = translator.score([text], [result.text])
        # the output text tokenises back into the output tokens, unless the search wrote a word in smaller pieces
        # than the tokenizer cuts it (BPE-dropout taught the model those too: "Tee" as "T", "e", "e")
        if score.ids == result.candidates[0].ids:
            matched += 1
            assert score.log_prob == pytest.approx(result.log_prob, abs=1e-4)
    assert matched >= 7


def test_per_token_log_probabilities_add_up_to_the_total(translator):
    scores = translator.score(OURS[:3], ["Wir trinken um fünf Tee.", "Mein Freund Oluwaseun zog 1983 nach Plovdiv.",
                                         "Die Kinder spielen im Garten."])
    for s in scores:
        assert len(s.token_log_probs) == len(s.tokens) == len(s.ids) and s.tokens[-1] == "<eos>"
        assert math.fsum(s.token_log_probs) == pytest.approx(s.log_prob, abs=1e-9)
        assert all(lp <= 0 for lp in s.token_log_probs)


def test_a_batch_scores_as_each_alone(translator):
    pairs = [("We drink tea at five.", "Wir trinken Tee um fünf."), ("The children play.", "Die Kinder spielen.")]
    together = translator.score([p[0] for p in pairs], [p[1] for p in pairs])
    for (src, tgt), s in zip(pairs, together, strict=True):
        assert s.log_prob == pytest.approx(translator.score([src], [tgt])[0].log_prob, abs=1e-4)


def test_entities_are_placeholders_on_both_sides(translator):
    (s,) = translator.score(["My friend Oluwaseun moved to Plovdiv in 1983."],
                            ["Mein Freund Oluwaseun ist 1983 nach Plovdiv gezogen."])
    assert {"⟨1⟩", "⟨2⟩", "⟨3⟩"} <= set(s.tokens)
    assert not any("Oluwaseun" in t or "Plovdiv" in t for t in s.tokens)


def test_a_grammatical_translation_scores_above_its_broken_twin(translator):
    good, bad = translator.score(["My little cousin paints the kitchen."] * 2,
                                 ["Meine kleine Cousine streicht die Küche.", "Mein kleine Cousine streicht die Küche."])
    assert good.log_prob > bad.log_prob


@pytest.mark.parametrize("sources,translations,message", [
    (["A dog runs."], [""], "empty"),
    (["A dog runs."], ["   "], "empty"),
    ([""], ["Ein Hund rennt."], "empty"),
    (["A dog runs."], ["Hund " * 400], "too long"),
    (["A dog runs.", "A cat."], ["Ein Hund rennt."], "2 sources but 1"),
    ("A dog runs.", "Ein Hund rennt.", "lists"),
    (["A dog runs."], [None], "string"),
])
def test_bad_input_is_a_clear_value_error(translator, sources, translations, message):
    with pytest.raises(ValueError, match=message):
        translator.score(sources, translations)


def test_a_forced_translation_has_its_score_and_the_maps_of_that_token_sequence(translator):
    text, mine = "My friend Oluwaseun moved to Plovdiv in 1983.", "Mein Freund Oluwaseun zog 1983 nach Plovdiv."
    forced = translator.force(text, mine)
    (score,) = translator.score([text], [mine])
    assert forced.candidates[0].ids == score.ids and forced.text == mine
    assert forced.log_prob == pytest.approx(score.log_prob, abs=1e-4)
    assert [s.probability for s in forced.steps] == pytest.approx([math.exp(x) for x in score.token_log_probs],
                                                                    rel=1e-4)
    # the same maps attention_for gives for that token sequence
    again = translator.attention_for(forced)
    for kind in ("encoder", "decoder", "cross"):
        assert (getattr(forced.attention, kind) == getattr(again, kind)).all()
    assert forced.attention.cross.shape[2] == len(score.ids)
    with pytest.raises(ValueError, match="empty"):
        translator.force(text, "  ")
