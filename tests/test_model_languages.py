"""A checkpoint's languages, read from its recipe: what the app shows a model that reads German."""
from __future__ import annotations

import json

from transformer.explorer import registry
from transformer.training.config import PRESETS


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
    assert registry.examples_for(None, de_en) == registry.EXAMPLES_DE
    assert registry.examples_for(None, en_de) == registry.EXAMPLES_EN
    assert registry.source_language(de_en) == "German" and registry.source_language(en_de) == "English"
    assert registry.source_language(tmp_path / "missing") == "English"  # older checkpoints: English→German


def test_the_german_examples_are_our_own_and_not_english():
    assert len(set(registry.EXAMPLES_DE)) == len(registry.EXAMPLES_DE) >= 5
    assert not set(registry.EXAMPLES_DE) & set(registry.EXAMPLES_EN)
