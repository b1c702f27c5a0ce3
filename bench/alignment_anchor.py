"""How well does a statistical word aligner do on our gold set? eflomal's AER, beside cross-attention's.

An anchor for `python -m transformer.training.alignment` (docs/heads.md): eflomal (Östling & Tiedemann 2016,
a Bayesian IBM-model aligner of the fast_align family, PyPI `eflomal`, a bench-only package:
bench/requirements.txt) is trained without supervision on our training corpora's train splits (Tatoeba
en-de and Multi30k, read from `--data-dir`-style paths, each sampled to `--sample` pairs when given) plus
the gold set's own sentences, and its links on the gold sentences are scored by the same AER (Och & Ney
2003) and split as the attention read-outs. Every sentence is split into words as the gold set splits them
(`alignment.words`) and lower-cased. Reported: the forward links (each German word linked to at most one
English word, as the attention read-out links each to exactly one), the reverse links, their intersection,
and grow-diag-final-and, the usual symmetrisation.

    pip install -r bench/requirements.txt
    python bench/alignment_anchor.py --json bench/results/alignment_anchor.json
"""
from __future__ import annotations

import argparse
import gzip
import json
import logging
import random
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from transformer.training.alignment import DEFAULT_GOLD, SPLITS, AERCounts, GoldPair, Link, read_gold
from transformer.training.data import resolve_data_dir
from transformer.training.word_links import aligner_words, grow_diag_final_and, run_eflomal

log = logging.getLogger("alignment_anchor")
CORPORA = ("tatoeba-en-de", "multi30k")


def read_train(directory: Path) -> list[tuple[str, str]]:
    """(English, German) lines of a corpus directory's train split."""
    with gzip.open(directory / "train.en.gz", "rt", encoding="utf-8") as en, \
            gzip.open(directory / "train.de.gz", "rt", encoding="utf-8") as de:
        return [(e.strip(), d.strip()) for e, d in zip(en, de) if e.strip() and d.strip()]


def tokens(text: str) -> str:
    """A sentence as eflomal reads it: the gold set's words, lower-cased, space-separated."""
    return " ".join(aligner_words(text))


def scores(gold: Sequence[GoldPair], links: Iterable[set[Link]]) -> dict[str, dict[str, float]]:
    """AER, precision and recall (in %) of `links` on each split of the gold pairs and on all of them."""
    counts = {split: AERCounts() for split in (*SPLITS, "all")}
    for pair, predicted in zip(gold, links):
        for split in (pair.split, "all"):
            counts[split].add(predicted, pair.sure, pair.possible)
    return {split: c.summary() for split, c in counts.items() if c.sure}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for corpus in CORPORA:
        p.add_argument(f"--{corpus.split('-')[0]}", metavar="DIR", default=None,
                       help=f"the {corpus} directory (default: $NAME_DIR or ../shared/data/{corpus})")
    p.add_argument("--gold", default=str(DEFAULT_GOLD))
    p.add_argument("--sample", type=int, default=0, help="train pairs per corpus, sampled (0: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    train, counts = [], {}
    for corpus in CORPORA:
        pairs = read_train(resolve_data_dir(getattr(args, corpus.split("-")[0]), corpus))
        if args.sample and args.sample < len(pairs):
            pairs = random.Random(args.seed).sample(pairs, args.sample)
        counts[corpus] = len(pairs)
        train += pairs
    gold = read_gold(args.gold)
    # The gold pairs go in with the training pairs (the aligner is unsupervised: it sees no links), each as
    # the gold set splits its words, so that link indices are the gold set's.
    english = [tokens(e) for e, _ in train] + [" ".join(w.lower() for w in g.en_words) for g in gold]
    german = [tokens(d) for _, d in train] + [" ".join(w.lower() for w in g.de_words) for g in gold]
    log.info("eflomal on %d training pairs %s + %d gold pairs", len(train), counts, len(gold))
    start = time.perf_counter()
    forward, reverse = run_eflomal(english, german)
    seconds = time.perf_counter() - start
    forward, reverse = forward[len(train):], reverse[len(train):]
    # which side each direction links at most once (what "forward" means here), read off the links themselves
    once = {name: {side: all(len({link[k] for link in s}) == len(s) for s in links)
                   for side, k in (("english", 0), ("german", 1))}
            for name, links in (("forward", forward), ("reverse", reverse))}
    result = {
        "training_pairs": counts, "sample": args.sample or "all", "gold_pairs": {s: sum(g.split == s for g in gold)
                                                                                for s in SPLITS},
        "eflomal_seconds": round(seconds, 1),
        "each_word_linked_at_most_once": once,
        "aer": {
            "forward": scores(gold, forward),
            "reverse": scores(gold, reverse),
            "intersection": scores(gold, (f & r for f, r in zip(forward, reverse))),
            "grow_diag_final_and": scores(gold, (grow_diag_final_and(f, r) for f, r in zip(forward, reverse))),
        },
        "note": "AER, precision and recall in %, lower AER is better; English index first; eflomal defaults",
    }
    print(json.dumps(result, indent=1))
    if args.json:
        sys.path.insert(0, str(ROOT / "bench"))
        from report import write_result
        write_result(args.json, result)
    return result


if __name__ == "__main__":
    main()
