"""A checkpoint's languages, read from its recipe: what the app shows a model that reads German."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from transformer.casing import TRUECASE_FILE
from transformer.explorer.core import model_registry
from transformer.hub import checkpoint_languages
from transformer.training import alignment, evaluate, head_analysis
from transformer.training.config import PRESETS
from transformer.training.corpora import CorpusSpec
from transformer.training.data import DataError
from transformer.training.model_card import render_card
from transformer.translator import load_pretrained

DE_EN = Path(__file__).resolve().parents[1] / "checkpoints" / "de-en"


def recipe(tmp_path, name: str, **train_config) -> object:
    directory = tmp_path / name
    directory.mkdir()
    (directory / "training.json").write_text(json.dumps({"train_config": train_config}), encoding="utf-8")
    return directory


def test_a_german_reading_model_gets_german_examples_and_says_so(tmp_path):
    de_en = recipe(tmp_path, "de-en", **{k: v for k, v in PRESETS["de-en"].items() if k != "corpora"},
                   corpora=list(PRESETS["de-en"]["corpora"]))
    en_de = recipe(tmp_path, "en-de", **{k: v for k, v in PRESETS["en-de"].items() if k != "corpora"},
                   corpora=list(PRESETS["en-de"]["corpora"]))
    assert model_registry.examples_for(None, de_en) == model_registry.EXAMPLES_DE
    assert model_registry.examples_for(None, en_de) == model_registry.EXAMPLES_EN
    assert model_registry.source_language(de_en) == "German" and model_registry.source_language(en_de) == "English"
    assert model_registry.source_language(tmp_path / "missing") == "English"  # older checkpoints: English→German


def test_the_german_examples_are_our_own_and_not_english():
    assert len(set(model_registry.EXAMPLES_DE)) == len(model_registry.EXAMPLES_DE) >= 5
    assert not set(model_registry.EXAMPLES_DE) & set(model_registry.EXAMPLES_EN)


def test_a_checkpoints_languages_come_from_its_recipe(tmp_path):
    assert checkpoint_languages(recipe(tmp_path, "de-en", src_lang="de", tgt_lang="en")) == ("de", "en")
    assert checkpoint_languages(recipe(tmp_path, "en-de", src_lang="en", tgt_lang="de")) == ("en", "de")
    assert checkpoint_languages(tmp_path / "missing") == ("en", "de")  # toys and older checkpoints


def test_the_card_of_a_german_reading_model_names_its_direction_and_command(tmp_path):
    cfg = {**{k: v for k, v in PRESETS["de-en"].items() if k != "corpora"}, "corpora": list(PRESETS["de-en"]["corpora"]),
           "max_tokens": 8192, "accum_steps": 1}
    directory = recipe(tmp_path, "de-en", **cfg)
    (directory / TRUECASE_FILE).write_text("", encoding="utf-8")
    card = render_card(directory)
    assert "language: [de, en]" in card and "from scratch for German→English" in card
    assert "learned from the training German" in card and "English→German" not in card
    assert "`python -m transformer.train --preset de-en --max-tokens 8192 --accum-steps 1`" in card


def corpus_or_skip(split: str, languages: tuple[str, str]) -> tuple[list[str], list[str]]:
    try:
        return CorpusSpec("tatoeba-en-de").load(split, *languages)
    except DataError:
        pytest.skip("tatoeba-en-de data not present")


@pytest.mark.skipif(not DE_EN.is_dir(), reason="no de-en checkpoint")
def test_evaluate_scores_a_model_in_the_direction_it_translates():
    corpus_or_skip("val", ("de", "en"))
    common = ["--checkpoint", str(DE_EN), "--corpus", "tatoeba-en-de", "--split", "val", "--limit", "40",
              "--method", "greedy", "--threads", "1"]
    right = evaluate.main(common)
    wrong = evaluate.main([*common, "--src-lang", "en", "--tgt-lang", "de"])  # English in, German references
    assert right["bleu"] > 25 > 5 > wrong["bleu"], (right["bleu"], wrong["bleu"])


@pytest.mark.skipif(not DE_EN.is_dir(), reason="no de-en checkpoint")
def test_head_analysis_samples_a_german_reading_model_in_german():
    german, english = corpus_or_skip("val", ("de", "en"))
    tr = load_pretrained(DE_EN)
    sample = head_analysis.load_sample(tr, ["tatoeba-en-de"], "val", 6, seed=3, languages=("de", "en"))
    assert sample.sources and set(sample.sources) <= set(german) and set(sample.references) <= set(english)
    pairs = head_analysis.training_pairs(tr, ["tatoeba-en-de"], 5, seed=3, languages=sample.languages)
    assert len(pairs) == 5


@pytest.mark.skipif(not DE_EN.is_dir(), reason="no de-en checkpoint")
def test_a_german_reading_model_is_scored_on_the_same_gold_links():
    pairs = alignment.read_gold()[:12]
    tr = load_pretrained(DE_EN)
    for pair in pairs[:3]:
        for links in alignment.sentence_links(tr, pair, reads_german=True):
            assert all(0 <= e < len(pair.en_words) and 0 <= d < len(pair.de_words) for e, d in links)
            assert {d for _, d in links} <= set(range(len(pair.de_words)))
            assert len(links) == len({e for e, _ in links})  # each English word (a row) has one link
    best = {way: min(c.aer for c in alignment.score(tr, pairs, reads_german=way).counts[pairs[0].split])
            for way in (True, False)}
    assert best[True] < 0.25 and best[True] < best[False] - 0.2, best  # forced the wrong way round: poor links
