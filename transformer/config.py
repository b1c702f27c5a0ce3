"""The model configuration dataclass, and the decoding defaults a checkpoint carries."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

MEASURES = ("weight", "norm")  # what attention maps hold: the weights α, or Kobayashi et al.'s norms ‖α f(x)‖
ATTENTION_KINDS = ("encoder", "decoder", "cross")  # a translation's three kinds of attention, as every module names them

ACTIVATIONS = ("relu", "gelu", "geglu")


@dataclass
class ModelConfig:
    """Hyperparameters of the encoder–decoder Transformer (names as in Vaswani et al., 2017)."""

    src_vocab_size: int = 8000
    tgt_vocab_size: int = 8000
    d_model: int = 256
    n_heads: int = 8
    n_encoder_layers: int = 4
    n_decoder_layers: int = 4
    d_ff: int = 1024
    dropout: float = 0.1  # P_drop: embeddings and every sublayer's output, before the residual add
    # Two more sites the paper does not use (tensor2tensor and Marian do): the attention weights and the FFN's
    # hidden activation. None: as `dropout`. 0.0 also lets training skip their masks, the largest tensors.
    attention_dropout: float | None = None
    activation_dropout: float | None = None
    max_len: int = 256
    norm_first: bool = True
    activation: str = "relu"
    tie_embeddings: bool = True
    pad_id: int = 0
    bos_id: int = 2
    eos_id: int = 3
    unk_id: int = 1
    placeholders: int = 0  # the last ids of the vocabulary are placeholders ⟨1⟩.. (transformer.placeholders)

    def __post_init__(self) -> None:
        problems = []
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "d_ff", "max_len"):
            if int(getattr(self, name)) < 1:
                problems.append(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        for name in ("n_encoder_layers", "n_decoder_layers"):
            if int(getattr(self, name)) < 0:
                problems.append(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if self.d_model >= 1 and self.n_heads >= 1 and self.d_model % self.n_heads:
            problems.append(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        for name in ("dropout", "attention_dropout", "activation_dropout"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value < 1.0:
                problems.append(f"{name} must be in [0, 1), got {value!r}")
        if self.activation not in ACTIVATIONS:
            problems.append(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.tie_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            problems.append(
                "tie_embeddings needs one joint vocabulary, but src_vocab_size "
                f"({self.src_vocab_size}) != tgt_vocab_size ({self.tgt_vocab_size})"
            )
        specials = {"pad_id": self.pad_id, "bos_id": self.bos_id, "eos_id": self.eos_id, "unk_id": self.unk_id}
        for name, value in specials.items():
            if not 0 <= value < min(self.src_vocab_size, self.tgt_vocab_size):
                problems.append(f"{name} ({value}) is outside the vocabulary")
        if not 0 <= self.placeholders <= 9 or self.placeholders >= min(self.src_vocab_size, self.tgt_vocab_size):
            problems.append(f"placeholders must be in 0..9 and fewer than the vocabulary, got {self.placeholders!r}")
        if len(set(specials.values())) != len(specials):
            problems.append(f"special token ids must be distinct, got {specials}")
        if problems:
            raise ValueError("Invalid ModelConfig: " + "; ".join(problems))

    @property
    def attention_p(self) -> float:
        return self.dropout if self.attention_dropout is None else self.attention_dropout

    @property
    def activation_p(self) -> float:
        return self.dropout if self.activation_dropout is None else self.activation_dropout

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ModelConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"Unknown ModelConfig fields: {unknown}")
        return cls(**data)


@dataclass
class GenerationConfig:
    """How a checkpoint decodes when a caller does not say: its `generation_config.json` (Hugging Face's file
    name and keys). The length penalty is the one validation chose (`python -m transformer.training.length_penalty`);
    a checkpoint without the file decodes with these defaults."""

    num_beams: int = 5
    length_penalty: float = 0.6

    def __post_init__(self) -> None:
        if isinstance(self.num_beams, bool) or not isinstance(self.num_beams, int) or self.num_beams < 1:
            raise ValueError(f"num_beams must be a positive integer, got {self.num_beams!r}")
        lp = self.length_penalty
        if isinstance(lp, bool) or not isinstance(lp, (int, float)) or not math.isfinite(lp) or lp < 0:
            raise ValueError(f"length_penalty must be a finite number >= 0, got {lp!r}")

    def resolve(self, beam_size: int | None, length_penalty: float | None) -> tuple[int, float]:
        """(beam_size, length_penalty) as a caller gave them, each None replaced by this config's value."""
        return (self.num_beams if beam_size is None else beam_size,
                self.length_penalty if length_penalty is None else length_penalty)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GenerationConfig":
        if not isinstance(data, dict):
            raise ValueError(f"a generation config must be a JSON object, got {type(data).__name__}")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"Unknown GenerationConfig fields: {unknown}")
        return cls(**data)
