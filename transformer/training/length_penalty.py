"""Choose a checkpoint's default length penalty on validation and write it to `generation_config.json`.

    python -m transformer.training.length_penalty --checkpoint checkpoints/en-de

Reads the beam rows that `python -m transformer.evaluate --split val|rare --record` left in the checkpoint's
`metrics.json`, and picks the length penalty with the best mean BLEU over the selection splits (each corpus's
val, and the rare-word split where it was held out: the same mean training selects checkpoints by). Only a
length penalty scored on every one of those splits takes part. `translate`, the CLIs and the app then decode
with it unless told otherwise.
"""
from __future__ import annotations

import argparse
import json
import logging
from collections import defaultdict
from pathlib import Path

from transformer.config import GenerationConfig
from transformer.hub import GENERATION_FILE, write_generation_config

from .model_card import write_card

log = logging.getLogger(__name__)

SELECTION_SPLITS = ("val", "rare")  # test splits never choose anything


def val_scores_by_length_penalty(metrics: dict, beam_size: int = 5) -> dict[float, dict[str, float]]:
    """{length penalty: {data key: BLEU}} of the recorded beam-`beam_size` rows on selection splits, keeping
    only the length penalties scored on every such split (data key: the metrics key before "/")."""
    scores: dict[float, dict[str, float]] = defaultdict(dict)
    for key, row in metrics.items():
        if (row.get("method") == "beam" and row.get("beam_size") == beam_size and row.get("split") in SELECTION_SPLITS
                and not row.get("source_form") and row.get("precision", "fp32") == "fp32"):
            scores[float(row["length_penalty"])][key.split("/")[0]] = float(row["bleu"])
    splits = set().union(*scores.values()) if scores else set()
    return {lp: s for lp, s in sorted(scores.items()) if set(s) == splits}


def choose_length_penalty(metrics: dict, beam_size: int = 5) -> tuple[float, dict[float, float]]:
    """(the length penalty with the best mean val BLEU, {length penalty: mean}); ValueError when none is
    recorded. Ties go to the smaller length penalty."""
    table = val_scores_by_length_penalty(metrics, beam_size)
    if not table:
        raise ValueError(f"metrics.json holds no beam-{beam_size} scores on a val split: run `python -m "
                         "transformer.evaluate --checkpoint DIR --split val --method beam --length-penalty X --record` "
                         "for a few X first")
    means = {lp: sum(s.values()) / len(s) for lp, s in table.items()}
    best = max(means.values())
    return min(lp for lp, m in means.items() if m == best), {lp: round(m, 2) for lp, m in means.items()}


def main(argv: list[str] | None = None) -> GenerationConfig:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--beam-size", type=int, default=5)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    path = args.checkpoint / "metrics.json"
    metrics = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    try:
        length_penalty, means = choose_length_penalty(metrics, args.beam_size)
    except ValueError as err:
        p.error(f"{path}: {err}")
    for lp, mean in means.items():
        log.info("length penalty %g: mean val BLEU %.2f%s", lp, mean, "  <- chosen" if lp == length_penalty else "")
    generation = GenerationConfig(num_beams=args.beam_size, length_penalty=length_penalty)
    write_generation_config(generation, args.checkpoint)
    write_card(args.checkpoint)
    log.info("wrote %s and the model card", args.checkpoint / GENERATION_FILE)
    return generation


if __name__ == "__main__":
    main()
