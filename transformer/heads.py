"""Encoder-only use: classification and regression heads over mean-pooled encoder output."""
from __future__ import annotations

from torch import Tensor, nn

from .model import Transformer, padding_mask


def mean_pool(hidden: Tensor, mask: Tensor) -> Tensor:
    """hidden (B, S, d_model), mask (B, S) True at real tokens -> (B, d_model) mean over real tokens."""
    weights = mask.to(hidden.dtype).unsqueeze(-1)  # (B, S, 1)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)


class _PooledHead(nn.Module):
    def __init__(self, encoder_model: Transformer, n_outputs: int, dropout: float = 0.1):
        super().__init__()
        self.transformer = encoder_model
        d = encoder_model.config.d_model
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(d, n_outputs))

    def pooled(self, src: Tensor) -> Tensor:
        """src (B, S) ids -> (B, d_model)."""
        mask = padding_mask(src, self.transformer.config.pad_id)  # (B, 1, 1, S)
        memory, _ = self.transformer.encode(src, mask)
        return mean_pool(memory, mask[:, 0, 0, :])


class ClassificationHead(_PooledHead):
    """src (B, S) -> class logits (B, n_classes)."""

    def __init__(self, encoder_model: Transformer, n_classes: int, dropout: float = 0.1):
        super().__init__(encoder_model, n_classes, dropout)

    def forward(self, src: Tensor) -> Tensor:
        return self.head(self.pooled(src))


class RegressionHead(_PooledHead):
    """src (B, S) -> real-valued predictions (B, n_outputs), or (B,) when n_outputs == 1."""

    def __init__(self, encoder_model: Transformer, n_outputs: int = 1, dropout: float = 0.1):
        super().__init__(encoder_model, n_outputs, dropout)

    def forward(self, src: Tensor) -> Tensor:
        out = self.head(self.pooled(src))
        return out.squeeze(-1) if out.size(-1) == 1 else out
