"""Write a checkpoint's model card (README.md) from the files beside it.

    python -m transformer.training.model_card checkpoints/multi30k-en-de

Reads `config.json`, `training.json` (written by `train` on export),
`metrics.json` (results recorded by `evaluate --record`),
`generation_config.json` (the decoding defaults, `length_penalty.py`) and
`train_log.jsonl`; nothing in the card is typed by hand.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from transformer.casing import TRUECASE_FILE
from transformer.hub import GENERATION_FILE, LANGUAGES, training_progress

from .config import PRESETS
from .corpora import ATTRIBUTION, CorpusSpec, corpus_test_split

FRONT_MATTER = """---
language: [{source}, {target}]
license: mit
library_name: pytorch
pipeline_tag: translation
tags: [translation, transformer, attention-visualisation]
---
"""


def _read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _metrics_table(metrics: dict) -> list[str]:
    if not metrics:
        return ["No evaluation recorded yet (`python -m transformer.evaluate ... --record`)."]
    rows = ["| data | decoding | BLEU | chrF | sentences |", "| --- | --- | --- | --- | --- |"]
    for key, m in sorted(metrics.items()):
        decoding = key.split("/")[-1]
        if m.get("method") == "beam" and {"beam_size", "length_penalty"} <= set(m):
            decoding = f"beam {m['beam_size']}, length penalty {m['length_penalty']:g}"
        if "bleu" in m:
            data = f"{m.get('corpus', '')} {m.get('split', key)}".strip()
            if m.get("source_form"):
                data += f" (sources {m['source_form']})"
            rows.append(f"| {data} | {decoding} | {m['bleu']:.2f} | {m['chrf']:.2f} | {m['n_sentences']} |")
        elif "sequence_accuracy" in m:
            rows.append(f"| fresh {m.get('task')} samples | {decoding} | sequence accuracy {m['sequence_accuracy']:.4f} | "
                        f"token accuracy {m['token_accuracy']:.4f} | {m['n_sentences']} |")
    signature = next((m["signature"] for m in metrics.values() if "signature" in m), None)
    if signature:
        rows += ["", f"sacreBLEU signature: `{signature}`"]
    return rows


def _languages(cfg: dict) -> tuple[str, str]:
    """(source, target) of a recipe, in words: English→German where it does not say."""
    return LANGUAGES[cfg.get("src_lang", "en")], LANGUAGES[cfg.get("tgt_lang", "de")]


def _command(preset: str, cfg: dict) -> str:
    """The training command: the preset, and a flag for each setting the run changed from it."""
    recipe, flags = PRESETS.get(preset, {}), []
    for key, value in cfg.items():
        if key in recipe and key not in ("output", "run_dir", "corpora") and value != recipe[key]:
            flags.append(f"--{key.replace('_', '-')} {value}")
    return " ".join([f"python -m transformer.train --preset {preset}", *flags])


def _corpus_lines(cfg: dict, corpora: list[CorpusSpec], truecased: bool) -> list[str]:
    """What a translation model was trained on, how, and how its input is prepared."""
    source, target = _languages(cfg)
    mix = ", ".join(f"{c.name} (weight {c.weight:g})" for c in corpora)
    tests = ", ".join(f"{c.name} {corpus_test_split(c.name)}" for c in corpora)
    how = (f"fine-tuned from `{cfg['init_from']}` on" if cfg.get("init_from") else "trained from scratch for")
    lines = [f"An encoder–decoder Transformer {how} {source}→{target} on the train splits of {mix}; model "
             f"selection on their val splits; {tests} used only for the report.", ""]
    if cfg.get("rare_holdout"):
        lines += [f"The rare-word split of {cfg['rare_holdout']} (1000 train pairs whose English holds a word seen "
                  "at most twice, and their duplicates) is held out of training and used for selection too.", ""]
    if cfg.get("name_swap_copies") or cfg.get("number_swap_copies"):
        lines += [f"Entity-swap augmentation: swapped copies ({cfg.get('name_swap_copies', 0)} of each pair sharing a "
                  f"name, {cfg.get('number_swap_copies', 0)} of each pair sharing a number or clock time), with that "
                  "entity replaced on both sides by another (real names from many languages, made-up names, "
                  "random numbers), so that the model learns to copy names and numbers.", ""]
    if cfg.get("placeholders"):
        lines += [f"Names, numbers and clock times as placeholders: the model reads and writes them as tokens ⟨1⟩ to "
                  f"⟨{cfg['placeholders']}⟩ (`transformer/placeholders.py`), and the translation puts them back. "
                  f"Training added {cfg.get('placeholder_copies', 0)} copies of each pair whose two sides share such "
                  "an entity, with the entities as placeholders; `copied_words.txt` lists the capitalised words "
                  f"the training data copies into {target} unchanged, which count as names.", ""]
    if cfg.get("align_layer"):
        lines += [f"One head is taught to align: cross-attention layer {cfg['align_layer']}, head {cfg['align_head']}, "
                  "read as predicting (its row for an output piece looks at the source pieces that piece translates). "
                  "Beside the translation loss, its rows learn eflomal's grow-diag-final-and word links over the "
                  "training pairs, on the model's pieces (Garg et al. 2019; `transformer/training/word_links.py`), "
                  f"with weight {cfg.get('align_weight'):g}. `alignment.json` scores it against people's links "
                  "under `taught`.", ""]
    if cfg.get("bpe_dropout"):
        lines += [f"BPE-dropout {cfg['bpe_dropout']:g} (Provilkov et al., 2020): each training pair is tokenised "
                  "once with merges dropped at random.", ""]
    noise = [f"{100 * cfg[k]:g} % {what}" for k, what in (("src_lowercase_prob", "lowercased"),
                                                         ("src_no_punct_prob", "without final punctuation"))
             if cfg.get(k)]
    if noise:
        lines += [f"Training sources (never targets) are rewritten at random: {', '.join(noise)}.", ""]
    lines += [f"Input typed all in capitals or all in lower case is truecased before tokenising (`{TRUECASE_FILE}`, "
              f"a Moses truecaser learned from the training {source})." if truecased else
              "ALL-CAPS input is lowercased before tokenising.", ""]
    lines += [ATTRIBUTION[c.name] for c in corpora if c.name in ATTRIBUTION]
    return lines + ([""] if any(c.name in ATTRIBUTION for c in corpora) else [])


def _decoding_lines(generation: dict) -> list[str]:
    """What `translate`, the CLIs and the app use when not told otherwise (the val rows behind it are above)."""
    if not generation:
        return []
    return ["## Decoding", "", f"Unless told otherwise, `translate`, the command lines and the app decode with beam "
            f"{generation.get('num_beams')} and length penalty {generation.get('length_penalty'):g} "
            f"(`{GENERATION_FILE}`): of the length penalties scored above, the one with the best mean BLEU over the "
            "validation splits (`python -m transformer.training.length_penalty`).", ""]


def render_card(directory: Path) -> str:
    config = _read_json(directory / "config.json")
    training = _read_json(directory / "training.json")
    metrics = _read_json(directory / "metrics.json")
    cfg = training.get("train_config", {})
    preset = training.get("preset", directory.name)  # the recipe, where it is not the directory's name
    codes = cfg.get("src_lang", "en"), cfg.get("tgt_lang", "de")
    lines = [FRONT_MATTER.format(source=codes[0], target=codes[1]), f"# {directory.name}", ""]
    corpora = [CorpusSpec.parse(c) for c in cfg.get("corpora") or ()]
    if cfg.get("task", "multi30k") == "multi30k" and not corpora:
        lines += ["An encoder–decoder Transformer trained from scratch for English→German on Multi30k task 1 "
                  "(train split; model selection on val; test_2016_flickr used only for the report).", ""]
    elif corpora:
        lines += _corpus_lines(cfg, corpora, truecased=(directory / TRUECASE_FILE).is_file())
    else:
        lines += [f"A toy model for the `{cfg.get('task')}` task (random letter sequences generated in code), "
                  "used in class to show clean attention patterns.", ""]
    progress = training_progress(directory)
    if progress:
        lines += [f"**Still in training:** step {progress[0]} of {progress[1]} of its schedule. Training continues "
                  f"with `python -m transformer.train --preset {preset} --resume`, from this export when the run "
                  "directory is gone (a fresh optimizer, the same schedule and data order).", ""]
    lines += ["## Metrics", "", *_metrics_table(metrics), ""]
    lines += _decoding_lines(_read_json(directory / GENERATION_FILE))
    lines += ["## Model", "",
              f"- parameters: {training['parameters']:,}" if "parameters" in training else "- parameters: ?",
              f"- layers: {config.get('n_encoder_layers')} encoder + {config.get('n_decoder_layers')} decoder, "
              f"d_model {config.get('d_model')}, {config.get('n_heads')} heads, d_ff {config.get('d_ff')}, "
              f"{config.get('activation')}, {'pre-LN' if config.get('norm_first') else 'post-LN'}, "
              f"tied embeddings: {config.get('tie_embeddings')}",
              f"- weights: {'float16' if training.get('float16') else 'float32'} safetensors; "
              f"selected: {training.get('selected', '?')}", ""]
    lines += ["## Training", "",
              f"- command: `{_command(preset, cfg)}`",
              f"- seed: {cfg.get('seed')}; epochs: {training.get('epochs')}; optimizer steps: {training.get('steps')}",
              f"- training time: {training.get('train_minutes')} minutes (excluding per-epoch validation) on "
              f"{training.get('device')} with {training.get('threads')} torch thread(s)",
              f"- hardware: {training.get('hardware', 'not recorded')}",
              "- per-epoch loss, perplexity and validation scores: `train_log.jsonl`", ""]
    notes = training.get("notes")
    if notes:
        lines += ["## Notes", "", notes, ""]
    return "\n".join(lines)


def write_card(directory: Path) -> None:
    """(Re)write directory/README.md from the checkpoint's config, training and metrics files."""
    (directory / "README.md").write_text(render_card(directory), encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", type=Path)
    args = p.parse_args(argv)
    write_card(args.checkpoint)


if __name__ == "__main__":
    main()
