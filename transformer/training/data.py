"""Data: parallel corpus files, generated toy tasks, token-bucketed batching and padding.

A corpus (Multi30k task 1, Tatoeba en-de, ...) is a directory of `{split}.{lang}.gz`
(or uncompressed) files, one sentence a line, line i of each language aligned. The
directory of corpus NAME comes from an explicit path (`--data-dir`), else `$NAME_DIR`
(upper case, `-` as `_`: `MULTI30K_DIR`, `TATOEBA_EN_DE_DIR`), else `../shared/data/NAME`.

With internet access, the same files can be fetched once, e.g.

    huggingface-cli download bentrevett/multi30k --repo-type dataset --local-dir data/multi30k

(that repo stores JSON lines; `python -m transformer.training.data --from-jsonl DIR --out DIR`
converts them into this layout). Nothing here downloads at import or run time.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from transformer.model import pad_sequences

DEFAULT_DATA_ROOT = "../shared/data"
TOY_TASKS = ("copy", "reverse", "sort")


class DataError(FileNotFoundError):
    """A data directory or file that is not there; the message names it."""


def corpus_env_var(corpus: str) -> str:
    """The environment variable naming a corpus's directory: "tatoeba-en-de" -> "TATOEBA_EN_DE_DIR"."""
    return re.sub(r"[^A-Z0-9]", "_", corpus.upper()) + "_DIR"


def resolve_data_dir(data_dir: str | os.PathLike | None = None, corpus: str = "multi30k") -> Path:
    env = corpus_env_var(corpus)
    path = Path(data_dir or os.environ.get(env) or f"{DEFAULT_DATA_ROOT}/{corpus}")
    if not path.is_dir():
        raise DataError(f"{corpus} data directory not found: {path} (set --data-dir or {env})")
    return path


def read_lines(path: str | os.PathLike) -> list[str]:
    """One stripped sentence per line from a plain or .gz UTF-8 file."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"file not found: {path}")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n").strip() for line in f]


def split_file(data_dir: Path, split: str, lang: str) -> Path:
    for name in (f"{split}.{lang}.gz", f"{split}.{lang}"):
        if (data_dir / name).is_file():
            return data_dir / name
    raise DataError(f"corpus file not found: {data_dir / f'{split}.{lang}.gz'} (nor uncompressed)")


def load_split(
    split: str, src_lang: str = "en", tgt_lang: str = "de", data_dir: str | os.PathLike | None = None,
    corpus: str = "multi30k",
) -> tuple[list[str], list[str]]:
    """Aligned (sources, targets) of one split of a corpus, e.g. "train", "val", "test_2016_flickr"."""
    root = resolve_data_dir(data_dir, corpus)
    src = read_lines(split_file(root, split, src_lang))
    tgt = read_lines(split_file(root, split, tgt_lang))
    if len(src) != len(tgt):
        raise ValueError(f"{split}: {len(src)} {src_lang} lines but {len(tgt)} {tgt_lang} lines")
    return src, tgt


# ---------------------------------------------------------------------------- toy tasks

def toy_target(task: str, seq: Sequence[int]) -> list[int]:
    """copy: the same; reverse: back to front; sort: ascending (a non-monotonic but clear alignment)."""
    if task == "copy":
        return list(seq)
    if task == "reverse":
        return list(reversed(seq))
    if task == "sort":
        return sorted(seq)
    raise ValueError(f"unknown toy task {task!r}; choose from {TOY_TASKS}")


def toy_pairs(
    task: str, n: int, vocab_size: int, min_len: int = 3, max_len: int = 12, first_id: int = 4, seed: int = 0
) -> list[tuple[list[int], list[int]]]:
    """`n` random (source, target) id sequences; ids in [first_id, vocab_size) so specials stay free."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        seq = [rng.randrange(first_id, vocab_size) for _ in range(rng.randint(min_len, max_len))]
        pairs.append((seq, toy_target(task, seq)))
    return pairs


# ---------------------------------------------------------------------------- batching

@dataclass
class Batch:
    src: Tensor  # (B, S) source ids ending in <eos>
    tgt_in: Tensor  # (B, T) <bos> + target ids
    tgt_out: Tensor  # (B, T) target ids + <eos>
    n_tokens: int  # non-pad target tokens
    alignment: Tensor | None = None  # (B, T, S) a taught head's target weights (word_links.py); None: none taught

    def to(self, device: torch.device | str) -> "Batch":
        """The batch on `device`; to a GPU from pinned memory without waiting (a copy from pageable memory
        would make the host wait for every kernel queued before it)."""
        cuda = torch.device(device).type == "cuda"

        def move(t: Tensor | None) -> Tensor | None:
            return None if t is None else t.pin_memory().to(device, non_blocking=True) if cuda else t.to(device)

        return Batch(move(self.src), move(self.tgt_in), move(self.tgt_out), self.n_tokens, move(self.alignment))


def add_specials(src: list[int], tgt: list[int], bos_id: int, eos_id: int) -> tuple[list[int], list[int], list[int]]:
    """Model-ready sequences: src + <eos>, <bos> + tgt, tgt + <eos>."""
    return src + [eos_id], [bos_id] + tgt, tgt + [eos_id]


def collate(pairs: Sequence[tuple[list[int], list[int]]], pad_id: int, bos_id: int, eos_id: int) -> Batch:
    triples = [add_specials(s, t, bos_id, eos_id) for s, t in pairs]
    src, tgt_in, tgt_out = (pad_sequences([tr[i] for tr in triples], pad_id) for i in range(3))
    return Batch(src, tgt_in, tgt_out, int((tgt_out != pad_id).sum()))


def token_batches(
    lengths: Sequence[tuple[int, int]], max_tokens: int, seed: int, epoch: int, bucket_factor: int = 100
) -> list[list[int]]:
    """Indices grouped into batches of at most `max_tokens` padded tokens.

    Examples are shuffled, cut into large buckets, sorted by length inside each
    bucket (little padding), packed greedily, and the batches shuffled. The order
    depends only on (seed, epoch), which is what lets `--resume` continue exactly.
    """
    rng = random.Random(seed * 1_000_003 + epoch)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    bucket = max(1, bucket_factor * max_tokens // 32)
    batches: list[list[int]] = []
    for start in range(0, len(order), bucket):
        chunk = sorted(order[start : start + bucket], key=lambda i: (lengths[i][1], lengths[i][0]))
        current: list[int] = []
        longest = 0
        for i in chunk:
            size = max(lengths[i]) + 1  # + <eos>/<bos>
            if current and max(longest, size) * (len(current) + 1) > max_tokens:
                batches.append(current)
                current, longest = [], 0
            current.append(i)
            longest = max(longest, size)
        if current:
            batches.append(current)
    rng.shuffle(batches)
    return batches


class PairDataset:
    """Tokenised (source ids, target ids) pairs with length filtering."""

    def __init__(self, pairs: list[tuple[list[int], list[int]]], max_len: int | None = None):
        if max_len is not None:  # room for the special token on each side
            pairs = [(s[: max_len - 1], t[: max_len - 1]) for s, t in pairs]
        self.pairs = pairs
        self.lengths = [(len(s), len(t)) for s, t in pairs]

    def __len__(self) -> int:
        return len(self.pairs)

    def make_batch(self, indices: Sequence[int], pad_id: int, bos_id: int, eos_id: int) -> Batch:
        return collate([self.pairs[i] for i in indices], pad_id, bos_id, eos_id)

    def batches(
        self, max_tokens: int, pad_id: int, bos_id: int, eos_id: int, seed: int = 0, epoch: int = 0, skip: int = 0
    ) -> Iterator[Batch]:
        """The epoch's batches in order, skipping the first `skip` (already trained on)."""
        for idx in token_batches(self.lengths, max_tokens, seed, epoch)[skip:]:
            yield self.make_batch(idx, pad_id, bos_id, eos_id)


def _convert_jsonl(src_dir: Path, out_dir: Path) -> None:
    """Turn a JSON-lines copy ({"en": ..., "de": ...} per line, one file per split) into `{split}.{lang}.gz`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in sorted(src_dir.glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        split = {"validation": "val", "test": "test_2016_flickr"}.get(path.stem, path.stem)
        for lang in sorted(rows[0]):
            with gzip.open(out_dir / f"{split}.{lang}.gz", "wt", encoding="utf-8") as f:
                f.writelines(r[lang].strip() + "\n" for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description="Multi30k data helper")
    parser.add_argument("--from-jsonl", type=Path, required=True, help="folder of train/validation/test .jsonl")
    parser.add_argument("--out", type=Path, required=True, help="folder to write {split}.{lang}.gz into")
    args = parser.parse_args()
    _convert_jsonl(args.from_jsonl, args.out)


if __name__ == "__main__":
    main()
