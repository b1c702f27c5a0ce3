"""What does a head do? Role detectors over attention maps, each measured as a share over query rows.

A head gets a role when its share passes the role's threshold (`THRESHOLDS`); the shares are kept
beside the tags, so that a head just below a threshold can be seen too.

* **prev / next** (positional, Voita et al., 2019): the row's largest weight is on the key one position
  before (after) the query; a head is positional when that holds for at least 90 % of its rows.
  Self-attention only (next: encoder only, the decoder cannot see ahead). **self**, by the same rule:
  the largest weight on the query's own position.
* **rare** (rare-word head, Voita et al.): the row's largest weight is on the rarest token among the keys
  it can see (fewest occurrences in the training sample; specials and punctuation are not candidates);
  rows with fewer than two candidates are not counted.
* **sink** (separator / sink head): the mean weight a row puts on <bos>/<eos> and punctuation keys; "most
  weight" means at least half.
* **align** (cross-attention alignment head): the row's largest weight is on the source token that IBM
  Model 1 (`aligner.IBM1`, trained on the training sample) aligns with the token this row predicts;
  rows whose target token the aligner leaves to NULL are not counted.

Rows: the encoder's non-special source tokens; the decoder's rows after <bos>; cross-attention rows
whose predicted token is not <eos>. Pure numpy: maps `(L, H, Q, K)` and tokens in, counts out.
"""
from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

SPECIALS = ("<bos>", "<eos>", "<pad>", "<unk>")
ROLES = {"encoder": ("prev", "next", "self", "rare", "sink"), "decoder": ("prev", "self", "rare", "sink"),
         "cross": ("align", "rare", "sink")}
THRESHOLDS = {"prev": 0.9, "next": 0.9, "self": 0.9, "rare": 0.5, "sink": 0.5, "align": 0.5}
ROLE_NAMES = {"prev": "previous token", "next": "next token", "self": "same token", "rare": "rare word",
              "sink": "sink (<eos>/punct.)", "align": "alignment"}


def is_punctuation(token: str) -> bool:
    text = token.replace("\u2581", "")
    return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)


def is_sink(token: str) -> bool:
    return token in SPECIALS or is_punctuation(token)


def argmax_hits(w: np.ndarray, rows: Sequence[int], targets: Sequence[Sequence[int]]) -> np.ndarray:
    """(L, H) count of `rows` whose largest weight (over the keys of `w` (L, H, Q, K)) is in that row's targets."""
    hits = np.zeros(w.shape[:2])
    if not len(rows):
        return hits
    top = w[:, :, list(rows), :].argmax(-1)  # (L, H, R)
    for r, keys in enumerate(targets):
        hits += np.isin(top[:, :, r], list(keys))
    return hits


def mass_on(w: np.ndarray, rows: Sequence[int], keys: Sequence[int]) -> np.ndarray:
    """(L, H) summed over `rows` of the weight each row puts on `keys`."""
    if not len(rows) or not len(keys):
        return np.zeros(w.shape[:2])
    return w[:, :, list(rows), :][..., list(keys)].sum(axis=(-1, -2))


@dataclass
class RoleCounts:
    """Per kind and role: hits `(L, H)` summed over sentences and the number of rows counted."""

    hits: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    rows: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, kind: str, role: str, hits: np.ndarray, rows: int) -> None:
        kind_hits = self.hits.setdefault(kind, {})
        kind_hits[role] = kind_hits.get(role, 0) + hits
        kind_rows = self.rows.setdefault(kind, {})
        kind_rows[role] = kind_rows.get(role, 0) + rows

    def shares(self, kind: str) -> dict[str, np.ndarray]:
        """Per role, the share `(L, H)` of counted rows where the head had it (NaN where no row was counted)."""
        return {role: (self.hits[kind][role] / self.rows[kind][role] if self.rows[kind][role]
                       else np.full(np.shape(self.hits[kind][role]), np.nan)) for role in self.hits.get(kind, {})}


def rarest(candidates: Sequence[int], ids: Sequence[int], frequency: np.ndarray) -> list[int]:
    """The positions among `candidates` whose token is rarest (ties: all of them)."""
    counts = [frequency[ids[j]] for j in candidates]
    low = min(counts)
    return [j for j, c in zip(candidates, counts) if c == low]


def self_attention_roles(counts: RoleCounts, kind: str, w: np.ndarray, tokens: Sequence[str], ids: Sequence[int],
                         rows: Sequence[int], frequency: np.ndarray) -> None:
    """prev, next (encoder), self, rare and sink of one sentence's self-attention `w` (L, H, T, T)."""
    T = w.shape[-1]
    causal = kind == "decoder"
    prev = [i for i in rows if i >= 1]
    counts.add(kind, "prev", argmax_hits(w, prev, [[i - 1] for i in prev]), len(prev))
    if not causal:
        nxt = [i for i in rows if i + 1 < T]
        counts.add(kind, "next", argmax_hits(w, nxt, [[i + 1] for i in nxt]), len(nxt))
    counts.add(kind, "self", argmax_hits(w, rows, [[i] for i in rows]), len(rows))
    words = [j for j in range(T) if not is_sink(tokens[j])]
    rare_rows, rare_targets = [], []
    for i in rows:
        visible = [j for j in words if j <= i] if causal else words
        if len(visible) >= 2:
            rare_rows.append(i)
            rare_targets.append(rarest(visible, ids, frequency))
    counts.add(kind, "rare", argmax_hits(w, rare_rows, rare_targets), len(rare_rows))
    sinks = [j for j in range(T) if is_sink(tokens[j])]
    counts.add(kind, "sink", mass_on(w, rows, sinks), len(rows))


def cross_attention_roles(counts: RoleCounts, w: np.ndarray, src_tokens: Sequence[str], src_ids: Sequence[int],
                          rows: Sequence[int], alignment: Sequence[int | None], frequency: np.ndarray) -> None:
    """align, rare and sink of one sentence's cross-attention `w` (L, H, T, S); `alignment[t]`: the source
    position aligned with the token row t predicts (None: NULL)."""
    aligned = [t for t in rows if alignment[t] is not None]
    counts.add("cross", "align", argmax_hits(w, aligned, [[alignment[t]] for t in aligned]), len(aligned))
    words = [j for j in range(len(src_tokens)) if not is_sink(src_tokens[j])]
    rare = rarest(words, src_ids, frequency) if len(words) >= 2 else []
    rare_rows = list(rows) if rare else []
    counts.add("cross", "rare", argmax_hits(w, rare_rows, [rare] * len(rare_rows)), len(rare_rows))
    sinks = [j for j in range(len(src_tokens)) if is_sink(src_tokens[j])]
    counts.add("cross", "sink", mass_on(w, rows, sinks), len(rows))


@dataclass
class SentenceMaps:
    """One sentence's attention `(L, H, Q, K)` per kind, with its tokens and ids (as the model saw them)."""

    encoder: np.ndarray
    decoder: np.ndarray
    cross: np.ndarray
    src_tokens: list[str]
    src_ids: list[int]
    tgt_in_tokens: list[str]
    tgt_in_ids: list[int]
    tgt_out_tokens: list[str]


def add_sentence(counts: RoleCounts, maps: SentenceMaps, frequency: np.ndarray,
                 alignment: Sequence[int | None]) -> None:
    """Every detector on one sentence; `alignment[t]` as in `cross_attention_roles`."""
    src_rows = [i for i, t in enumerate(maps.src_tokens) if t not in SPECIALS]
    if maps.encoder.shape[0]:
        self_attention_roles(counts, "encoder", maps.encoder, maps.src_tokens, maps.src_ids, src_rows, frequency)
    if maps.decoder.shape[0]:
        dec_rows = [i for i, t in enumerate(maps.tgt_in_tokens) if t not in SPECIALS]
        self_attention_roles(counts, "decoder", maps.decoder, maps.tgt_in_tokens, maps.tgt_in_ids, dec_rows,
                             frequency)
        cross_rows = [t for t, tok in enumerate(maps.tgt_out_tokens) if tok not in SPECIALS]
        cross_attention_roles(counts, maps.cross, maps.src_tokens, maps.src_ids, cross_rows, alignment, frequency)


def tag_heads(counts: RoleCounts, kind: str) -> dict:
    """A kind's roles as JSON-ready lists: per role its share grid `(L, H)` and threshold; per head its tags."""
    shares = counts.shares(kind)
    if not shares:
        return {"shares": {}, "rows": {}, "tags": []}
    L, H = next(iter(shares.values())).shape
    tags = [[[r for r in ROLES[kind] if r in shares and shares[r][l, h] >= THRESHOLDS[r]] for h in range(H)]
            for l in range(L)]
    return {"shares": {r: np.round(np.nan_to_num(s), 4).tolist() for r, s in shares.items()},
            "rows": dict(counts.rows[kind]), "tags": tags}


def role_counts(tags: dict) -> dict[str, int]:
    """How many heads of a kind carry each role (`tag_heads`'s output), and how many carry none."""
    flat = [t for row in tags["tags"] for t in row]
    out = {r: sum(r in t for t in flat) for r in sorted({r for t in flat for r in t})}
    out["none"] = sum(not t for t in flat)
    return out
