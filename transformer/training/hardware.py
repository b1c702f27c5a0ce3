"""What the trainer's fast path uses on the machine it finds.

bf16 autocast pays where the hardware multiplies bf16 natively: a CUDA GPU, an Intel CPU with AMX, or a
CPU with AVX-512 BF16 (`bench/train_throughput.py`, docs/model.md). On a CPU without bf16 units,
autocast only adds casts, so the trainer stays in float32 there.

A CPU flag is not proof: a virtual machine can hide AMX from the kernels (an Intel Xeon whose hypervisor
masks `amx_*` but shows `avx512_bf16` multiplied bf16 slower than float32: docs/model.md). So on a CPU with
bf16 flags the choice also times one bf16 and one float32 matrix multiplication of a training step's shape and
takes bf16 only where it is at least `BF16_MIN_SPEEDUP` times faster.
`--precision bf16|fp32` overrides the choice.
"""
from __future__ import annotations

import functools
import logging
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

log = logging.getLogger(__name__)

PRECISIONS = ("auto", "bf16", "fp32")
# cuDNN's attention builds an execution graph for each new shape, and token-bucketed batches bring new shapes
# almost every step, so it would build one nearly every step: training and validation attend with the other
# backends (flash, memory-efficient, math).
TRAINING_ATTENTION = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
BF16_MIN_SPEEDUP = 1.5  # autocast adds casts around every matmul: bf16 must win clearly on the matmul alone


@dataclass(frozen=True)
class Hardware:
    """The training device and its matrix units: kind is "cuda", "amx", "avx512_bf16" or "cpu" (none)."""

    device: torch.device
    kind: str
    bf16_speedup: float | None = None  # bf16 GEMM speed over float32, measured on a CPU with bf16 flags

    @property
    def bf16_units(self) -> bool:
        return self.kind != "cpu"


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    """The CPU's feature flags (empty where /proc/cpuinfo is not there)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def gemm_seconds(dtype: torch.dtype, shape: tuple[int, int, int] = (2048, 256, 1024), repeats: int = 5) -> float:
    """Best time of one (M x K) @ (K x N) matrix multiplication in `dtype` (a d_model-256 FFN's shape)."""
    m, k, n = shape
    rng = torch.Generator().manual_seed(0)  # its own: timing must not move the training's random numbers
    a, b = torch.randn(m, k, generator=rng).to(dtype), torch.randn(k, n, generator=rng).to(dtype)
    a @ b  # first call: kernel selection
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return best


@functools.cache  # once a process: every run of one process trains in one precision
def bf16_gemm_speedup() -> float:
    """How many times faster a bf16 matrix multiplication runs than a float32 one on this CPU (best of 5 each)."""
    return gemm_seconds(torch.float32) / gemm_seconds(torch.bfloat16)


def detect(device: torch.device, flags: set[str] | None = None, speedup: float | None = None) -> Hardware:
    """The kind of matrix unit training runs on; on a CPU with bf16 flags, also the measured bf16 speedup
    (`speedup` given: taken as measured, for tests)."""
    if device.type == "cuda":
        return Hardware(device, "cuda")
    flags = cpu_flags() if flags is None else flags
    kind = "amx" if "amx_bf16" in flags else "avx512_bf16" if "avx512_bf16" in flags else "cpu"
    if kind == "cpu":
        return Hardware(device, kind)
    return Hardware(device, kind, bf16_gemm_speedup() if speedup is None else speedup)


def use_bf16(precision: str, hardware: Hardware) -> bool:
    """Whether to train under bf16 autocast: `precision` "bf16"/"fp32" as given, "auto" where bf16 units are.
    Logs the choice and why."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    pays = hardware.kind == "cuda" or (hardware.bf16_units and (hardware.bf16_speedup or 0) >= BF16_MIN_SPEEDUP)
    bf16 = pays if precision == "auto" else precision == "bf16"
    how = "chosen for" if precision == "auto" else f"set by --precision {precision} on"
    measured = "" if hardware.bf16_speedup is None else (
        f", whose bf16 matmul runs {hardware.bf16_speedup:.2f}x float32 (bf16 needs {BF16_MIN_SPEEDUP}x)")
    log.info("training in %s: %s %s%s", "bf16 autocast" if bf16 else "float32", how,
             {"cuda": "a CUDA GPU", "amx": "a CPU with AMX", "avx512_bf16": "a CPU with AVX-512 BF16 (no AMX)",
              "cpu": "a CPU without bf16 units"}[hardware.kind], measured)
    return bf16


def training_attention(device: torch.device) -> AbstractContextManager:
    """The attention backends training and validation may use on `device` (`TRAINING_ATTENTION` on a GPU)."""
    return sdpa_kernel(TRAINING_ATTENTION) if device.type == "cuda" else nullcontext()
