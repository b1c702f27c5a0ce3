"""What a run leaves on disk, and how it starts again.

`Progress` is the counters a resume restores. `RunDirectory` owns the run directory:
the resume state (`state.pt`, written atomically, with the optimizer, scheduler and every
rank's RNG), the weight snapshots (newest few kept, plus `best.safetensors`), the final
weights when a budget stopped between snapshots (`last.safetensors`), and `train_log.jsonl`.
Nothing here is pickled by class: `state.pt` holds plain dicts and tensors, so moving a
module never breaks an old resume state.
"""
from __future__ import annotations

import json
import logging
import os
import random
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import save_file

from transformer.hub import save_int8_weights

log = logging.getLogger(__name__)

LAST_WEIGHTS = "last.safetensors"  # the final weights when a budget stopped training between snapshots
BEST_WEIGHTS = "best.safetensors"
STATE_FILE = "state.pt"
TRAIN_LOG = "train_log.jsonl"
LEARNING_DIR = "learning"  # float16 weights at a few log-spaced steps, shipped as the checkpoint's snapshots/
LEARNING_INDEX = "snapshots.json"


@dataclass
class Progress:
    """The counters a resume restores (the names are the keys of `state.pt`'s "progress")."""
    step: int = 0  # optimizer steps done
    epoch: int = 0  # epochs finished
    batch_in_epoch: int = 0  # batches of the current epoch done (accumulation steps count one each)
    best_score: float = -1.0  # best validation score so far
    bad_epochs: int = 0  # checkpoints since the best one
    train_seconds: float = 0.0  # wall time spent in training steps, across resumes
    epoch_loss: float = 0.0  # summed training loss since the last checkpoint
    epoch_tokens: int = 0  # target tokens behind epoch_loss
    rewarm_from: int = 0  # a continuation with a fresh optimizer warms the lr up again from this step
    autocast: bool | None = None  # the precision the run chose (bf16 autocast or not): kept across exact resumes

    def update(self, saved: dict) -> None:
        """Take the counters of a saved state (older states may lack the newer fields)."""
        for name, value in saved.items():
            setattr(self, name, value)


def atomic_torch_save(obj: dict, path: Path) -> None:
    """Write to a temporary file, fsync, then rename: a crash leaves the old file or the new one."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def atomic_save_weights(state: dict[str, torch.Tensor], path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    save_file({k: v.detach().cpu().clone() for k, v in state.items()}, str(tmp))  # clone: tied weights share memory
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


def rng_state() -> dict:
    state = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    """Put back `rng_state()`'s generators. A state loaded with map_location=cuda has its byte tensors on the
    GPU, and both setters take CPU byte tensors only."""
    torch.set_rng_state(state["torch"].cpu())
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


class RunDirectory:
    """The files of one run directory (see the module docstring)."""

    def __init__(self, path: str | os.PathLike, keep_last: int):
        self.path = Path(path)
        self.keep_last = keep_last  # snapshots of each kind (epoch_*, step_*) kept
        self.path.mkdir(parents=True, exist_ok=True)

    @property
    def state_path(self) -> Path:
        return self.path / STATE_FILE

    @property
    def log_path(self) -> Path:
        return self.path / TRAIN_LOG

    def save_state(self, state: dict) -> None:
        atomic_torch_save(state, self.state_path)

    def load_state(self, device: torch.device) -> dict | None:
        if not self.state_path.is_file():
            return None
        return torch.load(self.state_path, map_location=device, weights_only=True)

    def append_log(self, record: dict) -> None:
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")

    def save_snapshot(self, name: str, weights: dict[str, torch.Tensor], best: bool) -> None:
        """Write <name>.safetensors (and best.safetensors if `best`), dropping snapshots past `keep_last`."""
        atomic_save_weights(weights, self.path / f"{name}.safetensors")
        (self.path / LAST_WEIGHTS).unlink(missing_ok=True)  # older than this snapshot
        prefix = name.split("_")[0]
        for old in sorted(self.path.glob(f"{prefix}_*.safetensors"))[: -self.keep_last]:
            old.unlink()
        if best:
            atomic_save_weights(weights, self.path / BEST_WEIGHTS)

    @property
    def learning_dir(self) -> Path:
        return self.path / LEARNING_DIR

    def save_learning_snapshot(self, record: dict, weights: dict[str, torch.Tensor]) -> None:
        """Keep one step's weights in int8 (learning/step_NNNNNN.safetensors, `hub.save_int8_weights`: 6 to 8
        of them ship in the checkpoint) and its record (step, epoch, validation scores) in learning/snapshots.json,
        for watching the model learn."""
        self.learning_dir.mkdir(exist_ok=True)
        step = record["step"]
        save_int8_weights(weights, self.learning_dir / f"step_{step:06d}.safetensors")
        index = self.learning_dir / LEARNING_INDEX
        records = json.loads(index.read_text(encoding="utf-8")) if index.is_file() else []
        records = sorted([r for r in records if r["step"] != step] + [record], key=lambda r: r["step"])
        tmp = index.with_name(index.name + ".tmp")
        tmp.write_text(json.dumps(records, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, index)

    def save_last(self, step: int, weights: dict[str, torch.Tensor]) -> None:
        """Keep the final weights when they are in no snapshot yet (a budget stopped between two)."""
        if not (self.path / f"step_{step:06d}.safetensors").is_file():
            atomic_save_weights(weights, self.path / LAST_WEIGHTS)

    def snapshots(self) -> list[Path]:
        """Every weight snapshot, oldest first, the final weights last when they are in none."""
        found = sorted(self.path.glob("epoch_*.safetensors")) + sorted(self.path.glob("step_*.safetensors"))
        last = self.path / LAST_WEIGHTS
        return found + [last] if last.is_file() else found

    def best(self) -> Path | None:
        path = self.path / BEST_WEIGHTS
        return path if path.is_file() else None

