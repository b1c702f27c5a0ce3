"""The data of one training run: corpora, the joint tokenizer, training and validation pairs, and
each epoch's batches (the corpus mixture, source noise, token buckets, this rank's share)."""
from __future__ import annotations

import hashlib
import logging
import shutil
from functools import partial
from itertools import accumulate
from pathlib import Path

import torch

from transformer.casing import Truecaser
from transformer.placeholders import encode_marked
from transformer.tokenizer import TextTokenizer, toy_tokenizer, train_tokenizer

from .augment import copied_words, entity_swapped_pairs, placeholder_pairs
from .config import TrainConfig
from .corpora import (
    CorpusSpec,
    SourceNoise,
    mixture_indices,
    parse_corpora,
    source_variants,
)
from .data import TOY_TASKS, Batch, PairDataset, token_batches, toy_pairs
from .rare_split import RARE_SPLIT, split_rare_between
from .word_links import aligner_words, piece_alignment, training_links

log = logging.getLogger(__name__)


def run_corpora(cfg: TrainConfig) -> list[CorpusSpec]:
    """The corpora of a translation task (none for a toy task); every directory is checked now."""
    if cfg.task in TOY_TASKS:
        return []
    if cfg.task not in ("translation", "multi30k"):
        raise ValueError(f"unknown task {cfg.task!r}; choose translation (alias multi30k) or one of {TOY_TASKS}")
    corpora = parse_corpora(cfg.corpora) if cfg.corpora else [CorpusSpec("multi30k")]
    if cfg.data_dir:
        if len(corpora) > 1:
            raise ValueError("--data-dir names the directory of a single corpus; give NAME=PATH with each --corpus")
        corpora = [CorpusSpec(corpora[0].name, corpora[0].weight, cfg.data_dir)]
    for corpus in corpora:
        corpus.directory()  # a missing directory fails here, naming it, before any work
    return corpora


SAMPLED_IDS_FILE = "train_ids.pt"  # in the run directory: the segmentations BPE-dropout sampled


class RunData:
    """Everything a run reads: built once per process, deterministic given the config. The one exception,
    the segmentations BPE-dropout samples (`tokenizers` draws them from its own unseeded generator), is
    saved in the run directory when first drawn and read back on `--resume`, so batches are cut alike."""

    def __init__(self, cfg: TrainConfig, run_dir: Path, resume: bool, is_main: bool, rank: int = 0, world: int = 1):
        self.cfg, self.rank, self.world = cfg, rank, world
        self.noise = SourceNoise(cfg.src_lowercase_prob, cfg.src_no_punct_prob)
        self.corpora = run_corpora(cfg)
        self.run_dir, self.is_main = run_dir, is_main
        self.tokenizer = self._tokenizer(run_dir, resume, is_main)
        self.copied_words: set[str] = set()  # names the training data copies (placeholders.py), set by _pairs
        self.train_set, self.corpus_sizes, self.val_sets, self.val_refs = self._pairs()
        self.truecaser = Truecaser.train(self.train_sources, cfg.src_lang) if self.corpora else None
        self.word_links = self._word_links() if cfg.align_layer else None  # one set per corpus pair

    def _tokenizer(self, run_dir: Path, resume: bool, is_main: bool) -> TextTokenizer:
        """The run's tokenizer: RUN_DIR/tokenizer.json, else the export's (a continuation), else a new one."""
        cfg = self.cfg
        path = run_dir / "tokenizer.json"
        if cfg.init_from and is_main and not path.is_file():
            shutil.copyfile(Path(cfg.init_from) / "tokenizer.json", path)  # fine-tuning keeps the vocabulary
        exported = Path(cfg.output) / "tokenizer.json" if cfg.output else None
        if resume and not path.is_file() and exported and exported.is_file() and is_main:
            shutil.copyfile(exported, path)  # continuing from an export: keep its vocabulary
        if path.is_file():
            return TextTokenizer.from_file(path)
        if self.corpora:  # one joint vocabulary over both languages of every corpus
            texts = [line for c in self.corpora for side in self.train_pairs(c) for line in side]
            tok = TextTokenizer(train_tokenizer(texts, cfg.vocab_size))
        else:
            tok = TextTokenizer(toy_tokenizer(cfg.toy_symbols))
        if is_main:
            tok.save(path)
        return tok

    def train_pairs(self, corpus: CorpusSpec) -> tuple[list[str], list[str]]:
        """A corpus's training pairs, without its rare-word split when that is held out."""
        src, tgt = corpus.load("train", self.cfg.src_lang, self.cfg.tgt_lang)
        if corpus.name != self.cfg.rare_holdout:
            return src, tgt
        return split_rare_between(src, tgt, self.cfg.src_lang, self.cfg.tgt_lang)[0]

    def val_splits(self, corpus: CorpusSpec) -> dict[str, tuple[list[str], list[str]]]:
        """The selection splits of a corpus: val, and the rare-word split when it is held out."""
        splits = {corpus.name: corpus.load("val", self.cfg.src_lang, self.cfg.tgt_lang)}
        if corpus.name == self.cfg.rare_holdout:
            splits[f"{corpus.name}-{RARE_SPLIT}"] = corpus.load(RARE_SPLIT, self.cfg.src_lang, self.cfg.tgt_lang)
        return splits

    def _pairs(self) -> tuple[PairDataset, list[int], dict[str, PairDataset], dict[str, list[str]]]:
        """Training pairs (corpora concatenated), each corpus's size, and validation pairs and
        references per corpus. With source noise, the training set holds len(SOURCE_VARIANTS)
        blocks: block v pairs variant v of every source with the same target."""
        cfg = self.cfg
        if not self.corpora:
            common = dict(vocab_size=self.tokenizer.vocab_size, min_len=cfg.toy_min_len, max_len=cfg.toy_max_len)
            train = toy_pairs(cfg.task, cfg.toy_train_size, seed=cfg.seed, **common)
            val = toy_pairs(cfg.task, cfg.toy_val_size, seed=cfg.seed + 10_000, **common)
            return PairDataset(train, cfg.max_len), [len(train)], {cfg.task: PairDataset(val, cfg.max_len)}, {}
        enc = self.tokenizer.encode_batch
        sources, targets, sizes = [], [], []
        val_sets, val_refs = {}, {}
        for corpus in self.corpora:
            src, tgt = self.train_pairs(corpus)
            sources += src
            targets += tgt
            sizes.append(len(src))
            for name, (va_src, va_tgt) in self.val_splits(corpus).items():
                val_sets[name] = PairDataset(list(zip(enc(va_src), enc(va_tgt))), cfg.max_len)
                val_refs[name] = va_tgt
        self.train_sources = sources[:]  # the English the truecaser learns from (no augmented pairs)
        self.train_targets = targets[:]
        self.copied_words = copied_words(sources, targets) if cfg.placeholders else set()
        if cfg.name_swap_copies or cfg.number_swap_copies:  # one more block, drawn with weight 1
            swapped = entity_swapped_pairs(sources, targets, cfg.name_swap_copies, cfg.number_swap_copies, cfg.seed)
            sources, targets = sources + swapped[0], targets + swapped[1]
            sizes.append(len(swapped[0]))
        if cfg.placeholders and cfg.placeholder_copies:  # one more block: entities as placeholders
            seed = cfg.seed if cfg.placeholder_numbering == "random" else None
            marked = placeholder_pairs(self.train_sources, targets[: len(self.train_sources)], cfg.placeholders, seed)
            sources += marked[0] * cfg.placeholder_copies
            targets += marked[1] * cfg.placeholder_copies
            sizes.append(len(marked[0]) * cfg.placeholder_copies)
        pairs = self._sampled_pairs(sources, targets)
        return PairDataset(pairs, cfg.max_len), sizes, val_sets, val_refs

    def _word_links(self) -> list[set[tuple[int, int]]]:
        """The (source word, target word) links of every corpus pair (not the augmented ones): eflomal's, made once
        on the main process and read back from the run directory (`word_links.training_links`)."""
        if not self.corpora:
            raise ValueError("a taught head (--align-layer) needs a translation corpus")
        english, german = ((self.train_sources, self.train_targets) if self.cfg.src_lang == "en"
                           else (self.train_targets, self.train_sources))
        if self.world > 1:  # the main process aligns; the others wait and read its file
            if self.is_main:
                training_links(self.run_dir, english, german)
            torch.distributed.barrier()
        links = training_links(self.run_dir, english, german)
        return links if self.cfg.src_lang == "en" else [{(d, e) for e, d in s} for s in links]

    def taught_alignment(self, batch: Batch, indices: list[int]) -> torch.Tensor:
        """(B, T, S) the taught head's target weights of a batch of training-set `indices`: for each output piece,
        the source pieces its word is linked to (`word_links.piece_alignment`); rows of pieces with no link, of
        augmented pairs and of padding are 0 (not taught)."""
        variants = len(source_variants("")) if self.noise.active else 1  # the training set's blocks (`_pairs`)
        n, pairs = len(self.train_set.pairs) // variants, len(self.train_sources)
        tok = self.tokenizer
        target = torch.zeros(batch.tgt_out.shape + batch.src.shape[1:2])  # (B, T, S)
        for b, k in enumerate(indices):
            variant, i = divmod(k, n)
            if i >= pairs:  # an entity-swapped or placeholder copy: its words are not the linked ones
                continue
            src_ids, tgt_ids = self.train_set.pairs[k]
            source = source_variants(self.train_sources[i])[variant] if self.noise.active else self.train_sources[i]
            weights = piece_alignment(tok.ids_to_tokens(src_ids), tok.ids_to_tokens(tgt_ids), aligner_words(source),
                                      aligner_words(self.train_targets[i]), self.word_links[i])
            if weights is not None:
                target[b, :len(tgt_ids), :len(src_ids)] = torch.from_numpy(weights)
        return target

    def _sampled_pairs(self, sources: list[str], targets: list[str]) -> list[tuple[list[int], list[int]]]:
        """The id pairs of the training set: each pair (and each source variant) with one segmentation,
        sampled under BPE-dropout. With BPE-dropout on, a resumed run reads back the saved ones."""
        cfg, path = self.cfg, self.run_dir / SAMPLED_IDS_FILE
        digest = hashlib.sha256("\n".join([*sources, *targets, str(self.noise.active)]).encode()).hexdigest()
        if cfg.bpe_dropout and path.is_file():  # like tokenizer.json: the run directory's own
            saved = torch.load(path)
            if saved.get("digest") == digest:
                log.info("BPE-dropout segmentations read back from %s", path)
                return _unflatten(saved)
            log.warning("%s holds another run's data; sampling anew", path)
        tokenizer = self.tokenizer.with_dropout(cfg.bpe_dropout) if cfg.bpe_dropout else self.tokenizer
        enc = partial(encode_marked, tokenizer, first_id=tokenizer.vocab_size) if cfg.placeholders else \
            tokenizer.encode_batch
        target_ids = enc(targets)
        if self.noise.active:
            forms = list(zip(*(source_variants(text) for text in sources)))  # one tuple per variant
        else:
            forms = [sources]
        pairs = [p for variant in forms for p in zip(enc(list(variant)), target_ids)]
        if cfg.bpe_dropout and self.is_main:
            tmp = path.with_suffix(".tmp")
            torch.save(_flatten(pairs) | {"digest": digest}, tmp)
            tmp.replace(path)  # whole or not at all, if the run is killed while writing
        return pairs

    def epoch_picks(self, epoch: int) -> list[int]:
        """The epoch's indices into the training set: the corpus mixture, then a source variant each."""
        n = sum(self.corpus_sizes)
        if len(self.corpus_sizes) == 1 and not self.noise.active:
            return list(range(n))
        weights = [c.weight for c in self.corpora] or [1.0]
        weights += [1.0] * (len(self.corpus_sizes) - len(weights))  # the entity-swap block
        picks = mixture_indices(self.corpus_sizes, weights, self.cfg.seed, epoch)
        if self.noise.active:
            variants = self.noise.variants(len(picks), self.cfg.seed, epoch)
            picks = [v * n + i for v, i in zip(variants, picks)]
        return picks

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        """This process's share of the epoch's batches (equal counts on every rank)."""
        picks = self.epoch_picks(epoch)
        lengths = self.train_set.lengths
        batches = token_batches([lengths[i] for i in picks], self.cfg.max_tokens, self.cfg.seed, epoch)
        batches = [[picks[j] for j in batch] for batch in batches]
        usable = len(batches) // (self.world * self.cfg.accum_steps) * self.world * self.cfg.accum_steps
        return batches[self.rank : usable : self.world]


def _flatten(pairs: list[tuple[list[int], list[int]]]) -> dict:
    """Id pairs as four int32 tensors (ids and lengths of each side): small and quick to save."""
    out = {"texts": len(pairs)}
    for side in (0, 1):
        out[f"len{side}"] = torch.tensor([len(p[side]) for p in pairs], dtype=torch.int32)
        out[f"ids{side}"] = torch.tensor([i for p in pairs for i in p[side]], dtype=torch.int32)
    return out


def _unflatten(saved: dict) -> list[tuple[list[int], list[int]]]:
    sides = []
    for side in (0, 1):
        ids, lengths = saved[f"ids{side}"].tolist(), saved[f"len{side}"].tolist()
        ends = list(accumulate(lengths))
        sides.append([ids[e - n:e] for e, n in zip(ends, lengths)])
    return list(zip(*sides))
