"""Does the model prefer a correct translation to the same one with a single error? Contrastive minimal
pairs (Sennrich, 2017: "How Grammatical is Character-level Neural Machine Translation?"), scored with
`Translator.score`: a pair counts as passed when the correct German has the higher log-probability.

    python -m transformer.training.minimal_pairs --checkpoint checkpoints/en-de [--file tests/data/minimal_pairs.tsv]

The file holds, a line each: category, English source, correct German, German with one error (tab-separated;
`#` starts a comment). Our own set has four categories: noun-phrase agreement, subject-verb agreement,
"nicht"/"kein" deleted, and verb position.
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from transformer.translator import Translator, load_pretrained

DEFAULT_FILE = Path(__file__).resolve().parents[2] / "tests" / "data" / "minimal_pairs.tsv"


def read_pairs(path: str | Path) -> list[tuple[str, str, str, str]]:
    """(category, source, correct, wrong) rows of a minimal-pair file."""
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 4 or not all(f.strip() for f in fields):
            raise ValueError(f"{path}:{number}: expected category, source, correct, wrong separated by tabs")
        rows.append(tuple(fields))
    return rows


def pair_rates(translator: Translator, rows: list[tuple[str, str, str, str]], batch_size: int = 32) -> dict:
    """Per category and overall: the share of pairs whose correct side scores higher, and the failures."""
    passed, total, failures = defaultdict(int), defaultdict(int), []
    for start in range(0, len(rows), batch_size):
        chunk = rows[start:start + batch_size]
        sources = [r[1] for r in chunk]
        good = translator.score(sources, [r[2] for r in chunk])
        bad = translator.score(sources, [r[3] for r in chunk])
        for (category, source, correct, wrong), g, b in zip(chunk, good, bad):
            total[category] += 1
            if g.log_prob > b.log_prob:
                passed[category] += 1
            else:
                failures.append({"category": category, "source": source, "correct": correct, "wrong": wrong,
                                 "margin": round(g.log_prob - b.log_prob, 3)})
    result = {c: {"rate": round(100 * passed[c] / total[c], 1), "pairs": total[c]} for c in sorted(total)}
    n = sum(total.values())
    result["all"] = {"rate": round(100 * sum(passed.values()) / n, 1) if n else 0.0, "pairs": n}
    result["failures"] = failures
    return result


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default="checkpoints/en-de")
    p.add_argument("--file", default=str(DEFAULT_FILE))
    p.add_argument("--failures", action="store_true", help="also print the pairs the model gets wrong")
    args = p.parse_args(argv)
    result = pair_rates(load_pretrained(args.checkpoint), read_pairs(args.file))
    shown = result if args.failures else {k: v for k, v in result.items() if k != "failures"}
    print(json.dumps(shown, indent=1, ensure_ascii=False))
    return result


if __name__ == "__main__":
    main()
