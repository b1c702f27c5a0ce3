"""Does every serving path give the same bits? Each int8 kernel the probe can choose, forced in turn for every
layer shape, over our own sentences and the val splits, greedy and beam 1-10, in batches and alone.

What is compared, per sentence and setting: every candidate of the n-best (token ids, and the float bits of its
score and log-probability). A path agrees when all of them are equal to the first path's, bit for bit; "alone"
translates each sentence by itself and checks it against the batched answer of the same path.

`--against DIR` also translates with the int8 search of another checkout (e.g. a `git worktree` of main) and the
float32 search (`load_pretrained(quantize=None)`), and counts the sentences whose best translation differs: what
a user of either saw change.

    python bench/exact_search.py --json bench/results/exact_search.json
    python bench/exact_search.py --limit 100 --settings greedy,beam5        # a sample
"""
from __future__ import annotations

import argparse
import importlib
import json
import logging
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))
from machine import cpu_model  # noqa: E402

from transformer import quantize  # noqa: E402
from transformer.explorer.core.model_registry import EXAMPLES_DE, EXAMPLES_EN  # noqa: E402
from transformer.serving.kernels import step_linears  # noqa: E402
from transformer.training.corpora import CorpusSpec  # noqa: E402
from transformer.translator import Translator, load_pretrained  # noqa: E402

log = logging.getLogger("exact_search")
CORPORA = ("tatoeba-en-de", "multi30k")
SETTINGS = ("greedy", *(f"beam{k}" for k in range(1, 11)))
# Our own sentences beside the examples: the lesson's and the README's, and a few more of every length.
OWN_EN = [
    "The teacher explained the question twice, but nobody understood it.",
    "I know that my brother plays the guitar.", "The cat sleeps on the warm kitchen table.",
    "The old woman feeds the small birds.", "She does not like cold coffee.",
    "He thinks the weather will be better tomorrow.", "He calls his mother every Sunday.",
    "Our neighbor works as a bus driver.", "The parcel arrived two days after my birthday.",
    "Sorry, I forgot to bring the blue folder.", "Where is the nearest train station?",
    "My sister has been learning Japanese for three years, and she still finds the writing hard.",
    "Yes.", "Thank you very much!", "Could you open the window, please?",
]
OWN_DE = [
    "Ich weiß, dass mein Bruder Gitarre spielt.", "Er ruft jeden Sonntag seine Mutter an.",
    "Unser Nachbar arbeitet als Busfahrer.", "Die Katze schläft auf dem warmen Küchentisch.",
    "Wo steht das alte Rathaus?", "Danke schön!", "Kannst du bitte das Fenster aufmachen?",
]


def sentences(src_lang: str, per_corpus: int) -> list[str]:
    """Our own sentences in `src_lang`, then the first `per_corpus` of each val split."""
    out = list(EXAMPLES_EN + OWN_EN) if src_lang == "en" else list(EXAMPLES_DE + OWN_DE)
    tgt = "de" if src_lang == "en" else "en"
    for name in CORPORA:
        out += CorpusSpec(name).load("val", src_lang, tgt)[0][:per_corpus]
    return out


def options_of(tr: Translator, setting: str):
    return tr.decoding_options("greedy") if setting == "greedy" else tr.decoding_options("beam", int(setting[4:]))


def fingerprint(translation) -> tuple:
    """Every candidate's ids and the exact bits of its score and log-probability."""
    return tuple((tuple(c.ids), float(c.score).hex(), float(c.log_prob).hex()) for c in translation.candidates)


def batched(tr: Translator, texts: list[str], setting: str, batch: int) -> list[tuple]:
    options, sources = options_of(tr, setting), [tr.source(t) for t in texts]
    out = []
    for start in range(0, len(sources), batch):
        out += [fingerprint(r) for r in tr.translate_sources(sources[start:start + batch], options,
                                                             output_attentions=False)]
    return out


def alone(tr: Translator, texts: list[str], setting: str) -> list[tuple]:
    options = options_of(tr, setting)
    return [fingerprint(tr.translate_sources([tr.source(t)], options, output_attentions=False)[0]) for t in texts]


def kernel_path(served: Translator, kernel: str) -> Translator:
    """`served`'s model searched with `kernel` for every layer shape."""
    shapes = {(s.in_features, s.out_features) for s in step_linears(served.model.config)}
    search = quantize.search_model(served.model, "int8", int8_kernels=dict.fromkeys(shapes, kernel))
    return Translator(served.model, served.tokenizer, truecaser=served.truecaser, search_model=search,
                      precision="int8")


def other_checkout(directory: Path, checkpoint: str, precision: str | None) -> Translator:
    """The checkpoint loaded by another checkout's code (its int8 search, or float32 with None)."""
    sys.path.insert(0, str(directory))
    for name in [m for m in sys.modules if m == "transformer" or m.startswith("transformer.")]:
        del sys.modules[name]
    try:
        return importlib.import_module("transformer.translator").load_pretrained(checkpoint, quantize=precision)
    finally:
        sys.path.remove(str(directory))
        for name in [m for m in sys.modules if m == "transformer" or m.startswith("transformer.")]:
            del sys.modules[name]


def best_ids(fingerprints: list[tuple]) -> list[tuple]:
    return [f[0][0] for f in fingerprints]


def compare(name: str, run: Callable[[Translator], list[tuple]], paths: dict[str, Translator]) -> dict:
    """Each path's fingerprints against the first path's: how many sentences differ in any bit."""
    start = time.perf_counter()
    results = {k: run(tr) for k, tr in paths.items()}
    first = next(iter(results.values()))
    differ = {k: sum(a != b for a, b in zip(first, got)) for k, got in results.items()}
    log.info("%s: %d sentences, differing from %s: %s (%.0f s)", name, len(first), next(iter(results)), differ,
             time.perf_counter() - start)
    return {"sentences": len(first), "differing": differ, "results": results}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoints", default="en-de,de-en")
    p.add_argument("--limit", type=int, default=500, help="val sentences per corpus (default 500)")
    p.add_argument("--alone", type=int, default=60, help="sentences also translated alone, per setting")
    p.add_argument("--settings", default=",".join(SETTINGS))
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--against", type=Path, help="another checkout: its int8 search and the float32 search")
    p.add_argument("--json")
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(args.threads)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    report: dict = {"cpu": cpu_model(), "threads": args.threads, "commit": commit.strip(),
                    "date": time.strftime("%Y-%m-%d"), "checkpoints": {}}
    for name in args.checkpoints.split(","):
        checkpoint = str(ROOT / "checkpoints" / name)
        served = load_pretrained(checkpoint, quantize="int8")
        in_features = {s.in_features for s in step_linears(served.model.config)}
        kernels = [k for k in quantize.INT8_KERNELS if all(k in quantize.kernels_for(n) for n in in_features)]
        paths = {k: kernel_path(served, k) for k in kernels}
        texts = sentences(name.split("-")[0], args.limit)
        row: dict = {"kernels": kernels, "sentences": len(texts), "settings": {}}
        for setting in args.settings.split(","):
            together = compare(f"{name} {setting} batched", lambda tr: batched(tr, texts, setting, args.batch), paths)
            lone = compare(f"{name} {setting} alone", lambda tr: alone(tr, texts[:args.alone], setting), paths)
            batch_vs_alone = {k: sum(a != b for a, b in zip(lone["results"][k], together["results"][k]))
                              for k in kernels}
            row["settings"][setting] = {"batched_differing": together["differing"],
                                        "alone_differing": lone["differing"], "alone_sentences": lone["sentences"],
                                        "alone_vs_batched_differing": batch_vs_alone}
            if args.against and setting in ("greedy", "beam5"):
                ours = best_ids(together["results"][kernels[0]])
                for label, precision in (("main_int8", "int8"), ("fp32", None)):
                    other = other_checkout(args.against, checkpoint, precision) if label == "main_int8" else \
                        load_pretrained(checkpoint)
                    theirs = best_ids(batched(other, texts, setting, args.batch))
                    row["settings"][setting][f"best_differs_from_{label}"] = sum(a != b for a, b in zip(ours, theirs))
        report["checkpoints"][name] = row
    print(json.dumps(report, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
