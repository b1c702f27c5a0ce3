"""Resuming a run: exactly from the run directory's `state.pt`, or, on a new machine where only the
committed export is left, approximately from the export (its weights and recorded progress, a
fresh optimizer, and the learning rate warmed up again)."""
from __future__ import annotations

import json
import logging
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.distributed as dist

from transformer.hub import SNAPSHOTS_DIR, load_weights_into, read_config, read_weights
from transformer.model import Transformer

from .state import Progress, RunDirectory, rng_state, set_rng_state

log = logging.getLogger(__name__)

REWARM_STEPS = 100  # lr warm-up of a continuation from an export, while the fresh Adam moments settle


@dataclass
class TrainingParts:
    """What a resume state saves and restores, besides the RNGs."""
    model: Transformer
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    progress: Progress


def save_state(run: RunDirectory, parts: TrainingParts, train_config: dict, world: int, is_main: bool) -> None:
    """Write state.pt (every rank's RNG state is gathered; rank 0 writes)."""
    rngs = [rng_state()]
    if world > 1:
        rngs = [None] * world
        dist.all_gather_object(rngs, rng_state())
    if is_main:
        run.save_state({
            "model": parts.model.state_dict(), "optimizer": parts.optimizer.state_dict(),
            "scheduler": parts.scheduler.state_dict(), "rng": rngs, "progress": asdict(parts.progress),
            "train_config": train_config, "model_config": parts.model.config.to_dict(),
        })


def load_state(run: RunDirectory, parts: TrainingParts, device: torch.device, rank: int, world: int) -> bool:
    """Restore state.pt exactly; False if there is none."""
    state = run.load_state(device)
    if state is None:
        return False
    if state["model_config"] != parts.model.config.to_dict():
        raise ValueError(f"{run.state_path}: saved model config differs from this run's; use another --run-dir")
    parts.model.load_state_dict(state["model"])
    parts.optimizer.load_state_dict(state["optimizer"])
    parts.scheduler.load_state_dict(state["scheduler"])
    parts.progress.update(state["progress"])
    rngs = state["rng"]
    set_rng_state(rngs[rank] if len(rngs) == world else rngs[0])
    p = parts.progress
    log.info("resumed from %s at step %d (epoch %d, batch %d)", run.state_path, p.step, p.epoch, p.batch_in_epoch)
    return True


def continue_from_export(run: RunDirectory, parts: TrainingParts, output: str, device: torch.device,
                         is_main: bool) -> bool:
    """Continue from the exported model in `output` when the run directory is gone (a new
    machine: state.pt is too big to commit, the export is committed). Not an exact resume:
    the weights are the export's (maybe an average, maybe float16) and Adam starts afresh,
    so the lr warms up again over REWARM_STEPS; the schedule, data order and step count
    carry on from the export's recorded progress. False if there is no export to continue."""
    out = Path(output) if output else None
    if out is None or not (out / "training.json").is_file():
        log.info("no resume state at %s; starting fresh", run.state_path)
        return False
    saved = json.loads((out / "training.json").read_text(encoding="utf-8")).get("progress")
    if not saved or read_config(out) != parts.model.config:
        raise ValueError(f"{out} is not a continuable export of this run (no progress, or another model config)")
    load_weights_into(parts.model, read_weights(out, str(device)), out)  # float16 is cast to float32
    p, scheduler = parts.progress, parts.scheduler
    p.update({k: saved[k] for k in ("step", "epoch", "batch_in_epoch", "best_score", "train_seconds")})
    p.rewarm_from = p.step
    scheduler.last_epoch = p.step  # the next step's lr is the schedule's at this step
    for group, base, factor in zip(parts.optimizer.param_groups, scheduler.base_lrs, scheduler.lr_lambdas):
        group["lr"] = base * factor(p.step)
    if is_main and (out / "train_log.jsonl").is_file() and not run.log_path.is_file():
        shutil.copyfile(out / "train_log.jsonl", run.log_path)
    if is_main and (out / SNAPSHOTS_DIR).is_dir() and not run.learning_dir.is_dir():  # the next export ships them all
        shutil.copytree(out / SNAPSHOTS_DIR, run.learning_dir)
    log.warning("no resume state at %s: continuing from the export in %s at step %d with a fresh optimizer "
                "(lr warms up again over %d steps)", run.state_path, out, p.step, REWARM_STEPS)
    return True
