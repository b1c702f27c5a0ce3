"""Training on several corpora: specs, weights, noisy sources, per-corpus validation, errors."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from transformer.casing import unshout
from transformer.training import resume, train
from transformer.training import trainer as trainer_module
from transformer.training.corpora import (
    SOURCE_VARIANTS,
    CorpusSpec,
    SourceNoise,
    mixture_indices,
    parse_corpora,
    source_variants,
    strip_final_punctuation,
)
from transformer.training.data import DataError, corpus_env_var, resolve_data_dir

REPO = Path(__file__).resolve().parents[1]

# Two tiny corpora of our own sentences: "everyday" and "captions".
EVERYDAY = [
    ("Where is my phone?", "Wo ist mein Handy?"),
    ("I am not hungry this morning.", "Ich habe heute Morgen keinen Hunger."),
    ("Do you like tea?", "Magst du Tee?"),
    ("We live in Hamburg.", "Wir wohnen in Hamburg."),
    ("She has two brothers.", "Sie hat zwei Brüder."),
    ("It is raining again.", "Es regnet schon wieder."),
]
CAPTIONS = [
    ("A cat sleeps on a sofa.", "Eine Katze schläft auf einem Sofa."),
    ("Two boys ride their bikes.", "Zwei Jungen fahren Fahrrad."),
    ("A woman carries a basket.", "Eine Frau trägt einen Korb."),
]


pytestmark = pytest.mark.slow  # training runs: `pytest -m "not slow"` leaves it out


def write_corpus(directory: Path, pairs: list[tuple[str, str]], splits=("train", "val")) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for split in splits:
        for lang, side in (("en", 0), ("de", 1)):
            with gzip.open(directory / f"{split}.{lang}.gz", "wt", encoding="utf-8") as f:
                f.writelines(p[side] + "\n" for p in pairs)
    return directory


# ---------------------------------------------------------------------------- specs and weights

def test_corpus_spec_parses_name_weight_and_path():
    assert CorpusSpec.parse("multi30k") == CorpusSpec("multi30k", 1.0, None)
    assert CorpusSpec.parse("multi30k:2") == CorpusSpec("multi30k", 2.0, None)
    assert CorpusSpec.parse("tatoeba-en-de:0.5=/data/t e") == CorpusSpec("tatoeba-en-de", 0.5, "/data/t e")
    assert CorpusSpec.parse("x=rel/dir") == CorpusSpec("x", 1.0, "rel/dir")
    for bad in ("", ":2", "multi30k:", "multi30k:-1", "multi30k:0", "multi30k:two", "a b"):
        with pytest.raises(ValueError, match="corpus"):
            CorpusSpec.parse(bad)
    with pytest.raises(ValueError, match="named twice"):
        parse_corpora(["multi30k", "multi30k:2"])


def test_corpus_directory_comes_from_path_then_env_then_shared(tmp_path, monkeypatch):
    assert corpus_env_var("tatoeba-en-de") == "TATOEBA_EN_DE_DIR"
    monkeypatch.setenv("TATOEBA_EN_DE_DIR", str(tmp_path))
    assert CorpusSpec("tatoeba-en-de").directory() == tmp_path
    assert CorpusSpec("tatoeba-en-de", path=str(REPO)).directory() == REPO
    monkeypatch.delenv("TATOEBA_EN_DE_DIR")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataError, match=r"tatoeba-en-de data directory not found: \.\./shared/data/tatoeba-en-de"):
        resolve_data_dir(corpus="tatoeba-en-de")


def test_mixture_repeats_whole_weights_and_samples_fractions_per_epoch():
    sizes, weights = [10, 4, 6], [1.0, 2.0, 0.5]
    picks = mixture_indices(sizes, weights, seed=3, epoch=0)
    counts = Counter(picks)
    assert all(counts[i] == 1 for i in range(10))  # corpus 0 once
    assert all(counts[i] == 2 for i in range(10, 14))  # corpus 1 twice
    half = [i for i in picks if i >= 14]
    assert len(half) == 3 and len(set(half)) == 3 and all(14 <= i < 20 for i in half)  # half of corpus 2
    assert picks == mixture_indices(sizes, weights, seed=3, epoch=0)  # reproducible: --resume stays exact
    draws = {tuple(i for i in mixture_indices(sizes, weights, seed=3, epoch=e) if i >= 14) for e in range(8)}
    assert len(draws) > 1  # a fresh half each epoch
    assert mixture_indices([5], [1.0], 0, 0) == list(range(5))
    assert Counter(mixture_indices([4, 4], [1.5, 2.25], 0, 1)) .total() == 6 + 9


def test_source_variants_and_noise_rates():
    assert source_variants("Did Pauline call?") == ("Did Pauline call?", "did pauline call?", "Did Pauline call", "did pauline call")
    assert strip_final_punctuation("Stop!!! ") == "Stop"
    assert strip_final_punctuation("...") == "..."  # nothing but punctuation: unchanged
    assert strip_final_punctuation("Mr. Smith is here.") == "Mr. Smith is here"
    picks = SourceNoise(lowercase=0.2, no_final_punct=0.3).variants(20_000, seed=1, epoch=0)
    share = Counter(picks)
    lower = (share[1] + share[3]) / len(picks)
    bare = (share[2] + share[3]) / len(picks)
    assert abs(lower - 0.2) < 0.02 and abs(bare - 0.3) < 0.02 and len(SOURCE_VARIANTS) == 4
    assert SourceNoise().variants(5, 0, 0) == [0] * 5 and not SourceNoise().active
    with pytest.raises(ValueError, match="lowercase probability"):
        SourceNoise(lowercase=1.5)


def test_unshout_lowercases_only_all_caps_text():
    assert unshout("A MAN IS WALKING.") == "a man is walking."
    assert unshout("DID PAULINE CALL?") == "did pauline call?"
    assert unshout("I met NASA engineers.") == "I met NASA engineers."
    assert unshout("I") == "I" and unshout("OK") == "ok" and unshout("123 !") == "123 !"
    assert unshout("ÜBER ALLES") == "über alles"


# ---------------------------------------------------------------------------- the trainer

TINY = [
    "--task", "translation", "--vocab-size", "120", "--d-model", "32", "--n-heads", "2",
    "--n-encoder-layers", "1", "--n-decoder-layers", "1", "--d-ff", "64", "--dropout", "0.0",
    "--max-tokens", "64", "--warmup-steps", "5", "--seed", "5", "--threads", "1", "--no-progress",
]


def corpora_args(tmp_path: Path, *weights: str) -> list[str]:
    everyday = write_corpus(tmp_path / "everyday", EVERYDAY)
    captions = write_corpus(tmp_path / "captions", CAPTIONS)
    return ["--corpus", f"everyday:{weights[0]}={everyday}", "--corpus", f"captions:{weights[1]}={captions}"]


def test_trainer_mixes_corpora_by_weight_with_noisy_sources(tmp_path):
    cfg, _, _ = train.parse_args([*TINY, *corpora_args(tmp_path, "1", "2"), "--run-dir", str(tmp_path / "run"),
                                  "--src-lowercase-prob", "0.5", "--src-no-punct-prob", "0.5"])
    trainer = train.Trainer(cfg)
    assert trainer.data.corpus_sizes == [len(EVERYDAY), len(CAPTIONS)]
    n = sum(trainer.data.corpus_sizes)
    assert len(trainer.data.train_set) == len(SOURCE_VARIANTS) * n  # one block per source variant
    tok = trainer.tokenizer
    for epoch in range(3):
        picks = trainer.data.epoch_picks(epoch)
        base = Counter(i % n for i in picks)
        assert all(base[i] == 1 for i in range(len(EVERYDAY)))
        assert all(base[i] == 2 for i in range(len(EVERYDAY), n))
        batched = sorted(i for b in trainer.data.epoch_batches(epoch) for i in b)
        assert batched == sorted(picks)
    for i in trainer.data.epoch_picks(0):
        variant, k = divmod(i, n)
        src, tgt = (EVERYDAY + CAPTIONS)[k]
        pair = trainer.data.train_set.pairs[i]
        assert tok.decode(pair[0]) == source_variants(src)[variant]
        assert tok.decode(pair[1]) == tgt  # targets are never rewritten
    assert {i // n for i in trainer.data.epoch_picks(0)} != {0}  # noise happened


def test_training_reports_bleu_per_corpus_every_val_steps(tmp_path):
    out = tmp_path / "out"
    trainer = train.main([*TINY, *corpora_args(tmp_path, "1", "1"), "--run-dir", str(tmp_path / "run"),
                          "--lr", "3e-3", "--max-steps", "6", "--val-every", "3", "--output", str(out),
                          "--average-last", "2", "--no-half-precision"])
    records = [json.loads(line) for line in (tmp_path / "run" / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [3, 6]
    for r in records:
        assert {"val_bleu_everyday", "val_bleu_captions", "val_chrf_everyday", "val_chrf_captions"} <= set(r)
        assert r["val_bleu"] == round((r["val_bleu_everyday"] + r["val_bleu_captions"]) / 2, 2)
        assert 0 < r["epoch"] <= 6
    snapshots = sorted(p.name for p in (tmp_path / "run").glob("step_*.safetensors"))
    assert snapshots == ["step_000003.safetensors", "step_000006.safetensors"]
    summary = json.loads((out / "training.json").read_text())
    assert set(summary["candidates"]) == {"best checkpoint", "last step (6)", "average of step 3, step 6"}
    assert summary["progress"]["step"] == 6 == trainer.step
    card = (out / "README.md").read_text()
    assert "everyday (weight 1)" in card and "captions (weight 1)" in card


def test_tatoeba_attribution_goes_into_the_model_card(tmp_path):
    tatoeba = write_corpus(tmp_path / "t", EVERYDAY)
    out = tmp_path / "out"
    train.main([*TINY, "--corpus", f"tatoeba-en-de={tatoeba}", "--run-dir", str(tmp_path / "run"), "--max-steps", "2",
                "--val-every", "2", "--output", str(out), "--no-half-precision"])
    assert "Attribution: www.manythings.org/anki and tatoeba.org" in (out / "README.md").read_text()


def test_continues_from_the_export_when_the_run_directory_is_gone(tmp_path):
    import shutil

    import torch
    from safetensors.torch import load_file

    args = [*TINY, *corpora_args(tmp_path, "1", "1"), "--run-dir", str(tmp_path / "run"), "--lr", "3e-3",
            "--val-every", "3", "--output", str(tmp_path / "out"), "--no-half-precision", "--average-last", "1"]
    first = train.main([*args, "--max-steps", "6"])
    exported = load_file(str(tmp_path / "out" / "model.safetensors"))
    shutil.rmtree(tmp_path / "run")  # a fresh checkout: only the committed export is left
    cfg, _, _ = train.parse_args([*args, "--max-steps", "9"])
    trainer = train.Trainer(cfg, resume=True)
    assert trainer.load_state()
    assert (trainer.step, trainer.epoch, trainer.batch_in_epoch) == (first.step, first.epoch, first.batch_in_epoch)
    state = trainer.model.state_dict()
    assert all(torch.equal(state[k], v) for k, v in exported.items())
    assert trainer.optimizer.param_groups[0]["lr"] == pytest.approx(
        3e-3 * trainer_module.lr_factor(7, cfg, 9) / resume.REWARM_STEPS)  # warming up again
    trainer.fit()
    assert trainer.step == 9
    records = [json.loads(line) for line in (tmp_path / "run" / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [3, 6, 9]  # the export's log carried over


def test_missing_corpus_directory_is_one_clear_line(tmp_path):
    missing = tmp_path / "nowhere"
    proc = subprocess.run(
        [sys.executable, "-m", "transformer.train", "--corpus", f"tatoeba-en-de={missing}",
         "--run-dir", str(tmp_path / "run"), "--no-export"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert str(missing) in lines[0] and "tatoeba-en-de" in lines[0] and "TATOEBA_EN_DE_DIR" in lines[0]


def test_bpe_dropout_trains_and_the_card_names_it_and_the_recipe(tmp_path):
    import json

    from transformer.training.model_card import render_card

    tatoeba = write_corpus(tmp_path / "t", EVERYDAY)
    out = tmp_path / "out"
    train.main([*TINY, "--corpus", f"tatoeba-en-de={tatoeba}", "--run-dir", str(tmp_path / "run"), "--max-steps", "2",
                "--val-every", "2", "--output", str(out), "--no-half-precision", "--bpe-dropout", "0.2"])
    card = (out / "README.md").read_text()
    assert "BPE-dropout 0.2" in card and "--preset out`" in card and "\n# out\n" in card
    training = json.loads((out / "training.json").read_text())
    assert training["train_config"]["bpe_dropout"] == 0.2
    (out / "training.json").write_text(json.dumps({**training, "preset": "en-de-names"}))
    card = render_card(out)  # the recipe named where it is not the directory's name
    assert "--preset en-de-names`" in card and "\n# out\n" in card
