"""Load test: `python app.py` under concurrent gradio_client users, then a long sequential run for memory growth.

Each request replays what the page does for one Translate press: the undocumented `/translate_view`
(beam 5; the translation and the page's attention payload in one response); `--api-only` sends the
API's `/translate` instead.
Phase 1: --clients concurrent clients x --requests each -> errors, p50/p95 latency, throughput.
Phase 2: --sequential requests from one client -> server VmRSS (from /proc/<pid>/status) before/after.

Usage: python bench/load.py [--clients 16] [--requests 25] [--sequential 1000] [--checkpoint PATH] [--api-only]
Prints one JSON object.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from app_server import running_app  # noqa: E402

SENTENCES_EN = [  # my own sentences
    "A tall man in a blue jacket carries a ladder down the street.",
    "Two dogs are chasing a red ball across the wet sand.",
    "My grandfather repairs old bicycles in his garage every Sunday.",
    "A woman with a green umbrella waits for the bus in the rain.",
]
SENTENCES_TOY = ["q u i c k b r o w n f o x", "h e l l o", "a b c d e f g", "z y x w v u t"]


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))] if ordered else float("nan")


def one_request(client, text: str, api_only: bool) -> None:
    if api_only:
        translation = client.predict(text, "beam", 5, api_name="/translate")[0]
    else:  # the page's request: translation, notice, n-best, the attention payload and the candidate list
        outputs = client.predict(text, "beam", 5, api_name="/translate_view")
        translation, payload = outputs[0], outputs[3]
        if not isinstance(payload, dict) or "kinds" not in payload:
            raise ValueError(f"translate_view returned {str(outputs)[:200]}")
    if not isinstance(translation, str):
        raise TypeError(f"translation is {type(translation).__name__}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=25, help="per client")
    parser.add_argument("--sequential", type=int, default=1000)
    parser.add_argument("--checkpoint", default=None, help="default: multi30k-en-de if present, else toy-reverse")
    parser.add_argument("--threads", default=None, help="TRANSFORMER_THREADS for the server (default: all cores)")
    parser.add_argument("--api-only", action="store_true")
    args = parser.parse_args()

    from gradio_client import Client

    checkpoint = Path(args.checkpoint) if args.checkpoint else next(
        (ROOT / "checkpoints" / n for n in ("multi30k-en-de", "toy-reverse", "toy-copy", "toy-sort")
         if (ROOT / "checkpoints" / n / "model.safetensors").is_file()), None)
    if checkpoint is None:
        sys.exit("no checkpoint under checkpoints/; train one or pass --checkpoint")
    env = {"TRANSFORMER_CHECKPOINT": str(checkpoint)}
    if args.threads:
        env["TRANSFORMER_THREADS"] = str(args.threads)
    sentences = SENTENCES_TOY if checkpoint.name.startswith("toy") else SENTENCES_EN
    report: dict = {"checkpoint": str(checkpoint), "api_only": args.api_only, "server_threads": args.threads or "all"}

    with running_app(env, timeout_s=300) as server:
        report["rss_start_mb"] = round(rss_kb(server.pid) / 1024, 1)
        clients = [Client(server.url, verbose=False) for _ in range(max(args.clients, 1))]
        one_request(clients[0], sentences[0], args.api_only)  # warm-up

        # phase 1: concurrent
        latencies: list[float] = []
        errors: list[str] = []

        def user(i: int) -> None:
            for j in range(args.requests):
                start = time.perf_counter()
                try:
                    one_request(clients[i], sentences[(i + j) % len(sentences)], args.api_only)
                    latencies.append(time.perf_counter() - start)
                except Exception as err:  # counted, not raised: the point is how many fail
                    errors.append(f"{type(err).__name__}: {str(err)[:120]}")

        start = time.perf_counter()
        if args.clients and args.requests:
            with ThreadPoolExecutor(args.clients) as pool:
                list(pool.map(user, range(args.clients)))
        wall = time.perf_counter() - start
        n = args.clients * args.requests
        report["concurrent"] = {
            "clients": args.clients, "requests": n, "errors": len(errors), "error_samples": sorted(set(errors))[:3],
            "p50_s": round(statistics.median(latencies), 3) if latencies else None,
            "p95_s": round(percentile(latencies, 95), 3) if latencies else None,
            "throughput_rps": round(len(latencies) / wall, 2) if wall > 0 else None, "wall_s": round(wall, 1),
        }
        report["rss_after_concurrent_mb"] = round(rss_kb(server.pid) / 1024, 1)

        # phase 2: sequential, memory growth
        rss_before = rss_kb(server.pid)
        samples = []
        seq_latencies = []
        seq_errors = 0
        for k in range(args.sequential):
            start = time.perf_counter()
            try:
                one_request(clients[0], sentences[k % len(sentences)], args.api_only)
                seq_latencies.append(time.perf_counter() - start)
            except Exception:
                seq_errors += 1
            if k % max(1, args.sequential // 5) == 0:
                samples.append(round(rss_kb(server.pid) / 1024, 1))
        rss_after = rss_kb(server.pid)
        report["sequential"] = {
            "requests": args.sequential, "errors": seq_errors,
            "p50_s": round(statistics.median(seq_latencies), 3) if seq_latencies else None,
            "rss_before_mb": round(rss_before / 1024, 1), "rss_after_mb": round(rss_after / 1024, 1),
            "rss_growth_mb": round((rss_after - rss_before) / 1024, 1), "rss_samples_mb": samples,
        }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
