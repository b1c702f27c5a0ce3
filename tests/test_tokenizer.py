"""Tokenizer: exact round trips on English/German text, fixed special ids, <unk>, save/load."""
from __future__ import annotations

import json

import pytest

from transformer.tokenizer import SPECIAL_TOKENS, TextTokenizer, toy_tokenizer, train_tokenizer

# Written for these tests (not from any corpus).
ENGLISH = [
    "The old baker sells fresh bread every morning.",
    "Two children are building a sandcastle near the water.",
    "At 7:45, the train to Munich leaves from platform 3.",
    "\"Wait!\" she shouted, and ran after the bus.",
    "A grey cat sleeps on the warm windowsill (again).",
    "It costs 12.50 euros; that's too much, isn't it?",
    "My neighbour's garden is full of yellow flowers.",
    "Three cyclists climb the steep hill in the rain.",
]
GERMAN = [
    "Der alte Bäcker verkauft jeden Morgen frisches Brot.",
    "Zwei Kinder bauen eine Sandburg in der Nähe des Wassers.",
    "Um 7:45 fährt der Zug nach München von Gleis 3 ab.",
    "„Warte!“, rief sie und lief dem Bus hinterher.",
    "Eine graue Katze schläft auf der warmen Fensterbank (schon wieder).",
    "Es kostet 12,50 Euro; das ist zu viel, oder?",
    "Der Garten meines Nachbarn ist voller gelber Blumen.",
    "Drei Radfahrer fahren bei Regen den steilen Hügel hinauf.",
    "Die Straße ist heute sehr ruhig, weiß Gott.",
    "Öfter übt Ärger über Übermut – äußerst süß!",
]
# New sentences built only from characters seen above, so no <unk> is needed.
UNSEEN = [
    "Der Bäcker weiß, dass München groß ist.",
    "Three children sell 45 flowers at 3:12 (in the rain)!",
    "Über die Straße fährt ein gelber Bus; süß, oder?",
]


@pytest.fixture(scope="module")
def tokenizer() -> TextTokenizer:
    return TextTokenizer(train_tokenizer(ENGLISH + GERMAN, vocab_size=300, min_frequency=1))


def test_special_tokens_have_ids_0_to_3(tokenizer):
    assert SPECIAL_TOKENS == ("<pad>", "<unk>", "<bos>", "<eos>")
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.bos_id, tokenizer.eos_id) == (0, 1, 2, 3)
    assert tokenizer.ids_to_tokens([0, 1, 2, 3]) == list(SPECIAL_TOKENS)
    assert 50 < tokenizer.vocab_size <= 300


@pytest.mark.parametrize("text", ENGLISH + GERMAN + UNSEEN)
def test_round_trip_is_exact(tokenizer, text):
    ids = tokenizer.encode(text)
    assert ids and tokenizer.unk_id not in ids
    assert min(ids) >= 4, "specials must not be produced for plain text"
    assert tokenizer.decode(ids) == text


def test_batch_round_trip_and_batch_equals_single(tokenizer):
    texts = UNSEEN + GERMAN[:3]
    batch = tokenizer.encode_batch(texts)
    assert batch == [tokenizer.encode(t) for t in texts]
    assert tokenizer.decode_batch(batch) == texts


def test_pieces_mark_word_starts_and_isolate_digits_and_punctuation(tokenizer):
    pieces = tokenizer.ids_to_tokens(tokenizer.encode("Um 12:30 fährt er."))
    assert pieces[0].startswith("▁")
    assert "".join(pieces).replace("▁", " ").strip() == "Um 12:30 fährt er."
    for digit in "1230":
        assert digit in pieces, f"digit {digit} should be its own piece: {pieces}"
    assert pieces[-1] == "." and ":" in pieces


def test_unknown_characters_become_unk_without_error(tokenizer):
    ids = tokenizer.encode("Der Hund 🐕 schläft.")
    assert tokenizer.unk_id in ids and ids.count(1) == 1
    assert "<unk>" in tokenizer.ids_to_tokens(ids)
    decoded = tokenizer.decode(ids)  # specials (including <unk>) are dropped when decoding
    assert "Der Hund" in decoded and "schläft." in decoded and "🐕" not in decoded


def test_decode_drops_special_tokens(tokenizer):
    ids = tokenizer.encode("Der alte Bäcker")
    assert tokenizer.decode([2] + ids + [3, 0, 0]) == "Der alte Bäcker"


def test_whitespace_and_unicode_normalisation(tokenizer):
    assert tokenizer.encode("  Der   alte\tBäcker \n") == tokenizer.encode("Der alte Bäcker")
    decomposed = "Ba\u0308cker"  # "ä" as a + combining diaeresis: NFC makes it the trained "ä"
    assert tokenizer.encode(decomposed) == tokenizer.encode("Bäcker")


def test_save_and_load_give_an_identical_tokenizer(tokenizer, tmp_path):
    path = tmp_path / "tokenizer.json"
    tokenizer.save(path)
    json.loads(path.read_text(encoding="utf-8"))  # a plain JSON file, nothing pickled
    loaded = TextTokenizer.from_file(path)
    assert loaded.tokenizer.get_vocab() == tokenizer.tokenizer.get_vocab()
    for text in ENGLISH + GERMAN + UNSEEN + ["Emoji 🙂 hier."]:
        assert loaded.encode(text) == tokenizer.encode(text)
        assert loaded.decode(loaded.encode(text)) == tokenizer.decode(tokenizer.encode(text))
    assert (loaded.pad_id, loaded.unk_id, loaded.bos_id, loaded.eos_id) == (0, 1, 2, 3)


def test_loading_a_corrupt_file_names_it(tmp_path):
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="tokenizer.json"):
        TextTokenizer.from_file(bad)


def test_loading_a_missing_file_raises_file_not_found(tmp_path):
    """`from_file` re-raises FileNotFoundError on purpose; a missing file must not be reported as "not valid"."""
    with pytest.raises(FileNotFoundError, match="absent.json"):
        TextTokenizer.from_file(tmp_path / "absent.json")


def test_training_is_deterministic():
    a = train_tokenizer(ENGLISH + GERMAN, vocab_size=200, min_frequency=1)
    b = train_tokenizer(ENGLISH + GERMAN, vocab_size=200, min_frequency=1)
    assert a.get_vocab() == b.get_vocab()


def test_toy_tokenizer_letters_follow_the_specials():
    tok = TextTokenizer(toy_tokenizer(6))
    assert tok.vocab_size == 10
    assert tok.encode("a b c f") == [4, 5, 6, 9]
    assert tok.encode("A  B") == [4, 5]  # lowercased, whitespace collapsed
    assert tok.encode("a z") == [4, 1]  # outside the 6 symbols -> <unk>
    assert tok.decode([8, 4]) == "e a"
    assert tok.ids_to_tokens([4, 5]) == ["▁a", "▁b"]
    with pytest.raises(ValueError):
        toy_tokenizer(27)
    with pytest.raises(ValueError):
        toy_tokenizer(0)


def test_toy_tokenizer_decode_drops_special_tokens():
    """TextTokenizer.decode promises to drop specials, for the toy tokenizer too (the app decodes raw ids)."""
    tok = TextTokenizer(toy_tokenizer(6))
    assert tok.decode([2, 8, 4, 3, 0, 0]) == "e a"
    assert tok.decode_batch([[2, 5, 3], [2, 6, 0]]) == ["b", "c"]


def test_bpe_dropout_copy_samples_finer_segmentations_that_decode_to_the_same_text(tokenizer):
    text = "the children were playing with their grandmother yesterday afternoon"
    sampled = tokenizer.with_dropout(0.5)
    segmentations = {tuple(sampled.encode(text)) for _ in range(20)}
    assert len(segmentations) > 1  # merges are dropped at random
    assert all(len(ids) >= len(tokenizer.encode(text)) for ids in segmentations)
    assert all(tokenizer.decode(list(ids)) == text for ids in segmentations)
    assert tokenizer.tokenizer.model.dropout is None  # the original is untouched
