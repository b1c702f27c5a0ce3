"""Evaluation: translate a test set and score it with sacreBLEU (BLEU, chrF).

    python -m transformer.evaluate --checkpoint checkpoints/multi30k-en-de --split test_2016_flickr
    python -m transformer.evaluate --checkpoint checkpoints/en-de --corpus tatoeba-en-de --split val --source-form lowercase
    python -m transformer.evaluate --checkpoint DIR --src-file src.txt --ref-file ref.txt --out metrics.json
    python -m transformer.evaluate --checkpoint checkpoints/toy-reverse --toy-task reverse
    python -m transformer.evaluate --checkpoint checkpoints/en-de --corpus tatoeba-en-de --split val --quantize int8

The last line printed is `BLEU = xx.xx` (or `sequence accuracy = ...` for toy tasks).
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import sacrebleu
import torch

from transformer.config import GenerationConfig
from transformer.decoding import MAX_BEAM_SIZE, translate_ids
from transformer.model import Transformer
from transformer.quantize import PRECISIONS, int8_search_model
from transformer.translator import Translator

from .corpora import CorpusSpec, strip_final_punctuation
from .data import read_lines, toy_pairs
from .model_card import write_card

log = logging.getLogger(__name__)


SOURCE_FORMS = {  # how people type: the robustness checks rewrite the sources, never the references
    "as-written": lambda text: text,
    "lowercase": str.lower,
    "uppercase": str.upper,
    "no-final-punct": strip_final_punctuation,
}


def translate_texts(translator: Translator, texts: list[str], keep_case: bool = False, **kwargs) -> list[str]:
    """Sources prepared as the app prepares them (`Translator.prepare`, unless `keep_case`), translated in
    batches (`Translator.translate_batch`)."""
    if keep_case:  # the model as it is, on the text as it is
        translator = Translator(translator.model, translator.tokenizer, translator.name, prepare_input=False,
                                search_model=translator.search_model, precision=translator.precision)
    return translator.translate_batch(texts, **kwargs)


def score_translations(hypotheses: list[str], references: list[str]) -> dict:
    """Cased, detokenised sacreBLEU (13a) and chrF, with signatures."""
    bleu = sacrebleu.metrics.BLEU()
    chrf = sacrebleu.metrics.CHRF()
    b = bleu.corpus_score(hypotheses, [references])
    c = chrf.corpus_score(hypotheses, [references])
    return {
        "bleu": round(b.score, 2),
        "chrf": round(c.score, 2),
        "signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
        "n_sentences": len(hypotheses),
    }


@torch.no_grad()
def teacher_forced_loss(model: Transformer, batches) -> tuple[float, float]:
    """Mean per-token NLL (no label smoothing) and perplexity over batches."""
    model.eval()
    total, count = 0.0, 0
    for batch in batches:
        logits = model(batch.src, batch.tgt_in).logits
        total += torch.nn.functional.cross_entropy(
            logits.float().flatten(0, 1), batch.tgt_out.flatten(), ignore_index=model.config.pad_id, reduction="sum"
        ).item()
        count += batch.n_tokens
    nll = total / max(count, 1)
    return nll, float(torch.exp(torch.tensor(min(nll, 50.0))))


def sequence_accuracy(model: Transformer, pairs: list[tuple[list[int], list[int]]], **kwargs) -> dict:
    """Token and whole-sequence accuracy of greedy/beam outputs on toy (source, target) pairs."""
    outputs = translate_ids(model, [s for s, _ in pairs], **kwargs)
    seq_ok = sum(out == tgt for out, (_, tgt) in zip(outputs, pairs))
    tok_ok = sum(sum(a == b for a, b in zip(out, tgt)) for out, (_, tgt) in zip(outputs, pairs))
    n_tok = sum(len(tgt) for _, tgt in pairs)
    return {"sequence_accuracy": seq_ok / len(pairs), "token_accuracy": tok_ok / n_tok, "n_sentences": len(pairs)}


def parser() -> argparse.ArgumentParser:
    """The command's flags."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True, help="checkpoint directory or Hub repo id")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--split", help="a split of --corpus, e.g. val, test (Tatoeba) or test_2016_flickr (Multi30k)")
    src.add_argument("--src-file", help="source sentences, one a line (plain or .gz)")
    src.add_argument("--toy-task", choices=["copy", "reverse", "sort"], help="score a toy checkpoint")
    p.add_argument("--ref-file", help="reference translations for --src-file")
    p.add_argument("--corpus", default="multi30k", help="corpus of --split: multi30k (default), tatoeba-en-de, ...")
    p.add_argument("--data-dir", help="the corpus directory (default $NAME_DIR, e.g. $TATOEBA_EN_DE_DIR, "
                                      "else ../shared/data/NAME)")
    p.add_argument("--source-form", choices=sorted(SOURCE_FORMS), default="as-written",
                   help="rewrite every source first (the references stay): how robust is the model to how people type")
    p.add_argument("--src-lang", help="the source side of --split (default: the language the checkpoint reads)")
    p.add_argument("--tgt-lang", help="the reference side of --split (default: the language the checkpoint writes)")
    p.add_argument("--limit", type=int, help="only the first N sentences")
    p.add_argument("--device", default="cpu", help="cpu, or cuda where there is a GPU")
    p.add_argument("--method", choices=["greedy", "beam"], default="beam")
    p.add_argument("--beam-size", type=int, help="default: the checkpoint's (generation_config.json), else 5")
    p.add_argument("--length-penalty", type=float,
                   help="default: the checkpoint's, chosen on val (generation_config.json), else 0.6")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--keep-case", action="store_true",
                   help="do not lowercase ALL-CAPS sources first (the app does; this measures why)")
    p.add_argument("--quantize", choices=PRECISIONS, default="fp32",
                   help="int8: search with int8 decoder weights, as the app does by default (transformer/quantize.py)")
    p.add_argument("--threads", type=int, help="torch threads (default: all cores)")
    p.add_argument("--out", help="write the metrics as JSON here")
    p.add_argument("--record", action="store_true", help="also merge the result into CHECKPOINT/metrics.json")
    return p


def main(argv: list[str] | None = None) -> dict:
    from transformer.hub import (  # local import keeps `evaluate` importable from hub-free code
        checkpoint_languages,
        load_checkpoint,
        resolve_checkpoint,
    )

    p = parser()
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.src_file and not args.ref_file:
        p.error("--src-file needs --ref-file")
    if args.beam_size is not None and not 1 <= args.beam_size <= MAX_BEAM_SIZE:
        p.error(f"--beam-size must be from 1 to {MAX_BEAM_SIZE}, got {args.beam_size}")

    if args.device != "cpu" and args.quantize == "int8":
        p.error("--quantize int8 runs on the CPU only")
    model = load_checkpoint(args.checkpoint, device=args.device)
    search = int8_search_model(model) if args.quantize == "int8" else model
    beam_size, length_penalty = (model.generation or GenerationConfig()).resolve(args.beam_size, args.length_penalty)
    settings = {"method": args.method, "beam_size": beam_size if args.method == "beam" else 1,
                "length_penalty": length_penalty, "batch_size": args.batch_size}
    if args.quantize == "int8":
        settings["precision"] = "int8"
    if args.toy_task:
        pairs = toy_pairs(args.toy_task, args.limit or 1000, model.config.src_vocab_size, seed=12345)
        result = {**sequence_accuracy(search, pairs, **{k: v for k, v in settings.items() if k != "precision"}),
                  **settings, "task": args.toy_task}
        print(json.dumps(result))
        print(f"sequence accuracy = {result['sequence_accuracy']:.4f}")
    else:
        if args.split:
            src_lang, tgt_lang = checkpoint_languages(resolve_checkpoint(args.checkpoint))
            src_lang, tgt_lang = args.src_lang or src_lang, args.tgt_lang or tgt_lang
            sources, references = CorpusSpec(args.corpus, path=args.data_dir).load(args.split, src_lang, tgt_lang)
        else:
            sources, references = read_lines(args.src_file), read_lines(args.ref_file)
            if len(sources) != len(references):
                p.error(f"{args.src_file} has {len(sources)} lines but {args.ref_file} has {len(references)}")
        if args.limit:
            sources, references = sources[: args.limit], references[: args.limit]
        sources = [SOURCE_FORMS[args.source_form](s) for s in sources]
        translator = Translator(model, model.tokenizer, str(args.checkpoint), search_model=search,
                                precision=args.quantize)
        hypotheses = translate_texts(translator, sources, keep_case=args.keep_case,
                                     **{k: v for k, v in settings.items() if k != "precision"})
        result = {**score_translations(hypotheses, references), **settings, "split": args.split or args.src_file}
        if args.device != "cpu":  # a GPU's sums may round apart from the CPU's: say where a score comes from
            result["device"] = args.device
        if args.split:
            result["corpus"] = args.corpus
        if args.source_form != "as-written":
            result["source_form"] = args.source_form + (", case kept" if args.keep_case else "")
        print(f"chrF = {result['chrf']:.2f}")
        print(result["signature"])
        print(f"BLEU = {result['bleu']:.2f}")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if args.record:
        record_metrics(Path(args.checkpoint), result)
    return result


def metrics_key(result: dict) -> str:
    """Where a result goes in metrics.json: "[corpus:]split[source form]/decoding"."""
    data = result.get("split") or result.get("task")
    if result.get("corpus", "multi30k") != "multi30k":  # Multi30k keys stay as they were
        data = f"{result['corpus']}:{data}"
    if result.get("source_form"):
        data += f"[{result['source_form']}]"
    decoding = "greedy" if result["method"] == "greedy" else f"beam{result['beam_size']}-lp{result['length_penalty']:g}"
    if result.get("precision", "fp32") != "fp32":
        decoding += f"-{result['precision']}"
    return f"{data}/{decoding}"


def record_metrics(checkpoint: Path, result: dict) -> None:
    """Merge one result into checkpoint/metrics.json, keyed by data and decoding."""
    if not checkpoint.is_dir():
        raise ValueError(f"--record needs a local checkpoint directory, got {checkpoint}")
    path = checkpoint / "metrics.json"
    metrics = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    metrics[metrics_key(result)] = result
    path.write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if (checkpoint / "training.json").is_file():  # a trained checkpoint: keep its card in step
        write_card(checkpoint)


def cli() -> None:
    """The command line: errors the user can fix are one line, not a traceback."""
    try:
        main()
    except (FileNotFoundError, ValueError) as err:  # a missing file or corpus, a bad option: one line
        sys.exit(f"error: {err}")


if __name__ == "__main__":
    cli()
