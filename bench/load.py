"""Load test: `python app.py` under concurrent gradio_client users, then a long sequential run for memory growth.

Each request replays what the page does for one Translate press: the undocumented `/translate_view`
(beam 5; the translation and the page's attention payload in one response); `--api-only` sends the
API's `/translate` instead.
Phase 1: --clients concurrent clients x --requests each -> errors, p50/p95 latency, throughput, and
`differ_from_lone`: how many answers (translation, n-best table and attention payload, compared whole) differ
from the answer the same sentence got when it was the only request, just before the burst.
`cpu_s`: the CPU seconds the burst cost the server (by thread, its search process's threads included) and this
load generator, which shares its cores; `rss_children_mb`: the search process's memory.
Phase 2, after a 2 s pause: --sequential requests from one client (one press alone: its p50) -> server
VmRSS (from /proc/<pid>/status) before/after.

Usage: python bench/load.py [--clients 16] [--requests 25] [--sequential 1000] [--checkpoint PATH] [--api-only]
                            [--int8-kernel int_mm|packed|float] [--app-dir OTHER_CHECKOUT] [--tls-context-per-call]
The clients share the server's cores, so what they cost is taken from the server: they share one TLS
context (`shared_tls_context`); `--tls-context-per-call` measures the way runs before 2026-11-23 did.
The burst of a class (30 pressing Translate; before/after from the same session, idle machine):
    python bench/load.py --clients 30 --requests 3 --sequential 20 --checkpoint checkpoints/en-de
    python bench/load.py --clients 30 --requests 3 --sequential 20 --checkpoint checkpoints/en-de --no-search-process
    python bench/load.py --clients 30 --requests 3 --sequential 20 --checkpoint checkpoints/en-de --app-dir ../before
Prints one JSON object.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import ssl
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from machine import cpu_model  # noqa: E402  (bench/, the script's own directory)
from app_server import running_app  # noqa: E402

SENTENCES_EN = [  # my own sentences
    "A tall man in a blue jacket carries a ladder down the street.",
    "Two dogs are chasing a red ball across the wet sand.",
    "My grandfather repairs old bicycles in his garage every Sunday.",
    "A woman with a green umbrella waits for the bus in the rain.",
    "The baby is asleep in the red pram.",
    "Our neighbours grow sunflowers that are taller than their garden fence.",
    "Where is the tram stop for the zoo?",
    "After the concert, the musicians packed their instruments and drove back to the city through the night.",
]
PAUSE_S = 2.0  # between the phases
SENTENCES_TOY = ["q u i c k b r o w n f o x", "h e l l o", "a b c d e f g", "z y x w v u t"]



def shared_tls_context() -> ssl.SSLContext:
    """One TLS context for every HTTP call of every client. gradio_client opens a new httpx client per call,
    and httpx builds a TLS context for each (loading certifi's CA bundle), even for plain http: with 30
    clients that was 56 % of the load generator's CPU (py-spy), taken from the 2 cores the server is
    measured on. The users of a real classroom run on their own machines; their browsers reuse connections."""
    import certifi  # httpx's own CA bundle: the same verification as its default

    return ssl.create_default_context(cafile=certifi.where())


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def child_pids(pid: int) -> list[int]:
    """The processes `pid` started (the app's search process), from /proc."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rpartition(")")[2].split()[1]) == pid:
                children.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):  # ended meanwhile
            continue
    return children


def thread_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) each thread of `pid` and of its child processes has used so far, by
    "name:thread id" ("child <pid> name:thread id" for a child's threads) (/proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for process in [pid] + child_pids(pid):
        prefix = "" if process == pid else f"child {process} "
        for task in Path(f"/proc/{process}/task").iterdir():
            try:
                comm = (task / "comm").read_text().strip()
                fields = (task / "stat").read_text().rpartition(")")[2].split()
            except OSError:  # the thread ended between the listing and the read
                continue
            out[f"{prefix}{comm}:{task.name}"] = (int(fields[11]) + int(fields[12])) / tick
    return out


def own_cpu_s() -> float:
    """CPU seconds (user + system) this process has used, its ended threads included."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cpu_spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """CPU seconds per thread between two `thread_cpu_s` snapshots, largest first (threads that ended in
    between are missed)."""
    spent = {k: round(v - before.get(k, 0.0), 2) for k, v in after.items()}
    return dict(sorted(((k, v) for k, v in spent.items() if v > 0), key=lambda kv: -kv[1]))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))] if ordered else float("nan")


def one_request(client, text: str, api_only: bool) -> str:
    """One press; its answer as one string (translation, n-best table and, for the page, the attention payload),
    to compare with the answer the same sentence gets alone."""
    if api_only:
        outputs = client.predict(text, "beam", 5, api_name="/translate")
        answer = outputs[:3]
    else:  # the page's request: translation, notice, n-best, the attention payload and the candidate list
        outputs = client.predict(text, "beam", 5, api_name="/translate_view")
        payload = outputs[3]
        if not isinstance(payload, dict) or "kinds" not in payload:
            raise ValueError(f"translate_view returned {str(outputs)[:200]}")
        # rev, gen, answers: counters of the process and the session (launch.stamped), not the translation's
        answer = [outputs[0], outputs[2], {k: v for k, v in payload.items() if k not in ("rev", "gen", "answers")}]
    if not isinstance(outputs[0], str):
        raise TypeError(f"translation is {type(outputs[0]).__name__}")
    return hashlib.sha256(json.dumps(answer, sort_keys=True, default=str).encode()).hexdigest()


def lone_answers(client, sentences: list[str], api_only: bool) -> dict[str, str]:
    """Each sentence's answer when it is the only request (one after another, the app otherwise idle)."""
    answers = {}
    for text in sentences:
        answers[text] = one_request(client, text, api_only)
        time.sleep(0.05)  # past the batcher's 10 ms window: decoded alone
    return answers


def concurrent_phase(clients: list, sentences: list[str], n_requests: int, api_only: bool,
                     lone: dict[str, str]) -> dict:
    """Every client sends `n_requests` one after another, all clients at once: errors, latency, throughput, and
    how many answers differ from the answer their sentence gets alone (`lone`)."""
    latencies: list[float] = []
    errors: list[str] = []
    differ: list[str] = []

    def user(i: int) -> None:
        for j in range(n_requests):
            start = time.perf_counter()
            text = sentences[(i + j) % len(sentences)]
            try:
                answer = one_request(clients[i], text, api_only)
                latencies.append(time.perf_counter() - start)
                if answer != lone[text]:
                    differ.append(text)
            except Exception as err:  # counted, not raised: the point is how many fail
                errors.append(f"{type(err).__name__}: {str(err)[:120]}")

    start = time.perf_counter()
    if clients and n_requests:
        with ThreadPoolExecutor(len(clients)) as pool:
            list(pool.map(user, range(len(clients))))
    wall = time.perf_counter() - start
    return {
        "clients": len(clients), "requests": len(clients) * n_requests, "errors": len(errors),
        "error_samples": sorted(set(errors))[:3], "differ_from_lone": len(differ),
        "p50_s": round(statistics.median(latencies), 3) if latencies else None,
        "p95_s": round(percentile(latencies, 95), 3) if latencies else None,
        "throughput_rps": round(len(latencies) / wall, 2) if wall > 0 else None, "wall_s": round(wall, 1),
    }


def sequential_phase(client, sentences: list[str], n_requests: int, api_only: bool, pid: int) -> dict:
    """One client, one request at a time (one press alone): latency, and the server's memory growth."""
    rss_before = rss_kb(pid)
    samples, latencies, errors = [], [], 0
    for k in range(n_requests):
        start = time.perf_counter()
        try:
            one_request(client, sentences[k % len(sentences)], api_only)
            latencies.append(time.perf_counter() - start)
        except Exception:
            errors += 1
        if k % max(1, n_requests // 5) == 0:
            samples.append(round(rss_kb(pid) / 1024, 1))
    rss_after = rss_kb(pid)
    return {
        "requests": n_requests, "errors": errors,
        "p50_s": round(statistics.median(latencies), 3) if latencies else None,
        "rss_before_mb": round(rss_before / 1024, 1), "rss_after_mb": round(rss_after / 1024, 1),
        "rss_growth_mb": round((rss_after - rss_before) / 1024, 1), "rss_samples_mb": samples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=25, help="per client")
    parser.add_argument("--sequential", type=int, default=1000)
    parser.add_argument("--checkpoint", default=None, help="default: multi30k-en-de if present, else toy-reverse")
    parser.add_argument("--threads", default=None,
                        help="TRANSFORMER_THREADS for the server (default: the app's own, every core but one)")
    parser.add_argument("--int8-kernel", choices=["int_mm", "packed", "float"],
                        help="TRANSFORMER_INT8_KERNEL for the server (default: the app's probe chooses)")
    parser.add_argument("--app-dir", default=str(ROOT), help="the checkout whose app.py serves (before/after runs)")
    parser.add_argument("--api-only", action="store_true")
    parser.add_argument("--no-search-process", action="store_true",
                        help="TRANSFORMER_SEARCH_PROCESS=0: the app's searches stay in its own process")
    parser.add_argument("--json", help="also write the result to this file (see bench/report.py)")
    parser.add_argument("--tls-context-per-call", action="store_true",
                        help="let gradio_client build a TLS context for every HTTP call, as it does by default "
                             "(the load generator's own CPU cost; how the runs before 2026-11-23 measured)")
    args = parser.parse_args()

    from gradio_client import Client

    checkpoint = Path(args.checkpoint).resolve() if args.checkpoint else next(
        (ROOT / "checkpoints" / n for n in ("multi30k-en-de", "toy-reverse", "toy-copy", "toy-sort")
         if (ROOT / "checkpoints" / n / "model.safetensors").is_file()), None)
    if checkpoint is None:
        sys.exit("no checkpoint under checkpoints/; train one or pass --checkpoint")
    env = {"TRANSFORMER_CHECKPOINT": str(checkpoint)}
    if args.threads:
        env["TRANSFORMER_THREADS"] = str(args.threads)
    if args.int8_kernel:
        env["TRANSFORMER_INT8_KERNEL"] = args.int8_kernel
    if args.no_search_process:
        env["TRANSFORMER_SEARCH_PROCESS"] = "0"
    sentences = SENTENCES_TOY if checkpoint.name.startswith("toy") else SENTENCES_EN
    report: dict = {"checkpoint": str(checkpoint), "app_dir": str(Path(args.app_dir).resolve()),
                    "api_only": args.api_only, "server_threads": args.threads or "app default",
                    "int8_kernel": args.int8_kernel or "app default", "cpu": cpu_model(),
                    "search_process": not args.no_search_process}

    with running_app(env, timeout_s=300, app_dir=Path(args.app_dir)) as server:
        report["tls_context"] = "per call" if args.tls_context_per_call else "shared"
        report["rss_start_mb"] = round(rss_kb(server.pid) / 1024, 1)
        # gradio_client hands `ssl_verify` to httpx as `verify`, which takes a ready TLS context too
        tls = {} if args.tls_context_per_call else {"ssl_verify": shared_tls_context()}
        clients = [Client(server.url, verbose=False, **tls) for _ in range(max(args.clients, 1))]
        one_request(clients[0], sentences[0], args.api_only)  # warm-up
        lone = lone_answers(clients[0], sentences, args.api_only)
        server_cpu, own_cpu = thread_cpu_s(server.pid), own_cpu_s()
        report["concurrent"] = concurrent_phase(clients[: args.clients], sentences, args.requests, args.api_only, lone)
        # where the burst's CPU went: the server's threads, and this load generator's (the same 2 cores)
        server_spent = cpu_spent(server_cpu, thread_cpu_s(server.pid))
        report["concurrent"]["cpu_s"] = {"server": round(sum(server_spent.values()), 2),
                                         "load_generator": round(own_cpu_s() - own_cpu, 2),
                                         "server_threads": server_spent}
        report["rss_after_concurrent_mb"] = round(rss_kb(server.pid) / 1024, 1)
        # the app's search process (transformer/serving/search_process.py), where it runs one: its own memory
        report["rss_children_mb"] = [round(rss_kb(child) / 1024, 1) for child in child_pids(server.pid)]
        time.sleep(PAUSE_S)  # a press alone, not the tail of the burst (the batcher's burst mode ends after 1 s)
        report["sequential"] = sequential_phase(clients[0], sentences, args.sequential, args.api_only, server.pid)
    print(json.dumps(report))
    if args.json:
        from report import write_result  # bench/, the script's own directory
        write_result(args.json, report)


if __name__ == "__main__":
    main()
