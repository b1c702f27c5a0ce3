"""A translation's latency by the thread it runs on: torch's OpenMP thread pools and where the app's model work runs.

torch on Linux x86 runs its intra-op parallel work on OpenMP (GNU libgomp). libgomp keeps one thread pool for
every thread that has run parallel work, and while the pools hold more threads than the machine has cores it
stops spinning between parallel regions ("throttled" waiting): each region then wakes its threads through the
kernel. A search runs thousands of small regions, so a model loaded on one thread and run on another (a
web app: loaded by the main thread, searched on a worker thread) paid that on every operation. The app now
loads and runs every model on its batcher's thread alone (`Explorer`).

Three layouts, each in a fresh process, timed over the same sentences (beam 5, attention, as the app serves):
- `main_thread`: load and translate on the main thread (what the CLI and the other benches do);
- `two_pools`: load on the main thread, translate on another thread (the app before: two pools);
- `one_pool`: load and translate on the same non-main thread, the main thread runs no torch work (the app now).

    python bench/thread_pools.py --checkpoint checkpoints/en-de --threads 2
Prints one JSON object (p50 and p95 in ms per layout, and each layout over `one_pool`).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from machine import cpu_model  # noqa: E402  (bench/, the script's own directory)

SENTENCES = [  # my own sentences
    "A tall man in a blue jacket carries a ladder down the street.",
    "The baby is asleep in the red pram.",
    "My grandfather repairs old bicycles in his garage every Sunday.",
    "Where is the tram stop for the zoo?",
]
LAYOUTS = ("main_thread", "two_pools", "one_pool")


def measure(layout: str, checkpoint: str, threads: int, repeats: int) -> dict[str, float]:
    """In this process: load and time translations in `layout`; p50/p95 in ms."""
    import torch

    from transformer import load_pretrained

    torch.set_num_threads(threads)
    times: list[float] = []

    def run(tr=None) -> None:
        tr = tr or load_pretrained(checkpoint, quantize="int8")
        for sentence in SENTENCES:  # warm-up
            tr.translate(sentence, method="beam", beam_size=5, output_attentions=True)
        for _ in range(repeats):
            for sentence in SENTENCES:
                start = time.perf_counter()
                tr.translate(sentence, method="beam", beam_size=5, output_attentions=True)
                times.append(time.perf_counter() - start)

    if layout == "main_thread":
        run()
    else:  # two_pools: loaded here, on the main thread; one_pool: loaded on the worker that translates
        worker = threading.Thread(target=run, args=(load_pretrained(checkpoint, quantize="int8"),)
                                  if layout == "two_pools" else ())
        worker.start()
        worker.join()
    ordered = sorted(times)
    return {"p50_ms": round(1000 * statistics.median(ordered), 1),
            "p95_ms": round(1000 * ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=str(ROOT / "checkpoints" / "en-de"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=10, help="rounds over the sentences")
    parser.add_argument("--layout", choices=LAYOUTS, help=argparse.SUPPRESS)  # one layout, in a child process
    parser.add_argument("--json", help="also write the result to this file (see bench/report.py)")
    args = parser.parse_args()
    if args.layout:
        print(json.dumps(measure(args.layout, args.checkpoint, args.threads, args.repeats)))
        return
    report: dict = {"cpu": cpu_model(), "threads": args.threads, "checkpoint": args.checkpoint,
                    "sentences": len(SENTENCES), "repeats": args.repeats}
    for layout in LAYOUTS:  # each in a fresh process: a pool, once made, lasts as long as its thread
        out = subprocess.run([sys.executable, __file__, "--layout", layout, "--checkpoint", args.checkpoint,
                              "--threads", str(args.threads), "--repeats", str(args.repeats)],
                             check=True, capture_output=True, text=True)
        report[layout] = json.loads(out.stdout.strip().splitlines()[-1])
    for layout in ("main_thread", "two_pools"):
        report[f"{layout}_over_one_pool"] = round(report[layout]["p50_ms"] / report["one_pool"]["p50_ms"], 2)
    print(json.dumps(report))
    if args.json:
        from report import write_result  # bench/, the script's own directory
        write_result(args.json, report)


if __name__ == "__main__":
    main()
