"""Key/value cache for incremental decoding.

The decoder fills it as it runs: self-attention keys/values grow by one
position per step; cross-attention keys/values are computed from the encoder
output once, on the first step, and reused. In a beam search the K beams of a
sentence share that sentence's cross-attention keys/values (`beams`): they are
computed once per sentence, and the K beams' queries attend to them together.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor


@dataclass
class LayerKVCache:
    """One decoder layer's cached projections, each `(B, H, T, d_k)`; with `beams` K > 1 the self-attention ones
    hold B * K rows (a sentence's beams next to each other) and the cross-attention ones B (one per sentence)."""

    self_k: Tensor | None = None
    self_v: Tensor | None = None
    cross_k: Tensor | None = None
    cross_v: Tensor | None = None
    beams: int = 1

    def append_self(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Append this step's keys/values `(B, H, t, d_k)`; return the full history."""
        if self.self_k is not None:
            k = torch.cat([self.self_k, k], dim=2)
            v = torch.cat([self.self_v, v], dim=2)
        self.self_k, self.self_v = k, v
        return k, v


@dataclass
class KVCache:
    """The cache of a whole decoder stack, one `LayerKVCache` per layer."""

    layers: list[LayerKVCache] = field(default_factory=list)

    @classmethod
    def empty(cls, n_layers: int, beams: int = 1) -> "KVCache":
        """An empty cache; `beams` K > 1: the decoder's input has K rows per sentence of its encoder output."""
        return cls([LayerKVCache(beams=beams) for _ in range(n_layers)])

    @property
    def length(self) -> int:
        """Number of target positions already cached."""
        first = self.layers[0].self_k if self.layers else None
        return 0 if first is None else first.size(2)

    def keep_sentences(self, index: Tensor) -> None:
        """Keep only the sentences `index` (n,) (a search drops those that are done): their `beams` rows each of
        the self-attention cache, their one row each of the cross-attention one."""
        beams = self.layers[0].beams if self.layers else 1
        rows = (index[:, None] * beams + torch.arange(beams, device=index.device)).view(-1)
        self.reorder(rows)
        for layer in self.layers:
            if layer.cross_k is not None:
                layer.cross_k = layer.cross_k.index_select(0, index)
                layer.cross_v = layer.cross_v.index_select(0, index)

    def reorder(self, index: Tensor) -> None:
        """Select batch rows `index` (B',) of the self-attention cache, e.g. surviving beams.

        Cross-attention entries are left alone: beams only move within their own
        sentence, whose encoder output is the same for every beam.
        """
        for layer in self.layers:
            if layer.self_k is not None:
                layer.self_k = layer.self_k.index_select(0, index)
                layer.self_v = layer.self_v.index_select(0, index)
