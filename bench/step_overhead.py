"""Where a served beam-5 translation's time goes on this CPU: the encoder, the search and the attention capture,
and within the search, the share of the heavy kernels (matrix products, attention, top-k) against everything else
(the many small operators of a decoding step, and Python), with the operator count of one search step.

The app's serving path (the start-up probe's kernels, `serving.kernels`) on one torch thread, the sentence of
bench/serving_paths.py. `--compile` also times the search with its decoder through `torch.compile` (inductor), which
fuses the small operators: how long the compilation takes on this CPU, and the search's speed after it.

    python bench/step_overhead.py --repeats 20 --json bench/results/step_overhead.json
    python bench/step_overhead.py --repeats 20 --compile --json bench/results/step_overhead.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))
from serving_paths import SENTENCE  # noqa: E402

HEAVY = ("aten::_int_mm", "quantized::linear_dynamic", "aten::addmm", "aten::mm", "aten::bmm",
         "aten::_scaled_dot_product_flash_attention_for_cpu", "aten::topk", "aten::_softmax", "aten::_log_softmax",
         "aten::native_layer_norm")  # the operators that do a step's arithmetic; the rest moves and reshapes


def p50_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1000, 2)


def operator_profile(fn) -> tuple[dict[str, float], int, float]:
    """Self CPU ms of each heavy operator in one call of `fn`, the number of operators called from Python (not
    from inside another operator), and the profiled call's total self CPU ms."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    events = prof.events()
    top = sum(1 for e in events if (e.name.startswith(("aten::", "quantized::")))
              and (e.cpu_parent is None or not e.cpu_parent.name.startswith(("aten::", "quantized::"))))
    heavy: dict[str, float] = {}
    total = 0.0
    for e in prof.key_averages():
        total += e.self_cpu_time_total / 1000
        if e.key in HEAVY:
            heavy[e.key] = round(e.self_cpu_time_total / 1000, 2)
    return heavy, top, round(total, 2)


def decoder_calls(model, fn) -> int:
    """How many times one call of `fn` runs `model.decode` (a search's steps)."""
    calls, decode = [], model.decode
    model.decode = lambda *a, **k: calls.append(1) or decode(*a, **k)
    try:
        fn()
    finally:
        del model.decode  # the class's method again
    return len(calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=str(ROOT / "checkpoints" / "en-de"))
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--compile", action="store_true", help="also time the decoder through torch.compile")
    parser.add_argument("--json", help="also write the result to this file (see bench/report.py)")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from transformer import quantize
    from transformer.decoding import beam_search, encode_source
    from transformer.hub import read_config
    from transformer.serving.kernels import choose_serving_path
    from transformer.translator import load_pretrained

    path = choose_serving_path(read_config(Path(args.checkpoint)))
    quantize.use_int8_kernels(dict(path.kernels))
    tr = load_pretrained(args.checkpoint, quantize=path.precision)
    src = torch.tensor([tr.source(SENTENCE).ids])
    beam = dict(method="beam", beam_size=5, length_penalty=0.6)
    with torch.inference_mode():
        result = tr.translate(SENTENCE, **beam)
        steps = len(result.candidates[0].ids)
        encoded = encode_source(tr.search_model, src)
        search = lambda: beam_search(tr.search_model, src, 5, 0.6, encoded=encoded)  # noqa: E731
        for _ in range(3):
            search()
        out = {
            "cpu_threads": args.threads, "precision": path.precision, "output_tokens": steps,
            "p50_ms": {
                "translate_with_attention": p50_ms(lambda: tr.translate(SENTENCE, output_attentions=True, **beam),
                                                   args.repeats),
                "translate_without_attention": p50_ms(lambda: tr.translate(SENTENCE, output_attentions=False, **beam),
                                                      args.repeats),
                "encoder": p50_ms(lambda: encode_source(tr.search_model, src), args.repeats),
                "search": p50_ms(search, args.repeats),
            },
        }
        heavy, operators, total = operator_profile(search)
        search_steps = decoder_calls(tr.search_model, search)
        out["search_profile"] = {
            "steps": search_steps, "operators_per_step": round(operators / search_steps),
            "profiled_self_cpu_ms": total, "heavy_operators_ms": heavy,
            "heavy_share": round(sum(heavy.values()) / total, 3),
        }
        if args.compile:
            plain = [h.tokens for h in search()[0]]
            decoder = tr.search_model.decoder
            tr.search_model.decoder = torch.compile(decoder, dynamic=True)
            start = time.perf_counter()
            compiled = [h.tokens for h in search()[0]]
            compile_s = time.perf_counter() - start
            for _ in range(3):
                search()
            out["compiled"] = {"first_search_s": round(compile_s, 1), "search_p50_ms": p50_ms(search, args.repeats),
                               "same_nbest_tokens": compiled == plain}
            tr.search_model.decoder = decoder
    print(json.dumps(out))
    if args.json:
        from report import write_result

        write_result(args.json, out)


if __name__ == "__main__":
    main()
