"""A training micro-batch's forward and backward as one CUDA graph, so that the GPU, not the host, sets the pace.

Run eagerly, a step of the en-de model launches thousands of small kernels: on a fast GPU a step's matrix work
is a small part of the time the host spends launching kernels (docs/model.md). A CUDA
graph records those launches once and replays them with one.

A graph is fixed to the shapes and the memory it was recorded with. So:

- each batch is padded to one of a few shapes (`padded_shape`: its row count rounded up to 4 significant
  binary digits, its lengths to 3; a few more positions computed, and some hundred shapes for a corpus)
  and copied into that shape's own input tensors, which its graph reads;
- rows added to fill a shape repeat the batch's first pair with a target of padding only: their loss and
  their gradients are zero;
- the loss weighs every position, padding by 0 (`linear_cross_entropy(..., static_shape=True)`), instead of
  selecting the real ones, a count the host would have to wait for;
- the gradients are added to tensors allocated before any recording, which the optimizer reads; the loss is
  copied to one such tensor. Nothing a graph allocates outlives its replay, so all graphs share one memory pool.

Clipping and the fused AdamW step stay eager: some twenty launches per optimizer step, queued without waiting.
A shape seen for the first time costs a warm-up forward and backward and a recording; the random generator's
state is put back afterwards, so the run's dropout masks do not depend on when each shape was first seen.

`GraphedSteps(..., record=False)` runs the same padded, static-shape step eagerly, on any device: the tests'
way to check the padding and the gradient bookkeeping on a CPU.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .data import Batch

log = logging.getLogger(__name__)

BATCH_BITS = 4  # significant binary digits of a padded row count: 300 -> 320
LENGTH_BITS = 3  # ... of a padded length: 21 -> 24, 37 -> 40
FIRST_WARMUPS, WARMUPS = 3, 1  # eager forward/backward passes before a recording (the first builds libraries' state)


def round_up(n: int, bits: int) -> int:
    """`n` rounded up to the next number whose binary form has at most `bits` significant digits."""
    step = 1 << max(0, n.bit_length() - bits)
    return -(-n // step) * step


def padded_shape(batch: Batch, max_len: int) -> tuple[int, int, int]:
    """(rows, source length, target length) of the graph that takes `batch`; lengths stay within `max_len`."""
    (rows, src_len), tgt_len = batch.src.shape, batch.tgt_in.size(1)
    return (round_up(rows, BATCH_BITS), max(src_len, min(round_up(src_len, LENGTH_BITS), max_len)),
            max(tgt_len, min(round_up(tgt_len, LENGTH_BITS), max_len)))


def pad_to(batch: Batch, shape: tuple[int, int, int], pad_id: int) -> Batch:
    """`batch` (B, S)/(B, T) padded to `shape` (B', S', T'): columns of padding, and B' - B more rows that repeat
    the first pair with a target of padding only (their loss and gradients are zero; a row of padding only
    would attend to nothing, and its NaNs would reach the gradients through the zero weights)."""
    rows, src_len, tgt_len = shape
    extra = rows - batch.src.size(0)

    def grow(x: Tensor, length: int, repeat_first: bool) -> Tensor:
        x = F.pad(x, (0, length - x.size(1)), value=pad_id)
        filler = x[:1].expand(extra, -1) if repeat_first else x.new_full((extra, length), pad_id)
        return torch.cat([x, filler])

    return Batch(grow(batch.src, src_len, True), grow(batch.tgt_in, tgt_len, True),
                 grow(batch.tgt_out, tgt_len, False), batch.n_tokens)


@dataclass
class _Shape:
    """One padded shape: its input tensors on the device, and the graph that reads them once recorded."""

    inputs: Batch
    graph: torch.cuda.CUDAGraph | None = None


class GraphedSteps:
    """Gradient accumulation for a model whose micro-batches run as CUDA graphs, one per padded shape.

    `loss(model, batch)` is the summed loss of a batch of static shape (`trainer.batch_loss` with
    `static_shape=True`). `accumulate(batch)` adds the gradient of loss / (target tokens x `accum_steps`) to
    the parameters' `.grad`, which this object owns: clear them with `zero_grad()`, never with
    `optimizer.zero_grad(set_to_none=True)` (a graph adds to the tensors it was recorded with).
    """

    def __init__(self, model: nn.Module, loss: Callable[[nn.Module, Batch], Tensor], accum_steps: int = 1,
                 record: bool = True):
        self.model, self.loss, self.accum_steps, self.record = model, loss, accum_steps, record
        self.pad_id, self.max_len = model.config.pad_id, model.config.max_len
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.device = self.params[0].device
        if record and self.device.type != "cuda":
            raise ValueError(f"CUDA graphs need a CUDA device, not {self.device}")
        self.grads = [torch.zeros_like(p) for p in self.params]
        for p, g in zip(self.params, self.grads):
            p.grad = g
        self.loss_out = torch.zeros((), device=self.device)  # the last micro-batch's summed loss
        self.shapes: dict[tuple[int, int, int], _Shape] = {}
        self.pool = torch.cuda.graph_pool_handle() if record else None
        self.record_seconds = 0.0  # spent warming up and recording new shapes

    def zero_grad(self) -> None:
        torch._foreach_zero_(self.grads)

    def accumulate(self, batch: Batch) -> Tensor:
        """Add one host batch's gradient (src (B, S), tgt_in/tgt_out (B, T) on the CPU); returns its summed loss,
        a 0-dim float32 tensor on the device (not read here: the host does not wait for the GPU)."""
        key = padded_shape(batch, self.max_len)
        padded = pad_to(batch, key, self.pad_id)
        shape = self.shapes.get(key)
        if shape is None:
            shape = self.shapes[key] = _Shape(Batch(*(torch.empty(t.shape, dtype=t.dtype, device=self.device)
                                                      for t in (padded.src, padded.tgt_in, padded.tgt_out)), 0))
        cuda = self.device.type == "cuda"
        for dst, src in zip((shape.inputs.src, shape.inputs.tgt_in, shape.inputs.tgt_out),
                            (padded.src, padded.tgt_in, padded.tgt_out)):
            dst.copy_(src.pin_memory() if cuda else src, non_blocking=cuda)
        if not self.record:
            self._forward_backward(shape.inputs)
        else:
            if shape.graph is None:
                shape.graph = self._recorded(shape.inputs)
            shape.graph.replay()
        return self.loss_out.clone()

    def _forward_backward(self, inputs: Batch) -> None:
        """What a graph records: the loss, its gradient added to `grads`, the loss copied to `loss_out`."""
        loss = self.loss(self.model, inputs)
        tokens = (inputs.tgt_out != self.pad_id).sum()  # counted on the device: the host never waits
        grads = torch.autograd.grad(loss / (tokens * self.accum_steps), self.params, allow_unused=True,
                                    materialize_grads=True)
        torch._foreach_add_(self.grads, grads)
        self.loss_out.copy_(loss.detach())

    def _recorded(self, inputs: Batch) -> torch.cuda.CUDAGraph:
        """Warm up on a side stream (as PyTorch's CUDA-graph notes ask), undo what that did to the gradients
        and the random generator, and record one forward and backward into the shared pool."""
        start = time.perf_counter()
        rng = torch.cuda.get_rng_state(self.device)
        saved = [g.clone() for g in self.grads]
        side, main = torch.cuda.Stream(self.device), torch.cuda.current_stream(self.device)
        side.wait_stream(main)
        with torch.cuda.stream(side):
            first = not any(s.graph is not None for s in self.shapes.values())
            for _ in range(FIRST_WARMUPS if first else WARMUPS):
                self._forward_backward(inputs)
        main.wait_stream(side)
        torch._foreach_copy_(self.grads, saved)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            self._forward_backward(inputs)
        torch.cuda.set_rng_state(rng, self.device)
        self.record_seconds += time.perf_counter() - start
        log.debug("recorded a CUDA graph for batches of shape %s (%d shapes)", tuple(inputs.tgt_in.shape),
                  len(self.shapes))
        return graph
