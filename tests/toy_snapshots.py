"""A short toy run (letters reversed) that ships training snapshots: what the learning slider is tested on
until a shipped model has snapshots. About ten seconds on one thread."""
from __future__ import annotations

import json
from pathlib import Path

SNAPSHOT_STEPS = (1, 20, 60, 240)


def toy_run_with_snapshots(directory: Path) -> Path:
    """Train the toy run into `directory`/out (once: an existing export is reused) and return the checkpoint."""
    out = Path(directory) / "out"
    if (out / "snapshots" / "snapshots.json").is_file():
        return out
    from transformer.training import train

    train.main([
        "--task", "reverse", "--toy-symbols", "8", "--toy-min-len", "3", "--toy-max-len", "7",
        "--toy-train-size", "2000", "--toy-val-size", "40", "--d-model", "32", "--n-heads", "2",
        "--n-encoder-layers", "1", "--n-decoder-layers", "1", "--d-ff", "64", "--dropout", "0",
        "--label-smoothing", "0", "--lr", "5e-3", "--warmup-steps", "30", "--max-steps", "240",
        "--max-epochs", "100", "--learning-snapshots", ",".join(map(str, SNAPSHOT_STEPS)), "--max-tokens", "512",
        "--seed", "3", "--no-progress", "--threads", "1", "--run-dir", str(Path(directory) / "run"),
        "--output", str(out),
    ])
    steps = [r["step"] for r in json.loads((out / "snapshots" / "snapshots.json").read_text())]
    assert steps == list(SNAPSHOT_STEPS), steps
    return out
