"""Cross-attention as word alignment, scored against human gold alignments by the alignment error rate.

The first thing a class is told about cross-attention is that a German word's row shows the English word it
comes from. This module measures that claim the way the alignment literature does: each gold German sentence
is forced through a checkpoint (`Translator.force`), every cross-attention map is read as word links, and the
links are scored against hand-made sure (S) and possible (P) links (S ⊆ P) by Och & Ney's (2003) alignment
error rate, AER = 1 - (|A∩S| + |A∩P|) / (|A| + |S|), summed over the sentences (lower is better).

Reading a map as links: the rows of a German word's subword pieces are averaged, the columns of an English
word's pieces summed, <bos> and <eos> left out, and each German word is linked to the English word its row
weighs most. Two read-outs of the rows: "predicting", the row whose output is the word's piece (what the map
shows by default), and "shifted", the row where that piece is the decoder's input, one step later (Chen et
al. 2020: the decoder has then seen the word it aligns). Every head, each layer's mean, and the mean of all
heads are scored with both; the read-out with the lowest AER on the gold set's dev part is reported on its
test part. A statistical aligner's scores on the same gold pairs (`--anchor`: bench/alignment_anchor.py's
result, eflomal's grow-diag-final-and links, read when present) go into the report under `anchor`, so that the
checkpoint's alignment.json carries everything the app says about agreement.

    python -m transformer.training.alignment --checkpoint checkpoints/en-de [--gold tests/data/alignment/gold.tsv]
        [--json checkpoints/en-de/alignment.json] [--anchor bench/results/alignment_anchor.json]
    python -m transformer.training.alignment --pharaoh EN DE LINKS   # tokenized files, English index first

Gold files: tests/data/alignment/README.md (the format, who wrote them, the linking guidelines).
"""
from __future__ import annotations

import argparse
import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from transformer.tokenizer import PLACEHOLDER, SPECIAL_TOKENS, UNK

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_GOLD = ROOT / "tests" / "data" / "alignment" / "gold.tsv"
DEFAULT_ANCHOR = ROOT / "bench" / "results" / "alignment_anchor.json"  # bench/alignment_anchor.py: eflomal
ANCHOR_LINKS = "grow_diag_final_and"  # the anchor's links the report keeps: the usual symmetrisation
ROWS = ("predicting", "shifted")
SPLITS = ("dev", "test")
# A word: letters and digits, with apostrophes and hyphens inside it ("don't", "father's", "T-shirt");
# every other character that is not a space is a word of its own (punctuation split off).
WORD = re.compile(r"\w+(?:['’-]\w+)*|[^\w\s]")
LINK = re.compile(r"^(\d+)([-p])(\d+)$")
METASPACE = "▁"  # the tokenizer's word-start mark
_PLACEHOLDER_TOKEN = re.compile("^" + re.escape(PLACEHOLDER).replace(r"\{\}", r"(\d+)") + "$")

Link = tuple[int, int]  # (English word index, German word index)


def words(text: str) -> list[str]:
    """The words of `text` as the gold set counts them: split on spaces, punctuation split off."""
    return WORD.findall(text)


def parse_links(text: str) -> tuple[frozenset[Link], frozenset[Link]]:
    """(sure, possible) of a Pharaoh line: `i-j` sure, `ipj` possible; possible includes every sure link."""
    sure, possible = set(), set()
    for item in text.split():
        m = LINK.match(item)
        if m is None:
            raise ValueError(f"not a link: {item!r} (expected i-j or ipj)")
        link = (int(m.group(1)), int(m.group(3)))
        possible.add(link)
        if m.group(2) == "-":
            sure.add(link)
    return frozenset(sure), frozenset(possible)


def format_links(sure: Iterable[Link], possible: Iterable[Link]) -> str:
    """The Pharaoh line of (sure, possible): each link once, sure as `i-j`, possible-only as `ipj`, sorted."""
    sure = set(sure)
    return " ".join(f"{i}-{j}" if (i, j) in sure else f"{i}p{j}" for i, j in sorted(sure | set(possible)))


@dataclass(frozen=True)
class GoldPair:
    """One gold sentence pair: the texts, their words, and the links between the words."""

    english: str
    german: str
    en_words: tuple[str, ...]
    de_words: tuple[str, ...]
    sure: frozenset[Link]
    possible: frozenset[Link]  # ⊇ sure
    split: str = "test"

    def __post_init__(self):
        if not self.sure <= self.possible:
            raise ValueError(f"sure links must be possible links too: {self.english!r}")
        bad = [(i, j) for i, j in self.possible if not (0 <= i < len(self.en_words) and 0 <= j < len(self.de_words))]
        if bad:
            raise ValueError(f"links out of range {sorted(bad)} in {self.english!r} / {self.german!r}")
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {self.split!r}")


def read_gold(path: str | Path = DEFAULT_GOLD) -> list[GoldPair]:
    """The pairs of a gold TSV: split, English, German, links (`#` starts a comment); words by `words`."""
    pairs = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 4:
            raise ValueError(f"{path}:{number}: expected split, English, German, links separated by tabs")
        split, english, german, links = fields
        sure, possible = parse_links(links)
        pairs.append(GoldPair(english, german, tuple(words(english)), tuple(words(german)), sure, possible, split))
    return pairs


def detokenize(tokens: Sequence[str]) -> str:
    """Tokens joined as written text: no space before closing punctuation (what the model reads)."""
    return re.sub(r" ([.,?!:;)\]])", r"\1", re.sub(r"([(\[]) ", r"\1", " ".join(tokens)))


def read_pharaoh(english: str | Path, german: str | Path, links: str | Path, dev: int = 0) -> list[GoldPair]:
    """Pairs from three line-aligned files: tokenized English, tokenized German, and Pharaoh links with the
    English index first (each line may start with an id and a tab, as in SimAlign's samples). The first `dev`
    pairs are the dev part."""
    def lines(path: str | Path) -> list[str]:
        return [line.split("\t", 1)[-1].strip() for line in Path(path).read_text(encoding="utf-8").splitlines()
                if line.strip()]
    en, de, ln = lines(english), lines(german), lines(links)
    if not len(en) == len(de) == len(ln):
        raise ValueError(f"{len(en)} English, {len(de)} German and {len(ln)} link lines")
    pairs = []
    for k, (e, d, a) in enumerate(zip(en, de, ln)):
        sure, possible = parse_links(a)
        pairs.append(GoldPair(detokenize(e.split()), detokenize(d.split()), tuple(e.split()), tuple(d.split()),
                              sure, possible, "dev" if k < dev else "test"))
    return pairs


@dataclass
class AERCounts:
    """The four sums of the alignment error rate over any number of sentences."""

    predicted: int = 0  # |A|
    sure: int = 0  # |S|
    hit_sure: int = 0  # |A ∩ S|
    hit_possible: int = 0  # |A ∩ P|

    def add(self, predicted: Iterable[Link], sure: Iterable[Link], possible: Iterable[Link]) -> None:
        predicted, sure, possible = set(predicted), set(sure), set(possible)
        self.predicted += len(predicted)
        self.sure += len(sure)
        self.hit_sure += len(predicted & sure)
        self.hit_possible += len(predicted & possible)

    @property
    def aer(self) -> float:
        total = self.predicted + self.sure
        return 1.0 - (self.hit_sure + self.hit_possible) / total if total else 0.0

    @property
    def precision(self) -> float:
        """Of the predicted links, the share a person drew (as sure or possible)."""
        return self.hit_possible / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        """Of the sure links a person drew, the share predicted."""
        return self.hit_sure / self.sure if self.sure else 0.0

    def summary(self) -> dict[str, float]:
        return {"aer": round(100 * self.aer, 2), "precision": round(100 * self.precision, 2),
                "recall": round(100 * self.recall, 2)}


def aer(predicted: Iterable[Link], sure: Iterable[Link], possible: Iterable[Link]) -> float:
    """The alignment error rate of one sentence's links (possible must include sure)."""
    counts = AERCounts()
    counts.add(predicted, sure, possible)
    return counts.aer


def _piece_text(piece: str, entities: Sequence[str]) -> str | None:
    """The characters a model piece spells, spaces left out; None for <unk> (one character of any kind)."""
    if piece == UNK:
        return None
    text = piece.replace(METASPACE, "")
    m = _PLACEHOLDER_TOKEN.match(text)
    if m is not None and 0 < int(m.group(1)) <= len(entities):
        return "".join(entities[int(m.group(1)) - 1].split())
    return text


def piece_words(pieces: Sequence[str], word_list: Sequence[str], entities: Sequence[str] = ()) -> np.ndarray:
    """Which words each model piece spells: (n_pieces, n_words) of 0/1; special tokens (<bos>, <eos>, <pad>)
    spell none. Pieces and words are matched character by character, spaces left out and case ignored (the
    model may have recased the input); a placeholder piece ⟨k⟩ spells `entities[k-1]`, which may be several
    words. ValueError where the pieces do not spell the words."""
    owner = [w for w, word in enumerate(word_list) for _ in word]  # word of each character
    chars = "".join(word_list)
    incidence = np.zeros((len(pieces), len(word_list)), dtype=np.float64)
    pos = 0
    for p, piece in enumerate(pieces):
        if piece in SPECIAL_TOKENS and piece != UNK:
            continue
        text = _piece_text(piece, entities)
        n = 1 if text is None else len(text)
        got = chars[pos:pos + n]
        if len(got) < n or (text is not None and got.lower() != text.lower()):
            raise ValueError(f"pieces {list(pieces)} do not spell the words {list(word_list)} (at {piece!r})")
        for w in set(owner[pos:pos + n]):
            incidence[p, w] = 1.0
        pos += n
    if pos != len(chars):
        raise ValueError(f"pieces {list(pieces)} spell only {chars[:pos]!r} of the words {list(word_list)}")
    return incidence


def word_maps(cross: np.ndarray, src_incidence: np.ndarray, tgt_incidence: np.ndarray, rows: str) -> np.ndarray:
    """Word-level maps of every head: (L, H, W_de, W_en) from cross-attention (L, H, T, S).

    `src_incidence` (S, W_en) and `tgt_incidence` (T, W_de) say which words each source piece and each output
    piece spells (`piece_words`; specials spell none). A German word's row is the mean of its pieces' rows:
    the rows that predict them (`rows="predicting"`), or the rows one step later, where each piece is the
    decoder's input (`"shifted"`); an English word's column is the sum of its pieces' columns."""
    if rows not in ROWS:
        raise ValueError(f"rows must be one of {ROWS}, got {rows!r}")
    counts = tgt_incidence.sum(0)  # (W_de,) pieces per German word
    mean = (tgt_incidence / np.maximum(counts, 1)).T  # (W_de, T)
    if rows == "shifted":
        if mean[:, -1].any():
            raise ValueError("the shifted read-out needs a last output token that is no word (<eos>)")
        mean = np.concatenate([np.zeros_like(mean[:, :1]), mean[:, :-1]], axis=1)  # piece t read at row t + 1
    return np.einsum("wt,lhts,se->lhwe", mean, cross.astype(np.float64), src_incidence)


def links_from(word_map: np.ndarray) -> set[Link]:
    """(English, German) links of one word map (W_de, W_en): each German word with any weight to its argmax."""
    return {(int(e), d) for d, e in enumerate(word_map.argmax(-1)) if word_map[d].any()}


@dataclass(frozen=True)
class ReadOut:
    """One way to read cross-attention as links: a head, a layer's mean or the mean of all, and which rows."""

    kind: str  # "head", "layer" or "all"
    layer: int | None  # 0-based; None for "all"
    head: int | None  # 0-based; None unless "head"
    rows: str  # "predicting" or "shifted"

    @property
    def name(self) -> str:
        where = {"head": f"L{(self.layer or 0) + 1} H{(self.head or 0) + 1}",
                 "layer": f"L{(self.layer or 0) + 1} mean", "all": "mean of all"}[self.kind]
        return f"{where}, {self.rows}"

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "layer": self.layer, "head": self.head, "rows": self.rows}


def read_outs(layers: int, heads: int) -> list[ReadOut]:
    """Every read-out, in the order of `stacked`, for each row choice: heads, layer means, mean of all."""
    out = []
    for rows in ROWS:
        out += [ReadOut("head", l, h, rows) for l in range(layers) for h in range(heads)]
        out += [ReadOut("layer", l, None, rows) for l in range(layers)]
        out.append(ReadOut("all", None, None, rows))
    return out


def stacked(maps: np.ndarray) -> np.ndarray:
    """One row choice's word maps of every read-out: (L·H + L + 1, W_de, W_en) from (L, H, W_de, W_en)."""
    L, H = maps.shape[:2]
    return np.concatenate([maps.reshape(L * H, *maps.shape[2:]), maps.mean(1), maps.mean((0, 1))[None]])


@dataclass
class Scores:
    """AER counts of every read-out on each split."""

    read_outs: list[ReadOut]
    counts: dict[str, list[AERCounts]] = field(default_factory=dict)  # split -> one per read-out
    pairs: dict[str, int] = field(default_factory=dict)

    def add(self, split: str, links: list[set[Link]], pair: GoldPair) -> None:
        counts = self.counts.setdefault(split, [AERCounts() for _ in self.read_outs])
        self.pairs[split] = self.pairs.get(split, 0) + 1
        for c, predicted in zip(counts, links):
            c.add(predicted, pair.sure, pair.possible)

    def best(self, split: str = "dev") -> int:
        """Index of the read-out with the lowest AER on `split` (the first of equals)."""
        return min(range(len(self.read_outs)), key=lambda k: self.counts[split][k].aer)


def sentence_links(translator, pair: GoldPair, reads_german: bool = False) -> list[set[Link]]:
    """Links of every read-out (`read_outs` order) for one gold pair forced through `translator`. A model that
    reads German (`reads_german`) is forced the other way, each English word linked to its German word."""
    source, target = (pair.german, pair.english) if reads_german else (pair.english, pair.german)
    source_words, target_words = (pair.de_words, pair.en_words) if reads_german else (pair.en_words, pair.de_words)
    result = translator.force(source, target)
    att = result.attention
    src = piece_words(att.src_tokens, source_words, result.entities)  # (S, W_source)
    tgt = piece_words(att.tgt_out_tokens, target_words, result.entities)  # (T, W_target)
    links = []
    for rows in ROWS:
        links += [links_from(m) for m in stacked(word_maps(att.cross, src, tgt, rows))]
    return [{(e, d) for d, e in found} for found in links] if reads_german else links


def score(translator, pairs: Sequence[GoldPair], reads_german: bool = False) -> Scores:
    """Every read-out's AER counts over `pairs`, per split."""
    cfg = translator.model.config
    scores = Scores(read_outs(cfg.n_decoder_layers, cfg.n_heads))
    for k, pair in enumerate(pairs):
        scores.add(pair.split, sentence_links(translator, pair, reads_german), pair)
        if (k + 1) % 50 == 0:
            log.info("forced %d of %d gold pairs", k + 1, len(pairs))
    return scores


def default_cross_head(checkpoint: str | Path) -> tuple[int, int] | None:
    """(layer, head), 0-based, of the head the app's cross-attention view opens on: the head tagged as an
    alignment head with the largest alignment share in the checkpoint's head_roles.json (the rule of
    `explorer.core.checkpoint_heads.alignment_head`); None without one."""
    path = Path(checkpoint) / "head_roles.json"
    if not path.is_file():
        return None
    cross = json.loads(path.read_text(encoding="utf-8"))["kinds"]["cross"]
    shares = cross["shares"].get("align")
    tagged = [(shares[l][h], l, h) for l, row in enumerate(cross["tags"]) for h, t in enumerate(row) if "align" in t]
    return max(tagged)[1:] if shares is not None and tagged else None


def taught_head(recipe: dict[str, Any]) -> dict[str, Any] | None:
    """The head a checkpoint's recipe taught to align (`--align-layer`, `--align-head`; word_links.py), as
    {"layer", "head"} (0-based) and what it was taught with; None when it taught none."""
    if not recipe.get("align_layer"):
        return None
    return {"layer": recipe["align_layer"] - 1, "head": recipe["align_head"] - 1, "rows": "predicting",
            "taught_with": "eflomal's grow-diag-final-and word links over the training pairs, on the model's pieces "
                           f"(alignment loss weight {recipe.get('align_weight')})",
            "fine_tuned_from": recipe.get("init_from") or None}


def report(scores: Scores, opens_on: tuple[int, int] | None = None,
           taught: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON report: every read-out on each split, the best on dev (scored on test), the mean of all, the
    head the app opens on, and the head the checkpoint was taught to align (`taught_head`), read as predicting."""
    splits = [s for s in SPLITS if s in scores.counts]

    def entry(k: int) -> dict[str, Any]:
        return {**scores.read_outs[k].as_dict(), **{s: scores.counts[s][k].summary() for s in splits}}

    out: dict[str, Any] = {"pairs": dict(scores.pairs),
                           "read_outs": [entry(k) for k in range(len(scores.read_outs))]}
    if "dev" in scores.counts:
        out["best"] = {**entry(scores.best("dev")), "chosen_on": "dev"}
    out["mean_of_all"] = [entry(k) for k, r in enumerate(scores.read_outs) if r.kind == "all"]
    if taught is not None:
        out["taught"] = {**taught, **next(entry(k) for k, r in enumerate(scores.read_outs) if r.kind == "head" and (
            r.layer, r.head, r.rows) == (taught["layer"], taught["head"], taught["rows"]))}
    if opens_on is not None:
        out["opens_on"] = [entry(k) for k, r in enumerate(scores.read_outs)
                           if r.kind == "head" and (r.layer, r.head) == tuple(opens_on)]
    return out


def read_anchor(path: str | Path) -> tuple[dict[str, int], dict[str, Any]]:
    """(the gold pairs it was run on, the report's `anchor`) of bench/alignment_anchor.py's JSON at `path`: eflomal's
    grow-diag-final-and AER, precision and recall on each split, in %. ValueError when it is not such a result."""
    try:
        anchor = json.loads(Path(path).read_text(encoding="utf-8"))
        links = anchor["aer"][ANCHOR_LINKS]
        splits = {s: {k: float(links[s][k]) for k in ("aer", "precision", "recall")} for s in SPLITS if s in links}
        gold_pairs = {s: int(n) for s, n in anchor["gold_pairs"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{path} is not a result of bench/alignment_anchor.py ({e!r})") from e
    shown = Path(path).resolve()
    return gold_pairs, {"aligner": "eflomal", "links": ANCHOR_LINKS, "date": anchor.get("date"),
                        "from": str(shown.relative_to(ROOT)) if shown.is_relative_to(ROOT) else str(path), **splits}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default="checkpoints/en-de")
    p.add_argument("--gold", default=str(DEFAULT_GOLD), help="gold TSV: split, English, German, links")
    p.add_argument("--pharaoh", nargs=3, metavar=("EN", "DE", "LINKS"),
                   help="tokenized English, tokenized German and links (English index first) instead of --gold")
    p.add_argument("--dev", type=int, default=0, help="with --pharaoh: the first DEV pairs are the dev part")
    p.add_argument("--limit", type=int, default=None, help="only the first LIMIT pairs (a quick look)")
    p.add_argument("--json", default=None, help="write the report here")
    p.add_argument("--anchor", default=None,
                   help="a statistical aligner's scores on the same gold pairs (bench/alignment_anchor.py --json), "
                        f"kept in the report as `anchor`; default {DEFAULT_ANCHOR.relative_to(ROOT)} when present")
    args = p.parse_args(argv)
    anchor_path = args.anchor or (DEFAULT_ANCHOR if DEFAULT_ANCHOR.is_file() else None)
    try:
        anchor = read_anchor(anchor_path) if anchor_path is not None else None
    except ValueError as e:
        p.error(f"--anchor: {e}")
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    from transformer.hub import checkpoint_languages, resolve_checkpoint, train_config  # the model when asked for
    from transformer.translator import load_pretrained

    pairs = read_pharaoh(*args.pharaoh, dev=args.dev) if args.pharaoh else read_gold(args.gold)
    pairs = pairs[:args.limit] if args.limit else pairs
    translator = load_pretrained(args.checkpoint)
    reads_german = checkpoint_languages(resolve_checkpoint(args.checkpoint))[0] == "de"
    scores = score(translator, pairs, reads_german)
    source, target = ("German", "English") if reads_german else ("English", "German")
    result = {"checkpoint": args.checkpoint, "gold": " ".join(args.pharaoh) if args.pharaoh else args.gold,
              "method": f"forced gold {target}; rows of a word's pieces averaged, columns summed, specials left "
                        f"out, each {target} word linked to its argmax {source} word; AER per Och & Ney 2003, in %",
              **report(scores, default_cross_head(args.checkpoint),
                       taught_head(train_config(resolve_checkpoint(args.checkpoint))))}
    if anchor is not None and anchor[0] == result["pairs"]:
        result["anchor"] = anchor[1]
    elif anchor is not None:  # other sentences: its scores say nothing beside these
        log.warning("%s was run on other gold pairs (%s, not %s): no anchor", anchor_path, anchor[0], result["pairs"])
    for key in ("taught", "opens_on", "mean_of_all"):
        for e in ([result[key]] if key == "taught" else result[key]) if key in result else []:
            log.info("%-10s %-26s %s", key, e["name"], {s: e[s]["aer"] for s in SPLITS if s in e})
    if "best" in result:
        b = result["best"]
        log.info("best on dev: %s (dev AER %.1f, test AER %s)", b["name"], b["dev"]["aer"],
                 b.get("test", {}).get("aer"))
    if "anchor" in result:
        log.info("anchor: %s %s", result["anchor"]["aligner"], {s: result["anchor"][s]["aer"] for s in SPLITS
                                                                if s in result["anchor"]})
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        log.info("wrote %s", args.json)
    return result


if __name__ == "__main__":
    main()
