"""A checkpoint's head analysis, read for the page: what the attention tab shows of each head, the read-out its
cross-attention views open on, and how far it agrees with a person (the Heads tab draws it: panels/heads/).

`python -m transformer.training.head_analysis` writes `head_importance.json` and `head_roles.json` into a
checkpoint directory, `python -m transformer.training.alignment` its `alignment.json`. `head_info` reads what the
attention tab needs per head (importance, role tags, every role's share, the read-out each cross-attention view
opens on: `opening_read_outs`, and how far each read-out the page can show agrees with a person:
`read_out_agreements`). Plain JSON and numbers, no gradio, no torch.
"""
from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any


from transformer.explorer.core.view_state import MEAN_HEADS, ROWS_INPUT, ROWS_PREDICTED
from transformer.config import ATTENTION_KINDS

log = logging.getLogger(__name__)

KINDS = ATTENTION_KINDS
HEAD_FILES = ("head_importance.json", "head_roles.json")
ALIGNMENT_FILE = "alignment.json"  # `python -m transformer.training.alignment`: every read-out's AER on our gold set
ROWS_OF = {"shifted": ROWS_INPUT, "predicting": ROWS_PREDICTED}  # alignment.py's read-outs as the page's rows
ROLE_CODES = {"prev": "P", "next": "N", "self": "S", "rare": "R", "sink": "K", "align": "A"}  # cell letters


def read_analysis(directory: Path | None) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(importance, roles) JSON of a checkpoint directory, or None when either file is missing or unreadable."""
    files = [directory / f for f in HEAD_FILES] if directory is not None else []
    if not files or not all(f.is_file() for f in files):
        return None
    try:
        importance, roles = (json.loads(f.read_text(encoding="utf-8")) for f in files)
    except (OSError, ValueError):
        log.warning("unreadable head analysis in %s", directory)
        return None
    return (importance, roles) if isinstance(importance, dict) and isinstance(roles, dict) else None


def head_info(directory: Path | None) -> dict[str, Any] | None:
    """What the attention tab shows per head: per kind the importance grid, the role tags and every role's
    share, with the roles' names and thresholds; None without an analysis."""
    analysis = read_analysis(directory)
    if analysis is None:
        return None
    importance, roles = analysis
    try:
        kinds = {kind: {"importance": importance["importance"][kind], "tags": roles["kinds"][kind]["tags"],
                        "shares": roles["kinds"][kind]["shares"]} for kind in KINDS}
        return {"kinds": kinds, "names": roles["names"], "thresholds": roles["thresholds"], "codes": ROLE_CODES,
                "opens_on": opening_read_outs(directory, kinds["cross"]),
                "agreements": read_out_agreements(read_alignment(directory))}
    except (KeyError, TypeError):
        log.warning("incomplete head analysis in %s", directory)
        return None


def alignment_head(cross: dict[str, Any]) -> list[int] | None:
    """[layer, head] (0-based) of the cross-attention head tagged as an alignment head with the largest alignment
    share: what the cross-attention views open on without alignment.json. None when the analysis tags none."""
    tags, shares = cross["tags"], cross["shares"].get("align")
    if shares is None:
        return None
    tagged = [(shares[l][h], l, h) for l, row in enumerate(tags) for h, t in enumerate(row) if "align" in t]
    if not tagged:
        return None
    _, layer, head = max(tagged)
    return [layer, head]


def read_alignment(directory: Path | None) -> dict[str, Any] | None:
    """A checkpoint's alignment.json, or None when it is missing or unreadable."""
    path = directory / ALIGNMENT_FILE if directory is not None else None
    if path is None or not path.is_file():
        return None
    try:
        scores = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        log.warning("unreadable %s", path)
        return None
    return scores if isinstance(scores, dict) else None


def _shown(read_out: dict[str, Any]) -> dict[str, Any] | None:
    """A read-out of alignment.json as the page's view (layer, head or MEAN_HEADS, rows); None for one the
    page cannot show (the mean of all layers)."""
    if read_out.get("kind") not in ("head", "layer") or read_out.get("rows") not in ROWS_OF:
        return None
    layer, head = read_out.get("layer"), read_out.get("head")
    if not isinstance(layer, int) or not (head is None or isinstance(head, int)):
        return None
    return {"layer": layer, "head": MEAN_HEADS if head is None else head, "rows": ROWS_OF[read_out["rows"]]}


def opening_read_outs(directory: Path | None, cross: dict[str, Any]) -> dict[str, Any] | None:
    """What the cross-attention views open on: {"cross": view, "steps": view}, each {"layer", "head", "rows"},
    the cross view's with `agreement` (a sentence for the page, or "") when measured.

    With alignment.json, both open on the head the checkpoint was taught to align, read as predicting (its
    `taught`: "when the model writes *spielt*, it looks at *plays*") where there is one, with `taught: True`.
    Otherwise the cross view opens on the read-out that aligns best on the gold set's dev part (its `best`);
    the steps view shows the row of the word being chosen, so it opens on the best read-out of the predicting
    rows the page can show (a head or a layer's mean). Without alignment.json, both open on the alignment head
    of the head analysis (`alignment_head`), rows labelled by the predicted word; None when neither names one."""
    scores = read_alignment(directory)
    if scores is not None:
        try:
            if isinstance(scores.get("taught"), dict) and _shown(scores["taught"]) is not None:
                taught = _shown(scores["taught"])
                return {"cross": {**taught, "agreement": agreement(scores, "taught"), "taught": True}, "steps": taught}
            best = _shown(scores["best"])
            predicting = [r for r in scores["read_outs"] if r.get("rows") == "predicting" and _shown(r)]
            steps = _shown(min(predicting, key=lambda r: r["dev"]["aer"])) if predicting else best
            if best is not None and steps is not None:
                return {"cross": {**best, "agreement": agreement(scores)}, "steps": steps}
        except (KeyError, TypeError, ValueError):
            log.warning("incomplete %s in %s", ALIGNMENT_FILE, directory)
    head = alignment_head(cross)
    if head is None:
        return None
    view = {"layer": head[0], "head": head[1], "rows": ROWS_PREDICTED}
    return {"cross": {**view, "agreement": ""}, "steps": view}


def opening_note(view: dict[str, Any]) -> str:
    """The Heads tab's line on the cross view's opening read-out: which it is and how far it agrees."""
    head = "the mean over heads" if view["head"] == MEAN_HEADS else f"head {view['head'] + 1}"
    words = "the word the decoder reads" if view["rows"] == ROWS_INPUT else "the word it writes"
    sentences = re.split(r"(?<=\.) (?=[A-Z])", view["agreement"])  # one a line: the figure is not wide
    why = ("the head this model was taught to align, from a statistical aligner's word links." if view.get("taught")
           else "the map that agrees best with a person's word links.")
    return "\n".join([f"Cross-attention opens on layer {view['layer'] + 1}, {head}, each row read as {words}: {why}",
                      *sentences])


def _in_100(value: Any) -> int:
    return int(round(float(value)))


AGREEMENT = ("Of the links this map draws, {precision} in 100 are ones a person also drew; of a person's links, it "
             "finds {recall} in 100 (our own {pairs} test sentences).")


def _agreement_of(read_out: dict[str, Any], scores: dict[str, Any]) -> str:
    """One read-out's precision and recall on the gold set's test part, in plain words (KeyError, TypeError or
    ValueError when the scores lack them)."""
    test = read_out["test"]
    return AGREEMENT.format(precision=_in_100(test["precision"]), recall=_in_100(test["recall"]),
                            pairs=int(scores["pairs"]["test"]))


def read_out_agreements(scores: dict[str, Any] | None) -> dict[str, Any] | None:
    """How far each read-out the page can show agrees with a person, for the line the cross view shows under the
    controls whichever read-out is on screen: {"template": AGREEMENT with {precision} and {recall} left for the
    page, "read_outs": {"layer|head|rows": [precision, recall]}} (head -1: the mean over heads; rows as the row
    labels say), each in 100 on the gold set's test part. The opening read-out's sentence, with eflomal's
    figures, is `opening_read_outs`'s. None without scores."""
    if not isinstance(scores, dict):
        return None
    try:
        template = AGREEMENT.replace("{pairs}", str(int(scores["pairs"]["test"])))
        shown = {}
        for read_out in scores["read_outs"]:
            view = _shown(read_out)
            if view is not None:
                test = read_out["test"]
                shown[f"{view['layer']}|{view['head']}|{view['rows']}"] = [_in_100(test["precision"]),
                                                                          _in_100(test["recall"])]
    except (KeyError, TypeError, ValueError, AttributeError):
        log.warning("incomplete %s", ALIGNMENT_FILE)
        return None
    return {"template": template, "read_outs": shown} if shown else None


def agreement(scores: dict[str, Any], opening: str = "best") -> str:
    """How far the read-out the cross view opens on (alignment.json's `best`, or its `taught`) agrees with a
    person, in plain words: its precision and recall on the gold set's test part, and a statistical aligner's on
    the same sentences where alignment.json carries them (its `anchor`: `python -m transformer.training.alignment
    --anchor`); "" when the scores say too little."""
    try:
        text = _agreement_of(scores[opening], scores)
    except (KeyError, TypeError, ValueError):
        return ""
    try:
        anchor = scores["anchor"]
        return (text + f" A statistical aligner, {anchor['aligner']}, gets {_in_100(anchor['test']['precision'])} "
                f"and {_in_100(anchor['test']['recall'])}.")
    except (KeyError, TypeError, ValueError):
        return text
