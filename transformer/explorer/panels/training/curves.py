"""The Training tab: a checkpoint's train_log.jsonl drawn as loss, perplexity and BLEU curves, and its
metrics.json as a table (`training_view`)."""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from transformer.explorer.maps.figures import (TRAIN_COLOR, VAL_COLOR, axis_name, base_layout, grid_domains, make_figure, panel_title,
                      placeholder_figure)

__all__ = ["training_view", "training_curves", "load_train_log", "metrics_table"]

CORPUS_COLORS = ("#2ca02c", "#9467bd", "#8c564b", "#e377c2")
CORPUS_BLEU = "val_bleu_"  # train_log.jsonl key prefix of one validation corpus's BLEU

_CURVE_PANELS = (  # (panel title, [(record key, series name)], log y axis)
    ("Loss", (("train_loss", "train"), ("val_loss", "val")), False),
    ("Perplexity", (("train_ppl", "train"), ("val_ppl", "val")), True),
    ("BLEU", (("train_bleu", "train"), ("val_bleu", "val")), False),
)


def _number(value: Any) -> float | None:
    """A finite float, or None for missing / non-numeric / inf / NaN values."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def training_curves(records: Sequence[Mapping[str, Any]], title: str = "Training") -> go.Figure:
    """Loss, perplexity (log axis) and BLEU per epoch from train_log.jsonl records, side by side.

    Any key may be missing: a series is drawn from the records that have it. If
    no record has "epoch", records are numbered 1, 2, ...; otherwise records
    without one (e.g. per-step lines) are skipped.
    """
    have_epoch = any(_number(r.get("epoch")) is not None for r in records)
    points = [(_number(r.get("epoch")) if have_epoch else float(i + 1), r) for i, r in enumerate(records)]
    points = [(x, r) for x, r in points if x is not None]
    if not points:
        return placeholder_figure("No training log records yet.")

    traces: list[go.Scatter] = []
    axes: dict[str, Any] = {}
    notes: list[dict[str, Any]] = []
    shown_in_legend: set[str] = set()
    domains = [d for d, _ in grid_domains(1, len(_CURVE_PANELS), gap_x=0.08)]
    corpora = sorted({k[len(CORPUS_BLEU):] for r in records for k in r if k.startswith(CORPUS_BLEU)})
    colors = {"train": TRAIN_COLOR, "val": VAL_COLOR, "val (mean)": VAL_COLOR}
    colors.update({f"val {c}": CORPUS_COLORS[i % len(CORPUS_COLORS)] for i, c in enumerate(corpora)})
    for i, ((panel, series, log_y), xd) in enumerate(zip(_CURVE_PANELS, domains)):
        ax = axis_name(i)
        if panel == "BLEU" and corpora:  # one line per validation corpus, and their mean
            series = (("train_bleu", "train"), ("val_bleu", "val (mean)"),
                      *((f"{CORPUS_BLEU}{c}", f"val {c}") for c in corpora))
        for key, name in series:
            xy = [(x, v) for x, r in points if (v := _number(r.get(key))) is not None and (v > 0 or not log_y)]
            if not xy:
                continue
            traces.append(go.Scatter(
                x=[x for x, _ in xy], y=[v for _, v in xy], mode="lines+markers", name=name, legendgroup=name,
                showlegend=name not in shown_in_legend, xaxis=f"x{ax}", yaxis=f"y{ax}",
                line=dict(color=colors[name], dash="dot" if name == "val (mean)" else None),
                hovertemplate=f"{name} {key}: %{{y:.3f}}<br>epoch %{{x}}<extra></extra>",
            ))
            shown_in_legend.add(name)
        axes[f"xaxis{ax}"] = dict(domain=xd, anchor=f"y{ax}", title=dict(text="epoch" if have_epoch else "record"))
        axes[f"yaxis{ax}"] = dict(anchor=f"x{ax}", type="log" if log_y else "linear")
        notes.append(panel_title(panel, x=sum(xd) / 2, y=1.02))
    layout = base_layout(title, annotations=notes, height=380, **axes)  # default legend: right, clear of the axes
    return make_figure(traces, layout)


def load_train_log(directory: Path | None) -> list[dict[str, Any]]:
    """The records of a checkpoint's train_log.jsonl, lines that are no JSON object left out; [] without one."""
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
    fig = training_curves(records, title=title) if records else placeholder_figure(
        "This checkpoint has no train_log.jsonl.")
    return fig, metrics_table(directory)
