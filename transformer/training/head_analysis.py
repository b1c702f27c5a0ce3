"""Rank the heads and name their roles, over a val sample of the corpora:

    python -m transformer.training.head_analysis --checkpoint checkpoints/en-de
    python -m transformer.training.head_analysis --checkpoint checkpoints/multi30k-en-de --corpus multi30k

Writes two files into the checkpoint directory (the app reads them):

* `head_importance.json`: Michel et al.'s importance of every head of every kind (`head_importance`),
  raw and normalised per layer, and pruning curves (`head_pruning`): greedy val BLEU (the mean over the
  corpora) as a kind's heads are switched off least important first, most important first, and in random
  orders (the mean of `--random-seeds` seeds), with how many heads go at ≤ 0.5 BLEU loss.
* `head_roles.json`: the share behind each role detector (`head_roles`) for every head, and its tags,
  measured on the model's own greedy translations of the sample; the alignment detector's IBM Model 1
  (`aligner`) and the rare-word detector's token counts come from a sample of the training pairs.

`--step` removes that many heads per point of the importance curve, `--compare-step` per point of the
reverse and random curves (fewer points: slow on a small CPU).
"""
from __future__ import annotations

import argparse
import json
import logging
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sacrebleu
import torch

from transformer.decoding import translate_ids
from transformer.model import HeadMask
from transformer.placeholders import encode_marked, mark_entities
from transformer.translator import Translator

from .aligner import IBM1
from .corpora import CorpusSpec
from .head_importance import KINDS, head_importance, normalise_per_layer, pruning_order
from .head_pruning import curve_points, mask_without, mean_curve, pruning_curve, removable
from .head_roles import ROLE_NAMES, THRESHOLDS, RoleCounts, SentenceMaps, add_sentence, role_counts, tag_heads

log = logging.getLogger(__name__)
IMPORTANCE_FILE, ROLES_FILE = "head_importance.json", "head_roles.json"
DEFAULT_CORPORA = ("tatoeba-en-de", "multi30k")


@dataclass
class Sample:
    """A seeded sample of each corpus's split: texts, references and the model's ids for them."""

    corpora: list[str]
    languages: tuple[str, str] = ("en", "de")  # (source, target), as the checkpoint translates
    corpus_of: list[int] = field(default_factory=list)  # index into corpora, per sentence
    sources: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    src_ids: list[list[int]] = field(default_factory=list)  # prepared as the app prepares them, no specials
    ref_ids: list[list[int]] = field(default_factory=list)
    entities: list[tuple[str, ...]] = field(default_factory=list)  # what each source's placeholders stand for

    def describe(self, split: str, seed: int) -> dict:
        counts = {c: self.corpus_of.count(i) for i, c in enumerate(self.corpora)}
        return {"split": split, "seed": seed, "sentences": counts}


def load_sample(tr: Translator, corpora: list[str], split: str, per_corpus: int, seed: int,
                languages: tuple[str, str] = ("en", "de")) -> Sample:
    """Up to `per_corpus` seeded pairs of each corpus's `split`, read in the checkpoint's (source, target)
    `languages`."""
    sample = Sample(list(corpora), languages=languages)
    for i, name in enumerate(corpora):
        sources, references = CorpusSpec(name).load(split, *languages)
        pick = sorted(random.Random(seed).sample(range(len(sources)), min(per_corpus, len(sources))))
        for j in pick:
            source = tr.source(sources[j]) if sources[j].strip() else None
            if source is not None and len(source.ids) > 1:
                sample.corpus_of.append(i)
                sample.sources.append(sources[j])
                sample.references.append(references[j])
                sample.src_ids.append(source.ids[:-1])
                sample.entities.append(source.entities)
                reference = mark_entities(references[j], source.entities)  # what the model should write
                sample.ref_ids.append(encode_marked(tr.tokenizer, [reference], tr.tokenizer.vocab_size)[0]
                                      [: tr.max_source_tokens])
    return sample


def greedy_bleu(tr: Translator, sample: Sample, head_mask: HeadMask | None = None,
                batch_size: int = 64) -> tuple[dict[str, float], list[list[int]]]:
    """Greedy translations of the sample (with `head_mask`) -> (BLEU per corpus, output ids)."""
    outputs = translate_ids(tr.model, sample.src_ids, "greedy", batch_size=batch_size, head_mask=head_mask)
    hyps = [tr.tokenizer.decode(ids, entities) for ids, entities in zip(outputs, sample.entities)]
    scores = {}
    for i, name in enumerate(sample.corpora):
        idx = [j for j, c in enumerate(sample.corpus_of) if c == i]
        scores[name] = sacrebleu.metrics.BLEU().corpus_score([hyps[j] for j in idx],
                                                              [[sample.references[j] for j in idx]]).score
    return scores, outputs


def training_pairs(tr: Translator, corpora: list[str], n: int, seed: int,
                   languages: tuple[str, str] = ("en", "de")) -> list[tuple[list[int], list[int]]]:
    """Up to `n` training pairs of each corpus (seeded), as token ids: the aligner's and counts' data."""
    pairs = []
    for name in corpora:
        sources, targets = CorpusSpec(name).load("train", *languages)
        pick = random.Random(seed).sample(range(len(sources)), min(n, len(sources)))
        src = tr.tokenizer.encode_batch([sources[j] for j in pick])
        tgt = tr.tokenizer.encode_batch([targets[j] for j in pick])
        pairs += [(s, t) for s, t in zip(src, tgt) if s and t]
    return pairs


def kind_shape(tr: Translator, kind: str) -> tuple[int, int]:
    cfg = tr.model.config
    return (cfg.n_encoder_layers if kind == "encoder" else cfg.n_decoder_layers), cfg.n_heads


def measure_roles(tr: Translator, sample: Sample, outputs: list[list[int]], aligner: IBM1,
                  frequency: np.ndarray) -> RoleCounts:
    """Teacher-forced passes over the model's own greedy translations, every detector on each."""
    cfg, counts = tr.model.config, RoleCounts()
    for src, out in zip(sample.src_ids, outputs):
        src_ids, tgt_in, out_ids = src + [cfg.eos_id], [cfg.bos_id] + out, out + [cfg.eos_id]
        with torch.inference_mode():
            att = tr.model(torch.tensor([src_ids], device=tr.device), torch.tensor([tgt_in], device=tr.device),
                           output_attentions=True).attention
        maps = SentenceMaps(*(torch.stack([w[0] for w in ws]).float().cpu().numpy()
                              for ws in (att.encoder, att.decoder, att.cross)),
                            tr.tokenizer.ids_to_tokens(src_ids), src_ids, tr.tokenizer.ids_to_tokens(tgt_in), tgt_in,
                            tr.tokenizer.ids_to_tokens(out_ids))
        add_sentence(counts, maps, frequency, aligner.align(src, out) + [None])
    return counts


def roles_json(tr: Translator, sample: Sample, outputs: list[list[int]], args) -> dict:
    start = time.perf_counter()
    pairs = training_pairs(tr, sample.corpora, args.aligner_pairs, args.seed, sample.languages)
    frequency = np.bincount(np.concatenate([np.concatenate([s, t]) for s, t in pairs]).astype(np.int64),
                            minlength=tr.model.config.src_vocab_size)
    aligner = IBM1.train(pairs, tr.model.config.src_vocab_size, iterations=args.aligner_iterations)
    log.info("aligner: IBM Model 1 on %d training pairs in %.0f s", len(pairs), time.perf_counter() - start)
    counts = measure_roles(tr, sample, outputs, aligner, frequency)
    kinds = {k: tag_heads(counts, k) for k in KINDS}
    return {"sample": sample.describe(args.split, args.seed), "thresholds": THRESHOLDS, "names": ROLE_NAMES,
            "aligner": {"model": "IBM Model 1 over the model's BPE tokens, with NULL", "pairs": len(pairs),
                        "iterations": args.aligner_iterations,
                        "rows": "the token a cross-attention row predicts, aligned to argmax_e t(f | e)"},
            "frequencies": f"token counts over the same {len(pairs)} training pairs (both sides)",
            "kinds": kinds, "counts": {k: role_counts(v) for k, v in kinds.items()}}


def pruning_json(tr: Translator, sample: Sample, importance: dict[str, np.ndarray], baseline: dict[str, float],
                 args, write) -> dict:
    """Every kind's curves (importance, reverse, random), written out after each one (`write`)."""
    result: dict = {}
    for kind in KINDS:
        shape = kind_shape(tr, kind)

        def score(off, kind=kind, shape=shape):
            mask = HeadMask(**{kind: torch.from_numpy(mask_without(shape, off)).to(tr.device)})
            return greedy_bleu(tr, sample, mask)[0]

        n = shape[0] * shape[1]
        fine, coarse = curve_points(n, args.step), curve_points(n, args.compare_step)
        entry = result[kind] = {"n_heads": n}
        t0 = time.perf_counter()
        entry["importance"] = pruning_curve(score, pruning_order(importance[kind], "importance"), fine, baseline)
        entry["removable"] = {"tolerance_bleu": 0.5, "importance": removable(entry["importance"], 0.5)}
        write(result)
        entry["reverse"] = pruning_curve(score, pruning_order(importance[kind], "reverse"), coarse, baseline)
        write(result)
        entry["random"] = mean_curve([pruning_curve(score, pruning_order(importance[kind], "random", seed), coarse,
                                                    baseline) for seed in range(args.random_seeds)])
        entry["removable"]["random"] = removable(entry["random"], 0.5)
        log.info("%s: %d of %d heads go at <= 0.5 BLEU loss (random order: %d); %.0f s", kind,
                 entry["removable"]["importance"], n, entry["removable"]["random"], time.perf_counter() - t0)
        write(result)
    return result


def parse_args(argv: list[str] | None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True, help="a checkpoint directory (the JSON files are written there)")
    p.add_argument("--corpus", action="append", help=f"corpus of the sample (repeatable; default {DEFAULT_CORPORA})")
    p.add_argument("--split", default="val")
    p.add_argument("--per-corpus", type=int, default=100, help="sentences sampled from each corpus")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--step", type=int, default=1, help="heads removed per point of the importance-order curve")
    p.add_argument("--compare-step", type=int, default=4, help="... of the reverse and random curves")
    p.add_argument("--random-seeds", type=int, default=3)
    p.add_argument("--aligner-pairs", type=int, default=20000, help="training pairs per corpus for IBM Model 1")
    p.add_argument("--aligner-iterations", type=int, default=5)
    p.add_argument("--jobs", default="roles,importance,pruning",
                   help="what to (re)compute, comma-separated; pruning (the slow part) needs importance. A file's "
                        "parts not recomputed are kept")
    p.add_argument("--threads", type=int, help="torch threads (default: all cores)")
    p.add_argument("--device", default="cpu", help="cpu, or cuda where there is a GPU (the numbers then come from it)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> tuple[dict, dict]:
    from transformer.hub import checkpoint_languages, load_checkpoint

    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.threads:
        torch.set_num_threads(args.threads)
    directory = Path(args.checkpoint)
    model = load_checkpoint(directory, device=args.device)
    tr = Translator(model, model.tokenizer, directory.name, truecaser=model.truecaser)
    sample = load_sample(tr, args.corpus or list(DEFAULT_CORPORA), args.split, args.per_corpus, args.seed,
                         checkpoint_languages(directory))
    jobs = set(args.jobs.split(","))
    baseline, outputs = greedy_bleu(tr, sample)
    log.info("%d sentences; intact greedy BLEU %s", len(sample.sources), {k: round(v, 2) for k, v in baseline.items()})
    roles = {}
    if "roles" in jobs:
        roles = roles_json(tr, sample, outputs, args)
        write_json(directory / ROLES_FILE, roles)
        log.info("roles per kind: %s", roles["counts"])
    if "importance" not in jobs:
        return {}, roles
    raw = head_importance(tr.model, list(zip(sample.src_ids, sample.ref_ids)))
    importance = {k: normalise_per_layer(raw[k]) for k in KINDS}
    out = {"sample": sample.describe(args.split, args.seed),
           "method": "Michel et al. (2019): mean over sentences of |dL/d(head mask)|, L the mean token "
                     "cross-entropy of the reference (teacher-forced); normalised per layer (L2)",
           "importance": {k: np.round(importance[k], 5).tolist() for k in KINDS},
           "importance_raw": {k: np.round(raw[k], 6).tolist() for k in KINDS},
           "baseline": {"bleu": round(float(np.mean(list(baseline.values()))), 2),
                        "per_corpus": {k: round(v, 2) for k, v in baseline.items()}},
           "pruning_metric": "greedy BLEU (sacreBLEU, cased, 13a) on the sample, mean over the corpora",
           "steps": {"importance": args.step, "compare": args.compare_step, "random_seeds": args.random_seeds}}
    old = read_json(directory / IMPORTANCE_FILE)
    if "pruning" not in jobs and old.get("sample") == out["sample"] and "pruning" in old:
        out |= {"pruning": old["pruning"], "steps": old.get("steps", out["steps"])}  # kept from the last run
    write_json(directory / IMPORTANCE_FILE, out)
    log.info("importance written")
    if "pruning" in jobs:
        def write(pruning):
            write_json(directory / IMPORTANCE_FILE, out | {"pruning": pruning})
        out["pruning"] = pruning_json(tr, sample, importance, baseline, args, write)
        write_json(directory / IMPORTANCE_FILE, out)
    return out, roles


def read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)


if __name__ == "__main__":
    main()
