"""A checkpoint's decoding defaults (`generation_config.json`): chosen on val, read on load, used by every
caller that does not choose itself."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from transformer.serving.batching import Batcher
from transformer.config import GenerationConfig
from transformer.hub import GENERATION_FILE, CheckpointError, load_checkpoint, save_checkpoint
from transformer.tokenizer import TextTokenizer, toy_tokenizer
from transformer.training import evaluate, length_penalty
from transformer.training.length_penalty import choose_length_penalty
from transformer.translator import load_pretrained

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def checkpoint(tmp_path, make_model):
    """A tiny checkpoint whose generation_config.json says beam 3, length penalty 1.7."""
    model = make_model(seed=5, n_encoder_layers=2)
    directory = save_checkpoint(model, TextTokenizer(toy_tokenizer(12)), tmp_path / "ckpt")
    (directory / GENERATION_FILE).write_text(json.dumps({"num_beams": 3, "length_penalty": 1.7}), encoding="utf-8")
    return directory


@pytest.mark.parametrize("data", [{"num_beams": 0}, {"num_beams": 2.5}, {"num_beams": True}, {"length_penalty": -1},
                                  {"length_penalty": float("nan")}, {"length_penalty": "1"}, {"top_k": 4}, [1]])
def test_bad_generation_config_values_are_rejected(data):
    with pytest.raises(ValueError):
        GenerationConfig.from_dict(data)


def test_generation_config_round_trip(checkpoint):
    model = load_checkpoint(checkpoint)
    assert model.generation == GenerationConfig(num_beams=3, length_penalty=1.7)
    model.save_pretrained(checkpoint.parent / "again")
    assert load_checkpoint(checkpoint.parent / "again").generation == model.generation


def test_checkpoint_without_one_decodes_with_the_library_defaults(checkpoint):
    (checkpoint / GENERATION_FILE).unlink()
    assert load_checkpoint(checkpoint).generation is None
    assert load_pretrained(checkpoint).generation == GenerationConfig(num_beams=5, length_penalty=0.6)


@pytest.mark.parametrize("content", ["{ nope", '{"length_penalty": -2}', '{"beams": 4}'])
def test_corrupt_generation_config_is_named(checkpoint, content):
    (checkpoint / GENERATION_FILE).write_text(content, encoding="utf-8")
    with pytest.raises(CheckpointError, match=GENERATION_FILE):
        load_checkpoint(checkpoint)


def test_translate_batch_and_batcher_default_to_the_checkpoint(checkpoint):
    tr = load_pretrained(checkpoint)
    text = "a b c d"
    default = tr.translate(text, output_attentions=False)
    chosen = tr.translate(text, beam_size=3, length_penalty=1.7, output_attentions=False)
    library = tr.translate(text, beam_size=5, length_penalty=0.6, output_attentions=False)
    assert (default.beam_size, len(default.candidates)) == (3, 3)
    assert default.score == chosen.score != library.score  # the score is log-prob / length penalty factor
    assert [c.ids for c in default.candidates] == [c.ids for c in chosen.candidates]
    assert tr.translate(text, length_penalty=0.6, output_attentions=False).beam_size == 3  # each option on its own
    assert tr.translate_batch([text]) == [chosen.text]
    batcher = Batcher()
    try:
        assert batcher.translate(tr, tr.source(text), tr.decoding_options(), output_attentions=False).score == chosen.score
    finally:
        batcher.close()


def metric(split: str, lp: float | None, bleu: float, method: str = "beam", **extra) -> dict:
    row = {"method": method, "beam_size": 5 if method == "beam" else 1, "split": split, "bleu": bleu, "chrf": 50.0,
           "n_sentences": 10, **extra}
    return row | ({"length_penalty": lp} if lp is not None else {})


def test_length_penalty_is_chosen_on_the_mean_over_val_splits_only():
    metrics = {
        "val/beam5-lp0.6": metric("val", 0.6, 30.0), "c:val/beam5-lp0.6": metric("val", 0.6, 20.0),
        "val/beam5-lp1": metric("val", 1.0, 29.0), "c:val/beam5-lp1": metric("val", 1.0, 22.0),
        "c:rare/beam5-lp0.6": metric("rare", 0.6, 10.0), "c:rare/beam5-lp1": metric("rare", 1.0, 10.0),
        "val/beam5-lp2": metric("val", 2.0, 99.0),  # not scored on every split: left out
        "test/beam5-lp0.6": metric("test", 0.6, 99.0),  # test never chooses
        "val/greedy": metric("val", None, 99.0, method="greedy"),
        "val[lowercase]/beam5-lp0.6": metric("val", 0.6, 99.0, source_form="lowercase"),
        "val/beam5-lp0.6-int8": metric("val", 0.6, 99.0, precision="int8"),
    }
    assert choose_length_penalty(metrics) == (1.0, {0.6: 20.0, 1.0: 20.33})
    metrics["val/beam5-lp1"]["bleu"] = 28.0  # a tie (20.0 each): the smaller length penalty
    assert choose_length_penalty(metrics)[0] == 0.6
    with pytest.raises(ValueError, match="no beam-5 scores"):
        choose_length_penalty({"test/beam5-lp0.6": metric("test", 0.6, 30.0)})


def test_shipped_generation_configs_are_what_validation_chooses():
    for name in ("en-de", "multi30k-en-de"):
        directory = ROOT / "checkpoints" / name
        metrics = json.loads((directory / "metrics.json").read_text(encoding="utf-8"))
        shipped = load_checkpoint(directory).generation
        assert shipped == GenerationConfig(num_beams=5, length_penalty=choose_length_penalty(metrics)[0]), name
        assert f"length penalty {shipped.length_penalty:g}" in (directory / "README.md").read_text(encoding="utf-8")


def test_length_penalty_command_writes_the_file_and_the_card(tmp_path, checkpoint):
    (checkpoint / "metrics.json").write_text(json.dumps({
        "val/beam5-lp0.6": metric("val", 0.6, 10.0), "val/beam5-lp1.2": metric("val", 1.2, 11.0)}), encoding="utf-8")
    assert length_penalty.main(["--checkpoint", str(checkpoint)]) == GenerationConfig(5, 1.2)
    assert load_checkpoint(checkpoint).generation == GenerationConfig(5, 1.2)
    assert "length penalty 1.2" in (checkpoint / "README.md").read_text(encoding="utf-8")


def test_evaluate_defaults_to_the_checkpoints_length_penalty(tmp_path, checkpoint):
    src, ref = tmp_path / "src.txt", tmp_path / "ref.txt"
    src.write_text("a b c\nd e f\n", encoding="utf-8")
    ref.write_text("c b a\nf e d\n", encoding="utf-8")
    common = ["--checkpoint", str(checkpoint), "--src-file", str(src), "--ref-file", str(ref), "--threads", "1"]
    result = evaluate.main(common)
    assert (result["beam_size"], result["length_penalty"]) == (3, 1.7)
    assert evaluate.main(common + ["--length-penalty", "0.2"])["length_penalty"] == 0.2
