"""Server-side time of one full app request, and the size of the figures it sends.

A "full request" is what the UI runs when Translate is pressed: beam-5 translation with attention
(`on_translate`), every figure and table (`render_all`), Gradio's serialisation of them (`to_json`,
as gr.Plot.postprocess does) and the .npz export. Also times the cheap follow-ups (a head change,
a toggle). Uses checkpoints/multi30k-en-de if present, else a toy checkpoint, with 2 torch threads.
Also times the figures alone for fake attention of the flagship's shape (its full layer x head grid),
so the grid cost is known before the flagship is trained.

Usage: python bench/app_latency.py [--runs 30] [--checkpoint PATH] [--threads 2]
Prints one JSON object.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SENTENCE_EN = "A tall man in a blue jacket carries a ladder down the street."  # 13 words, my own
SENTENCE_TOY = "q u i c k b r o w n f o x"  # 13 letters


def pick_checkpoint(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    for name in ("multi30k-en-de", "toy-reverse", "toy-copy", "toy-sort"):
        if (ROOT / "checkpoints" / name / "model.safetensors").is_file():
            return ROOT / "checkpoints" / name
    sys.exit("no checkpoint under checkpoints/; train one or pass --checkpoint")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--beam", type=int, default=5)
    args = parser.parse_args()

    checkpoint = pick_checkpoint(args.checkpoint)
    os.environ["TRANSFORMER_CHECKPOINT"] = str(checkpoint)
    os.environ["TRANSFORMER_THREADS"] = str(args.threads)
    sys.path.insert(0, str(ROOT))
    import plotly.graph_objects as go
    import torch

    import app  # noqa: E402  (loads the model once, like the server does)
    from transformer import explorer  # noqa: E402

    torch.set_num_threads(args.threads)
    model = app.DEFAULT_MODEL
    text = SENTENCE_TOY if explorer.is_toy(app.DEFAULT_TRANSLATOR) else SENTENCE_EN
    view = (app.layer_head_choices(app.DEFAULT_TRANSLATOR)[0][-1][1], explorer.MEAN_HEADS, app.ROWS_INPUT, False, False)

    def full_request() -> tuple[dict[str, float], int, list]:
        times = {}
        t0 = time.perf_counter()
        _, _, _, result = app.on_translate(text, "beam", args.beam, model, app.DEFAULT_LENGTH_PENALTY)
        t1 = time.perf_counter()
        outputs = app.render_all(result, *view)
        t2 = time.perf_counter()
        payload = sum(len(o.to_json()) if isinstance(o, go.Figure) else 0 for o in outputs)
        t3 = time.perf_counter()
        explorer.export_npz(result, app.EXPORT_DIR)
        t4 = time.perf_counter()
        times.update(translate=t1 - t0, figures=t2 - t1, serialise=t3 - t2, export=t4 - t3, total=t4 - t0)
        return times, payload, [result, outputs]

    full_request()  # warm-up (plotly validators, torch kernels)
    runs = [full_request() for _ in range(args.runs)]
    result, outputs = runs[-1][2]
    timing = {key: {"p50_ms": round(statistics.median(r[0][key] for r in runs) * 1e3, 1),
                    "p95_ms": round(percentile([r[0][key] for r in runs], 95) * 1e3, 1)}
              for key in ("total", "translate", "figures", "serialise", "export")}

    def follow_up(fn, *a) -> float:
        times = []
        for _ in range(max(5, args.runs // 3)):
            t = time.perf_counter()
            out = fn(*a)
            for o in out:
                if isinstance(o, go.Figure):
                    o.to_json()
            times.append(time.perf_counter() - t)
        return round(statistics.median(times) * 1e3, 1)

    figures = [o for o in outputs if isinstance(o, go.Figure)]
    names = ["focus_encoder", "model_encoder", "focus_decoder", "model_decoder", "focus_cross", "model_cross",
             "rollout", "summary_encoder", "summary_decoder", "summary_cross", "step"]
    sizes_kb = {n: round(len(f.to_json()) / 1000, 1) for n, f in zip(names, figures)}
    att = result.attention
    cfg = app.DEFAULT_TRANSLATOR.model.config
    synthetic = synthetic_flagship_grid(app, go, view, args.runs)
    print(json.dumps({
        "checkpoint": str(checkpoint.relative_to(ROOT) if checkpoint.is_relative_to(ROOT) else checkpoint),
        "sentence": text, "translation": result.translation.text, "beam": args.beam, "threads": args.threads,
        "runs": args.runs, "layers_heads": [cfg.n_encoder_layers, cfg.n_decoder_layers, cfg.n_heads],
        "src_tgt_tokens": [len(att.src_tokens), len(att.tgt_out_tokens)],
        "full_request": timing,
        "head_change_ms_p50": follow_up(app.render_focus, result, *view[:1], 0, *view[2:], 1),
        "toggle_change_ms_p50": follow_up(app.render_all, result, view[0], view[1], view[2], True, True),
        "figure_json_kb": sizes_kb, "figure_json_total_kb": round(sum(sizes_kb.values()), 1),
        "synthetic_flagship_grid": synthetic,
    }, ensure_ascii=False))


def synthetic_flagship_grid(app, go, view, runs: int) -> dict:
    """Figures only, for fake attention of the flagship's shape (model-free, so it runs before it is trained).

    Multi30k preset layers x heads, a 13-word sentence as ~16 source and ~18 target BPE pieces.
    """
    import numpy as np

    from transformer import explorer
    from transformer.train import PRESETS
    from transformer.translator import Attention, Candidate, StepRecord, Translation

    preset = PRESETS["multi30k-en-de"]
    n_enc, n_dec, n_heads = preset["n_encoder_layers"], preset["n_decoder_layers"], preset["n_heads"]
    s_len, t_len = 16, 18
    rng = np.random.default_rng(0)

    def maps(shape, causal=False):
        a = rng.random(shape).astype(np.float32) ** 4
        if causal:
            a *= np.tril(np.ones(shape[-2:], np.float32))
        return a / a.sum(-1, keepdims=True)

    src = [f"\u2581w{i}" if i % 3 else f"p{i}" for i in range(s_len - 1)] + ["<eos>"]
    out = [f"\u2581v{i}" if i % 3 else f"q{i}" for i in range(t_len - 1)] + ["<eos>"]
    steps = [StepRecord(t, tok, 0.6, [(tok, 0.6), ("x", 0.2), ("y", 0.1), ("z", 0.05), ("w", 0.05)])
             for t, tok in enumerate(out)]
    att = Attention(maps((n_enc, n_heads, s_len, s_len)), maps((n_dec, n_heads, t_len, t_len), causal=True),
                    maps((n_dec, n_heads, t_len, s_len)), src, ["<bos>"] + out[:-1], out, steps)
    cands = [Candidate("v", out, list(range(t_len)), -1.0, -2.0)] * 5
    tr = Translation("v", src, out, -1.0, -2.0, False, cands, "beam", 5, list(range(s_len)), att)
    result = explorer.Result("synthetic", "", tr, 0.6, {0: att})
    times, sizes = [], {}
    for _ in range(max(3, runs // 3)):
        start = time.perf_counter()
        outputs = app.render_all(result, n_dec - 1, explorer.MEAN_HEADS, app.ROWS_INPUT, False, False)
        sizes = {i: len(o.to_json()) for i, o in enumerate(outputs) if isinstance(o, go.Figure)}
        times.append(time.perf_counter() - start)
    return {"layers_heads": [n_enc, n_dec, n_heads], "src_tgt_tokens": [s_len, t_len],
            "figures_and_serialise_ms_p50": round(statistics.median(times) * 1e3, 1),
            "model_view_json_kb": round(sizes[1] / 1000, 1),
            "figure_json_total_kb": round(sum(sizes.values()) / 1000, 1)}


if __name__ == "__main__":
    main()
