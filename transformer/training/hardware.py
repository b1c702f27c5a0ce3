"""What the trainer's fast path uses on the machine it finds.

bf16 autocast pays where the hardware multiplies bf16 natively: a CUDA GPU, an Intel CPU with AMX, or a
CPU with AVX-512 BF16 (measured on an AMD EPYC: `bench/train_throughput.py`). On a CPU without bf16 units,
autocast only adds casts, so the trainer stays in float32 there. `--precision bf16|fp32` overrides the choice.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import torch

log = logging.getLogger(__name__)

PRECISIONS = ("auto", "bf16", "fp32")


@dataclass(frozen=True)
class Hardware:
    """The training device and its matrix units: kind is "cuda", "amx", "avx512_bf16" or "cpu" (none)."""

    device: torch.device
    kind: str

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


def detect(device: torch.device, flags: set[str] | None = None) -> Hardware:
    """The kind of matrix unit training runs on."""
    if device.type == "cuda":
        return Hardware(device, "cuda")
    flags = cpu_flags() if flags is None else flags
    if "amx_bf16" in flags:
        return Hardware(device, "amx")
    if "avx512_bf16" in flags:
        return Hardware(device, "avx512_bf16")
    return Hardware(device, "cpu")


def use_bf16(precision: str, hardware: Hardware) -> bool:
    """Whether to train under bf16 autocast: `precision` "bf16"/"fp32" as given, "auto" where bf16 units are.
    Logs the choice and why."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    bf16 = hardware.bf16_units if precision == "auto" else precision == "bf16"
    how = "chosen for" if precision == "auto" else f"set by --precision {precision} on"
    log.info("training in %s: %s %s", "bf16 autocast" if bf16 else "float32", how,
             {"cuda": "a CUDA GPU", "amx": "a CPU with AMX", "avx512_bf16": "a CPU with AVX-512 BF16 (no AMX)",
              "cpu": "a CPU without bf16 units"}[hardware.kind])
    return bf16
