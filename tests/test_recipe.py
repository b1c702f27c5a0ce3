"""The from-scratch recipe (`--preset en-de`) trains a tiny model end to end: names and numbers as
placeholders, the rare split held out of training from the start, and the learning snapshots written."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import torch

from transformer.hub import load_checkpoint
from transformer.training import train
from transformer.training.rare_split import split_rare
from transformer.training.run_data import SAMPLED_IDS_FILE

# Our own sentences, many with a name or a number, a few with a word that occurs once (rare split candidates).
PAIRS = [
    ("Ayo reads a book.", "Ayo liest ein Buch."), ("Tom drinks tea.", "Tom trinkt Tee."),
    ("Mia has 3 cats.", "Mia hat 3 Katzen."), ("We meet at 7:30.", "Wir treffen uns um 7:30."),
    ("Kofi lives in Accra.", "Kofi wohnt in Accra."), ("The train leaves at 9:15.", "Der Zug fährt um 9:15."),
    ("Lena bought 12 eggs.", "Lena kaufte 12 Eier."),
    ("The dog sleeps in the barn.", "Der Hund schläft in der Scheune."), ("The cat sleeps.", "Die Katze schläft."),
    ("Ama and Yaw dance.", "Ama und Yaw tanzen."), ("It costs 20 euros.", "Es kostet 20 Euro."),
    ("Tom reads.", "Tom liest."),
    ("She was born in 1990.", "Sie wurde 1990 geboren."), ("Ayo sleeps.", "Ayo schläft."),
    ("We drink water.", "Wir trinken Wasser."), ("Mia plays.", "Mia spielt."),
] * 3 + [("I see a quokka.", "Ich sehe ein Quokka."), ("The zeppelin flies.", "Der Zeppelin fliegt.")]


def write_corpus(directory: Path) -> Path:
    directory.mkdir(parents=True)
    for split, pairs in (("train", PAIRS), ("val", PAIRS[:6])):
        for lang, side in (("en", 0), ("de", 1)):
            with gzip.open(directory / f"{split}.{lang}.gz", "wt", encoding="utf-8") as f:
                f.writelines(p[side] + "\n" for p in pairs)
    return directory


def test_the_recipe_trains_end_to_end_with_placeholders_rare_split_and_snapshots(tmp_path):
    corpus = write_corpus(tmp_path / "own")
    out = tmp_path / "export"
    trainer = train.main([
        "--preset", "en-de", "--corpus", f"own={corpus}", "--rare-holdout", "own",
        "--vocab-size", "150", "--d-model", "32", "--n-heads", "2", "--n-encoder-layers", "1", "--n-decoder-layers",
        "1", "--d-ff", "64", "--max-tokens", "256", "--accum-steps", "1", "--warmup-steps", "5", "--max-steps", "12",
        "--val-every", "6", "--max-minutes", "0", "--learning-snapshots", "2,6,12", "--threads", "1", "--no-progress",
        "--run-dir", str(tmp_path / "run"), "--output", str(out),
    ])
    assert trainer.step == 12
    cfg = trainer.model.config
    assert cfg.placeholders == 8
    # names and numbers are placeholders in training pairs (ids after the tokenizer's vocabulary)
    first = trainer.tokenizer.vocab_size
    assert any(i >= first for src, _ in trainer.data.train_set.pairs for i in src)
    # the rare split: held out of training, scored as its own validation set
    (_, _), (held_en, _) = split_rare([p[0] for p in PAIRS], [p[1] for p in PAIRS])
    assert held_en and "own-rare" in trainer.data.val_sets
    train_text = {trainer.tokenizer.decode(src) for src, _ in trainer.data.train_set.pairs}
    assert not any(h in train_text or h.lower() in train_text for h in held_en)
    # snapshots of the model learning, shipped with the export
    records = json.loads((out / "snapshots" / "snapshots.json").read_text())
    assert [r["step"] for r in records] == [2, 6, 12]
    assert load_checkpoint(out).config == cfg


def tiny_recipe(tmp_path: Path, run: str, *extra: str) -> train.Trainer:
    """The recipe on our tiny corpus; inverse_sqrt: the lr does not depend on --max-steps, so a run stopped at
    step 5 is the first half of one of 10 steps."""
    corpus = tmp_path / "own"
    if not corpus.exists():
        write_corpus(corpus)
    return train.main([
        "--preset", "en-de", "--corpus", f"own={corpus}", "--rare-holdout", "own", "--bpe-dropout", "0.3",
        "--vocab-size", "150", "--d-model", "32", "--n-heads", "2", "--n-encoder-layers", "1", "--n-decoder-layers",
        "1", "--d-ff", "64", "--max-tokens", "128", "--accum-steps", "1", "--warmup-steps", "5", "--val-every", "100",
        "--max-minutes", "0", "--learning-snapshots", "", "--threads", "1", "--no-progress", "--no-export",
        "--save-every", "1000", "--run-dir", str(tmp_path / run), "--schedule", "inverse_sqrt", *extra,
    ])


def test_resume_is_exact_with_bpe_dropout(tmp_path):
    straight = tiny_recipe(tmp_path, "straight", "--max-steps", "10")
    (tmp_path / "halves").mkdir()  # the same tokenizer and sampled segmentations, as a run directory holds them
    for name in ("tokenizer.json", SAMPLED_IDS_FILE):
        shutil.copyfile(tmp_path / "straight" / name, tmp_path / "halves" / name)
    half = tiny_recipe(tmp_path, "halves", "--max-steps", "5")
    assert half.progress.batch_in_epoch > 0  # stopped mid-epoch
    resumed = tiny_recipe(tmp_path, "halves", "--max-steps", "10", "--resume")
    assert resumed.data.train_set.pairs == straight.data.train_set.pairs  # the same sampled segmentations
    for name, tensor in straight.model.state_dict().items():
        assert torch.equal(tensor, resumed.model.state_dict()[name]), name
    # the guard: without the saved segmentations BPE-dropout samples anew, and the data differs
    (tmp_path / "halves" / SAMPLED_IDS_FILE).unlink()
    again = tiny_recipe(tmp_path, "halves", "--max-steps", "10", "--resume")
    assert again.data.train_set.pairs != straight.data.train_set.pairs


def test_training_numbers_placeholders_at_random_so_every_one_is_learned(tmp_path):
    trainer = tiny_recipe(tmp_path, "numbers", "--max-steps", "1")
    first = trainer.tokenizer.vocab_size
    used = {i - first for src, _ in trainer.data.train_set.pairs for i in src if i >= first}
    assert len(used) >= 6  # one or two entities a sentence, numbered anywhere in ⟨1⟩..⟨8⟩
