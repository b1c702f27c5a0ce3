"""Hostile load: page loads and short translations timed while other sessions keep the worst requests they can send in flight, and the app's resident memory after many sessions of the longest input.

Phase "fair": --hostile sessions each keep one worst-case request in flight, round after round, sent the way the
page sends them: the longest text (the app's character limit) at beam 10, a compare of two longest texts at
beam 10, the beam-search tree of a longest-text translation, and heads switched off on one (a new set each
round, with the norm maps). Meanwhile one victim at a time, each from a new session: a page load (the restore
event every page open runs) or a short translation through the public API (`/translate`, gradio_client), in
turn, --victims of each: p50, p95 and max seconds. Then, with --link-victims N, N pages opened in Chromium
(Playwright, /usr/bin/chromium) on a link that carries a short sentence, timed on the page's own clock from
navigation start until the link's translation is in the translation box, and until its views are drawn. Goals: a page load
within 1 s, a short translation within 2 s at p95, a link's translation within 3 s. The page's own events are not public API endpoints, so the hostile requests and the page loads go
through gradio's queue as the browser's do (`tests/app_server.queue_call`).
Phase "memory": --sessions new sessions one after another (--parallel at a time) each translate the longest input
as the page does (the result kept in the session), then the server's resident memory (VmRSS) against its memory
at start. Goal: at most 1 GB more.

Usage: python bench/hostile_load.py [--mode fair|memory|both] [--hostile 8] [--victims 20] [--link-victims 10]
                                    [--sessions 200]
                                    [--parallel 4] [--checkpoint PATH] [--threads N] [--max-minutes 30] [--json PATH]
The server listens on 127.0.0.1 only. Every phase stops at --max-minutes; what was measured by then is
reported, with `stopped_early`. Prints one JSON object.
"""
from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
from app_server import endpoints, queue_call, running_app  # noqa: E402
from transformer.explorer.core.limits import MAX_INPUT_CHARS  # noqa: E402  (the longest text a request may carry)
from load import percentile, rss_kb  # noqa: E402  (bench/, the script's own directory)
from machine import cpu_model  # noqa: E402

GOALS = {"page_load_s": 1.0, "short_translation_p95_s": 2.0, "link_translation_s": 3.0, "rss_growth_mb": 1000}
CHROMIUM = "/usr/bin/chromium"
SENTENCES_EN = [  # my own sentences, repeated to the limit
    "The old lighthouse keeper counted the ships that passed his window every evening.",
    "After the storm, the children collected shells along the empty beach until dark.",
    "My aunt has been teaching mathematics at the same village school for thirty years.",
]
SHORT_EN, SHORT_TOY = "The baby is asleep in the red pram.", "h e l l o"
KINDS = ("encoder", "decoder", "cross")


def longest(toy: bool, seed: int = 0) -> str:
    """A text of exactly the app's character limit: letters for a toy task, English sentences otherwise."""
    rng = random.Random(seed)
    if toy:
        return " ".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(MAX_INPUT_CHARS // 2))[:MAX_INPUT_CHARS]
    text = ""
    while len(text) < MAX_INPUT_CHARS:
        text += rng.choice(SENTENCES_EN) + " "
    return text[:MAX_INPUT_CHARS]


def summary(times: list[float]) -> dict[str, Any]:
    return {"n": len(times), "p50_s": round(statistics.median(times), 3) if times else None,
            "p95_s": round(percentile(times, 95), 3) if times else None,
            "max_s": round(max(times), 3) if times else None}


class Hostile:
    """The worst-case requests, one session each, kept in flight until `stop` is set."""

    def __init__(self, url: str, index: dict[str, int], toy: bool, stop: threading.Event):
        self.url, self.index, self.toy, self.stop = url, index, toy, stop
        self.sent: dict[str, int] = {}
        self.errors: list[str] = []
        self._lock = threading.Lock()

    def call(self, name: str, data: list, session: str, event_data: Any = None) -> dict:
        answer = queue_call(self.url, self.index[name], data, session, event_data)
        with self._lock:
            self.sent[name] = self.sent.get(name, 0) + 1
            if not answer.get("success"):
                self.errors.append(f"{name}: {str(answer.get('output'))[:160]}")
        return answer

    def run(self, which: int) -> None:
        """Session `which`'s round: the kind of request it sends is `which` mod 4."""
        session, kind = str(uuid.uuid4()), ("longest", "compare", "tree", "heads_off")[which % 4]
        rng = random.Random(which)
        for round_ in itertools.count():
            if self.stop.is_set():
                return
            text = longest(self.toy, seed=which * 1000 + round_)
            if kind == "compare":
                self.call("on_compare", [text, longest(self.toy, seed=-which - 1), "beam", 10, None, None, "{}"],
                          session)
                continue
            self.call("translate_view", [text, "beam", 10, None, None, None, ""], session)
            if kind == "tree":
                self.call("on_tree_view", [None, "tree", "{}"], session)  # the tree tab open: records the search
            elif kind == "heads_off":
                off = [[rng.choice(KINDS), 0, rng.randrange(4)] for _ in range(3)]
                self.call("on_rerun", [None], session, {"off": off, "measure": "norm"})


def link_victims(url: str, sentence: str, n: int, deadline: float) -> tuple[dict[str, list[float]], list[str]]:
    """Seconds from navigation start until a link's translation shows, and until its views are drawn, for `n`
    fresh pages (one at a time, each in a new browser context: nothing cached)."""
    from urllib.parse import urlencode

    from playwright import sync_api

    link = f"{url.rstrip('/')}/?{urlencode({'text': sentence, 'method': 'beam', 'beam': 5})}"
    marks = ("() => new Promise((done) => { const seen = {}; const tick = () => {"
             " const t = document.querySelector('#translation textarea, #translation input');"
             " const e = document.querySelector('#explorer .explorer'); const views = (e && e.dataset.views) || '';"
             " if (t && t.value.trim() && !seen.translation) seen.translation = performance.now() / 1000;"
             " if (views.startsWith('views-') && views !== 'views-empty' && !seen.views) seen.views = performance.now() / 1000;"
             " if (seen.translation && seen.views) done(seen); else requestAnimationFrame(tick); }; tick(); })")
    times: dict[str, list[float]] = {"translation": [], "views": []}
    errors: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        for _ in range(n):
            if time.monotonic() > deadline:
                break
            page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
            page.set_default_timeout(60_000)
            try:
                page.goto(link, wait_until="commit")
                seen = page.evaluate(marks)  # on the page's clock: seconds since its navigation started
                for key in times:
                    times[key].append(seen[key])
            except Exception as err:  # counted, not raised: the point is how many fail
                errors.append(f"{type(err).__name__}: {str(err)[:160]}")
            page.context.close()
        browser.close()
    return times, errors


def fair_phase(url: str, toy: bool, n_hostile: int, n_victims: int, deadline: float,
               n_links: int = 0) -> dict[str, Any]:
    """Victims timed one at a time while `n_hostile` sessions keep their worst requests in flight."""
    from gradio_client import Client

    index = endpoints(url)
    client = Client(url, verbose=False)
    short = SHORT_TOY if toy else SHORT_EN
    idle_load, idle_short = timed(lambda: queue_call(url, index["on_restore"], [None], str(uuid.uuid4()))), \
        timed(lambda: client.predict(short, "beam", 5, api_name="/translate"))
    stop = threading.Event()
    hostile = Hostile(url, index, toy, stop)
    pool = ThreadPoolExecutor(max(n_hostile, 1))
    futures = [pool.submit(hostile.run, i) for i in range(n_hostile)]
    time.sleep(2.0)  # every hostile request sent and in flight
    loads, shorts, errors, stopped = [], [], [], False
    for _ in range(n_victims):
        if time.monotonic() > deadline:
            stopped = True
            break
        answer, seconds = timed_answer(lambda: queue_call(url, index["on_restore"], [None], str(uuid.uuid4())))
        (loads if answer.get("success") else errors).append(seconds if answer.get("success") else str(answer))
        try:
            shorts.append(timed(lambda: client.predict(short, "beam", 5, api_name="/translate")))
        except Exception as err:  # counted, not raised: the point is how many fail
            errors.append(f"{type(err).__name__}: {str(err)[:160]}")
    links, link_errors = link_victims(url, short, n_links, deadline) if n_links else ({"translation": []}, [])
    stopped = stopped or len(links["translation"]) + len(link_errors) < n_links
    stop.set()
    for future in futures:  # each finishes the request it has in flight
        future.result()
    pool.shutdown()
    return {"hostile_sessions": n_hostile, "hostile_sent": hostile.sent, "hostile_errors": len(hostile.errors),
            "hostile_error_samples": sorted(set(hostile.errors))[:3], "idle_page_load_s": round(idle_load, 3),
            "idle_short_translation_s": round(idle_short, 3), "page_load": summary(loads),
            "short_translation": summary(shorts), "victim_errors": len(errors), "victim_error_samples": errors[:3],
            "link_translation": summary(links["translation"]), "link_views": summary(links.get("views", [])),
            "link_translation_each_s": [round(t, 2) for t in links["translation"]],
            "link_errors": len(link_errors), "link_error_samples": link_errors[:3],
            "stopped_early": stopped,
            "within_goals": bool(loads and shorts and max(loads) <= GOALS["page_load_s"]
                                 and percentile(shorts, 95) <= GOALS["short_translation_p95_s"]
                                 and (not n_links or (links["translation"] and not link_errors
                                                      and max(links["translation"]) <= GOALS["link_translation_s"])))}


def memory_phase(url: str, pid: int, toy: bool, n_sessions: int, parallel: int, deadline: float) -> dict[str, Any]:
    """`n_sessions` new sessions each keep a translation of the longest input; resident memory against the start."""
    index = endpoints(url)
    start_kb, samples, errors, done = rss_kb(pid), [], [], 0
    lock = threading.Lock()

    def session(k: int) -> None:
        nonlocal done
        if time.monotonic() > deadline:
            return
        answer = queue_call(url, index["translate_view"], [longest(toy, seed=k), "beam", 5, None, None, None, ""],
                            str(uuid.uuid4()))
        with lock:
            done += 1
            if not answer.get("success"):
                errors.append(str(answer.get("output"))[:160])
            if done % max(1, n_sessions // 10) == 0:
                samples.append(round(rss_kb(pid) / 1024, 1))

    with ThreadPoolExecutor(max(parallel, 1)) as pool:
        list(pool.map(session, range(n_sessions)))
    end_kb = rss_kb(pid)
    growth = round((end_kb - start_kb) / 1024, 1)
    return {"sessions": done, "parallel": parallel, "errors": len(errors), "error_samples": errors[:3],
            "rss_start_mb": round(start_kb / 1024, 1), "rss_end_mb": round(end_kb / 1024, 1),
            "rss_growth_mb": growth, "rss_samples_mb": samples, "stopped_early": done < n_sessions,
            "within_goal": growth <= GOALS["rss_growth_mb"]}


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def timed_answer(fn) -> tuple[Any, float]:
    start = time.perf_counter()
    answer = fn()
    return answer, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["fair", "memory", "both"], default="both")
    parser.add_argument("--hostile", type=int, default=8, help="sessions sending worst-case requests")
    parser.add_argument("--victims", type=int, default=20, help="page loads, and short translations, timed")
    parser.add_argument("--link-victims", type=int, default=0,
                        help="pages opened in Chromium on a link, timed until its translation shows")
    parser.add_argument("--sessions", type=int, default=200, help="memory phase: sessions of the longest input")
    parser.add_argument("--parallel", type=int, default=4, help="memory phase: sessions at a time")
    parser.add_argument("--checkpoint", default=None, help="default: en-de if present, else toy-reverse")
    parser.add_argument("--threads", default=None,
                        help="TRANSFORMER_THREADS for the server (default: the app's own, every core but one)")
    parser.add_argument("--max-minutes", type=float, default=30.0, help="each phase stops here, reporting so far")
    parser.add_argument("--json", help="also write the result to this file (see bench/report.py)")
    args = parser.parse_args()

    checkpoint = Path(args.checkpoint).resolve() if args.checkpoint else next(
        (ROOT / "checkpoints" / n for n in ("en-de", "toy-reverse") if (ROOT / "checkpoints" / n / "model.safetensors")
         .is_file()), None)
    if checkpoint is None:
        sys.exit("no checkpoint under checkpoints/; train one or pass --checkpoint")
    env = {"TRANSFORMER_CHECKPOINT": str(checkpoint), "GRADIO_SERVER_NAME": "127.0.0.1"}
    if args.threads:
        env["TRANSFORMER_THREADS"] = str(args.threads)
    toy = checkpoint.name.startswith("toy")
    report: dict[str, Any] = {"checkpoint": str(checkpoint), "server_threads": args.threads or "app default",
                              "goals": GOALS, "cpu": cpu_model()}
    with running_app(env, timeout_s=300) as server:
        report["rss_at_start_mb"] = round(rss_kb(server.pid) / 1024, 1)
        if args.mode in ("fair", "both"):
            deadline = time.monotonic() + args.max_minutes * 60
            report["fair"] = fair_phase(server.url, toy, args.hostile, args.victims, deadline, args.link_victims)
        if args.mode in ("memory", "both"):
            deadline = time.monotonic() + args.max_minutes * 60
            report["memory"] = memory_phase(server.url, server.pid, toy, args.sessions, args.parallel, deadline)
    print(json.dumps(report, indent=1))
    if args.json:
        from report import write_result  # bench/, the script's own directory
        write_result(args.json, report)


if __name__ == "__main__":
    main()
