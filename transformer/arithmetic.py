"""One float arithmetic on every x86 computer: the float32 parts of a translation (the encoder, attention, layer
norms, softmax) on the same code path whatever the CPU's newest instructions and however many threads run.

Without this, MKL's float32 product picks its kernel by instruction set and splits a small product differently
on one thread than on two (on an AMD EPYC, 10 of 45 layer shapes got other bits), and ATen's own vectorised loops
(softmax, layer norm) add in the widest registers the CPU has. Both read a setting once, at their first use, so
`pin_float_kernels` runs before torch computes anything: `transformer/__init__.py` calls it. A value already in
the environment wins (the benches' CPU classes set their own). docs/serving.md says what this leaves open."""
from __future__ import annotations

import os
import platform

# MKL's conditional numerical reproducibility: its AVX2 code on every CPU that has AVX2, and STRICT results that
# do not depend on the thread count; ATen's kernels at the AVX2 width (an AVX-512 CPU would add 16 lanes at once).
FLOAT_KERNELS = {"MKL_CBWR": "AVX2,STRICT", "ATEN_CPU_CAPABILITY": "avx2"}


def pin_float_kernels() -> None:
    """Set `FLOAT_KERNELS` in this process's environment (inherited by its children) where it is not set; x86 only
    (an ARM build has neither library's switches)."""
    if platform.machine().lower() in ("x86_64", "amd64"):
        for name, value in FLOAT_KERNELS.items():
            os.environ.setdefault(name, value)
