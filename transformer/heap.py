"""The process heap (glibc's malloc), set for what the process does: an app gives freed memory back, a
trainer keeps it.

By default glibc serves a block of 128 KB or more by mmap, given back to the system when freed, until it sees
such a block freed; then it raises that threshold to the freed size (up to 32 MB) and serves later blocks of
that size from its heaps, which give memory back only from their top, and only past a trim threshold.

- **An app** (`give_back`, `trim`) keeps and drops attention arrays of megabytes all day, from the threads of
  gradio's pool, each of which may get an arena of its own: left alone, its resident memory grows to the most
  it ever held at once, per arena, and stays there. `give_back()` fixes the threshold (every block of
  `APP_MMAP_THRESHOLD` or more is mmap'ed) and caps the arenas; `trim()`, after results are released, returns
  the heaps' free pages.
- **A trainer on a CPU** (`keep`) allocates and frees the same activations every step. Every
  block that goes back to the system comes back as fresh pages, each one a page fault, zeroed by the kernel:
  `keep()` serves every block from the heaps and never trims them, so a step reuses the last step's pages
  (`bench/train_throughput.py` measures the gain, docs/model.md). The app's search process
  (`search_process`) keeps them too: a batched search frees and takes the same blocks every step, and given
  back each step would fault them in afresh (docs/serving.md).

Where the C library is not glibc, all three do nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
APP_MMAP_THRESHOLD = 256 * 1024  # an app's blocks this big or bigger: mmap'ed, given back when freed
APP_ARENA_MAX = 2  # one per core of a free Space; the model work runs on one thread (batching.Batcher)
KEEP_MMAP_THRESHOLD = 1 << 30  # a trainer's blocks under 1 GB come from the heaps ...
KEEP_TRIM_THRESHOLD = (1 << 31) - 1  # ... which are never trimmed


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The C library, if it is glibc (it has mallopt and malloc_trim); else None."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    if libc is None or not all(hasattr(libc, f) for f in ("mallopt", "malloc_trim", "gnu_get_libc_version")):
        return None
    return libc


def _mallopt(settings: dict[int, int], what: str) -> bool:
    """Apply glibc mallopt `settings` ({parameter: value}); whether all were taken. Logs `what` was done."""
    libc = _glibc()
    if libc is None:
        log.debug("heap: not glibc, left as it is")
        return False
    done = all(libc.mallopt(param, value) == 1 for param, value in settings.items())
    log.debug("heap: %s: %s", what, "set" if done else "mallopt refused")
    return done


def give_back() -> bool:
    """For an app: blocks of `APP_MMAP_THRESHOLD` or more mmap'ed, at most `APP_ARENA_MAX` arenas (module doc)."""
    return _mallopt({M_MMAP_THRESHOLD: APP_MMAP_THRESHOLD, M_ARENA_MAX: APP_ARENA_MAX},
                    f"blocks of {APP_MMAP_THRESHOLD // 1024} KB or more mmap'ed, at most {APP_ARENA_MAX} arenas")


def trim() -> bool:
    """Give the heaps' free pages back to the system (glibc's malloc_trim); whether any were."""
    libc = _glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False


def keep() -> bool:
    """For a trainer on a CPU: every block under 1 GB from the heaps, never trimmed (module doc)."""
    return _mallopt({M_MMAP_THRESHOLD: KEEP_MMAP_THRESHOLD, M_TRIM_THRESHOLD: KEEP_TRIM_THRESHOLD},
                    "freed blocks kept for reuse (no page faults for the next step's)")
