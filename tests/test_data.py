"""Data: file loading and its errors, toy tasks, token-bucketed batching, padding."""
from __future__ import annotations

import gzip
import random

import pytest
import torch

from transformer.training.data import (
    Batch, DataError, PairDataset, collate, load_split, read_lines, resolve_data_dir, toy_pairs, toy_target,
    token_batches,
)

# Own sentences (not from Multi30k).
EN = ["A red kite flies over the field.", "Two dogs share one ball.", "The kettle is boiling."]
DE = ["Ein roter Drachen fliegt über das Feld.", "Zwei Hunde teilen sich einen Ball.", "Der Wasserkocher kocht."]


def write_plain(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def write_gz(path, lines):
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)


# ---------------------------------------------------------------------------- files

def test_missing_directory_raises_data_error_naming_it(tmp_path):
    missing = tmp_path / "no_such_multi30k"
    for call in (lambda: resolve_data_dir(missing), lambda: load_split("train", data_dir=missing)):
        with pytest.raises(DataError) as info:
            call()
        assert str(missing) in str(info.value)
        assert isinstance(info.value, FileNotFoundError)


def test_default_directory_comes_from_env_then_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv("MULTI30K_DIR", str(tmp_path))
    assert resolve_data_dir() == tmp_path
    monkeypatch.delenv("MULTI30K_DIR")
    monkeypatch.chdir(tmp_path)  # the relative default ../shared/data/multi30k does not exist from here
    with pytest.raises(DataError, match="shared/data/multi30k"):
        resolve_data_dir()


def test_missing_file_raises_data_error_naming_it(tmp_path):
    write_gz(tmp_path / "train.en.gz", EN)  # German side missing
    with pytest.raises(DataError) as info:
        load_split("train", "en", "de", tmp_path)
    assert str(tmp_path / "train.de") in str(info.value)
    with pytest.raises(DataError, match="nothing.txt"):
        read_lines(tmp_path / "nothing.txt")


@pytest.mark.parametrize("src_gz, tgt_gz", [(True, True), (False, False), (True, False)])
def test_gz_and_plain_files_are_read_alike(tmp_path, src_gz, tgt_gz):
    (write_gz if src_gz else write_plain)(tmp_path / ("train.en.gz" if src_gz else "train.en"), EN)
    (write_gz if tgt_gz else write_plain)(tmp_path / ("train.de.gz" if tgt_gz else "train.de"), DE)
    assert load_split("train", "en", "de", tmp_path) == (EN, DE)
    assert load_split("train", "de", "en", tmp_path) == (DE, EN)


def test_read_lines_strips_whitespace_and_keeps_empty_lines(tmp_path):
    path = tmp_path / "x.txt"
    path.write_text("  eins \nzwei\n\ndrei\n", encoding="utf-8")
    assert read_lines(path) == ["eins", "zwei", "", "drei"]
    write_gz(tmp_path / "x.txt.gz", ["  eins ", "zwei", "", "drei"])
    assert read_lines(tmp_path / "x.txt.gz") == ["eins", "zwei", "", "drei"]


def test_misaligned_split_is_rejected(tmp_path):
    write_plain(tmp_path / "val.en", EN)
    write_plain(tmp_path / "val.de", DE[:2])
    with pytest.raises(ValueError, match="3 en lines but 2 de lines"):
        load_split("val", data_dir=tmp_path)


# ---------------------------------------------------------------------------- toy tasks

@pytest.mark.parametrize("task", ["copy", "reverse", "sort"])
def test_toy_pairs(task):
    pairs = toy_pairs(task, 300, vocab_size=20, min_len=2, max_len=9, seed=3)
    assert len(pairs) == 300
    lengths = set()
    for src, tgt in pairs:
        assert 2 <= len(src) <= 9 and all(4 <= i < 20 for i in src)
        lengths.add(len(src))
        expected = {"copy": list(src), "reverse": src[::-1], "sort": sorted(src)}[task]
        assert tgt == expected
    assert lengths == set(range(2, 10))
    assert toy_pairs(task, 300, vocab_size=20, min_len=2, max_len=9, seed=3) == pairs
    assert toy_pairs(task, 300, vocab_size=20, min_len=2, max_len=9, seed=4) != pairs


def test_toy_target_by_hand_and_unknown_task():
    assert toy_target("reverse", [4, 9, 6]) == [6, 9, 4]
    assert toy_target("sort", [7, 4, 9, 4]) == [4, 4, 7, 9]
    assert toy_target("copy", [5]) == [5]
    with pytest.raises(ValueError, match="rotate"):
        toy_target("rotate", [4])
    with pytest.raises(ValueError):
        toy_pairs("rotate", 3, vocab_size=10)


def test_toy_pairs_first_id_keeps_specials_free():
    pairs = toy_pairs("copy", 200, vocab_size=12, first_id=6, seed=0)
    ids = {i for src, _ in pairs for i in src}
    assert ids == set(range(6, 12))


# ---------------------------------------------------------------------------- batching

def random_lengths(n: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return [(rng.randint(1, 40), rng.randint(1, 40)) for _ in range(n)]


def padded_size(lengths, batch) -> int:
    """Tokens of the padded (B, max_len + 1) source or target tensor: the larger of the two."""
    return len(batch) * max(max(lengths[i]) + 1 for i in batch)


@pytest.mark.parametrize("max_tokens", [64, 300, 1000])
def test_token_batches_respect_budget_and_cover_every_index_once(max_tokens):
    lengths = random_lengths(2000, seed=1)
    batches = token_batches(lengths, max_tokens, seed=5, epoch=2)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    assert all(b for b in batches)
    for b in batches:
        assert padded_size(lengths, b) <= max_tokens
    # packed greedily: batches are not needlessly small
    mean_fill = sum(padded_size(lengths, b) for b in batches) / (len(batches) * max_tokens)
    assert mean_fill > 0.6


def test_an_example_longer_than_the_budget_gets_its_own_batch():
    lengths = [(3, 3), (50, 10), (4, 2)]
    batches = token_batches(lengths, max_tokens=20, seed=0, epoch=0)
    assert sorted(i for b in batches for i in b) == [0, 1, 2]
    assert [1] in batches


def test_token_batches_are_sorted_by_length_within_buckets():
    lengths = random_lengths(500, seed=2)
    key = lambda i: (lengths[i][1], lengths[i][0])  # noqa: E731
    # max_tokens 64 -> bucket of 200 examples: each batch comes from one length-sorted bucket
    batches = token_batches(lengths, 64, seed=0, epoch=0)
    for b in batches:
        assert [key(i) for i in b] == sorted(key(i) for i in b)
    # one bucket holding everything: batches are consecutive runs of one sorted list
    whole = token_batches(lengths, 64, seed=0, epoch=0, bucket_factor=1000)
    runs = sorted(whole, key=lambda b: key(b[0]))
    keys = [key(i) for b in runs for i in b]
    assert keys == sorted(keys)


def test_batch_order_depends_only_on_seed_and_epoch():
    lengths = random_lengths(600, seed=3)
    first = token_batches(lengths, 200, seed=7, epoch=1)
    random.seed(12345)  # global RNG state must not matter
    torch.manual_seed(999)
    token_batches(lengths, 200, seed=1, epoch=0)  # nor calls in between
    assert token_batches(lengths, 200, seed=7, epoch=1) == first
    assert token_batches(lengths, 200, seed=7, epoch=2) != first
    assert token_batches(lengths, 200, seed=8, epoch=1) != first


def test_collate_pads_and_adds_specials():
    batch = collate([([5, 6, 7], [8]), ([9], [10, 11, 12])], pad_id=0, bos_id=2, eos_id=3)
    assert isinstance(batch, Batch)
    assert batch.src.tolist() == [[5, 6, 7, 3], [9, 3, 0, 0]]
    assert batch.tgt_in.tolist() == [[2, 8, 0, 0], [2, 10, 11, 12]]
    assert batch.tgt_out.tolist() == [[8, 3, 0, 0], [10, 11, 12, 3]]
    assert batch.n_tokens == 6
    assert batch.src.dtype == torch.long
    other = collate([([5], [6])], pad_id=1, bos_id=0, eos_id=2)
    assert other.src.tolist() == [[5, 2]] and other.tgt_in.tolist() == [[0, 6]] and other.tgt_out.tolist() == [[6, 2]]


def test_pair_dataset_batches_skip_and_budget():
    pairs = toy_pairs("reverse", 400, vocab_size=20, min_len=1, max_len=15, seed=0)
    data = PairDataset(pairs)
    all_batches = list(data.batches(96, pad_id=0, bos_id=2, eos_id=3, seed=1, epoch=0))
    assert len(all_batches) == len(token_batches(data.lengths, 96, seed=1, epoch=0))
    assert sum(b.src.size(0) for b in all_batches) == 400
    assert sum(b.n_tokens for b in all_batches) == sum(len(t) + 1 for _, t in pairs)
    for b in all_batches:
        assert b.src.numel() <= 96 and b.tgt_in.numel() <= 96
        assert b.tgt_in.shape == b.tgt_out.shape
        real = b.tgt_in[:, 1:] != 0
        assert torch.equal(b.tgt_in[:, 1:][real], b.tgt_out[:, :-1][real])  # shifted by one
        assert ((b.tgt_out == 3).sum(1) == 1).all()  # exactly one <eos> per row
    skipped = list(data.batches(96, pad_id=0, bos_id=2, eos_id=3, seed=1, epoch=0, skip=5))
    assert len(skipped) == len(all_batches) - 5
    for a, b in zip(skipped, all_batches[5:]):
        assert torch.equal(a.src, b.src) and torch.equal(a.tgt_out, b.tgt_out)


def test_pair_dataset_truncates_to_max_len():
    data = PairDataset([(list(range(4, 20)), list(range(4, 10)))], max_len=8)
    assert data.lengths == [(7, 6)]  # room for <eos>/<bos>
    batch = next(data.batches(100, pad_id=0, bos_id=2, eos_id=3))
    assert batch.src.size(1) == 8 and batch.src[0, -1] == 3
