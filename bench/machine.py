"""What every benchmark prints beside its numbers: the CPU they were measured on (numbers from different
machines do not compare)."""
from __future__ import annotations

import platform
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (elsewhere what `platform` knows)."""
    info = Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in info.read_text().splitlines()
             if line.startswith("model name")] if info.is_file() else []
    return names[0] if names else platform.processor() or platform.machine() or "unknown"
