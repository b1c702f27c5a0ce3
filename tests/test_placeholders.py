"""Names and numbers as placeholders (transformer/placeholders.py): which words become placeholders,
how their tokens are spliced, that training text and typed text give the same ids, and the way back."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from transformer.config import ModelConfig
from transformer.decoding import Hypothesis, PlaceholderRule, beam_search, greedy_decode
from transformer.hub import CheckpointError, load_checkpoint, save_checkpoint
from transformer.model import Transformer
from transformer.placeholders import (
    candidates, encode_marked, entity_spans, find_entities, mark_entities, splice, with_titles,
)
from transformer.tokenizer import TextTokenizer
from transformer.training.augment import copied_words, placeholder_pairs, with_placeholders
from transformer.training.trainer import grown_vocabulary
from transformer.translator import Translator

ROOT = Path(__file__).resolve().parents[1]
KNOWN = {"my", "name", "is", "i", "met", "in", "on", "monday", "at", "and", "the", "didn", "t", "see", "well", "known",
         "tom", "germany", "it", "or", "car", "dog", "s", "v", "brother", "has", "eggs", "since", "time"}


def known(word: str) -> bool:
    return word.lower() in KNOWN


@pytest.fixture(scope="module")
def tokenizer() -> TextTokenizer:
    return TextTokenizer.from_file(ROOT / "checkpoints" / "en-de" / "tokenizer.json")


def texts(text: str, one_case: bool = False, copied: frozenset = frozenset({"Tom"}), limit: int = 8) -> list[str]:
    return [e.text for e in find_entities(text, known, set(copied), one_case, limit)]


def test_numbers_clock_times_copied_and_unseen_names_are_entities():
    assert texts("I met Tom and Wairimu in Germany on Monday at 6:45 in 1983.") == ["Tom", "Wairimu", "6:45", "1983"]
    assert texts("My name is Oluwaseun-Ade.") == ["Oluwaseun-Ade"]


def test_a_number_is_the_whole_expression_and_words_inside_others_stay_text():
    assert texts("It is 3,500 or 2.5 or v2 or 12:30:11.") == ["3,500", "2.5", "12:30:11"]
    assert texts("Tom's car didn't see Quillon's dog.") == ["Tom", "Quillon"]


def test_unseen_lower_case_words_count_only_in_text_typed_in_one_case():
    assert texts("my name is wairimu") == []
    assert texts("my name is wairimu", one_case=True) == ["wairimu"]
    assert texts("my well-known name", one_case=True) == []


def test_at_most_limit_distinct_entities_and_repeats_share_one():
    found = find_entities("Tom met Ayo, Tom met Ebi and 12.", known, {"Tom"}, False, limit=2)
    spans, entities = entity_spans(found)
    assert entities == ["Tom", "Ayo"] and [k for *_, k in spans] == [0, 1, 0]


def test_splice_replaces_a_whole_word_with_one_id(tokenizer):
    text = "My name is Oluwaseun, I met Tom's dog in 1983."
    spans, entities = entity_spans(find_entities(text, known, {"Tom"}, False, 8))
    ids = splice(tokenizer.encodings([text])[0], spans, first_id=tokenizer.vocab_size)
    tokenizer.placeholders = 8
    tokens = tokenizer.ids_to_tokens(ids)
    assert entities == ["Oluwaseun", "Tom", "1983"]
    assert tokens == ["▁My", "▁name", "▁is", "⟨1⟩", ",", "▁I", "▁met", "⟨2⟩", "'", "s", "▁dog", "▁in", "⟨3⟩", "."]
    assert tokenizer.decode(ids, entities) == text


def test_training_marks_give_the_ids_typed_entities_give(tokenizer):
    cases = [("My name is Wairimu.", ["Wairimu"]), ("Tom has 12 eggs since 6:45.", ["Tom", "12", "6:45"]),
             ("Wairimu's brother", ["Wairimu"])]
    for typed, entities in cases:
        marked = typed
        for k, entity in enumerate(entities):
            marked = marked.replace(entity, f"⟨{k + 1}⟩")
        spans, _ = entity_spans(find_entities(typed, known, {"Tom"}, False, 8))
        expected = splice(tokenizer.encodings([typed])[0], spans, first_id=tokenizer.vocab_size)
        assert encode_marked(tokenizer, [marked], first_id=tokenizer.vocab_size) == [expected]
        dropout = tokenizer.with_dropout(0.5)  # any segmentation of the rest: the placeholder is one id
        assert all(tokenizer.vocab_size in encode_marked(dropout, [marked], tokenizer.vocab_size)[0] for _ in range(5))


def test_decode_drops_a_placeholder_the_source_did_not_have(tokenizer):
    tokenizer.placeholders = 8
    ids = tokenizer.encode("Ich sah.")
    ids[-1:-1] = [tokenizer.vocab_size + 1, tokenizer.vocab_size]  # ⟨2⟩ ⟨1⟩ before the full stop
    assert tokenizer.decode(ids, ["Ayo"]) == "Ich sah Ayo."
    assert tokenizer.decode(tokenizer.encode("Ich sah.")) == "Ich sah."


def test_with_placeholders_numbers_entities_in_source_order():
    src, tgt = with_placeholders("Ayo met Ebi 1 time at 6:45.", "Um 6:45 traf Ayo Ebi 1 Mal.", limit=8)
    assert (src, tgt) == ("⟨1⟩ met ⟨2⟩ ⟨3⟩ time at ⟨4⟩.", "Um ⟨4⟩ traf ⟨1⟩ ⟨2⟩ ⟨3⟩ Mal.")
    assert with_placeholders("On Monday.", "Am Montag.", limit=8) is None
    assert with_placeholders("Ayo, Ebi and Femi.", "Ayo, Ebi und Femi.", limit=2) is None
    assert placeholder_pairs(["On Monday.", "Ayo is here."], ["Am Montag.", "Ayo ist hier."], 8) == (
        ["⟨1⟩ is here."], ["⟨1⟩ ist hier."])


def test_copied_words_are_names_the_targets_keep():
    src = ["Ayo is here.", "On Monday Ayo left.", "Monday is fine.", "Germany is big.", "Ayo met Bea."]
    tgt = ["Ayo ist hier.", "Am Montag ging Ayo.", "Montag ist gut.", "Deutschland ist groß.", "Ayo traf Bea."]
    assert copied_words(src, tgt) == {"Ayo", "Bea"}


def test_fine_tuning_grows_the_vocabulary_for_placeholders():
    small = Transformer(ModelConfig(src_vocab_size=20, tgt_vocab_size=20, d_model=16, n_heads=2, d_ff=32,
                                    n_encoder_layers=1, n_decoder_layers=1))
    config = ModelConfig(src_vocab_size=23, tgt_vocab_size=23, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1,
                         n_decoder_layers=1, placeholders=3)
    grown = grown_vocabulary(small.state_dict(), config)
    model = Transformer(config)
    model.load_state_dict(grown)
    assert torch.equal(model.src_embed.weight[:20], small.src_embed.weight)
    assert model.generator.weight.data_ptr() == model.src_embed.weight.data_ptr()


def test_a_placeholder_checkpoint_round_trips_and_translates(tmp_path, tokenizer):
    config = ModelConfig(src_vocab_size=tokenizer.vocab_size + 2, tgt_vocab_size=tokenizer.vocab_size + 2,
                         d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, placeholders=2)
    save_checkpoint(Transformer(config), tokenizer, tmp_path, copied_words={"Ayo"})
    model = load_checkpoint(tmp_path)
    assert model.copied_words == {"Ayo"} and model.tokenizer.placeholders == 2
    translator = Translator(model, model.tokenizer)
    result = translator.translate("Ayo met Ebi at 6:45 in 1983.", max_len=4)
    # no truecase model, so every word counts as seen: Ebi stays text; at most 2 placeholders: 1983 too
    assert result.entities == ("Ayo", "6:45") and result.src_tokens[0] == "⟨1⟩" and "⟨2⟩" in result.src_tokens
    texts = ["Ayo and Ebi met Femi at 6:45.", "AYO IS HERE", "nothing to copy"]
    assert translator.translate_batch(texts, method="greedy") == [translator.translate(t, method="greedy").text
                                                                  for t in texts]
    assert translator.translate_batch(["", "  "]) == ["", ""]
    with pytest.raises(ValueError, match="must be a string"):
        translator.translate_batch([None])
    config.placeholders = 3
    save_checkpoint(Transformer(config), tokenizer, tmp_path)  # 3 placeholders, vocabulary for 2
    with pytest.raises(CheckpointError, match="placeholders do not fit"):
        load_checkpoint(tmp_path)


class FavouringPlaceholders(Transformer):
    """A random model whose output layer always prefers the placeholders (ids 10 and 11 of 12)."""

    def project(self, hidden: torch.Tensor) -> torch.Tensor:
        logits = super().project(hidden)
        logits[..., 10:] += 30.0
        return logits


@pytest.mark.parametrize("method", ["greedy", "beam"])
def test_the_search_writes_only_placeholders_the_source_holds(method):
    torch.manual_seed(0)
    model = FavouringPlaceholders(ModelConfig(src_vocab_size=12, tgt_vocab_size=12, d_model=16, n_heads=2, d_ff=32,
                                              n_encoder_layers=1, n_decoder_layers=1, placeholders=2)).eval()
    src = torch.tensor([[5, 10, 6, 3], [5, 6, 7, 3]])  # ⟨1⟩ in the first sentence, no placeholder in the second
    if method == "greedy":
        outputs = [[h.tokens] for h in greedy_decode(model, src, max_len=6).hypotheses]
    else:
        outputs = [[h.tokens for h in hyps] for hyps in beam_search(model, src, beam_size=3, max_len=6).hypotheses]
    assert all(11 not in tokens for tokens in outputs[0]) and any(10 in tokens for tokens in outputs[0])
    assert all(10 not in tokens and 11 not in tokens for tokens in outputs[1])


def test_hypotheses_that_write_every_placeholder_rank_first():
    model = Transformer(ModelConfig(src_vocab_size=12, tgt_vocab_size=12, d_model=16, n_heads=2, d_ff=32,
                                    n_encoder_layers=1, n_decoder_layers=1, placeholders=2))
    rule = PlaceholderRule(model, torch.tensor([[10, 11, 3], [4, 5, 3]]))
    short, partial, full = Hypothesis([4, 3], -1.0, -1.0), Hypothesis([10, 3], -2.0, -2.0), \
        Hypothesis([11, 10, 3], -3.0, -3.0)
    assert rule.covering_first([[short, partial, full], [short, partial]]) == [[full, short, partial],
                                                                                [short, partial]]


def test_a_number_entity_never_matches_inside_an_earlier_placeholder():
    assert mark_entities("Ayo hat 1 Hund und 12 Katzen.", ["Ayo", "1", "12"]) == "⟨1⟩ hat ⟨2⟩ Hund und ⟨3⟩ Katzen."


def test_a_reference_is_marked_as_training_marks_targets(tokenizer):
    marked = mark_entities("Ayo traf Ayos Bruder um 6:45 und 16:45, nicht 6.", ["Ayo", "6:45", "6"])
    assert marked == "⟨1⟩ traf ⟨1⟩s Bruder um ⟨2⟩ und 16:45, nicht ⟨3⟩."
    ids = encode_marked(tokenizer, [marked], tokenizer.vocab_size)[0]
    assert ids[0] == tokenizer.vocab_size and ids.count(tokenizer.vocab_size) == 2
    assert ids.count(tokenizer.vocab_size + 1) == 1 and ids.count(tokenizer.vocab_size + 2) == 1


@pytest.mark.parametrize("text,entity", [
    ("We met Mr. Tanaka at the station.", "Mr. Tanaka"), ("Ask Mrs. Oyelaran about the key.", "Mrs. Oyelaran"),
    ("Dr. Smith is late again.", "Dr. Smith"), ("They walked to St. Kilda after school.", "St. Kilda"),
])
def test_a_title_and_the_name_after_it_are_one_entity(text, entity):
    """Apart, the title's dot reads as the end of a sentence; together they are one name, copied whole."""
    found = find_entities(text, known=lambda w: w.lower() in {"smith", "st"}, copied={"Mr", "Dr"}, one_case=False,
                          limit=8)
    assert entity in [e.text for e in found]
    assert not any(e.text in (entity.split(".")[0], entity.split(" ")[1]) for e in found)  # neither part alone


def test_a_title_not_before_a_name_stays_as_it_was():
    words = candidates("The Dr. said no. Mr. 5 and Dr.smith")
    assert [w[2] for w in with_titles("The Dr. said no. Mr. 5 and Dr.smith", words)] == [w[2] for w in words]
