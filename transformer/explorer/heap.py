"""The app's heap: memory that results free goes back to the system.

glibc's malloc serves a block of 128 KB or more by mmap (returned to the system when freed) until it sees
such a block freed; then it raises that threshold to the freed size (up to 32 MB) and serves later blocks
of that size from its heaps, which give memory back only from their top. The app keeps and drops attention
arrays of 1 to 30 MB all day (`results.ResultStore`), from the threads of gradio's pool, each of which may get
an arena of its own: without this, resident memory grows to the most it ever held at once, per arena, and
stays there. `bound()` fixes the threshold (every block of `MMAP_THRESHOLD` or more is mmap'ed) and caps the
arenas; `trim()`, after the store releases results, returns the heaps' free pages. Where the C library is
not glibc, both do nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging

log = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameters (malloc.h)
M_ARENA_MAX = -8
MMAP_THRESHOLD = 256 * 1024  # blocks this big or bigger: mmap'ed, given back when freed (glibc's start value is 128 KB)
ARENA_MAX = 2  # one per core of a free Space; the model work runs on one thread (batching.Batcher)


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


def bound() -> bool:
    """Fix the mmap threshold and cap the arenas (module doc), for the rest of the process; whether it could."""
    libc = _glibc()
    if libc is None:
        log.info("heap: not glibc, left as it is")
        return False
    done = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and libc.mallopt(M_ARENA_MAX, ARENA_MAX) == 1
    log.info("heap: blocks of %d KB or more mmap'ed, at most %d arenas: %s", MMAP_THRESHOLD // 1024, ARENA_MAX,
             "set" if done else "mallopt refused")
    return done


def trim() -> bool:
    """Give the heaps' free pages back to the system (glibc's malloc_trim); whether any were."""
    libc = _glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False
