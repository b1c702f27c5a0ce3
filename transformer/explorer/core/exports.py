"""Attention exports: the .npz a user downloads, and the app's folder of them kept small and cleaned up.

Each app process writes its exports into its own temporary folder (`EXPORT_DIR_PREFIX` + its process id), and
the app serves them from there (`app.py` makes the folder one of gradio's static paths, so gradio does not copy
a download into its cache): each export is one file on disk, and this folder is the only place to clean.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from transformer.explorer.core.models import ModelService
from transformer.explorer.core.results import Result
from transformer.explorer.core.view_state import off_text


def export_npz(result: Result, directory: Path) -> Path:
    """Write the current candidate's attention tensors, tokens and step records to an .npz (no pickles)."""
    att = result.attention
    cand = result.translation.candidates[result.candidate]
    meta = dict(model=result.model, source=result.source, translation=cand.text, method=result.translation.method,
                beam_size=result.translation.beam_size, length_penalty=result.length_penalty,
                candidate=result.candidate, score=cand.score, log_prob=cand.log_prob,
                truncated=result.translation.truncated, heads_off=off_text(result.off),
                axes="encoder (L,H,S,S), decoder (L,H,T,T), cross (L,H,T,S); rows = queries, columns = keys")
    k = max((len(s.top_k) for s in att.steps), default=0)
    topk_tokens = np.array([[tok for tok, _ in s.top_k] + [""] * (k - len(s.top_k)) for s in att.steps], dtype=str)
    topk_probs = np.array([[p for _, p in s.top_k] + [0.0] * (k - len(s.top_k)) for s in att.steps],
                          dtype=np.float32)
    directory.mkdir(parents=True, exist_ok=True)
    _prune(directory, max_age_s=EXPORT_MAX_AGE_S)
    fd, name = tempfile.mkstemp(prefix=f"attention-{result.candidate + 1}-", suffix=".npz", dir=directory)
    with os.fdopen(fd, "wb") as f:
        np.savez_compressed(
            f, encoder=att.encoder, decoder=att.decoder, cross=att.cross,
            src_tokens=np.array(att.src_tokens, dtype=str), tgt_in_tokens=np.array(att.tgt_in_tokens, dtype=str),
            tgt_out_tokens=np.array(att.tgt_out_tokens, dtype=str),
            step_probability=np.array([s.probability for s in att.steps], dtype=np.float32),
            step_topk_tokens=topk_tokens.reshape(len(att.steps), k),
            step_topk_probs=topk_probs.reshape(len(att.steps), k),
            meta=np.array(json.dumps(meta, ensure_ascii=False)),
        )
    return Path(name)


EXPORT_MAX_AGE_S = 3600  # a download link lives as long as the session state it came with
EXPORTS_MAX_BYTES = 100_000_000  # the app's own export folder, all files together (oldest go first)
EXPORT_DIR_PREFIX = "attention-explorer-"  # + the process id: one folder per running app


def _prune(directory: Path, max_age_s: float, max_bytes: int = EXPORTS_MAX_BYTES) -> None:
    """Delete exports older than `max_age_s`, then the oldest until the folder holds at most `max_bytes` (a link
    to a deleted one answers 404: the page's next export replaces it)."""
    cutoff = time.time() - max_age_s
    files = []
    for p in directory.glob("attention-*.npz"):
        try:
            stat = p.stat()
            if stat.st_mtime < cutoff:
                p.unlink()
            else:
                files.append((stat.st_mtime, stat.st_size, p))
        except OSError:
            pass
    total = sum(size for _, size, _ in files)
    for _, size, p in sorted(files):
        if total <= max_bytes:
            break
        try:
            p.unlink()
            total -= size
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True


def remove_stale_export_dirs(parent: Path, own_pid: int) -> list[Path]:
    """Remove the export folders that apps which are no longer running left in `parent` (a killed app never ran
    its exit hook); a folder of a running app, this one's included, is left alone. Returns what was removed."""
    removed = []
    for d in parent.glob(f"{EXPORT_DIR_PREFIX}*"):
        pid = d.name.removeprefix(EXPORT_DIR_PREFIX)
        if d.is_dir() and pid.isdigit() and int(pid) != own_pid and not _alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed


class ExportService:
    """The download of a result's current candidate (`export_npz`), written into this app's `export_dir`."""

    def __init__(self, models: ModelService, export_dir: Path):
        self.models, self.export_dir = models, Path(export_dir)

    def export(self, result: Result | None) -> Path | None:
        """The current candidate's attention as an .npz file to download (None without a result)."""
        if result is None:
            return None
        with self.models.results.using(result):
            return export_npz(result, self.export_dir)
