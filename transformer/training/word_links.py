"""Word links of the training pairs, and the alignment one cross-attention head is taught from them.

A taught head (Garg et al. 2019, "Jointly Learning to Align and Translate with Transformer Models"): beside the
translation loss, one cross-attention head of one decoder layer learns to put its weight, in the row that predicts
an output piece, on the source pieces a statistical aligner links to that piece's word. The links come from
eflomal (Östling & Tiedemann 2016), run without supervision over the training pairs in both directions and
symmetrised by grow-diag-final-and, on the words the gold set counts (`alignment.words`), lower-cased. A word
link links every piece of the one word to every piece of the other; each output piece's row is then spread
evenly over the source pieces it is linked to (a piece linked to nothing is not taught).

    links = eflomal_links(english_sentences, german_sentences)     # one set of (English, German) links per pair
    target = piece_alignment(src_pieces, tgt_pieces, src_words, tgt_words, links)   # (T, S), rows sum to 1 or 0

eflomal is installed with `pip install -r requirements-align.txt`; nothing else here needs it.
"""
from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from .alignment import Link, piece_words, words

log = logging.getLogger(__name__)

NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))
LINKS_FILE = "word_links.txt"  # in the run directory: the links a resumed run reads back (eflomal is sampled)


def aligner_words(text: str) -> list[str]:
    """A sentence as the aligner reads it: the gold set's words, lower-cased."""
    return [w.lower() for w in words(text)]


def grow_diag_final_and(forward: set[Link], reverse: set[Link]) -> set[Link]:
    """Koehn et al.'s (2003) symmetrisation: the intersection, grown into the union through neighbouring
    links (diagonals too) that align a word not yet aligned, then any union link of two unaligned words."""
    union, links = forward | reverse, forward & reverse
    en, de = {i for i, _ in links}, {j for _, j in links}
    grown = True
    while grown:
        grown = False
        for i, j in sorted(links):
            for di, dj in NEIGHBOURS:
                n = (i + di, j + dj)
                if n in union and n not in links and (n[0] not in en or n[1] not in de):
                    links.add(n)
                    en.add(n[0])
                    de.add(n[1])
                    grown = True
    for direction in (forward, reverse):
        for i, j in sorted(direction):
            if (i, j) not in links and i not in en and j not in de:
                links.add((i, j))
                en.add(i)
                de.add(j)
    return links


def parse_pharaoh(line: str) -> set[Link]:
    """`0-0 1-2 ...` -> {(0, 0), (1, 2), ...}."""
    return {(int(i), int(j)) for i, j in (link.split("-") for link in line.split())}


def format_pharaoh(links: Iterable[Link]) -> str:
    return " ".join(f"{i}-{j}" for i, j in sorted(links))


def run_eflomal(english: Sequence[str], german: Sequence[str]) -> tuple[list[set[Link]], list[set[Link]]]:
    """eflomal's forward and reverse links (English index first) of line pairs of space-separated words. eflomal
    samples without a seed of ours: two runs may differ, which is why a run keeps its links (`training_links`)."""
    try:
        import eflomal
    except ImportError as e:
        raise ImportError("teaching a head needs eflomal's links: pip install -r requirements-align.txt") from e
    with tempfile.TemporaryDirectory() as tmp:
        src, trg, fwd, rev = (Path(tmp) / name for name in ("en.txt", "de.txt", "fwd.links", "rev.links"))
        src.write_text("\n".join(english) + "\n", encoding="utf-8")
        trg.write_text("\n".join(german) + "\n", encoding="utf-8")
        aligner = eflomal.Aligner()
        with open(src, encoding="utf-8") as s, open(trg, encoding="utf-8") as t:
            aligner.align(s, t, links_filename_fwd=str(fwd), links_filename_rev=str(rev), quiet=True)

        def read(path: Path) -> list[set[Link]]:
            return [parse_pharaoh(line) for line in path.read_text(encoding="utf-8").split("\n")[:len(english)]]

        return read(fwd), read(rev)


def eflomal_links(english: Sequence[str], german: Sequence[str]) -> list[set[Link]]:
    """grow-diag-final-and links of every (English, German) sentence pair, on `aligner_words`' indices."""
    en = [" ".join(aligner_words(t)) for t in english]
    de = [" ".join(aligner_words(t)) for t in german]
    forward, reverse = run_eflomal(en, de)
    return [grow_diag_final_and(f, r) for f, r in zip(forward, reverse)]


def links_digest(english: Sequence[str], german: Sequence[str]) -> str:
    """What a links file was made from: a resumed run reads it back only for the same sentences."""
    return hashlib.sha256("\n".join([*english, "\t", *german]).encode()).hexdigest()


def save_links(path: Path, links: Sequence[set[Link]], digest: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"# {digest}\n" + "".join(format_pharaoh(s) + "\n" for s in links), encoding="utf-8")
    tmp.replace(path)  # whole or not at all


def read_links(path: Path, digest: str) -> list[set[Link]] | None:
    """The links saved at `path` for these sentences, else None."""
    if not path.is_file():
        return None
    head, *lines = path.read_text(encoding="utf-8").split("\n")
    if head != f"# {digest}":
        log.warning("%s holds links of other sentences; aligning anew", path)
        return None
    return [parse_pharaoh(line) for line in lines[:-1]]


def training_links(run_dir: Path, english: Sequence[str], german: Sequence[str]) -> list[set[Link]]:
    """The word links of every training pair: read back from RUN_DIR/word_links.txt, else eflomal's (saved there)."""
    path, digest = run_dir / LINKS_FILE, links_digest(english, german)
    links = read_links(path, digest)
    if links is None:
        log.info("eflomal: aligning %d training pairs (both directions, grow-diag-final-and)", len(english))
        links = eflomal_links(english, german)
        save_links(path, links, digest)
    return links


def piece_alignment(src_pieces: Sequence[str], tgt_pieces: Sequence[str], src_words: Sequence[str],
                    tgt_words: Sequence[str], links: Iterable[Link]) -> np.ndarray | None:
    """(T, S) taught weights: row t spreads 1 evenly over the source pieces linked to output piece t's word, or is
    all 0 where that word has no link. `links` are (source word, target word) on these word lists; a link to a word
    past either list (a source noised without its final punctuation) is dropped. None where the pieces do not
    spell the words (a pair whose entities were swapped or replaced)."""
    try:
        src = piece_words(src_pieces, src_words)  # (S, W_src)
        tgt = piece_words(tgt_pieces, tgt_words)  # (T, W_tgt)
    except ValueError:
        return None
    linked = np.zeros((len(src_words), len(tgt_words)))
    for i, j in links:
        if i < len(src_words) and j < len(tgt_words):
            linked[i, j] = 1.0
    counts = (tgt @ linked.T @ src.T > 0).astype(np.float32)  # (T, S): piece t linked to piece s
    return counts / np.maximum(counts.sum(1, keepdims=True), 1)
