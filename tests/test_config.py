"""ModelConfig validation: every bad value is rejected with a message that says what and why."""
from __future__ import annotations

import dataclasses
import json

import pytest

from transformer.config import ModelConfig
from transformer.model import Transformer


def test_defaults_are_valid_and_round_trip_through_dict_and_json():
    cfg = ModelConfig()
    assert cfg.d_k * cfg.n_heads == cfg.d_model
    again = ModelConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert again == cfg
    custom = ModelConfig(src_vocab_size=100, tgt_vocab_size=120, d_model=48, n_heads=6, tie_embeddings=False,
                         activation="geglu", norm_first=False, dropout=0.3)
    assert ModelConfig.from_dict(custom.to_dict()) == custom
    assert custom.d_k == 8


@pytest.mark.parametrize(
    "overrides, fragments",
    [
        (dict(d_model=30, n_heads=4), ["d_model (30)", "divisible", "n_heads (4)"]),
        (dict(activation="swish"), ["activation", "'swish'", "relu"]),
        (dict(tie_embeddings=True, src_vocab_size=100, tgt_vocab_size=90), ["tie_embeddings", "100", "90"]),
        (dict(dropout=1.0), ["dropout", "[0, 1)", "1.0"]),
        (dict(dropout=-0.1), ["dropout", "-0.1"]),
        (dict(d_model=0), ["d_model must be a positive integer"]),
        (dict(n_heads=0), ["n_heads must be a positive integer"]),
        (dict(d_ff=-5), ["d_ff", "-5"]),
        (dict(max_len=0), ["max_len"]),
        (dict(src_vocab_size=0, tie_embeddings=False), ["src_vocab_size"]),
        (dict(n_encoder_layers=-1), ["n_encoder_layers", "-1"]),
        (dict(n_decoder_layers=-2), ["n_decoder_layers", "-2"]),
        (dict(pad_id=16, src_vocab_size=16, tgt_vocab_size=16), ["pad_id (16)", "outside the vocabulary"]),
        (dict(eos_id=-1), ["eos_id (-1)", "outside the vocabulary"]),
        (dict(bos_id=0), ["distinct"]),
        (dict(unk_id=3), ["distinct"]),
    ],
)
def test_invalid_values_raise_clear_value_errors(overrides, fragments):
    with pytest.raises(ValueError) as info:
        ModelConfig(**overrides)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"


def test_all_problems_are_reported_at_once():
    with pytest.raises(ValueError) as info:
        ModelConfig(d_model=30, n_heads=4, activation="tanh", dropout=2.0)
    message = str(info.value)
    assert "divisible" in message and "activation" in message and "dropout" in message


@pytest.mark.parametrize("values", [
    {"dropout": 0.0}, {"dropout": 0.99}, {"n_encoder_layers": 0, "n_decoder_layers": 0},
    {"src_vocab_size": 4, "tgt_vocab_size": 4},  # exactly the four specials
    {"src_vocab_size": 50, "tgt_vocab_size": 60, "tie_embeddings": False}])
def test_edge_values_are_accepted_as_given(values):
    """No ValueError, the values kept as given (nothing clamped), and through config.json and back unchanged."""
    config = ModelConfig(**values)
    assert {name: getattr(config, name) for name in values} == values
    assert ModelConfig.from_dict(config.to_dict()) == config


def test_from_dict_rejects_unknown_fields_by_name():
    data = ModelConfig().to_dict()
    data["d_modle"] = 128
    data["n_layers"] = 6
    with pytest.raises(ValueError) as info:
        ModelConfig.from_dict(data)
    assert "d_modle" in str(info.value) and "n_layers" in str(info.value)


def test_from_dict_validates_values_and_fills_defaults():
    with pytest.raises(ValueError, match="divisible"):
        ModelConfig.from_dict({"d_model": 10, "n_heads": 3})
    partial = ModelConfig.from_dict({"d_model": 64, "n_heads": 2})
    assert partial.d_model == 64 and partial.n_heads == 2 and partial.d_ff == ModelConfig().d_ff


def test_every_field_is_serialised():
    names = {f.name for f in dataclasses.fields(ModelConfig)}
    assert set(ModelConfig().to_dict()) == names


@pytest.mark.parametrize("activation", ["relu", "gelu", "geglu"])
def test_each_activation_builds_a_model(activation):
    cfg = ModelConfig(src_vocab_size=12, tgt_vocab_size=12, d_model=16, n_heads=2, n_encoder_layers=1,
                      n_decoder_layers=1, d_ff=24, activation=activation)
    model = Transformer(cfg)
    expected = 48 if activation == "geglu" else 24  # geglu's first projection holds value and gate
    assert model.encoder.layers[0].ff.linear1.out_features == expected
    assert model.encoder.layers[0].ff.linear2.in_features == 24
