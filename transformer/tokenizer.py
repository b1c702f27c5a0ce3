"""Joint BPE tokenizer built on Hugging Face `tokenizers`.

Sentencepiece-style pieces: a word start is marked with "▁" (U+2581), so the
tokens read naturally in attention plots ("▁Mann", "▁fährt") and decoding is
exact: `decode(encode(x)) == x` for text with single spaces and NFC characters.
Characters never seen in training become `<unk>`.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from tokenizers import Encoding, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

PLACEHOLDER = "⟨{}⟩"  # the text of placeholder k (1-based; transformer.placeholders)
SPECIAL_TOKENS = ("<pad>", "<unk>", "<bos>", "<eos>")  # ids 0, 1, 2, 3, recorded in ModelConfig
UNK = SPECIAL_TOKENS[1]


def _blank_tokenizer() -> Tokenizer:
    tok = Tokenizer(models.BPE(unk_token=UNK))
    tok.normalizer = normalizers.Sequence(
        [normalizers.NFC(), normalizers.Replace(Regex(r"\s+"), " "), normalizers.Strip()]
    )
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True),
            # Punctuation and single digits as their own pieces keep merges about words.
            pre_tokenizers.Punctuation(behavior="isolated"),
            pre_tokenizers.Digits(individual_digits=True),
        ]
    )
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    return tok


def train_tokenizer(texts: Iterable[str], vocab_size: int = 8000, min_frequency: int = 2) -> Tokenizer:
    """Learn a BPE vocabulary (specials first, so their ids are fixed) from an iterable of sentences."""
    tok = _blank_tokenizer()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=list(SPECIAL_TOKENS), show_progress=False
    )
    tok.train_from_iterator(texts, trainer=trainer)
    for i, name in enumerate(SPECIAL_TOKENS):
        assert tok.token_to_id(name) == i, f"special token {name} did not get id {i}"
    return tok


class TextTokenizer:
    """Thin wrapper: text <-> ids, with the special ids the model uses."""

    def __init__(self, tokenizer: Tokenizer):
        tokenizer.add_special_tokens(list(SPECIAL_TOKENS))  # keeps their ids; makes decode skip them
        self.tokenizer = tokenizer
        self.pad_id, self.unk_id, self.bos_id, self.eos_id = (tokenizer.token_to_id(t) for t in SPECIAL_TOKENS)
        if None in (self.pad_id, self.unk_id, self.bos_id, self.eos_id):
            raise ValueError(f"tokenizer lacks one of the special tokens {SPECIAL_TOKENS}")
        self.placeholders = 0  # ids vocab_size .. vocab_size + placeholders - 1 are ⟨1⟩, ⟨2⟩, ... (placeholders.py)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "TextTokenizer":
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"tokenizer file not found: {path}")
        try:
            return cls(Tokenizer.from_file(str(path)))
        except Exception as err:  # tokenizers raises a bare Exception on bad JSON
            raise ValueError(f"{path}: not a valid tokenizer file ({err})") from err

    def save(self, path: str | os.PathLike) -> None:
        self.tokenizer.save(str(path))

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self.encodings(texts)]

    def encodings(self, texts: list[str]) -> list[Encoding]:
        """The `tokenizers` encodings: ids, token strings and each token's character offsets."""
        return self.tokenizer.encode_batch(texts, add_special_tokens=False)

    def with_dropout(self, p: float) -> "TextTokenizer":
        """A copy that drops each BPE merge with probability p (BPE-dropout, for training data only)."""
        sampled = Tokenizer.from_str(self.tokenizer.to_str())
        sampled.model.dropout = p
        return TextTokenizer(sampled)

    def decode(self, ids: Iterable[int], entities: Sequence[str] = ()) -> str:
        """Ids -> text; special tokens are dropped, placeholder k becomes `entities[k]` as a word (dropped
        when there is no such entity), with no space after an opening bracket or quote ('„⟨1⟩“' -> '„Ayo“')."""
        ids = list(ids)
        first = self.vocab_size
        if not any(i >= first for i in ids):
            return self.tokenizer.decode(ids, skip_special_tokens=True)
        specials = {self.pad_id, self.unk_id, self.bos_id, self.eos_id}
        tokens: list[str] = []
        for i in ids:
            if i in specials:
                continue
            if i < first:
                tokens.append(self.tokenizer.id_to_token(i))
            elif i - first < len(entities):
                tokens.append(("" if tokens and _opens(tokens) else "▁") + entities[i - first])
        return self.tokenizer.decoder.decode(tokens)

    def decode_batch(self, batch: list[list[int]]) -> list[str]:
        return self.tokenizer.decode_batch(batch, skip_special_tokens=True)

    def id_to_token(self, i: int) -> str:
        k = i - self.vocab_size
        return PLACEHOLDER.format(k + 1) if 0 <= k < self.placeholders else self.tokenizer.id_to_token(i)

    def ids_to_tokens(self, ids: Iterable[int]) -> list[str]:
        return [self.id_to_token(i) for i in ids]


_OPENING = "„‚«‹»([{¿¡"  # » opens in German quotation style »...«
_STRAIGHT = "\"'"  # open when they occur an odd number of times so far


def _opens(tokens: list[str]) -> bool:
    """Whether the text so far ends with an opening bracket or quote, so that a word goes right after it."""
    last = tokens[-1]
    if last.endswith(tuple(_OPENING)) and last.strip("▁")[-1:] in _OPENING:
        return True
    if last.strip("▁") in _STRAIGHT:
        return "".join(tokens).count(last.strip("▁")) % 2 == 1
    return False


def toy_tokenizer(n_symbols: int = 26) -> Tokenizer:
    """Word-level tokenizer for the toy tasks: specials, then the letters "a", "b", ... as "▁a", "▁b", ...

    Users type space-separated letters ("h e l l o"); ids 4.. are the symbols,
    matching `data.toy_pairs(first_id=4)`.
    """
    if not 1 <= n_symbols <= 26:
        raise ValueError(f"n_symbols must be in 1..26, got {n_symbols}")
    vocab = {name: i for i, name in enumerate(SPECIAL_TOKENS)}
    vocab.update({"▁" + chr(ord("a") + i): len(SPECIAL_TOKENS) + i for i in range(n_symbols)})
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    tok.normalizer = normalizers.Sequence(
        [normalizers.NFC(), normalizers.Lowercase(), normalizers.Replace(Regex(r"\s+"), " "), normalizers.Strip()]
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    return tok
