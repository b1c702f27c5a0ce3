"""Imported at every Python start while bench/emulate is on PYTHONPATH (bench/cpu_class.py's "avx2" class):
`BENCH_TORCH_MKLDNN=0` switches oneDNN off inside torch, as torch ran `_int_mm` on an AVX2-only AMD EPYC."""
import os

if os.environ.get("BENCH_TORCH_MKLDNN") == "0":
    import torch

    torch.backends.mkldnn.enabled = False
