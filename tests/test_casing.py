"""How typed text becomes the model's input (transformer/casing.py), and the one input path: `translate`,
`translate_batch`, evaluation and the app prepare a sentence the same way."""
from __future__ import annotations

from pathlib import Path

import pytest

from transformer.casing import TRUECASE_FILE, Truecaser, case_form, prepare_source, unshout
from transformer.hub import CheckpointError, load_checkpoint
from transformer.training.evaluate import translate_texts
from transformer.translator import load_pretrained

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "checkpoints" / "en-de"
# Our own sentences: the casing a small truecaser learns from them.
OWN = ["Yesterday I saw Ingeborg in Hamburg.", "Do you know where Ingeborg lives?", "We drove from Hamburg to Kiel.",
       "The little museum is shut on Mondays.", "My friend and I like the sea.", "Is the train to Kiel late again?"]


@pytest.fixture(scope="module")
def small() -> Truecaser:
    return Truecaser.train(OWN)


def test_case_form():
    assert case_form("MY NAME IS ANNA.") == "upper" and case_form("my name is anna") == "lower"
    assert case_form("My name is Anna.") == "mixed" and case_form("I") == "mixed" and case_form("42!") == "mixed"
    assert unshout("ÜBER ALLES") == "über alles" and unshout("I met NASA people.") == "I met NASA people."


def test_all_caps_input_keeps_a_name_the_training_data_knows(small):
    assert small("WE DROVE FROM KIEL TO HAMBURG.") == "We drove from Kiel to Hamburg."
    assert small("is ingeborg in kiel?") == "Is Ingeborg in Kiel?"
    assert small("I SAW INGEBORG ON MONDAYS") == "I saw Ingeborg on Mondays"


def test_unknown_words_in_shouted_text_are_names_in_lower_case_text_they_stay(small):
    assert small("MY FRIEND SIGRUN IS LATE.") == "My friend Sigrun is late."
    assert small("my friend sigrun is late.") == "My friend sigrun is late."


def test_only_the_case_of_letters_changes(small):
    for text in ["THE TRAIN LEAVES AT 6:45!", "  two  spaces,  \"quotes\" & <b>tags</b> ", "ÄRGER IN KIEL?!",
                 "İSTANBUL IS FAR", "hamburg—kiel: 97 km"]:
        out = prepare_source(text, small)
        assert out.lower() == text.lower() or out == text, (text, out)


def test_mixed_case_text_is_left_as_typed(small):
    assert prepare_source("i met Ingeborg in hamburg", small) == "i met Ingeborg in hamburg"
    assert prepare_source("MY FRIEND", None) == "my friend"  # no truecase model: the old lowercasing


def test_truecase_model_round_trips_through_a_checkpoint(small, tmp_path):
    small.save(tmp_path / TRUECASE_FILE)
    assert Truecaser.from_file(tmp_path / TRUECASE_FILE)("WE DROVE TO KIEL.") == "We drove to Kiel."


def test_a_corrupt_truecase_model_is_a_clear_checkpoint_error(tmp_path):
    directory = tmp_path / "ckpt"
    directory.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (directory / name).write_bytes((ROOT / "checkpoints" / "toy-copy" / name).read_bytes())
    (directory / TRUECASE_FILE).write_bytes(b"\xff\xfe not a model")
    with pytest.raises(CheckpointError, match="truecase"):
        load_checkpoint(directory)


@pytest.fixture(scope="module")
def default():
    return load_pretrained(DEFAULT)


def test_the_shipped_truecaser_restores_names_of_the_training_data(default):
    assert default.prepare("MY SISTER LIVES IN BERLIN.") == "My sister lives in Berlin."
    assert default.prepare("my sister lives in berlin") == "My sister lives in Berlin"
    assert "Berlin" in default.translate("MY SISTER LIVES IN BERLIN.").text


MIXED = ["WHERE DOES YOUR BROTHER WORK?", "my sister lives in berlin", "Tomorrow we will visit Greta in Hamburg.",
         "the shop opens at 9:30", "She paid 45 euros for the tickets.", "I HAVE 3 CATS AND 2 DOGS", "",
         "did you see the film yesterday", "We moved to Tbilisi in 1983."]


@pytest.mark.parametrize("method, beam", [("beam", 5), ("greedy", 1)])
def test_one_input_path_batch_equals_single_equals_evaluation(default, method, beam):
    batch = default.translate_batch(MIXED, method=method, beam_size=beam)
    for text, out in zip(MIXED, batch, strict=True):
        assert out == (default.translate(text, method=method, beam_size=beam).text if text else "")
    assert translate_texts(default, MIXED, method=method, beam_size=beam) == batch
