"""The training loss: label-smoothed cross-entropy fused with the output projection.

The reference path projects every position of the batch to float32 logits, `(B, T, V)` (for 8k target
tokens and a 16k vocabulary that is 0.5 GB written and read several times), then takes `log_softmax` and
its backward. On a CPU that memory traffic costs more than the matrix multiplications around it.

`linear_cross_entropy` computes the same sum from the hidden states of the non-pad positions, a chunk of
rows at a time: the chunk's logits come from one matrix multiplication in `dtype` (bf16 where the CPU has
bf16 units), the softmax and its gradient are taken in float32 while the chunk is still in cache, and the
gradients with respect to the hidden states and the projection weight are formed right away (as Liger
Kernel's fused linear cross-entropy does on GPUs). Backward then only scales them. No `(N, V)` tensor
outlives its chunk.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

CHUNK_ROWS = 512  # rows of logits formed at once: 512 x 16k float32 = 32 MB, about one L3 cache
# On a GPU a batch's rows go in one chunk (16k x 8k float32 logits = 0.5 GB): each chunk is some 25 kernel
# launches, and there the host launching kernels, not the GPU, bounds a training step.
GPU_CHUNK_ROWS = 16384
ROW_MULTIPLE = 64  # the last chunk is padded to a multiple of this many rows (why: `linear_cross_entropy`)


class _LinearCrossEntropy(torch.autograd.Function):
    """Sum over rows of CE(hidden @ weight.T, target) with label smoothing; gradients formed in forward."""

    @staticmethod
    def forward(ctx, hidden: Tensor, weight: Tensor, target: Tensor, label_smoothing: float, dtype: torch.dtype,
                chunk: int, row_weight: Tensor | None = None) -> Tensor:
        # hidden (N, d_model), weight (V, d_model), target (N,); row_weight (N,) of 0/1 or None (every row counts)
        n_rows, vocab = hidden.size(0), weight.size(0)
        eps = label_smoothing
        need_grad = ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
        w = weight.to(dtype)  # (V, d_model)
        acc = torch.promote_types(hidden.dtype, torch.float32)  # float32, or float64 in tests
        total = torch.zeros((), dtype=acc, device=hidden.device)
        grad_hidden = torch.empty_like(hidden) if need_grad else None
        grad_weight = torch.zeros(vocab, weight.size(1), dtype=acc, device=weight.device) if need_grad else None
        for start in range(0, n_rows, chunk):
            n = min(chunk, n_rows - start)  # real rows; the chunk is padded to `padded_rows(n)` with zero rows
            pad = (0, 0, 0, padded_rows(n) - n)
            h = F.pad(hidden[start:start + n].to(dtype), pad)  # (n_pad, d_model)
            t = F.pad(target[start:start + n, None], pad)  # (n_pad, 1)
            z = torch.mm(h, w.t()).to(acc)  # (n_pad, V) logits, float32 from here on
            z_mean, z_target = z.mean(dim=-1), z.gather(1, t).squeeze(1)  # (n_pad,)
            z_max = z.amax(dim=-1, keepdim=True)  # (n_pad, 1); amax, not max: no indices to find
            e = z.sub_(z_max).exp_()  # exp(z - max), in place of the logits
            norm = e.sum(dim=-1, keepdim=True)  # (n_pad, 1)
            lse = (z_max + norm.log()).squeeze(1)
            # -(1 - eps) log p_t - eps mean_v log p_v  =  lse - (1 - eps) z_t - eps mean_v z_v
            row_loss = (lse - (1.0 - eps) * z_target - eps * z_mean)[:n]  # (n,)
            rows = None if row_weight is None else row_weight[start:start + n].to(acc)  # (n,)
            total += (row_loss if rows is None else row_loss * rows).sum()
            if need_grad:  # d/dz = softmax - (1 - eps) onehot(t) - eps / V
                g = e.mul_(norm.reciprocal_())
                if eps:
                    g.sub_(eps / vocab)
                g.scatter_add_(1, t, torch.full_like(t, -(1.0 - eps), dtype=g.dtype))
                g[n:] = 0  # padding rows: no gradient
                if rows is not None:
                    g[:n].mul_(rows[:, None])
                g = g.to(dtype)
                grad_hidden[start:start + n] = torch.mm(g, w)[:n].to(hidden.dtype)
                grad_weight.add_(torch.mm(g.t(), h))  # (V, d_model), summed in float32
        if need_grad:
            ctx.save_for_backward(grad_hidden, grad_weight.to(weight.dtype))
        return total

    @staticmethod
    def backward(ctx, grad_total: Tensor):
        grad_hidden, grad_weight = ctx.saved_tensors
        return grad_hidden * grad_total, grad_weight * grad_total, None, None, None, None, None


def linear_cross_entropy(hidden: Tensor, weight: Tensor, target: Tensor, ignore_index: int,
                         label_smoothing: float = 0.0, dtype: torch.dtype = torch.float32,
                         chunk: int = CHUNK_ROWS, static_shape: bool = False) -> Tensor:
    """Summed label-smoothed cross-entropy of the logits `hidden @ weight.T` over the positions whose target
    is not `ignore_index`: the value of `F.cross_entropy(..., reduction="sum")` without its logits.

    hidden (B, T, d_model) or (N, d_model), weight (V, d_model), target (B, T) or (N,) -> scalar float32.
    `dtype` is the matrix multiplications' (bfloat16 or float32); softmax and sums are float32.
    The non-pad rows are selected, a count the host must wait for; `static_shape=True` (in a CUDA graph,
    `cuda_graphs.py`) instead computes every row and weighs the padding's loss and gradients by 0.
    """
    hidden, target = hidden.reshape(-1, hidden.size(-1)), target.reshape(-1)
    keep = target != ignore_index
    if static_shape:
        return _LinearCrossEntropy.apply(hidden, weight, target, float(label_smoothing), dtype, chunk, keep)
    return _LinearCrossEntropy.apply(hidden[keep], weight, target[keep], float(label_smoothing), dtype, chunk)


def chunk_rows(device: torch.device) -> int:
    """Rows of logits `linear_cross_entropy` forms at once on `device`."""
    return GPU_CHUNK_ROWS if device.type == "cuda" else CHUNK_ROWS


def padded_rows(n: int) -> int:
    """`n` rounded up to a multiple of `ROW_MULTIPLE`. oneDNN builds a bf16 matmul kernel for every new row count
    (many times the product itself), and the last chunk's row count changes with
    every batch: padded, it takes one of 8 shapes, each built once."""
    return -(-n // ROW_MULTIPLE) * ROW_MULTIPLE


def alignment_loss(weights: Tensor, target: Tensor) -> Tensor:
    """Summed cross-entropy of a head's attention rows (B, T, S) against target weights (B, T, S), each target row
    summing to 1 (a taught row) or 0 (not taught): -Σ target · log weights, as Garg et al. (2019) teach a head.
    The weights are clamped away from 0 so that a key the head ignores gives a large, finite loss."""
    return -(target * weights.float().clamp_min(1e-9).log()).sum()
