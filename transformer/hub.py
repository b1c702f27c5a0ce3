"""Checkpoints in the Hugging Face layout, built on `PyTorchModelHubMixin`.

A checkpoint directory holds `config.json` (the `ModelConfig`),
`model.safetensors`, `tokenizer.json`, and, for trained models, `README.md`
(model card), `metrics.json`, `train_log.jsonl`, the truecase model, the copied
words of a placeholder model, and `generation_config.json` (the decoding defaults
validation chose). Loading reads safetensors
only (nothing is unpickled), checks keys and shapes strictly, and names the
offending file in every error.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import torch
from huggingface_hub import PyTorchModelHubMixin, snapshot_download
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file, save_model

from .casing import TRUECASE_FILE, Truecaser, load_truecaser
from .placeholders import COPIED_WORDS_FILE, read_copied_words, write_copied_words
from .config import GenerationConfig, ModelConfig
from .model import Transformer
from .tokenizer import TextTokenizer

log = logging.getLogger(__name__)

CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE = "config.json", "model.safetensors", "tokenizer.json"
GENERATION_FILE = "generation_config.json"
# The model learning: float16 weights at a few steps of its training run and snapshots.json (step, epoch, val
# scores). Optional, and left out of CHECKPOINT_FILES: a translator never needs them.
SNAPSHOTS_DIR = "snapshots"
CHECKPOINT_FILES = (CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE, GENERATION_FILE, TRUECASE_FILE, COPIED_WORDS_FILE,
                    "README.md", "metrics.json", "train_log.jsonl")


TIED_NAMES = ("src_embed.weight", "tgt_embed.weight", "generator.weight")


class CheckpointError(ValueError):
    """A checkpoint that is missing, corrupt or inconsistent; the message names the file."""


class PretrainedTransformer(
    Transformer,
    PyTorchModelHubMixin,
    library_name="pytorch",
    tags=["translation", "transformer", "attention-visualisation"],
    pipeline_tag="translation",
    license="mit",
):
    """A `Transformer` that saves/loads/pushes itself, together with its tokenizer."""

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        self.tokenizer: TextTokenizer | None = None
        self.truecaser: Truecaser | None = None  # how typed input is recased (casing.py); None: unshout only
        self.copied_words: set[str] = set()  # names the training data copies (placeholders.py)
        self.generation: GenerationConfig | None = None  # decoding defaults chosen on val; None: the library's

    def _save_pretrained(self, save_directory: Path) -> None:
        # Shared (tied) tensors are stored once; safetensors' save_model handles that.
        save_model(self, str(save_directory / WEIGHTS_FILE), metadata={"format": "pt"})
        if self.tokenizer is not None:
            self.tokenizer.save(save_directory / TOKENIZER_FILE)
        if self.truecaser is not None:
            self.truecaser.save(save_directory / TRUECASE_FILE)
        if self.config.placeholders:
            write_copied_words(self.copied_words, save_directory)
        if self.generation is not None:
            write_generation_config(self.generation, save_directory)

    @classmethod
    def from_pretrained(
        cls, pretrained_model_name_or_path: str | os.PathLike, *, map_location: str = "cpu", **hub_kwargs
    ) -> "PretrainedTransformer":
        """Load from a local directory or a Hub repo id (our own loader: strict, safetensors only)."""
        directory = resolve_checkpoint(pretrained_model_name_or_path, **_download_kwargs(hub_kwargs))
        return load_checkpoint(directory, device=map_location)


def _download_kwargs(kwargs: dict) -> dict:
    keep = ("revision", "cache_dir", "force_download", "local_files_only", "token")
    return {k: kwargs[k] for k in keep if kwargs.get(k) is not None}


def resolve_checkpoint(name_or_path: str | os.PathLike, **download_kwargs) -> Path:
    """A local directory as is; otherwise a Hub repo id, fetched (or found in the cache)."""
    path = Path(name_or_path)
    if path.is_dir():
        return path
    if path.exists() or str(name_or_path).startswith((".", "/")) or str(name_or_path).count("/") != 1:
        raise CheckpointError(f"checkpoint directory not found: {path}")
    try:  # the cache first, so an offline machine never waits on the network
        return Path(snapshot_download(str(name_or_path), allow_patterns=list(CHECKPOINT_FILES),
                                      **{**download_kwargs, "local_files_only": True}))
    except Exception:
        if download_kwargs.get("local_files_only"):
            raise CheckpointError(f"{name_or_path}: not a local directory and not in the Hub cache") from None
    try:
        return Path(snapshot_download(str(name_or_path), allow_patterns=list(CHECKPOINT_FILES), **download_kwargs))
    except Exception as err:
        raise CheckpointError(
            f"{name_or_path}: not a local directory, and downloading it from the Hugging Face Hub failed "
            f"({type(err).__name__}: {err})"
        ) from None


def read_config(directory: Path) -> ModelConfig:
    path = directory / CONFIG_FILE
    if not path.is_file():
        raise CheckpointError(f"{path}: missing")
    try:
        return ModelConfig.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, UnicodeDecodeError, TypeError, ValueError) as err:
        raise CheckpointError(f"{path}: not a valid model config ({err})") from None


def read_generation_config(directory: Path) -> GenerationConfig | None:
    """The checkpoint's decoding defaults, or None when it has no generation_config.json."""
    path = directory / GENERATION_FILE
    if not path.is_file():
        return None
    try:
        return GenerationConfig.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, UnicodeDecodeError, TypeError, ValueError) as err:
        raise CheckpointError(f"{path}: not a valid generation config ({err})") from None


def write_generation_config(generation: GenerationConfig, directory: str | os.PathLike) -> Path:
    path = Path(directory) / GENERATION_FILE
    path.write_text(json.dumps(generation.to_dict(), indent=2) + "\n", encoding="utf-8")
    return path


def read_weights(directory: Path, device: str = "cpu") -> dict[str, torch.Tensor]:
    path = directory / WEIGHTS_FILE
    if not path.is_file():
        raise CheckpointError(f"{path}: missing")
    try:
        return load_file(str(path), device=device)
    except (SafetensorError, OSError, ValueError, RuntimeError) as err:
        raise CheckpointError(f"{path}: corrupt or not a safetensors file ({err})") from None


def load_weights_into(model: Transformer, state: dict[str, torch.Tensor], source: Path) -> None:
    """Strict load: every parameter present, nothing extra, shapes equal. Tied copies may be absent."""
    expected = model.state_dict()
    if model.config.tie_embeddings:  # safetensors stores a shared matrix under one of its names
        state = dict(state)
        stored = [state.pop(k) for k in TIED_NAMES if k in state]
        if any(t.shape != stored[0].shape or not torch.equal(t, stored[0]) for t in stored[1:]):
            raise CheckpointError(f"{source}: config.json says tie_embeddings, but the file holds different "
                                  "embedding/output matrices")
        if stored:
            state[TIED_NAMES[0]] = stored[0]
        expected = {k: v for k, v in expected.items() if k not in TIED_NAMES[1:]}
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    wrong = sorted(k for k in set(state) & set(expected) if state[k].shape != expected[k].shape)
    if missing or unexpected or wrong:
        details = [f"missing {missing}" if missing else "", f"unexpected {unexpected}" if unexpected else ""]
        details += [f"{k}: file {tuple(state[k].shape)} vs config {tuple(expected[k].shape)}" for k in wrong[:5]]
        raise CheckpointError(f"{source}: weights do not fit config.json: " + "; ".join(d for d in details if d))
    with torch.no_grad():
        for name, tensor in state.items():
            expected[name].copy_(tensor)  # state_dict tensors share storage with the parameters


def load_checkpoint(directory: str | os.PathLike, device: str = "cpu") -> PretrainedTransformer:
    """Load model + tokenizer from a checkpoint directory, in eval mode."""
    directory = Path(directory)
    config = read_config(directory)
    model = PretrainedTransformer(config)
    load_weights_into(model, read_weights(directory), directory / WEIGHTS_FILE)
    tok_path = directory / TOKENIZER_FILE
    if not tok_path.is_file():
        raise CheckpointError(f"{tok_path}: missing")
    try:
        model.tokenizer = TextTokenizer.from_file(tok_path)
    except ValueError as err:
        raise CheckpointError(str(err)) from None
    try:
        model.truecaser = load_truecaser(directory)
    except (ValueError, IndexError, UnicodeDecodeError) as err:
        raise CheckpointError(f"{directory / TRUECASE_FILE}: not a Moses truecase model ({err})") from None
    model.copied_words = read_copied_words(directory)
    model.generation = read_generation_config(directory)
    model.tokenizer.placeholders = config.placeholders
    fits = (model.tokenizer.vocab_size + config.placeholders == config.src_vocab_size if config.placeholders else
            model.tokenizer.vocab_size <= config.src_vocab_size)
    if not fits:
        raise CheckpointError(
            f"{tok_path}: {model.tokenizer.vocab_size} tokens and {config.placeholders} placeholders do not fit the "
            f"model's vocabulary ({config.src_vocab_size})"
        )
    return model.to(device).eval()


# What `load_checkpoint` reads: a checkpoint's identity is these files' bytes, not its path (an export rewrites them).
LOADED_FILES = (CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE, GENERATION_FILE, TRUECASE_FILE, COPIED_WORDS_FILE)


def checkpoint_digest(directory: str | os.PathLike) -> str:
    """A hash of the files `load_checkpoint` reads (names and bytes; a missing one counts as missing): equal
    digests, the same model, tokenizer and settings."""
    digest = hashlib.blake2b(digest_size=16)
    for name in LOADED_FILES:
        path = Path(directory) / name
        digest.update(name.encode() + b"\0")
        try:
            with open(path, "rb") as f:
                digest.update(b"+%d\0" % os.fstat(f.fileno()).st_size)
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
        except FileNotFoundError:
            digest.update(b"-\0")
    return digest.hexdigest()


def save_checkpoint(
    model: Transformer,
    tokenizer: TextTokenizer,
    directory: str | os.PathLike,
    half_precision: bool = False,
    truecaser: Truecaser | None = None,
    copied_words: set[str] | None = None,
) -> Path:
    """Write config.json, model.safetensors (optionally float16), tokenizer.json and, when given, the
    truecase model into `directory`."""
    directory = Path(directory)
    pretrained = PretrainedTransformer(model.config)
    pretrained.load_state_dict(model.state_dict())
    if half_precision:
        pretrained.half()
    pretrained.tokenizer = tokenizer
    pretrained.truecaser = truecaser
    pretrained.copied_words = set(copied_words or ())
    pretrained.save_pretrained(directory, config=model.config)
    return directory


def train_config(directory: Path | None) -> dict:
    """The recipe a checkpoint was trained with (its training.json's `train_config`; {} where there is none)."""
    training = directory / "training.json" if directory is not None else None
    if training is None or not training.is_file():
        return {}
    return json.loads(training.read_text(encoding="utf-8")).get("train_config", {})


LANGUAGES = {"en": "English", "de": "German"}  # the corpora's language codes, in words


def checkpoint_languages(directory: Path | None) -> tuple[str, str]:
    """(source, target) language codes a checkpoint translates between; ("en", "de") where its recipe does
    not say (the toy and older checkpoints)."""
    cfg = train_config(directory)
    return cfg.get("src_lang", "en"), cfg.get("tgt_lang", "de")


def training_progress(directory: Path | None) -> tuple[int, int] | None:
    """(steps done, steps planned) of a checkpoint exported before its schedule ended; None if finished
    or unknown. Such a model is still being trained (over several sessions): it is listed last."""
    path = directory / "training.json" if directory is not None else None
    if path is None or not path.is_file():
        return None
    training = json.loads(path.read_text(encoding="utf-8"))
    done = training.get("progress", {}).get("step")
    planned = training.get("train_config", {}).get("max_steps")
    return (done, planned) if done and planned and done < planned else None


# ---------------------------------------------------------------------------- snapshots of the model learning

SCALE_SUFFIX = ".int8_scale"


def save_int8_weights(weights: dict[str, torch.Tensor], path: str | os.PathLike) -> None:
    """Weights at a quarter of their float32 size: each matrix as int8 with one float16 scale per row
    (symmetric, absmax), stored in float32 beside it as `<name>.int8_scale`; vectors (biases, norms) in float16.
    Tied matrices (one tensor under several names: the embeddings and the output projection) are stored once,
    the other names kept in the file's metadata. A snapshot of the model learning only has to show how it
    translated, not train on."""
    out: dict[str, torch.Tensor] = {}
    first: dict[tuple, str] = {}
    aliases: dict[str, str] = {}
    for name, w in weights.items():
        tied = (w.data_ptr(), tuple(w.shape), w.dtype)
        if w.dim() >= 2 and tied in first:
            aliases[name] = first[tied]
            continue
        first[tied] = name
        w = w.detach().float().cpu()
        if w.dim() < 2:
            out[name] = w.half()
            continue
        scale = w.abs().amax(dim=1, keepdim=True).clamp_min(1e-8) / 127.0  # (rows, 1)
        out[name] = (w / scale).round().clamp(-127, 127).to(torch.int8)
        out[name + SCALE_SUFFIX] = scale  # float32: a rounded scale would move every weight of its row
    tmp = Path(str(path) + ".tmp")
    save_file(out, str(tmp), metadata={"tied": json.dumps(aliases)} if aliases else None)
    os.replace(tmp, path)


def load_int8_weights(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """`save_int8_weights`'s file -> float32 weights, ready for `Transformer.load_state_dict`."""
    stored = load_file(str(path))
    with safe_open(str(path), "pt") as f:
        tied = json.loads((f.metadata() or {}).get("tied", "{}"))
    weights = {}
    for name, t in stored.items():
        if name.endswith(SCALE_SUFFIX):
            continue
        scale = stored.get(name + SCALE_SUFFIX)
        weights[name] = t.float() * scale.float() if scale is not None else t.float()
    for name, source in tied.items():
        weights[name] = weights[source]
    return weights
