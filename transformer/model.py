"""An encoder–decoder Transformer (Vaswani et al., 2017) from torch primitives.

Read top to bottom: positional encoding, attention, feed-forward, the two layer
kinds, the two stacks, and the full model. Masks are boolean and broadcast to
`(B, H, T_q, T_k)`; True means "may attend". Attention maps are computed
only when a caller asks for them (`output_attentions=True`, with `attention_measure` "weight" or "norm", of
`forward`, `encode`, `decode` and every layer), and are returned, never stored on a module.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .config import ATTENTION_KINDS, MEASURES, ModelConfig
from .kv_cache import KVCache, LayerKVCache


@dataclass
class AttentionMaps:
    """Per-layer attention weights, each `(B, H, T_q, T_k)`; rows are queries."""

    encoder: list[Tensor]
    decoder: list[Tensor]
    cross: list[Tensor]


@dataclass

class HeadMask:
    """Which heads take part, per attention kind: `(L, H)` of 0/1, or `(B, L, H)` per example (e.g. to take
    gradients with respect to it); None means every head of that kind is on.

    Head h of layer l then adds `mask[l, h] * (its attention output)` to the output projection's input,
    so 0 is the same as zeroing that head's slice before `out_proj`, and 1 leaves the model bit for bit
    as it is. Returned attention maps of a masked head are zero.
    """

    encoder: Tensor | None = None
    decoder: Tensor | None = None
    cross: Tensor | None = None

    KINDS = ATTENTION_KINDS

    def check(self, config: ModelConfig) -> HeadMask:
        """Raise ValueError unless every mask fits the model (layers × heads, optionally a batch first)."""
        layers = {"encoder": config.n_encoder_layers, "decoder": config.n_decoder_layers,
                  "cross": config.n_decoder_layers}
        for kind in self.KINDS:
            mask = getattr(self, kind)
            if mask is None:
                continue
            if not isinstance(mask, Tensor) or mask.dim() not in (2, 3) or tuple(mask.shape[-2:]) != (
                    layers[kind], config.n_heads):
                shape = tuple(mask.shape) if isinstance(mask, Tensor) else type(mask).__name__
                raise ValueError(f"head_mask.{kind} must be ({layers[kind]}, {config.n_heads}) "
                                 f"or (batch, {layers[kind]}, {config.n_heads}), got {shape}")
        return self

    def repeat_interleave(self, repeats: int) -> HeadMask:
        """Per-example masks repeated for the beams of each example; shared masks as they are."""
        def rep(mask: Tensor | None) -> Tensor | None:
            return mask.repeat_interleave(repeats, 0) if mask is not None and mask.dim() == 3 else mask
        return HeadMask(rep(self.encoder), rep(self.decoder), rep(self.cross))

    def index_select(self, rows: Tensor) -> HeadMask:
        """Per-example masks of batch rows `rows` only; shared masks as they are."""
        def pick(mask: Tensor | None) -> Tensor | None:
            return mask.index_select(0, rows) if mask is not None and mask.dim() == 3 else mask
        return HeadMask(pick(self.encoder), pick(self.decoder), pick(self.cross))


def layer_head_mask(mask: Tensor | None, layer: int) -> Tensor | None:
    """A kind's `(L, H)` or `(B, L, H)` mask -> layer `layer`'s, shaped `(1 or B, H, 1, 1)` like a head's output."""
    if mask is None:
        return None
    m = mask[..., layer, :]
    return m.reshape(m.size(0) if m.dim() == 2 else 1, m.size(-1), 1, 1)




@dataclass
class Seq2SeqOutput:
    """What `Transformer.forward` returns, always (as a Hugging Face model returns its ModelOutput)."""

    logits: Tensor | None  # (B, T, V); None when the caller projects `hidden` itself (`project=False`)
    hidden: Tensor  # the decoder's output (B, T, d_model)
    attention: AttentionMaps | None = None  # only when asked for (`output_attentions=True`)


def padding_mask(ids: Tensor, pad_id: int) -> Tensor:
    """(B, S) ids -> (B, 1, 1, S) mask, False at padding keys."""
    return (ids != pad_id)[:, None, None, :]


def pad_sequences(seqs: Sequence[Sequence[int]], pad_id: int) -> Tensor:
    """List of id lists -> (B, max_len) LongTensor, right-padded. One tensor of all ids, scattered through a
    mask, not a copy per row: the host builds each training batch between a GPU's kernel launches."""
    lengths = [len(s) for s in seqs]
    out = torch.full((len(seqs), max(lengths)), pad_id, dtype=torch.long)
    real = torch.arange(out.size(1)) < torch.tensor(lengths)[:, None]  # (B, max_len)
    out[real] = torch.tensor(list(itertools.chain.from_iterable(seqs)), dtype=torch.long)
    return out


def dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """Inverted dropout. On a CPU the mask comes from 16 random bits per element, four to each 64-bit draw of
    torch's generator: `F.dropout` draws once per element, four times the draws (docs/model.md, the fast path).
    p is used as a multiple of 2**-16. Elsewhere (CUDA) it is `F.dropout`."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu":
        return F.dropout(x, p, True)
    words = torch.empty((x.numel() + 3) // 4, dtype=torch.int64, device=x.device).random_(-(2**63), 2**63 - 1)
    bits = words.view(torch.int16)[: x.numel()].view(x.shape)  # uniform over the 65,536 int16 values
    keep = bits >= round(p * 65536) - 32768
    return torch.where(keep, x * (1.0 / (1.0 - p)), 0.0)


class Dropout(nn.Dropout):
    """`nn.Dropout` through `dropout` (same p, same state dict: none)."""

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)


def cast_once(x: Tensor) -> Tensor:
    """x in the autocast dtype when autocast is on: the q, k and v projections of one input would each cast
    it again (and their backward cast each gradient back)."""
    if torch.is_autocast_enabled(x.device.type):
        return x.to(torch.get_autocast_dtype(x.device.type))
    return x


def causal_mask(size: int, device: torch.device | None = None) -> Tensor:
    """(T, T) lower-triangular mask: position t may attend to positions <= t."""
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()


class PositionalEncoding(nn.Module):
    """Sinusoidal encoding, PE(pos, 2i) = sin(pos / 10000^(2i/d)), cos for 2i+1."""

    def __init__(self, d_model: int, max_len: int):
        super().__init__()
        position = torch.arange(max_len, dtype=torch.float32)[:, None]  # (L, 1)
        inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * inv_freq)
        pe[:, 1::2] = torch.cos(position * inv_freq)
        self.register_buffer("pe", pe, persistent=False)  # derived, so not part of the weights file

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """x: (B, T, d_model), positions start at `offset` (for cached decoding)."""
        if offset + x.size(1) > self.pe.size(0):
            raise ValueError(f"sequence of {offset + x.size(1)} positions exceeds max_len {self.pe.size(0)}")
        return x + self.pe[offset : offset + x.size(1)]


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dropout: float):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.dropout = dropout

    def split_heads(self, x: Tensor) -> Tensor:
        """(B, T, d_model) -> (B, H, T, d_k)"""
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_k).transpose(1, 2)

    def project_q(self, x: Tensor) -> Tensor:
        return self.split_heads(self.q_proj(x))

    def project_kv(self, x: Tensor) -> tuple[Tensor, Tensor]:
        return self.split_heads(self.k_proj(x)), self.split_heads(self.v_proj(x))

    def project_qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Self-attention's queries, keys and values of x (B, T, d_model), each (B, H, T, d_k). A search model
        may compute the three in one product (`quantize.FusedQKVAttention`)."""
        k, v = self.project_kv(x)
        return self.project_q(x), k, v

    def value_norms(self, v: Tensor) -> Tensor:
        """‖f_h(x_j)‖ of Kobayashi et al. (2020): v (B, H, T_k, d_k) -> (B, H, T_k), the norm of what key j
        adds to the output through head h (its value times head h's columns of `out_proj`, bias aside)."""
        w_o = self.out_proj.weight.view(-1, self.n_heads, self.d_k)  # (d_model, H, d_k)
        return torch.einsum("bhkd,ohd->bhko", v, w_o.to(v.dtype)).norm(dim=-1)

    def attend(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, output_attentions: bool,
        attention_measure: str = "weight", head_mask: Tensor | None = None, cached: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """q (B, H, T_q, d_k), k/v (B, H, T_k, d_k) -> output (B, T_q, d_model), weights (B, H, T_q, T_k).

        With `output_attentions`, `attention_measure="norm"` returns ‖α_ij f_h(x_j)‖ instead of α_ij; `head_mask`
        (1 or B, H, 1, 1) scales each head's output (and its returned map) before the output projection.
        `cached` (the search's decoding steps): on the CPU, always the explicit path over contiguous q, k and v.
        """
        p = self.dropout if self.training else 0.0
        # Training on a CPU takes the explicit path even without dropout: SDPA's CPU backward is slower per step
        # in bf16 (docs/model.md), and its dropout draws a random number per element. The search takes it too:
        # SDPA's CPU kernel splits a small batch's keys across threads, and a batched matmul of transposed views
        # picks its kernel by batch size, so either gave a sentence other bits alone than in a batch.
        cpu = q.device.type == "cpu"
        if cached and cpu:  # in place, over contiguous q, k, v (k and v: no copy, the cache keeps them so)
            scores = torch.matmul(q.contiguous(), k.contiguous().transpose(-2, -1)).div_(math.sqrt(self.d_k))
            if mask is not None:
                scores.masked_fill_(~mask, float("-inf"))
            weights = scores.softmax(dim=-1)  # (B, H, T_q, T_k)
            out = torch.matmul(weights, v.contiguous())  # (B, H, T_q, d_k)
            weights = weights if output_attentions else None
        elif output_attentions or (cpu and self.training):
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, H, T_q, T_k)
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            weights = scores.softmax(dim=-1)
            out = dropout(weights, p, self.training) @ v  # (B, H, T_q, d_k)
            weights = weights if output_attentions else None
        else:
            weights = None
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        if head_mask is not None:
            out = out * head_mask.to(out.dtype)
            weights = None if weights is None else weights * head_mask.to(weights.dtype)
        if output_attentions and attention_measure == "norm":
            weights = weights * self.value_norms(v)[:, :, None, :]
        B, H, T, d_k = out.shape
        return self.out_proj(out.transpose(1, 2).reshape(B, T, H * d_k)), weights

    def forward(
        self, x: Tensor, context: Tensor, mask: Tensor | None, output_attentions: bool = False,
        attention_measure: str = "weight", head_mask: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Queries from x (B, T_q, d_model), keys and values from context (B, T_k, d_model)."""
        x, context = (cast_once(x),) * 2 if context is x else (cast_once(x), cast_once(context))
        k, v = self.project_kv(context)
        return self.attend(self.project_q(x), k, v, mask, output_attentions, attention_measure, head_mask)


class FeedForward(nn.Module):
    """Position-wise FFN: d_model -> d_ff -> d_model with relu, gelu or geglu."""

    def __init__(self, d_model: int, d_ff: int, dropout: float, activation: str):
        super().__init__()
        self.activation = activation
        self.linear1 = nn.Linear(d_model, 2 * d_ff if activation == "geglu" else d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        h = self.linear1(x)
        if self.activation == "geglu":
            value, gate = h.chunk(2, dim=-1)
            h = value * F.gelu(gate)
        else:
            h = F.relu(h) if self.activation == "relu" else F.gelu(h)
        return self.linear2(self.dropout(h))


class EncoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.norm_first = cfg.norm_first
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.attention_p)
        self.ff = FeedForward(cfg.d_model, cfg.d_ff, cfg.activation_p, cfg.activation)
        self.norm1, self.norm2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.dropout = Dropout(cfg.dropout)

    def forward(self, x: Tensor, mask: Tensor | None, output_attentions: bool = False,
                attention_measure: str = "weight", head_mask: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """x (B, S, d_model), mask (B, 1, 1, S), head_mask (1 or B, H, 1, 1)."""
        if self.norm_first:
            h = self.norm1(x)
            a, w = self.self_attn(h, h, mask, output_attentions, attention_measure, head_mask)
            x = x + self.dropout(a)
            return x + self.dropout(self.ff(self.norm2(x))), w
        a, w = self.self_attn(x, x, mask, output_attentions, attention_measure, head_mask)
        x = self.norm1(x + self.dropout(a))
        return self.norm2(x + self.dropout(self.ff(x))), w


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.norm_first = cfg.norm_first
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.attention_p)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.attention_p)
        self.ff = FeedForward(cfg.d_model, cfg.d_ff, cfg.activation_p, cfg.activation)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(cfg.d_model) for _ in range(3))
        self.dropout = Dropout(cfg.dropout)

    def _self_block(self, x: Tensor, mask: Tensor | None, cache: LayerKVCache | None, output_attentions: bool,
                    attention_measure: str, head_mask: Tensor | None):
        q, k, v = self.self_attn.project_qkv(cast_once(x))
        if cache is not None:
            k, v = cache.append_self(k.contiguous(), v.contiguous())  # (B, H, T, d_k) in memory too: see `attend`
        a, w = self.self_attn.attend(q, k, v, mask, output_attentions, attention_measure, head_mask,
                                     cached=cache is not None)
        return self.dropout(a), w

    def _cross_block(self, x: Tensor, memory: Tensor, mask: Tensor | None, cache: LayerKVCache | None,
                     output_attentions: bool, attention_measure: str, head_mask: Tensor | None):
        if cache is not None and cache.cross_k is not None:
            k, v = cache.cross_k, cache.cross_v
        else:
            k, v = self.cross_attn.project_kv(memory)
            if cache is not None:
                k, v = cache.cross_k, cache.cross_v = k.contiguous(), v.contiguous()
        q = self.cross_attn.project_q(cast_once(x))  # (B * beams, H, 1, d_k)
        beams = cache.beams if cache is not None else 1
        cached = cache is not None
        if beams == 1:
            a, w = self.cross_attn.attend(q, k, v, mask, output_attentions, attention_measure, head_mask, cached)
            return self.dropout(a), w
        # A sentence's beams, one query each, attend to its keys together: (B, H, beams, d_k), keys (B, H, S, d_k).
        BK, H, _, d_k = q.shape
        q = q.view(BK // beams, beams, H, d_k).transpose(1, 2)
        if head_mask is not None and head_mask.size(0) > 1:
            head_mask = head_mask[::beams]  # per sentence, the same for each of its beams
        a, w = self.cross_attn.attend(q, k, v, mask, output_attentions, attention_measure, head_mask, cached)
        # a: (B, beams, d)
        if w is not None:
            w = w.transpose(1, 2).reshape(BK, H, 1, w.size(-1))  # (B * beams, H, 1, S)
        return self.dropout(a.reshape(BK, 1, a.size(-1))), w

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        src_mask: Tensor | None,
        tgt_mask: Tensor | None,
        cache: LayerKVCache | None = None,
        output_attentions: bool = False,
        attention_measure: str = "weight",
        self_head_mask: Tensor | None = None,
        cross_head_mask: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """x (B, T, d_model), memory (B, S, d_model) -> x, self weights, cross weights."""
        if self.norm_first:
            a, self_w = self._self_block(self.norm1(x), tgt_mask, cache, output_attentions, attention_measure,
                                         self_head_mask)
            x = x + a
            a, cross_w = self._cross_block(self.norm2(x), memory, src_mask, cache, output_attentions, attention_measure,
                                           cross_head_mask)
            x = x + a
            return x + self.dropout(self.ff(self.norm3(x))), self_w, cross_w
        a, self_w = self._self_block(x, tgt_mask, cache, output_attentions, attention_measure, self_head_mask)
        x = self.norm1(x + a)
        a, cross_w = self._cross_block(x, memory, src_mask, cache, output_attentions, attention_measure,
                                       cross_head_mask)
        x = self.norm2(x + a)
        return self.norm3(x + self.dropout(self.ff(x))), self_w, cross_w


class Encoder(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        # Pre-LN leaves the residual stream unnormalised, so the stack ends with one LayerNorm.
        self.norm = nn.LayerNorm(cfg.d_model) if cfg.norm_first else nn.Identity()

    def forward(self, x: Tensor, mask: Tensor | None, output_attentions: bool = False,
                attention_measure: str = "weight", head_mask: Tensor | None = None) -> tuple[Tensor, list[Tensor]]:
        """head_mask: (L, H) or (B, L, H), or None."""
        weights = []
        for i, layer in enumerate(self.layers):
            x, w = layer(x, mask, output_attentions, attention_measure, layer_head_mask(head_mask, i))
            weights.append(w)
        return self.norm(x), weights if output_attentions else []


class Decoder(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers))
        self.norm = nn.LayerNorm(cfg.d_model) if cfg.norm_first else nn.Identity()

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        src_mask: Tensor | None,
        tgt_mask: Tensor | None,
        cache: KVCache | None = None,
        output_attentions: bool = False,
        attention_measure: str = "weight",
        head_mask: HeadMask | None = None,
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        self_mask, cross_mask = (head_mask.decoder, head_mask.cross) if head_mask is not None else (None, None)
        memory = cast_once(memory)  # once for every layer's cross-attention keys and values
        self_ws, cross_ws = [], []
        for i, layer in enumerate(self.layers):
            x, sw, cw = layer(x, memory, src_mask, tgt_mask, cache.layers[i] if cache else None,
                              output_attentions, attention_measure,
                              layer_head_mask(self_mask, i), layer_head_mask(cross_mask, i))
            self_ws.append(sw)
            cross_ws.append(cw)
        return self.norm(x), (self_ws if output_attentions else []), (cross_ws if output_attentions else [])


class Transformer(nn.Module):
    """Encoder–decoder Transformer.

    `encode`, `decode` and `project` are the building blocks that decoding uses;
    `forward(src, tgt_in)` is the teacher-forced training path.
    """

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        d = config.d_model
        self.src_embed = nn.Embedding(config.src_vocab_size, d, padding_idx=config.pad_id)
        self.tgt_embed = nn.Embedding(config.tgt_vocab_size, d, padding_idx=config.pad_id)
        self.positional = PositionalEncoding(d, config.max_len)
        self.embed_dropout = Dropout(config.dropout)
        self.encoder = Encoder(config)
        self.decoder = Decoder(config)
        self.generator = nn.Linear(d, config.tgt_vocab_size, bias=False)
        self._reset_parameters()
        if config.tie_embeddings:
            self.tgt_embed.weight = self.src_embed.weight
            self.generator.weight = self.src_embed.weight

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        for emb in (self.src_embed, self.tgt_embed):
            with torch.no_grad():
                emb.weight[self.config.pad_id].zero_()

    def _embed(self, embedding: nn.Embedding, ids: Tensor, offset: int = 0) -> Tensor:
        """(B, T) ids -> (B, T, d_model), scaled by sqrt(d_model) as in the paper."""
        x = embedding(ids) * math.sqrt(self.config.d_model)
        return self.embed_dropout(self.positional(x, offset))

    def encode(self, src: Tensor, src_mask: Tensor | None, output_attentions: bool = False,
               attention_measure: str = "weight", head_mask: HeadMask | None = None) -> tuple[Tensor, list[Tensor]]:
        """src (B, S), src_mask (B, 1, 1, S) or None (no padding) -> memory (B, S, d_model), per-layer (B, H, S, S) weights.

        `output_attentions`: the maps, weights α or with `attention_measure="norm"` ‖α f(x)‖ (else an empty list);
        `head_mask.encoder` switches heads off.
        """
        mask = head_mask.encoder if head_mask is not None else None
        return self.encoder(self._embed(self.src_embed, src), src_mask, output_attentions, attention_measure, mask)

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        src_mask: Tensor | None,
        tgt_mask: Tensor | None,
        cache: KVCache | None = None,
        output_attentions: bool = False,
        attention_measure: str = "weight",
        head_mask: HeadMask | None = None,
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        """tgt (B, T) -> hidden (B, T, d_model), self (B, H, T, T_total) and cross (B, H, T, S) weights.

        With a `cache`, `tgt` holds only the new positions; they are placed after
        the cached ones and attend to all of them, so `tgt_mask` may be None.
        `head_mask.decoder` and `.cross` switch heads off.
        """
        offset = cache.length if cache is not None else 0
        x = self._embed(self.tgt_embed, tgt, offset)
        return self.decoder(x, memory, src_mask, tgt_mask, cache, output_attentions, attention_measure, head_mask)

    def project(self, hidden: Tensor) -> Tensor:
        """(B, T, d_model) -> (B, T, V) logits."""
        return self.generator(hidden)

    def make_masks(self, src: Tensor, tgt_in: Tensor) -> tuple[Tensor, Tensor]:
        """src_mask (B, 1, 1, S) and tgt_mask (B, 1, T, T): padding keys hidden, future hidden."""
        pad = self.config.pad_id
        tgt_mask = padding_mask(tgt_in, pad) & causal_mask(tgt_in.size(1), tgt_in.device)
        return padding_mask(src, pad), tgt_mask

    def forward(self, src: Tensor, tgt_in: Tensor, *, output_attentions: bool = False,
                attention_measure: str = "weight", head_mask: HeadMask | None = None,
                project: bool = True) -> Seq2SeqOutput:
        """src (B, S), tgt_in (B, T) ids -> `Seq2SeqOutput`: logits (B, T, V) and the decoder's hidden states.

        `output_attentions=True` adds every layer's attention maps: the weights, or with
        `attention_measure="norm"` the norms ‖α f(x)‖; none are computed otherwise. `head_mask` switches heads
        off. `project=False` leaves the logits out, for a loss that applies the output projection itself
        (`training/loss.py`).
        """
        if attention_measure not in MEASURES:
            raise ValueError(f"attention_measure must be one of {MEASURES}, got {attention_measure!r}")
        if head_mask is not None:
            head_mask.check(self.config)
        src_mask, tgt_mask = self.make_masks(src, tgt_in)
        memory, enc_w = self.encode(src, src_mask, output_attentions, attention_measure, head_mask)
        hidden, dec_w, cross_w = self.decode(tgt_in, memory, src_mask, tgt_mask, None, output_attentions,
                                             attention_measure, head_mask)
        logits = self.project(hidden) if project else None
        attention = AttentionMaps(enc_w, dec_w, cross_w) if output_attentions else None
        return Seq2SeqOutput(logits, hidden, attention)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
