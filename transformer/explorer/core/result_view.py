"""What the page shows of one result: the n-best table and the candidate selector (each distinct translation
once), the note while heads are switched off, and the attention payload of the candidate on screen
(`result_payload`), which panels/attention/explorer.js draws.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from transformer.explorer.maps.payload import attention_payload
from transformer.explorer.core.results import Result
from transformer.explorer.core.view_state import off_text

__all__ = ["ablation_notice", "distinct_candidates", "nbest_table", "nbest_row_candidate", "nbest_select_candidate",
           "candidate_choices", "result_payload"]


def ablation_notice(result: Result | None) -> str:
    """What the notes say while heads are off: how many, and the translation with every head on."""
    if result is None or not result.off or result.base is None:
        return ""
    if result.translation.method == "forced":
        return (f"{len(result.off)} head{'s' if len(result.off) != 1 else ''} switched off ({off_text(result.off)}): "
                "the maps and the scores of your translation are the model's without them.")
    return (f"{len(result.off)} head{'s' if len(result.off) != 1 else ''} switched off ({off_text(result.off)}): "
            f"the translation, the n-best list and the maps are the model's without them. With every head: "
            f"“{result.base.translation.text}”.")


def distinct_candidates(result: Result) -> list[tuple[int, int]]:
    """(index, spellings) of each distinct translation text of the n-best list, at its best-ranked candidate:
    beam search also keeps one text spelled in other subword pieces ("▁Lehr er" and "▁Lehrer"), which reads as a
    repeat. `spellings` counts the candidates with that text; the search tree keeps them all."""
    first: dict[str, int] = {}
    counts: dict[str, int] = {}
    for i, c in enumerate(result.translation.candidates):
        first.setdefault(c.text, i)
        counts[c.text] = counts.get(c.text, 0) + 1
    return [(i, counts[text]) for text, i in first.items()]


# short headers: the side column is narrow, and the label (texts.NBEST_LABEL) says what each one is
NBEST_COLUMNS = ["#", "translation", "log-prob.", "score", "spellings"]


def nbest_table(result: Result | None) -> pd.DataFrame:
    """Each distinct translation once, with its best score; "spellings": how many candidates of the search
    write that text (in different subword pieces)."""
    if result is None:
        return pd.DataFrame(columns=NBEST_COLUMNS)
    cands = result.translation.candidates
    # numbered by rank, 1, 2, 3...: the candidates' own numbers skip the other spellings left out (1, 4, 5)
    rows = [[rank + 1, cands[i].text, round(cands[i].log_prob, 2), round(cands[i].score, 2), n]
            for rank, (i, n) in enumerate(distinct_candidates(result))]
    return pd.DataFrame(rows, columns=NBEST_COLUMNS)


def nbest_row_candidate(result: Result, row: int) -> int:
    """The candidate index behind a row of `nbest_table`."""
    distinct = distinct_candidates(result)
    return distinct[min(max(int(row), 0), len(distinct) - 1)][0]


def nbest_select_candidate(result: Result | None, index: Any) -> int | None:
    """The candidate behind an n-best select event's "index" (a row, or [row, column]); None when it names none."""
    if result is None or not index:
        return None
    row = index[0] if isinstance(index, (list, tuple)) else index
    if isinstance(row, bool) or not isinstance(row, int):  # not a row of the table
        return None
    return nbest_row_candidate(result, row)


def candidate_choices(result: Result | None) -> list[tuple[str, int]]:
    """The candidate selector's (label, candidate index) pairs: each distinct translation, numbered by rank."""
    if result is None:
        return [("1", 0)]
    cands = result.translation.candidates
    return [(f"{rank + 1}: {cands[i].text[:60] or '(empty)'}", i)  # numbered as the n-best table's rows
            for rank, (i, _) in enumerate(distinct_candidates(result))]


def result_payload(result: Result | None, heads: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """What the browser gets for the current candidate of a result (None clears the views): with its norms
    when they were asked for, the heads switched off and the unmasked translation, and `heads` (what the
    checkpoint's head analysis says about each head, `checkpoint_heads.head_info`)."""
    if result is None:
        return None
    ablation = None
    if result.off and result.base is not None:
        ablation = {"off": [list(h) for h in result.off], "unmasked": result.base.translation.text}
    payload = attention_payload(result.attention, model=result.model, candidate=result.candidate,
                                n_candidates=len(result.translation.candidates), source=result.source,
                                translation=result.translation.candidates[result.candidate].text,
                                norms=result.norm, ablation=ablation, heads=heads,
                                entities=result.translation.entities)
    # the candidate's number in the n-best table and the selector (its rank among distinct translations)
    ranks = [i for i, _ in distinct_candidates(result)]
    payload["rank"] = ranks.index(result.candidate) if result.candidate in ranks else result.candidate
    return payload
