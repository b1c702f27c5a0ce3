"""Does int8 decoding hold? BLEU on both val splits and the attention maps of val sentences, fp32 vs int8.

The app decodes in int8 by default (`load_pretrained(..., quantize="int8")`, transformer/quantize.py) where
this holds: val BLEU within 0.3 of float32 on both corpora, and every attention map within 0.02 (max abs)
of the float32 model's on `--attention-sentences` val sentences (half from each corpus).

Reported per corpus: `bleu_fp32`, `bleu_int8` and their difference (beam 5 at the checkpoint's length
penalty, chosen on val, as the app serves it, or `--length-penalty`; every source prepared as the app does). For the
attention sentences: how many int8 translations equal the float32 ones (`same_output`), and per kind
the max abs difference of
  * `served`: the maps the app shows in int8 mode, against the float32 model's maps of the same output
    (the int8 search's output drawn by the float32 model, so 0 by construction) and, where the outputs
    agree, against float32 `translate`'s own maps;
  * `through_int8_weights`: what the maps would be if the int8 decoder drew them (the float32 output
    teacher-forced through the int8 search model): why the attention capture stays float32.
Prints one JSON object; timing plays no part, so any machine will do.

    python bench/int8_accuracy.py                                   # full val splits (a few minutes)
    python bench/int8_accuracy.py --limit 200 --attention-sentences 50   # a sample
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from transformer.training.corpora import CorpusSpec  # noqa: E402
from transformer.training.evaluate import score_translations, translate_texts  # noqa: E402
from transformer.translator import Translator, load_pretrained  # noqa: E402

KINDS = ("encoder", "decoder", "cross")
CORPORA = ("tatoeba-en-de", "multi30k")


def max_diff(a, b) -> dict[str, float]:
    """Per kind, the max abs difference of two `Attention`s of the same tokens."""
    return {k: float(np.abs(getattr(a, k) - getattr(b, k)).max()) for k in KINDS}


def worst(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: round(max((r[k] for r in rows), default=0.0), 5) for k in KINDS}


def attention_check(tr: Translator, tr8: Translator, sentences: list[tuple[str, float]]) -> dict:
    through_int8 = Translator(tr8.search_model, tr.tokenizer, prepare_input=tr.prepare_input,
                              truecaser=tr.truecaser)  # maps drawn by the int8 decoder (not what the app does)
    served_same_output, served_vs_translate, int8_weights, same = [], [], [], 0
    for text, lp in sentences:
        r = tr.translate(text, beam_size=5, length_penalty=lp)
        r8 = tr8.translate(text, beam_size=5, length_penalty=lp)
        served_same_output.append(max_diff(r8.attention, tr.attention_for(r8, 0)))
        if r8.candidates[0].ids == r.candidates[0].ids:
            same += 1
            served_vs_translate.append(max_diff(r8.attention, r.attention))
        int8_weights.append(max_diff(through_int8.attention_for(r, 0), r.attention))
    return {"sentences": len(sentences), "same_output": same,
            "served_vs_fp32_of_the_same_output": worst(served_same_output),
            "served_vs_fp32_translate_where_outputs_agree": worst(served_vs_translate),
            "through_int8_weights": worst(int8_weights)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=str(ROOT / "checkpoints" / "en-de"))
    p.add_argument("--limit", type=int, help="only the first N sentences of each val split for BLEU (default: all)")
    p.add_argument("--attention-sentences", type=int, default=50, help="val sentences for the attention check")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--json", help="also write the result to this file (see bench/report.py)")
    p.add_argument("--length-penalty", type=float, help="default: the checkpoint's (generation_config.json)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    tr, tr8 = load_pretrained(args.checkpoint), load_pretrained(args.checkpoint, quantize="int8")
    lp = tr.generation.resolve(None, args.length_penalty)[1]
    report: dict = {"checkpoint": args.checkpoint, "beam_size": 5, "bleu": {}}
    attention_sentences = []
    for corpus in CORPORA:
        sources, references = CorpusSpec(corpus).load("val", "en", "de")
        attention_sentences += [(s, lp) for s in sources[: (args.attention_sentences + 1) // 2]]
        sources, references = sources[: args.limit], references[: args.limit]
        scores = {name: score_translations(translate_texts(t, sources, beam_size=5, length_penalty=lp,
                                                           batch_size=args.batch_size), references)["bleu"]
                  for name, t in (("fp32", tr), ("int8", tr8))}
        report["bleu"][corpus] = {"split": "val", "sentences": len(sources), "length_penalty": lp,
                                  "bleu_fp32": scores["fp32"], "bleu_int8": scores["int8"],
                                  "int8_minus_fp32": round(scores["int8"] - scores["fp32"], 2)}
        print(json.dumps({corpus: report["bleu"][corpus]}), file=sys.stderr, flush=True)
    report["attention"] = attention_check(tr, tr8, attention_sentences[: args.attention_sentences])
    bleu_ok = all(abs(r["int8_minus_fp32"]) <= 0.3 for r in report["bleu"].values())
    served = report["attention"]["served_vs_fp32_of_the_same_output"]
    report["holds"] = bleu_ok and max(served.values()) <= 0.02
    print(json.dumps(report))
    if args.json:
        from report import write_result  # bench/, the script's own directory
        write_result(args.json, report)


if __name__ == "__main__":
    main()
