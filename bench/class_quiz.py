"""Class quiz under a class's load: the real app (`python app.py`, which serves the quiz panel's `/class` routes
beside the explorer) in a subprocess, a teacher, --students students with their own HTTP clients (httpx, async), --questions
questions answered within --answer-window seconds each, and another user translating through the public API
(`/translate`, gradio_client) meanwhile.

Every student polls their question as the page does (every 1.5 s), answers once per question at a random moment
of the window (one or two words), and the projector polls the teacher's tally every second, as board.js does.
Measured:
- `answers_lost`: answers acknowledged (HTTP 200) that the class's final summary does not count (goal 0), and
  answers refused (`answers_failed`);
- `ack_s`: an answer's acknowledgement, p50/p95/max (goal p95 <= 0.5 s);
- `tally_lag_s`: from an answer's acknowledgement to the first projector poll that counts it (goal max <= 2 s);
- `translation_s`: the other user's translations during the quiz, p50/p95 (goal p95 <= 1.5 s);
- the restart: the app is killed (SIGKILL) once question --restart-after's answers are in, started again on the
  same database and port; `restart.resumed` says the class came back on that question with every answer given
  before the kill, and `restart.down_s` how long the class was away.
With --store, also the store alone: --threads threads answering at once, a connection per thread against one
connection under a lock (answers per second).

Usage: python bench/class_quiz.py [--students 100] [--questions 5] [--answer-window 8] [--restart-after 2]
                                  [--checkpoint checkpoints/en-de] [--store] [--json bench/results/class_quiz.json]
Run it alone on the machine (flock /tmp/browser.lock ...). Prints one JSON object.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
from app_server import free_port
from browser_latency import commit_of
from load import percentile
from machine import cpu_model
from report import write_result

log = logging.getLogger("class_quiz")
GOALS = {"answers_lost": 0, "ack_p95_s": 0.5, "tally_lag_max_s": 2.0, "translation_p95_s": 1.5}
SENTENCE = "The tired farmer sold three brown cows at the market yesterday."  # my own
OTHER_USER = ["A small boat waits by the old stone bridge.", "My brother cooks soup for his friends on Fridays.",
              "The children painted the garden wall in bright colours."]  # my own
STUDENT_POLL_S, BOARD_POLL_S = 1.5, 1.0
# idle connections dropped before the server's keep-alive (uvicorn: 5 s) closes them: a request sent on a
# connection the server is closing fails (a browser sends it again; httpx does not)
LIMITS = httpx.Limits(keepalive_expiry=4.0)


def summary(values: list[float]) -> dict[str, Any]:
    return {"n": len(values), "p50": round(statistics.median(values), 4) if values else None,
            "p95": round(percentile(values, 95), 4) if values else None,
            "max": round(max(values), 4) if values else None}


# ----------------------------------------------------------------------------- the app


@dataclass
class App:
    """`python app.py` on `port` over the database `db`; started and killed by this bench."""

    port: int
    db: Path
    checkpoint: str
    log_path: Path
    process: subprocess.Popen | None = None
    env: dict[str, str] = field(default_factory=dict)  # added to the app's environment

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 180.0) -> float:
        """Start it and wait until the class routes answer: the seconds it took."""
        env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(self.port),
               "TRANSFORMER_CLASS_DB": str(self.db), "TRANSFORMER_CHECKPOINT": self.checkpoint,
               "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1", **self.env}
        started = time.monotonic()
        with open(self.log_path, "ab") as out:
            self.process = subprocess.Popen([sys.executable, str(ROOT / "app.py")], cwd=ROOT,
                                            env=env, stdout=out, stderr=subprocess.STDOUT)
        while time.monotonic() - started < timeout_s:
            if self.process.poll() is not None:
                raise RuntimeError(f"the app exited: {self.log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url + "/class", timeout=2) as response:
                    if response.status == 200:
                        return time.monotonic() - started
            except OSError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"the app did not answer within {timeout_s} s")

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, as a crash or a closed laptop lid would be."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


# ----------------------------------------------------------------------------- the class


@dataclass
class Record:
    acks: list[float] = field(default_factory=list)  # seconds from send to 200
    acked: dict[int, set[int]] = field(default_factory=dict)  # question -> students whose answer was acknowledged
    ack_times: dict[int, list[tuple[float, float]]] = field(default_factory=dict)  # question -> (sent, acked) times
    failed: list[str] = field(default_factory=list)
    board: dict[int, list[tuple[float, int]]] = field(default_factory=dict)  # question -> (time, answered)
    translations: list[float] = field(default_factory=list)


class Student:
    """One phone: its own HTTP client, token and answers."""

    def __init__(self, number: int, base: str, code: str, rng: random.Random):
        self.number, self.code, self.rng = number, code, rng
        self.client = httpx.AsyncClient(base_url=base, timeout=30, limits=LIMITS)
        self.headers: dict[str, str] = {}

    async def join(self) -> None:
        response = await self.client.post(f"/class/api/{self.code}/join", json={})
        response.raise_for_status()
        self.headers = {"X-Student-Token": response.json()["student_token"]}

    async def poll(self, stop: asyncio.Event) -> None:
        """The page's poll of its question, until `stop` (errors while the app restarts are expected)."""
        while not stop.is_set():
            try:
                await self.client.get(f"/class/api/{self.code}/question", headers=self.headers)
            except httpx.HTTPError:
                pass
            await asyncio.sleep(STUDENT_POLL_S * self.rng.uniform(0.8, 1.2))

    async def answer(self, question: int, n_words: int, window_s: float, record: Record) -> None:
        await asyncio.sleep(self.rng.uniform(0.2, window_s))
        words = self.rng.sample(range(n_words), self.rng.choice((1, 1, 2)))
        sent = time.monotonic()
        try:
            response = await self.client.post(f"/class/api/{self.code}/answer", headers=self.headers,
                                              json={"question": question, "words": words})
        except httpx.HTTPError as err:
            record.failed.append(f"q{question} s{self.number}: {err!r}")
            return
        if response.status_code != 200:
            record.failed.append(f"q{question} s{self.number}: {response.status_code} {response.text[:80]}")
            return
        done = time.monotonic()
        record.acks.append(done - sent)
        record.acked.setdefault(question, set()).add(self.number)
        record.ack_times.setdefault(question, []).append((sent, done))


async def projector(client: httpx.AsyncClient, code: str, teacher: dict, record: Record, stop: asyncio.Event) -> None:
    """board.js's poll: the tally every second, each answer count kept with the time it arrived."""
    while not stop.is_set():
        try:
            response = await client.get(f"/class/api/{code}/board", headers=teacher)
            if response.status_code == 200:
                view = response.json()
                record.board.setdefault(view["index"], []).append((time.monotonic(), view["answered"]))
        except httpx.HTTPError:
            pass
        await asyncio.sleep(BOARD_POLL_S)


def other_user(url: str, record: Record, stop: threading.Event, up: threading.Event) -> None:
    """Another user of the app translating through the public API while the class runs (paused while the app
    is down for the restart; a new client after it)."""
    from gradio_client import Client

    rng, client = random.Random(7), None
    while not stop.is_set():
        if not up.wait(0.5):
            client = None
            continue
        started = time.monotonic()
        try:
            client = client or Client(url, verbose=False)
            started = time.monotonic()
            client.predict(rng.choice(OTHER_USER), "beam", 5, api_name="/translate")
            record.translations.append(time.monotonic() - started)
        except Exception as err:  # noqa: BLE001 (a refused translation is reported, not raised)
            client = None
            if up.is_set() and not stop.is_set():
                record.failed.append(f"translation: {err!r}")
        stop.wait(rng.uniform(1.0, 3.0))


def tally_lags(record: Record) -> list[float]:
    """Per acknowledged answer: seconds from its acknowledgement until the projector showed it. The k-th
    acknowledgement of a question is shown by the first view of it, arriving after the answer was sent, that counts
    at least k answers (0 when that view arrived before the acknowledgement: the phone and the projector are two
    connections, and either may be read first)."""
    lags = []
    for question, times in record.ack_times.items():
        polls = record.board.get(question, [])
        for k, (sent, acked) in enumerate(sorted(times, key=lambda pair: pair[1]), start=1):
            seen = next((t for t, answered in polls if t >= sent and answered >= k), None)
            lags.append(max(seen - acked, 0.0) if seen is not None else float("inf"))
    return lags


async def teacher_call(client: httpx.AsyncClient, method: str, path: str, teacher: dict) -> dict:
    body = {} if method == "POST" else None  # state-changing endpoints take JSON only
    response = await client.request(method, path, headers=teacher, json=body)
    response.raise_for_status()
    return response.json()


async def answers(question: int, students: list[Student], window_s: float, client: httpx.AsyncClient,
                  code: str, teacher: dict, record: Record) -> None:
    """One question's answers: every student answers within the window; then a wait until the projector has
    polled past the last one."""
    view = await teacher_call(client, "GET", f"/class/api/{code}/board", teacher)
    assert view["index"] == question and not view["revealed"], view
    n_words = len(view["question"]["words"])
    await asyncio.gather(*(s.answer(question, n_words, window_s, record) for s in students))
    await asyncio.sleep(BOARD_POLL_S * 2.5)


async def restart(app: App, up: threading.Event, client: httpx.AsyncClient, code: str, teacher: dict,
                  question: int, record: Record) -> dict[str, Any]:
    """Kill the app mid-question, start it again on the same database: does the class resume with every answer?"""
    before = await teacher_call(client, "GET", f"/class/api/{code}/board", teacher)
    killed = time.monotonic()
    up.clear()
    app.kill()
    start_s = await asyncio.to_thread(app.start)
    up.set()
    down_s = time.monotonic() - killed
    after = await teacher_call(client, "GET", f"/class/api/{code}/board", teacher)
    acked = len(record.acked.get(question, ()))
    resumed = (after["index"], after["answered"], after["revealed"]) == (question, acked, False)
    return {"question": question + 1, "answered_before_kill": before["answered"], "acknowledged": acked,
            "answered_after_restart": after["answered"], "resumed": resumed, "down_s": round(down_s, 2),
            "start_s": round(start_s, 2)}


async def run_class(app: App, args: argparse.Namespace, up: threading.Event, record: Record) -> dict[str, Any]:
    """Start a class, join the students, run the questions (the app killed and restarted in the middle of
    question --restart-after + 1, after its answers), the summary."""
    rng = random.Random(0)
    async with httpx.AsyncClient(base_url=app.url, timeout=120, limits=LIMITS) as client:
        created_at = time.monotonic()
        response = await client.post("/class/api/classes", json={"sentence": SENTENCE})
        response.raise_for_status()
        created, create_s = response.json(), time.monotonic() - created_at
        code, teacher = created["code"], {"X-Teacher-Token": created["teacher_token"]}
        students = [Student(i, app.url, code, random.Random(rng.random())) for i in range(args.students)]
        joined_at = time.monotonic()
        await asyncio.gather(*(s.join() for s in students))
        join_s, stop, restarted = time.monotonic() - joined_at, asyncio.Event(), None
        pollers = [asyncio.create_task(s.poll(stop)) for s in students]
        pollers.append(asyncio.create_task(projector(client, code, teacher, record, stop)))
        for question in range(min(args.questions, created["questions"])):
            if question:
                await teacher_call(client, "POST", f"/class/api/{code}/next", teacher)
            await answers(question, students, args.answer_window, client, code, teacher, record)
            if question == args.restart_after:
                restarted = await restart(app, up, client, code, teacher, question, record)
            await teacher_call(client, "POST", f"/class/api/{code}/reveal", teacher)
        await teacher_call(client, "POST", f"/class/api/{code}/next", teacher)  # the last: finished
        stop.set()
        await asyncio.gather(*pollers)
        final = await teacher_call(client, "GET", f"/class/api/{code}/summary", teacher)
        await asyncio.gather(*(s.client.aclose() for s in students))
    return {"create_s": round(create_s, 3), "join_all_s": round(join_s, 3), "restart": restarted,
            "summary": final["questions"]}


def lost_answers(record: Record, summary_rows: list[dict]) -> int:
    """Acknowledged answers the final summary does not count."""
    counted = {row["question"]: row["answered"] for row in summary_rows}
    return sum(max(len(students) - counted.get(q, 0), 0) for q, students in record.acked.items())


def store_rate(mode: str, threads: int, per_thread: int) -> float:
    """Answers per second of `threads` threads answering at once, each in a class of its own (reading its tally
    every 10th answer), on a store in `mode`."""
    from transformer.explorer.panels.quiz.questions import Question
    from transformer.explorer.panels.quiz.store import ClassStore

    question = Question("s", ["a", "b", "c"], ["x"], 0, 0, "cross", 0, 0, [0.8, 0.1, 0.1], [0], "role")
    with tempfile.TemporaryDirectory() as tmp:
        store = ClassStore(Path(tmp) / "c.sqlite3", mode=mode)
        codes = [store.create_class([question])[0] for _ in range(threads)]  # a class holds <= 300 students
        tokens = [[store.join(code) for _ in range(per_thread)] for code in codes]

        def work(code: str, mine: list[str]) -> None:
            for i, token in enumerate(mine):
                store.answer(code, token, 0, [i % 3])
                if i % 10 == 0:
                    store.tally(code)

        workers = [threading.Thread(target=work, args=pair) for pair in zip(codes, tokens)]
        started = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - started
        assert sum(store.tally(code).answered for code in codes) == threads * per_thread
        store.close()
    return threads * per_thread / elapsed


def store_bench(threads: int, per_thread: int) -> dict[str, Any]:
    """The store alone, a connection per thread against one connection under a lock (best of 3 each)."""
    return {mode: {"answers_per_s": round(max(store_rate(mode, threads, per_thread) for _ in range(3))),
                   "threads": threads} for mode in ("thread", "shared")}


def report(args: argparse.Namespace, record: Record, result: dict[str, Any]) -> dict[str, Any]:
    lags = tally_lags(record)
    acks, translations = summary(record.acks), summary(record.translations)
    lost = lost_answers(record, result["summary"])
    measured = {"answers_lost": lost, "answers_acknowledged": len(record.acks), "answers_failed": len(record.failed),
                "failures": record.failed[:10], "ack_s": acks, "tally_lag_s": summary(lags),
                "translation_s": translations}
    met = {"answers_lost": lost == 0 and not record.failed, "ack_p95_s": (acks["p95"] or 0) <= GOALS["ack_p95_s"],
           "tally_lag_max_s": (summary(lags)["max"] or 0) <= GOALS["tally_lag_max_s"],
           "translation_p95_s": translations["p95"] is not None and translations["p95"] <= GOALS["translation_p95_s"],
           "restart_resumed": bool(result["restart"] and result["restart"]["resumed"])}
    return {"bench": "class_quiz", "cpu": cpu_model(), "cores": os.cpu_count(), "students": args.students,
            "questions": args.questions, "answer_window_s": args.answer_window, "goals": GOALS, **measured,
            "met": met, **{k: v for k, v in result.items() if k != "summary"}, "summary": result["summary"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--answer-window", type=float, default=8.0, help="seconds in which every student answers")
    parser.add_argument("--restart-after", type=int, default=2, help="kill the app during question N+1 (0: never)")
    parser.add_argument("--checkpoint", default=str(ROOT / "checkpoints" / "en-de"))
    parser.add_argument("--store", action="store_true", help="also the store alone: per-thread against shared")
    parser.add_argument("--json", default=str(ROOT / "bench" / "results" / "class_quiz.json"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per request: the clients share the cores
    out = {"store": store_bench(threads=8, per_thread=250)} if args.store else {}
    with tempfile.TemporaryDirectory() as tmp:
        app = App(free_port(), Path(tmp) / "classes.sqlite3", args.checkpoint, Path(tmp) / "app.log")
        record, up, stop = Record(), threading.Event(), threading.Event()
        try:
            log.info("app up in %.1f s", app.start())
            up.set()
            translator = threading.Thread(target=other_user, args=(app.url + "/", record, stop, up), daemon=True)
            translator.start()
            result = asyncio.run(run_class(app, args, up, record))
        finally:
            stop.set()
            app.stop()
        out = report(args, record, result) | out
    out["commit"] = commit_of(ROOT)  # the code measured
    write_result(args.json, out)  # with the date and the command
    sys.stdout.write(Path(args.json).read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
