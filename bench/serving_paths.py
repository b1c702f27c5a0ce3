"""The serving path each CPU class gets, and its speed against Marian: the probe's choice and timings, then
beam 5 (and greedy) with attention as the app serves, interleaved with `MarianMTModel.generate` of the same
architecture (float32, random weights, forced to the same output length), on the same thread count.

Each class runs in a child process with `bench/cpu_class.py`'s environment (the machine's own CPU as "native";
the others emulated by capping each kernel library's instructions, which `python bench/cpu_class.py` checks).
For each class it also times the int8 search with `_int_mm` only and the float32 search (not served: another
arithmetic), so the gain of measuring shows beside the ratio. `--compare DIR` also loads another checkout's
`transformer` package in the same child, lets its own probe choose its own serving path, and times its served
search interleaved with this one's: a before/after in one process (`served_vs_compared` > 1: this one is faster).

    python bench/serving_paths.py --threads 1 --repeats 20 --json bench/results/serving_paths.json
    python bench/serving_paths.py --classes avx2 --threads 1      # one class
    python bench/serving_paths.py --classes native,avx2 --compare ../main-before   # against another checkout
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))
from cpu_class import CLASSES, DESCRIPTIONS, environment  # noqa: E402
from machine import cpu_model  # noqa: E402

SENTENCE = "A young man in a green jacket plays the guitar on the street."  # 13 words, our own


def compared_served(checkout: str, checkpoint: str):
    """Another checkout's served translator, chosen by its own probe, and that probe's choice."""
    import importlib

    from batched_search import other_package

    package = other_package(Path(checkout).resolve())
    read_config = importlib.import_module(f"{package}.hub").read_config
    path = importlib.import_module(f"{package}.serving.kernels").choose_serving_path(read_config(Path(checkpoint)))
    importlib.import_module(f"{package}.quantize").use_int8_kernels(dict(path.kernels))
    served = importlib.import_module(f"{package}.translator").load_pretrained(checkpoint, quantize=path.precision)
    return served, {"chosen": path.precision, "kernels": {f"{k}x{n}": kernel for (k, n), kernel in path.kernels}}


def one_class(checkpoint: str, threads: int, repeats: int, compare: str | None = None) -> dict:
    """In this process (its environment sets the class): the probe, then the paths timed against Marian."""
    import torch

    torch.set_num_threads(threads)
    from decode_latency import interleaved, marian_generate, percentiles
    from transformer import quantize
    from transformer.hub import read_config
    from transformer.serving.kernels import choose_serving_path
    from transformer.translator import Translator, load_pretrained

    start = time.perf_counter()
    path = choose_serving_path(read_config(Path(checkpoint)))
    probe_s = time.perf_counter() - start
    quantize.use_int8_kernels(dict(path.kernels))
    served = load_pretrained(checkpoint, quantize=path.precision)
    fp32 = Translator(served.model, served.tokenizer, name="fp32", truecaser=served.truecaser)
    int_mm = Translator(served.model, served.tokenizer, name="int8 _int_mm", truecaser=served.truecaser,
                        search_model=quantize.search_model(served.model, "int8", int8_kernels=dict.fromkeys(
                            dict(path.kernels), "int_mm")),
                        precision="int8")
    from transformer.training.hardware import cpu_flags

    flags = cpu_flags()
    out: dict = {"cpu": cpu_model(), "capability": torch.backends.cpu.get_cpu_capability(),
                 "host_flags": [f for f in ("amx_int8", "avx512_vnni", "avx512_bf16", "avx_vnni", "avx2") if f in flags],
                 "chosen": path.precision, "kernels": {f"{k}x{n}": kernel for (k, n), kernel in path.kernels},
                 "probe_s": round(probe_s, 2), "probe_step_ms": {k: round(v, 2) for k, v in path.step_ms.items()},
                 "slow_note": bool(path.slow), "threads": threads}
    compared = None
    if compare:
        compared, out["compared"] = compared_served(compare, checkpoint)
        from batched_search import commit

        out["compared"] |= {"checkout": compare, "commit": commit(Path(compare))}
    for method, beam in (("greedy", 1), ("beam", 5)):
        call = dict(method=method, beam_size=beam, length_penalty=0.6)
        steps = len(served.translate(SENTENCE, **call).candidates[0].ids)
        src_len = len(served.source(SENTENCE).ids)
        fns = {"served": lambda: served.translate(SENTENCE, output_attentions=True, **call),
               "fp32": lambda: fp32.translate(SENTENCE, output_attentions=True, **call),
               "int8_int_mm_only": lambda: int_mm.translate(SENTENCE, output_attentions=True, **call)}
        if compared is not None:
            fns["compared"] = lambda: compared.translate(SENTENCE, output_attentions=True, **call)
        marian = marian_generate(served.model.config, src_len, steps, beam)
        if callable(marian):
            fns["marian"] = marian
        with torch.inference_mode():
            times = interleaved(fns, repeats, {"int8_int_mm_only": max(2, repeats // 4)})
        row = {"output_tokens": steps, **{name: percentiles(t) for name, t in times.items()}}
        if callable(marian):
            row["served_vs_marian"] = round(row["marian"]["p50_ms"] / row["served"]["p50_ms"], 2)
            row["fp32_vs_marian"] = round(row["marian"]["p50_ms"] / row["fp32"]["p50_ms"], 2)
            row["int_mm_only_vs_marian"] = round(row["marian"]["p50_ms"] / row["int8_int_mm_only"]["p50_ms"], 2)
        if compared is not None:
            row["served_vs_compared"] = round(row["compared"]["p50_ms"] / row["served"]["p50_ms"], 2)
            if callable(marian):
                row["compared_vs_marian"] = round(row["marian"]["p50_ms"] / row["compared"]["p50_ms"], 2)
        out[method if beam == 1 else f"beam{beam}"] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=str(ROOT / "checkpoints" / "en-de"))
    parser.add_argument("--classes", default=",".join(CLASSES), help=f"comma-separated, of {list(CLASSES)}")
    parser.add_argument("--threads", type=int, default=1, help="torch threads on both sides (the app: cores - 1)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--compare", help="another checkout whose served search is timed beside this one's")
    parser.add_argument("--json", help="also write the result to this file (see bench/report.py)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the child's own run
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_class(args.checkpoint, args.threads, args.repeats, args.compare)))
        return
    results: dict = {"cpu": cpu_model(), "sentence_words": len(SENTENCE.split()), "threads": args.threads}
    for name in args.classes.split(","):
        command = [sys.executable, __file__, "--one", name, "--checkpoint", args.checkpoint,
                   "--threads", str(args.threads), "--repeats", str(args.repeats)]
        command += ["--compare", args.compare] if args.compare else []
        done = subprocess.run(command, env=environment(name), capture_output=True, text=True, cwd=ROOT)
        if done.returncode:
            results[name] = {"error": done.stderr[-2000:]}
            continue
        results[name] = {"class": DESCRIPTIONS[name], "emulated": name != "native",
                         **json.loads(done.stdout.strip().splitlines()[-1])}
        print(name, json.dumps(results[name]), flush=True)
    if args.json:
        from report import write_result
        write_result(args.json, results)


if __name__ == "__main__":
    main()
