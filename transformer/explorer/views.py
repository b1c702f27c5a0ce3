"""What the page and scripts show of a result: the n-best list and candidate choices, the notes while heads are
off, the attention payload the browser draws (`result_payload`), and the Python views: pure functions from a
result's arrays to Plotly figures and tables (drawn by `transformer.explorer.viz`), and the training tab's.

The page draws its attention views in the browser (static/explorer.js, from `result_payload`); the Python views
are the reference it is tested against, and what notebooks and scripts can use directly.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from transformer.translator import Attention

from . import viz
from .payload import attention_payload
from .results import Result
from .share import KINDS, MEAN_HEADS, ROWS_INPUT, ROWS_PREDICTED, off_text  # noqa: F401  (KINDS: for the views' users)

KIND_TITLES = {"encoder": "Encoder self-attention", "decoder": "Decoder self-attention", "cross": "Cross-attention"}


# ----------------------------------------------------------------------------- a result's texts and payload


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
    if result is None:
        return [("1", 0)]
    cands = result.translation.candidates
    return [(f"{rank + 1}: {cands[i].text[:60] or '(empty)'}", i)  # numbered as the n-best table's rows
            for rank, (i, _) in enumerate(distinct_candidates(result))]



def result_payload(result: Result | None, heads: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """What the browser gets for the current candidate of a result (None clears the views): with its norms
    when they were asked for, the heads switched off and the unmasked translation, and `heads` (what the
    checkpoint's head analysis says about each head, `head_views.head_info`)."""
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



# ----------------------------------------------------------------------------- views (pure: arrays -> figures)


@dataclass(frozen=True)
class ViewOptions:
    layer: int = 0
    head: int = MEAN_HEADS
    rows: str = ROWS_PREDICTED
    hide_special: bool = False
    merge_subwords: bool = False


def kind_maps(att: Attention, kind: str, rows: str) -> tuple[np.ndarray, list[str], list[str]]:
    """(L, H, Tq, Tk) weights of one attention kind with its query and key tokens."""
    if kind == "encoder":
        return att.encoder, att.src_tokens, att.src_tokens
    queries = att.tgt_out_tokens if rows == ROWS_PREDICTED else att.tgt_in_tokens
    if kind == "decoder":
        return att.decoder, queries, att.tgt_in_tokens
    if kind == "cross":
        return att.cross, queries, att.src_tokens
    raise ValueError(f"unknown attention kind {kind!r}")


def transform(weights: np.ndarray, q: Sequence[str], k: Sequence[str], hide: bool, merge: bool
              ) -> tuple[np.ndarray, list[str], list[str], float | None]:
    """Hide special tokens (renormalising rows) then merge subwords; hidden mass is None when not hiding."""
    hidden = None
    q, k = list(q), list(k)
    if hide:
        weights, q, k, hidden = viz.hide_special(weights, q, k)
    if merge and q and k:
        weights, q, k = viz.merge_subwords(weights, q, k)
        # whole words: marked as word starts, so their labels show bare (viz.display_token), as on the page
        q, k = [viz.WORD_MARK + w for w in q], [viz.WORD_MARK + w for w in k]
    return weights, q, k, hidden


def _empty(weights: np.ndarray) -> bool:
    return 0 in weights.shape[-2:]


def head_label(head: int) -> str:
    return "mean over heads" if head < 0 else f"head {head + 1}"


def focus_view(att: Attention, kind: str, opts: ViewOptions, suffix: str = "") -> tuple[go.Figure, float | None]:
    """One layer and head (or the mean over heads) of one kind as a heatmap, and the hidden mass."""
    weights, q, k = kind_maps(att, kind, opts.rows)
    n_layers, n_heads = weights.shape[:2]
    if n_layers == 0:
        return viz.placeholder_figure(f"This model has no {kind} layers."), None
    layer = min(max(opts.layer, 0), n_layers - 1)
    head = opts.head if opts.head < n_heads else MEAN_HEADS
    w = weights[layer].mean(axis=0) if head < 0 else weights[layer, head]
    w, q, k, hidden = transform(w, q, k, opts.hide_special, opts.merge_subwords)
    title = f"{KIND_TITLES[kind]} · layer {layer + 1} · {head_label(head)}{suffix}"
    if layer != opts.layer:
        title += f" (this stack has {n_layers} layers)"
    if _empty(w):
        return viz.placeholder_figure("Nothing left to show after hiding special tokens."), hidden
    return viz.attention_heatmap(w, q, k, title=title), hidden


def model_view(att: Attention, kind: str, opts: ViewOptions, suffix: str = "") -> go.Figure:
    weights, q, k = kind_maps(att, kind, opts.rows)
    if weights.shape[0] == 0:
        return viz.placeholder_figure(f"This model has no {kind} layers.")
    w, q, k, _ = transform(weights, q, k, opts.hide_special, opts.merge_subwords)
    if _empty(w):
        return viz.placeholder_figure("Nothing left to show after hiding special tokens.")
    return viz.model_view(w, q, k, title=f"{KIND_TITLES[kind]}: every layer (rows) × head (columns){suffix}")


def step_view(att: Attention, step: Any, opts: ViewOptions) -> tuple[go.Figure, str]:
    """Decoding step `step` (1-based): the chosen token, top-5 next tokens and that step's cross-attention row."""
    if not att.steps:
        return viz.placeholder_figure("No decoding steps."), ""
    t = min(max(int(step or 1), 1), len(att.steps)) - 1
    record = att.steps[t]
    n_layers, n_heads = att.cross.shape[:2]
    if n_layers == 0:
        return viz.placeholder_figure("This model has no decoder layers."), ""
    layer = min(max(opts.layer, 0), n_layers - 1)
    head = opts.head if opts.head < n_heads else MEAN_HEADS
    row = att.cross[layer].mean(axis=0)[t] if head < 0 else att.cross[layer, head, t]
    row2, _, src, _ = transform(row[None, :], ["·"], att.src_tokens, opts.hide_special, opts.merge_subwords)
    fig = viz.step_figure(record.top_k, row2[0], src, record.token,
                          title=f"Step {t + 1}: chose {viz.display_token(record.token)} · "
                                f"cross-attention layer {layer + 1}, "
                                f"{head_label(head)}")
    text = (f"Step {t + 1} of {len(att.steps)}: the decoder read \u2018{viz.display_token(att.tgt_in_tokens[t])}"
            f"\u2019 and chose \u2018{viz.display_token(record.token)}\u2019 (probability {record.probability:.1%}).")
    return fig, text


def hidden_text(masses: dict[str, float | None]) -> str:
    shown = {k: v for k, v in masses.items() if v is not None}
    if not shown:
        return "Special tokens are shown (tick \"Hide <bos>/<eos>\" to hide them and renormalise rows)."
    parts = ", ".join(f"{KIND_TITLES[k].lower()} {v:.1%}" for k, v in shown.items())
    return f"Attention mass hidden on <bos>/<eos>/<pad> in the focus views (rows renormalised): {parts}."


def load_train_log(directory: Path | None) -> list[dict[str, Any]]:
    if directory is None or not (directory / "train_log.jsonl").is_file():
        return []
    records = []
    for line in (directory / "train_log.jsonl").read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def metrics_table(directory: Path | None) -> pd.DataFrame:
    """metrics.json flattened to (metric, value) rows; empty when there is none."""
    path = None if directory is None else directory / "metrics.json"
    if path is None or not path.is_file():
        return pd.DataFrame({"metric": ["(no metrics.json in this checkpoint)"], "value": [""]})
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        return pd.DataFrame({"metric": ["metrics.json could not be read"], "value": [str(err)]})
    if isinstance(data, dict) and data and all(isinstance(v, dict) for v in data.values()):
        return _evaluation_table(data)
    rows: list[tuple[str, str]] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, sub in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), sub)
        elif isinstance(value, float):
            rows.append((prefix, f"{value:.4g}"))
        else:
            rows.append((prefix, json.dumps(value, ensure_ascii=False) if isinstance(value, list) else str(value)))

    walk("", data)
    return pd.DataFrame(rows, columns=["metric", "value"])


def _evaluation_table(data: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """{"test/beam5": {"bleu": ..., "chrf": ..., ...}, ...} -> one row per evaluation, scalar fields as columns."""
    skip = ("split", "batch_size")
    columns: list[str] = [c for c in ("bleu", "chrf") if any(c in v for v in data.values())]
    for record in data.values():
        for key, value in record.items():
            if (key not in columns and key not in skip and "signature" not in key
                    and isinstance(value, (int, float, str)) and not isinstance(value, bool)):
                columns.append(key)

    def cell(value: Any) -> str:
        return "" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)

    rows = [[name] + [cell(record.get(c)) for c in columns] for name, record in data.items()]
    return pd.DataFrame(rows, columns=["evaluation"] + columns)


def training_view(label: str | None, directory: Path | None) -> tuple[go.Figure, pd.DataFrame]:
    """Loss and validation curves from train_log.jsonl, and the metrics.json table, of one checkpoint."""
    records = load_train_log(directory)
    title = f"Training: {label}" if label else "Training"
    fig = viz.training_curves(records, title=title) if records else viz.placeholder_figure(
        "This checkpoint has no train_log.jsonl.")
    return fig, metrics_table(directory)
