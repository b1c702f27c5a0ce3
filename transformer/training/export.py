"""Export: pick the final model of a training run on validation and write it as a checkpoint.

The candidates are the best snapshot, the last weights and the average of the last
`average_last` snapshots (epoch ends, or every `val_every` steps, plus the final step if a
budget ended training between two). The winner is written to `--output` in the Hugging Face
layout, in float16 when that moves the validation score by less than 0.1, with
`training.json` (what was chosen and why, the progress a later continuation starts from)
and the model card.
"""
from __future__ import annotations

import json
import logging
import os
import platform
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Callable

import torch
from safetensors.torch import load_file

from transformer.casing import Truecaser
from transformer.hub import SNAPSHOTS_DIR, save_checkpoint
from transformer.model import Transformer
from transformer.tokenizer import TextTokenizer

from .config import TrainConfig
from .model_card import write_card
from .state import LAST_WEIGHTS, Progress, RunDirectory

log = logging.getLogger(__name__)

def average_weights(paths: list[Path]) -> dict[str, torch.Tensor]:
    """Element-wise mean of several safetensors weight files."""
    total = {k: v.double() for k, v in load_file(str(paths[0])).items()}
    for path in paths[1:]:
        for k, v in load_file(str(path)).items():
            total[k] += v.double()
    return {k: (v / len(paths)).float() for k, v in total.items()}


def snapshot_name(path: Path) -> str:
    """"epoch_003.safetensors" -> "epoch 3"; "step_000300.safetensors" -> "step 300"."""
    kind, number = path.stem.split("_")
    return f"{kind} {int(number)}"


def hardware_description(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.is_file() else []
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    return f"{os.cpu_count()} x {names[0] if names else platform.processor()}"


def export_candidates(run: RunDirectory, cfg: TrainConfig, step: int) -> dict[str, dict[str, torch.Tensor]]:
    """The weights export chooses between: the best snapshot, the last step's weights (when a
    snapshot or the final weights hold them) and the average of the last `average_last` snapshots."""
    candidates = {}
    if (best := run.best()) is not None:
        candidates["best checkpoint" if cfg.val_every else "best epoch"] = load_file(str(best))
    snapshots = run.snapshots()
    last = run.path / LAST_WEIGHTS
    if snapshots and (snapshots[-1] == last or snapshots[-1].stem == f"step_{step:06d}"):
        candidates[f"last step ({step})"] = load_file(str(snapshots[-1]))
    snapshots = snapshots[-cfg.average_last :]
    if len(snapshots) > 1:
        names = ", ".join("last step" if p == last else snapshot_name(p) for p in snapshots)
        candidates[f"average of {names}"] = average_weights(snapshots)
    return candidates


def export_run(run: RunDirectory, cfg: TrainConfig, model: Transformer, tokenizer: TextTokenizer,
               validate: Callable[[Transformer], dict], progress: Progress, world: int = 1,
               truecaser: Truecaser | None = None, copied_words: set[str] | None = None) -> dict:
    """Choose on validation between the export candidates (or the model as it is, when there are
    none); export the winner to `cfg.output`, in float16 when that moves validation by < 0.1;
    return the training summary (also written as training.json)."""
    device = next(model.parameters()).device
    candidates = export_candidates(run, cfg, progress.step) or {"last step": model.state_dict()}
    scored = []
    for name, weights in candidates.items():
        model.load_state_dict(weights)
        scored.append((validate(model)["score"], name, weights))
        log.info("%s: validation score %.2f", name, scored[-1][0])
    score, name, weights = max(scored, key=lambda s: s[0])  # ties: the earlier candidate
    model.load_state_dict(weights)
    half = False
    if cfg.half_precision:
        model16 = Transformer(model.config).to(device)
        model16.load_state_dict({k: v.half().float() for k, v in weights.items()})
        score16 = validate(model16)["score"]
        half = abs(score16 - score) < 0.1
        log.info("float16 round trip: validation score %.2f (%s)", score16, "kept" if half else "rejected")
    out = Path(cfg.output)
    save_checkpoint(model, tokenizer, out, half_precision=half, truecaser=truecaser, copied_words=copied_words)
    (out / "metrics.json").unlink(missing_ok=True)  # scores of the model this export replaces
    if run.log_path.is_file():
        shutil.copyfile(run.log_path, out / "train_log.jsonl")
    if run.learning_dir.is_dir():  # the model learning: float16 weights at a few steps, with their scores
        shutil.rmtree(out / SNAPSHOTS_DIR, ignore_errors=True)
        shutil.copytree(run.learning_dir, out / SNAPSHOTS_DIR)
    summary = {"selected": name, "val_score": score, "candidates": {n: sc for sc, n, _ in scored},
               "float16": half, "steps": progress.step, "epochs": progress.epoch,
               "progress": {"step": progress.step, "epoch": progress.epoch, "batch_in_epoch": progress.batch_in_epoch,
                            "best_score": progress.best_score, "train_seconds": progress.train_seconds},
               "train_minutes": round(progress.train_seconds / 60, 1),
               "parameters": model.num_parameters(), "device": str(device), "threads": torch.get_num_threads(),
               "hardware": hardware_description(device), "world_size": world, "train_config": asdict(cfg)}
    (out / "training.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    write_card(out)
    log.info("exported %s (%s) to %s", name, "float16" if half else "float32", out)
    return summary
