"""Checkpoints: exact round trips, from_pretrained, and a named CheckpointError for every broken file."""
from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from transformer.hub import CheckpointError, PretrainedTransformer, load_checkpoint, save_checkpoint
from transformer.model import Transformer
from transformer.tokenizer import TextTokenizer, toy_tokenizer

SRC = torch.tensor([[5, 9, 7, 12, 3, 0], [4, 6, 8, 10, 11, 3]])
TGT = torch.tensor([[2, 7, 12, 0], [2, 13, 11, 10]])


def toy_text_tokenizer() -> TextTokenizer:
    return TextTokenizer(toy_tokenizer(12))  # 16 ids: 4 specials + 12 letters


@pytest.fixture
def saved(tmp_path, make_model):
    """(model, checkpoint dir) for a tiny untied model with perturbed (non-initial) weights."""
    model = make_model(seed=3, tie_embeddings=False, n_encoder_layers=2)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    directory = save_checkpoint(model, toy_text_tokenizer(), tmp_path / "ckpt")
    return model, directory


@pytest.mark.parametrize("tie", [False, True], ids=["untied", "tied"])
def test_round_trip_gives_identical_logits(tmp_path, make_model, tie):
    model = make_model(seed=4, tie_embeddings=tie, norm_first=not tie, activation="gelu" if tie else "relu")
    directory = save_checkpoint(model, toy_text_tokenizer(), tmp_path / "ckpt")
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in directory.iterdir()}
    loaded = load_checkpoint(directory)
    assert isinstance(loaded, PretrainedTransformer) and not loaded.training
    assert loaded.config == model.config
    assert torch.equal(loaded(SRC, TGT).logits, model(SRC, TGT).logits)
    for (name, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    if tie:  # still one shared matrix after loading, stored once in the file
        assert loaded.src_embed.weight is loaded.tgt_embed.weight is loaded.generator.weight
        stored = load_file(str(directory / "model.safetensors"))
        assert sum(k in stored for k in ("src_embed.weight", "tgt_embed.weight", "generator.weight")) == 1
    assert loaded.tokenizer.encode("a b c") == [4, 5, 6]
    assert json.loads((directory / "config.json").read_text())["d_model"] == 32


def test_from_pretrained_local_directory(saved):
    model, directory = saved
    loaded = PretrainedTransformer.from_pretrained(str(directory))
    assert isinstance(loaded, PretrainedTransformer)
    assert loaded.tokenizer is not None and loaded.tokenizer.vocab_size == 16
    assert torch.equal(loaded.eval()(SRC, TGT).logits, model(SRC, TGT).logits)
    loaded_path = PretrainedTransformer.from_pretrained(Path(directory))
    assert torch.equal(loaded_path.eval()(SRC, TGT).logits, model(SRC, TGT).logits)


def test_half_precision_export_stores_float16_and_loads_as_float32(tmp_path, make_model):
    model = make_model(seed=5)
    directory = save_checkpoint(model, toy_text_tokenizer(), tmp_path / "half", half_precision=True)
    stored = load_file(str(directory / "model.safetensors"))
    assert {t.dtype for t in stored.values()} == {torch.float16}
    loaded = load_checkpoint(directory)
    assert next(loaded.parameters()).dtype == torch.float32
    torch.testing.assert_close(loaded(SRC, TGT).logits, model(SRC, TGT).logits, rtol=0, atol=5e-3)
    assert model.src_embed.weight.dtype == torch.float32  # the caller's model is not converted


def assert_names(info, path: Path) -> None:
    assert isinstance(info.value, ValueError)
    assert str(path) in str(info.value), f"{path} not named in: {info.value}"


@pytest.mark.parametrize("name", ["config.json", "model.safetensors", "tokenizer.json"])
def test_missing_file_is_named(saved, name):
    _, directory = saved
    (directory / name).unlink()
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(directory)
    assert_names(info, directory / name)


def test_missing_directory(tmp_path):
    with pytest.raises(CheckpointError, match="not_there"):
        load_checkpoint(tmp_path / "not_there")


def test_from_pretrained_missing_local_directory_is_a_checkpoint_error(tmp_path):
    """hub.resolve_checkpoint has a "checkpoint directory not found" branch for local paths; it must be reached."""
    with pytest.raises(CheckpointError, match="not_there"):
        PretrainedTransformer.from_pretrained(str(tmp_path / "not_there"))


@pytest.mark.parametrize("content", ["{not json", "[1, 2, 3]"], ids=["syntax", "not-a-dict"])
def test_from_pretrained_bad_config_is_a_named_checkpoint_error(saved, content):
    """from_pretrained must fail like load_checkpoint, not with a bare JSONDecodeError/AttributeError."""
    _, directory = saved
    (directory / "config.json").write_text(content, encoding="utf-8")
    with pytest.raises(CheckpointError) as info:
        PretrainedTransformer.from_pretrained(str(directory))
    assert_names(info, directory / "config.json")


@pytest.mark.parametrize("damage", ["truncate", "random", "empty", "header"])
def test_corrupt_weights_are_named(saved, damage):
    _, directory = saved
    path = directory / "model.safetensors"
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "random":
        path.write_bytes(os.urandom(len(data)))
    elif damage == "empty":
        path.write_bytes(b"")
    else:  # a plausible header length followed by garbage JSON
        path.write_bytes((40).to_bytes(8, "little") + b"{" * 40 + data[48:])
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(directory)
    assert_names(info, path)


@pytest.mark.parametrize(
    "content",
    ["{not json", "[1, 2, 3]", '{"d_model": 32, "n_heads": 5}', '{"d_model": 32, "colour": "blue"}', "\xff\xfe"],
    ids=["syntax", "not-a-dict", "invalid-values", "unknown-field", "binary"],
)
def test_bad_config_is_named(saved, content):
    _, directory = saved
    path = directory / "config.json"
    if content == "\xff\xfe":
        path.write_bytes(b"\xff\xfe\x00garbage")
    else:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(directory)
    assert_names(info, path)


@pytest.mark.parametrize(
    "change",
    [{"d_model": 64, "n_heads": 4}, {"n_encoder_layers": 1}, {"n_decoder_layers": 2}, {"d_ff": 48},
     {"activation": "geglu"}, {"norm_first": False}, {"src_vocab_size": 20, "tgt_vocab_size": 20}],
    ids=["d_model", "fewer-layers", "more-layers", "d_ff", "geglu", "post-LN", "vocab"],
)
def test_config_that_does_not_fit_the_weights(saved, change):
    _, directory = saved
    path = directory / "config.json"
    config = json.loads(path.read_text())
    config.update(change)
    path.write_text(json.dumps(config))
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(directory)
    assert_names(info, directory / "model.safetensors")
    assert "config.json" in str(info.value)


def test_tied_config_over_untied_weights_is_rejected(saved):
    """The file holds three different embedding/generator matrices; a tied config cannot hold them.

    Loading must not silently keep one and drop the other two (that changes the model's outputs).
    """
    model, directory = saved
    path = directory / "config.json"
    config = json.loads(path.read_text())
    config["tie_embeddings"] = True
    path.write_text(json.dumps(config))
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(directory)
    assert_names(info, directory / "model.safetensors")


def test_tokenizer_larger_than_the_vocabulary_is_rejected(saved):
    _, directory = saved
    TextTokenizer(toy_tokenizer(20)).save(directory / "tokenizer.json")  # 24 ids > 16
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(directory)
    assert_names(info, directory / "tokenizer.json")


def test_corrupt_tokenizer_is_named(saved):
    _, directory = saved
    (directory / "tokenizer.json").write_text("{ nope", encoding="utf-8")
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(directory)
    assert_names(info, directory / "tokenizer.json")


class _Payload:
    """Unpickling this creates a marker file: proof that something was unpickled."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_loading_never_unpickles(saved, tmp_path):
    model, directory = saved
    marker = tmp_path / "UNPICKLED"
    (directory / "model.safetensors").unlink()
    with open(directory / "pytorch_model.bin", "wb") as f:
        pickle.dump({"state_dict": model.state_dict(), "payload": _Payload(marker)}, f)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(directory)
    assert_names(info, directory / "model.safetensors")
    with pytest.raises(CheckpointError):
        PretrainedTransformer.from_pretrained(str(directory))
    assert not marker.exists(), "a pickle file was loaded"
    # the harness can detect unpickling
    pickle.loads(pickle.dumps(_Payload(marker)))
    assert marker.exists()


def test_saving_from_a_plain_transformer_leaves_it_untouched(tmp_path, make_model):
    model = make_model(seed=6)
    assert type(model) is Transformer
    before = {k: v.clone() for k, v in model.state_dict().items()}
    save_checkpoint(model, toy_text_tokenizer(), tmp_path / "a")
    save_checkpoint(model, toy_text_tokenizer(), tmp_path / "a")  # overwriting an existing checkpoint works
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert torch.equal(load_checkpoint(tmp_path / "a")(SRC, TGT).logits, model(SRC, TGT).logits)


def test_a_hub_download_fetches_everything_the_shipped_model_reads(tmp_path):
    """`resolve_checkpoint` downloads only CHECKPOINT_FILES (snapshot_download's allow_patterns): a copy of the
    shipped en-de holding just those files must translate exactly as the original (truecasing, placeholders and
    the decoding defaults included)."""
    import shutil

    from huggingface_hub.utils import filter_repo_objects

    from transformer.hub import CHECKPOINT_FILES
    from transformer.translator import load_pretrained

    shipped = Path(__file__).resolve().parents[1] / "checkpoints" / "en-de"
    names = [p.name for p in shipped.iterdir() if p.is_file()]
    fetched = tmp_path / "fetched"
    fetched.mkdir()
    for name in filter_repo_objects(names, allow_patterns=list(CHECKPOINT_FILES)):
        shutil.copy(shipped / name, fetched / name)
    text = "MY FRIEND WAIRIMU MOVED TO PLOVDIV IN 1983."
    original, copy = load_pretrained(shipped), load_pretrained(fetched)
    assert copy.generation == original.generation is not None
    a, b = (t.translate(text, output_attentions=False) for t in (original, copy))
    assert (b.text, b.src_tokens, b.entities) == (a.text, a.src_tokens, a.entities)
    assert "⟨1⟩" in b.src_tokens and "Plovdiv" in b.text
