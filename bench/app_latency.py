"""Server-side time of one full app request, and the size of the figures it sends.

A "full request" is what the UI runs when Translate is pressed: beam-5 translation with attention
(`on_translate`), the page's attention payload (`show_result`; the browser draws every view from it,
so view changes cost the server nothing), its JSON serialisation, and the .npz export. Uses
checkpoints/multi30k-en-de if present, else a toy checkpoint, with 2 torch threads. Also times the
payload alone for fake attention of a 6-layer, 8-head model, so its cost is known for bigger models.

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
    parser.add_argument("--json", help="also write the result to this file (see bench/report.py)")
    args = parser.parse_args()

    checkpoint = pick_checkpoint(args.checkpoint)
    os.environ["TRANSFORMER_CHECKPOINT"] = str(checkpoint)
    os.environ["TRANSFORMER_THREADS"] = str(args.threads)
    sys.path.insert(0, str(ROOT))
    import torch

    from app import create_app  # noqa: E402

    app = create_app()  # loads the model once, like the server does
    from transformer.explorer.core import exports  # noqa: E402
    from transformer.explorer.core import model_registry
    from transformer.explorer.core import view_state

    torch.set_num_threads(args.threads)
    model = app.explorer.models.default_model
    text = SENTENCE_TOY if model_registry.is_toy(app.explorer.models.default_translator) else SENTENCE_EN

    def full_request() -> tuple[dict[str, float], int, object]:
        times = {}
        t0 = time.perf_counter()
        result = app.page.on_translate(text, "beam", args.beam, model, view_state.DEFAULT_LENGTH_PENALTY)[app.page.states.result]
        t1 = time.perf_counter()
        payload = app.page.show_result(result)[app.page.attention.view]
        t2 = time.perf_counter()
        size = len(json.dumps(payload))
        t3 = time.perf_counter()
        exports.export_npz(result, app.explorer.exports.export_dir)
        t4 = time.perf_counter()
        times.update(translate=t1 - t0, payload=t2 - t1, serialise=t3 - t2, export=t4 - t3, total=t4 - t0)
        return times, size, result

    full_request()  # warm-up (torch kernels)
    runs = [full_request() for _ in range(args.runs)]
    result = runs[-1][2]
    timing = {key: {"p50_ms": round(statistics.median(r[0][key] for r in runs) * 1e3, 1),
                    "p95_ms": round(percentile([r[0][key] for r in runs], 95) * 1e3, 1)}
              for key in ("total", "translate", "payload", "serialise", "export")}
    att = result.attention
    cfg = app.explorer.models.default_translator.model.config
    report = {
        "checkpoint": str(checkpoint.relative_to(ROOT) if checkpoint.is_relative_to(ROOT) else checkpoint),
        "sentence": text, "translation": result.translation.text, "beam": args.beam, "threads": args.threads,
        "runs": args.runs, "layers_heads": [cfg.n_encoder_layers, cfg.n_decoder_layers, cfg.n_heads],
        "src_tgt_tokens": [len(att.src_tokens), len(att.tgt_out_tokens)],
        "full_request": timing, "payload_kb": round(runs[-1][1] / 1000, 1),
        "synthetic_6x8": synthetic_payload(args.runs),
    }
    print(json.dumps(report, ensure_ascii=False))
    if args.json:
        from report import write_result  # bench/, the script's own directory
        write_result(args.json, report)


def synthetic_payload(runs: int) -> dict:
    """The payload alone for fake attention of a 6+6-layer, 8-head model and a 13-word sentence."""
    import numpy as np

    from transformer.explorer.maps.payload import attention_payload
    from transformer.translator import Attention, StepRecord

    n_enc, n_dec, n_heads, s_len, t_len = 6, 6, 8, 16, 18
    rng = np.random.default_rng(0)

    def maps(shape):
        a = rng.random(shape).astype(np.float32) ** 4
        return a / a.sum(-1, keepdims=True)

    src = [f"\u2581w{i}" for i in range(s_len - 1)] + ["<eos>"]
    out = [f"\u2581v{i}" for i in range(t_len - 1)] + ["<eos>"]
    steps = [StepRecord(t, tok, 0.6, [(tok, 0.6), ("x", 0.2)]) for t, tok in enumerate(out)]
    att = Attention(maps((n_enc, n_heads, s_len, s_len)), maps((n_dec, n_heads, t_len, t_len)),
                    maps((n_dec, n_heads, t_len, s_len)), src, ["<bos>"] + out[:-1], out, steps)
    times, size = [], 0
    for _ in range(max(3, runs // 3)):
        start = time.perf_counter()
        size = len(json.dumps(attention_payload(att)))
        times.append(time.perf_counter() - start)
    return {"layers_heads": [n_enc, n_dec, n_heads], "src_tgt_tokens": [s_len, t_len],
            "payload_and_serialise_ms_p50": round(statistics.median(times) * 1e3, 1),
            "payload_kb": round(size / 1000, 1)}


if __name__ == "__main__":
    main()
