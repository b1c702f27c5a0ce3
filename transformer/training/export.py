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
from typing import TYPE_CHECKING

import torch
from safetensors.torch import load_file

from transformer.hub import save_checkpoint
from transformer.model import Transformer
from .model_card import write_card

if TYPE_CHECKING:
    from .train import Trainer

log = logging.getLogger(__name__)

LAST_WEIGHTS = "last.safetensors"  # the final weights when a budget stopped training between snapshots


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


def export_run(trainer: Trainer) -> dict:
    """Choose on validation between the best snapshot, the final weights and the average of the last
    snapshots; export the winner to `trainer.cfg.output`; return the training summary."""
    cfg = trainer.cfg
    candidates = {}
    best = trainer.run_dir / "best.safetensors"
    if best.is_file():
        candidates["best checkpoint" if cfg.val_every else "best epoch"] = load_file(str(best))
    snapshots = sorted(trainer.run_dir.glob("epoch_*.safetensors")) + sorted(trainer.run_dir.glob("step_*.safetensors"))
    last = trainer.run_dir / LAST_WEIGHTS
    if last.is_file():
        snapshots.append(last)
    if snapshots and (snapshots[-1] == last or snapshots[-1].stem == f"step_{trainer.step:06d}"):
        candidates[f"last step ({trainer.step})"] = load_file(str(snapshots[-1]))
    snapshots = snapshots[-cfg.average_last :]
    if len(snapshots) > 1:
        names = ", ".join("last step" if p == last else snapshot_name(p) for p in snapshots)
        candidates[f"average of {names}"] = average_weights(snapshots)
    if not candidates:
        candidates["last step"] = trainer.model.state_dict()
    scored = []
    for name, weights in candidates.items():
        trainer.model.load_state_dict(weights)
        scored.append((trainer.validate()["score"], name, weights))
        log.info("%s: validation score %.2f", name, scored[-1][0])
    score, name, weights = max(scored, key=lambda s: s[0])  # ties: the earlier candidate
    trainer.model.load_state_dict(weights)
    half = False
    if cfg.half_precision:
        model16 = Transformer(trainer.model.config).to(trainer.device)
        model16.load_state_dict({k: v.half().float() for k, v in weights.items()})
        score16 = trainer.validate(model16)["score"]
        half = abs(score16 - score) < 0.1
        log.info("float16 round trip: validation score %.2f (%s)", score16, "kept" if half else "rejected")
    out = Path(cfg.output)
    save_checkpoint(trainer.model, trainer.tokenizer, out, half_precision=half)
    (out / "metrics.json").unlink(missing_ok=True)  # scores of the model this export replaces
    if (trainer.run_dir / "train_log.jsonl").is_file():
        shutil.copyfile(trainer.run_dir / "train_log.jsonl", out / "train_log.jsonl")
    summary = {"selected": name, "val_score": score, "candidates": {n: sc for sc, n, _ in scored},
               "float16": half, "steps": trainer.step, "epochs": trainer.epoch,
               "progress": {"step": trainer.step, "epoch": trainer.epoch, "batch_in_epoch": trainer.batch_in_epoch,
                            "best_score": trainer.best_score, "train_seconds": trainer.train_seconds},
               "train_minutes": round(trainer.train_seconds / 60, 1),
               "parameters": trainer.model.num_parameters(), "device": str(trainer.device), "threads": torch.get_num_threads(),
               "hardware": hardware_description(trainer.device),
               "world_size": trainer.world, "train_config": asdict(cfg)}
    (out / "training.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    write_card(out)
    log.info("exported %s (%s) to %s", name, "float16" if half else "float32", out)
    return summary
