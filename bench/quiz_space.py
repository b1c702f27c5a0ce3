"""Class quiz on a shared public app: a lecture of three classes at once, a burst of answers and a stranger
starting classes, each beside another user translating, with real HTTP clients against `python app.py`.

The app runs with TRANSFORMER_TRUST_FORWARDED=1, as behind a Space's proxy, so that the bench's clients can
come from different addresses (each sends its own X-Forwarded-For). In order:
- `idle`: another user's translations (`/translate`, gradio_client, beam 5) on the idle app: p50/p95;
- `lecture`: one class of --big students and two of --small at once, each class with its teacher and projector;
  the students join within --join-window seconds, connect as the page does and answer each of --questions
  questions at a random moment of the --answer-window. With --connect stream (the pages' way) every phone and
  projector follows its stream of changes (Server-Sent Events), polling should it fail (`stream_fallbacks`);
  with --connect poll they poll as the pages did before (a phone every 1.5 s, a projector every second). Measured:
  answers acknowledged but not counted (`answers_lost`, goal 0), the acknowledgement (`ack_s`, goal p95 <= 0.3 s),
  from an acknowledgement to the first projector poll that counts it (`board_lag_s`, goal max <= 1 s) and the
  other user's translations meanwhile (`translation_s`, goal p95 <= 1.5x idle);
- `burst`: a class of --burst-students answering each question within 1 s, the other user translating from the
  start of each burst until it is over (`translation_s`, goal p95 <= 1 s);
- `stranger`: one address starting classes as fast as --stranger-workers requests at a time allow for
  --stranger-s seconds; then a teacher from another address starts a class (`teacher_start_s`, goal <= 2 s).
  `stranger_live` is how many live classes the database holds for the stranger (goal <= the per-client cap,
  3), and the app's memory (VmRSS) and the database file (with its -wal) are sampled every second throughout;
  the other user translates meanwhile (`translation_s`).

Usage: python bench/quiz_space.py [--big 300] [--small 100] [--questions 5] [--answer-window 10] [--join-window 20]
                                  [--burst-students 100] [--stranger-s 60] [--connect stream|poll]
                                  [--json bench/results/quiz_space.json]
Prints one JSON object.
"""
from __future__ import annotations

import argparse
import asyncio
import functools
import json
import logging
import os
import random
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]
from app_server import free_port
from browser_latency import commit_of
from class_quiz import (
    BOARD_POLL_S,
    LIMITS,
    OTHER_USER,
    App,
    Record,
    Student,
    lost_answers,
    projector,
    summary,
    tally_lags,
    teacher_call,
)
from machine import cpu_model
from report import write_result

log = logging.getLogger("quiz_space")
GOALS = {"answers_lost": 0, "ack_p95_s": 0.3, "board_lag_max_s": 1.0, "lecture_translation_p95_vs_idle": 1.5,
         "burst_translation_p95_s": 1.0, "teacher_start_s": 2.0, "stranger_live_max": 3}
SENTENCES = ["The tired farmer sold three brown cows at the market yesterday.",
             "Our teacher reads a long story to the class every Monday morning.",
             "The old woman gave her neighbour a basket of fresh apples.",
             "Two young doctors walked home through the quiet park last night.",
             "The little girl found a red kite in the tall grass near the river."]  # my own
STRANGER, TEACHER = "203.0.113.9", "198.51.100.7"  # documentation addresses (RFC 5737)


def address(ip: str) -> dict[str, str]:
    """The header the app's one trusted proxy would have set for a client at `ip`."""
    return {"X-Forwarded-For": ip}


# ----------------------------------------------------------------------------- the other user and the app's size


class Translator:
    """Another user of the app, translating through the public API; every translation's seconds, by phase."""

    def __init__(self, url: str):
        from gradio_client import Client

        self.client, self.rng = Client(url, verbose=False), random.Random(7)
        self.times: dict[str, list[float]] = {}
        self.failed: list[str] = []
        self._lock = threading.Lock()  # one translation at a time, as one user presses Translate

    def once(self, phase: str) -> None:
        with self._lock:
            started = time.monotonic()
            try:
                self.client.predict(self.rng.choice(OTHER_USER), "beam", 5, api_name="/translate")
            except Exception as err:  # noqa: BLE001 (a refused translation is reported, not raised)
                self.failed.append(f"{phase}: {err!r}")
                return
            self.times.setdefault(phase, []).append(time.monotonic() - started)

    async def now_and_then(self, phase: str, stop: asyncio.Event) -> None:
        """A translation every 1-3 s until `stop`."""
        while not stop.is_set():
            await asyncio.to_thread(self.once, phase)
            await asyncio.sleep(self.rng.uniform(1.0, 3.0))

    async def until(self, phase: str, deadline: float) -> None:
        """Translations back to back until `deadline` (monotonic)."""
        while time.monotonic() < deadline:
            await asyncio.to_thread(self.once, phase)


@dataclass
class Sizes:
    """The app's resident memory and the database's size on disk, sampled."""

    rss_mb: list[float] = field(default_factory=list)
    db_mb: list[float] = field(default_factory=list)

    def sample(self, pid: int, db: Path) -> None:
        status = Path(f"/proc/{pid}/status").read_text()
        rss_kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
        self.rss_mb.append(round(rss_kb / 1024, 1))
        files = (db, db.with_name(db.name + "-wal"))
        self.db_mb.append(round(sum(f.stat().st_size for f in files if f.exists()) / 2**20, 3))

    async def watch(self, app: App, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self.sample(app.process.pid, app.db)
            await asyncio.sleep(1.0)


# ----------------------------------------------------------------------------- a page's stream


async def read_stream(client: httpx.AsyncClient, path: str, headers: dict, on_view: Callable[[dict], None]) -> None:
    """A page's stream of changes (events.js): each event's view to `on_view`, until the app ends it; an error
    (refused, failed) raised."""
    async with client.stream("GET", path, headers=headers, timeout=httpx.Timeout(30, read=None)) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith("event: error"):
                raise RuntimeError("the stream said error")
            if line.startswith("data:"):
                on_view(json.loads(line[5:]))


async def follow(client: httpx.AsyncClient, path: str, headers: dict, on_view: Callable[[dict], None],
                 poll: Callable[[], Awaitable[None]], stop: asyncio.Event, fallbacks: list[str]) -> None:
    """As the page does: the stream until `stop`; should it fail, `poll()` instead (each fallback noted)."""
    reading, stopping = asyncio.create_task(read_stream(client, path, headers, on_view)), asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
    for task in (reading, stopping):
        task.cancel()
    if reading in done and not stop.is_set():
        fallbacks.append(repr(reading.exception()) if not reading.cancelled() else "cancelled")
        await poll()


def on_board(record: Record) -> Callable[[dict], None]:
    """What the projector records of each view: its time and the count answered, by question."""
    return lambda view: record.board.setdefault(view["index"], []).append((time.monotonic(), view["answered"]))


def connect(students: list[Student], client: httpx.AsyncClient, code: str, teacher: dict, record: Record,
            stop: asyncio.Event, how: str, fallbacks: list[str]) -> list[asyncio.Task]:
    """The phones and the projector connected as the pages do: polling (`how` "poll"), or each following its
    stream and polling should it fail ("stream")."""
    if how == "poll":
        tasks = [asyncio.create_task(s.poll(stop)) for s in students]
        return [*tasks, asyncio.create_task(projector(client, code, teacher, record, stop))]
    tasks = [asyncio.create_task(follow(s.client, f"/class/api/{code}/events", s.headers, lambda view: None,
                                        functools.partial(s.poll, stop), stop, fallbacks)) for s in students]
    board = follow(client, f"/class/api/{code}/board/events", teacher, on_board(record),
                   functools.partial(projector, client, code, teacher, record, stop), stop, fallbacks)
    return [*tasks, asyncio.create_task(board)]


# ----------------------------------------------------------------------------- a class


async def start_class(client: httpx.AsyncClient, sentence: str, ip: str) -> tuple[str, dict, int, float]:
    """(code, the teacher's header, questions, seconds) of a class started from `ip`."""
    started = time.monotonic()
    response = await client.post("/class/api/classes", json={"sentence": sentence}, headers=address(ip))
    response.raise_for_status()
    created = response.json()
    return (created["code"], {"X-Teacher-Token": created["teacher_token"]}, created["questions"],
            time.monotonic() - started)


async def join_within(student: Student, seconds: float) -> None:
    await asyncio.sleep(student.rng.uniform(0, seconds))
    await student.join()


async def one_question(client: httpx.AsyncClient, code: str, teacher: dict, students: list[Student],
                       question: int, window_s: float, record: Record) -> None:
    """Every student answers `question` within the window; the projector polls past the last one; revealed."""
    view = await teacher_call(client, "GET", f"/class/api/{code}/board", teacher)
    assert view["index"] == question and not view["revealed"], view
    n_words = len(view["question"]["words"])
    await asyncio.gather(*(s.answer(question, n_words, window_s, record) for s in students))
    await asyncio.sleep(BOARD_POLL_S * 2.5)
    await teacher_call(client, "POST", f"/class/api/{code}/reveal", teacher)


async def run_class(url: str, n_students: int, questions: int, window_s: float, join_s: float, sentence: str,
                    ip: str, how: str, together: asyncio.Barrier | None = None) -> dict[str, Any]:
    """A class from start to summary: its students joined (within `join_s` seconds, as a room opens the link)
    and polling, its projector, the questions."""
    record, stop, rng = Record(), asyncio.Event(), random.Random(n_students)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=LIMITS) as client:
        code, teacher, n_questions, start_s = await start_class(client, sentence, ip)
        students = [Student(i, url, code, random.Random(rng.random())) for i in range(n_students)]
        await asyncio.gather(*(join_within(s, join_s) for s in students))
        if together is not None:
            await together.wait()  # every class of the lecture joined: their questions run side by side
        pollers = connect(students, client, code, teacher, record, stop, how, fallbacks := [])
        for question in range(min(questions, n_questions)):
            if question:
                await teacher_call(client, "POST", f"/class/api/{code}/next", teacher)
            await one_question(client, code, teacher, students, question, window_s, record)
        stop.set()
        await asyncio.gather(*pollers)
        final = await teacher_call(client, "GET", f"/class/api/{code}/summary", teacher)
        await asyncio.gather(*(s.client.aclose() for s in students))
    return {"students": n_students, "start_s": round(start_s, 2), "record": record, "fallbacks": fallbacks,
            "lost": lost_answers(record, final["questions"])}


def class_numbers(result: dict[str, Any]) -> dict[str, Any]:
    record = result["record"]
    return {"students": result["students"], "start_s": result["start_s"], "answers_lost": result["lost"],
            "answers_acknowledged": len(record.acks), "answers_failed": len(record.failed),
            "failures": record.failed[:5], "ack_s": summary(record.acks), "board_lag_s": summary(tally_lags(record)),
            "stream_fallbacks": len(result["fallbacks"]), "stream_failures": result["fallbacks"][:3]}


# ----------------------------------------------------------------------------- the phases


async def idle(translator: Translator, n: int) -> None:
    for _ in range(n):
        await asyncio.to_thread(translator.once, "idle")
        await asyncio.sleep(translator.rng.uniform(0.5, 1.5))


async def lecture(url: str, args: argparse.Namespace, translator: Translator) -> dict[str, Any]:
    """Three classes at once (one of --big, two of --small students), each from its own teacher's address."""
    sizes, stop = (args.big, args.small, args.small), asyncio.Event()
    together = asyncio.Barrier(len(sizes) + 1)
    classes = [asyncio.create_task(run_class(url, n, args.questions, args.answer_window, args.join_window, SENTENCES[i],
                                             f"192.0.2.{i + 1}", args.connect, together)) for i, n in enumerate(sizes)]
    all_joined = asyncio.ensure_future(together.wait())
    done, _ = await asyncio.wait([all_joined, *classes], return_when=asyncio.FIRST_COMPLETED)
    for task in done - {all_joined}:
        task.result()  # a class that failed before its questions: its error, not a wait for ever
    await all_joined
    translating = asyncio.create_task(translator.now_and_then("lecture", stop))
    results = await asyncio.gather(*classes)
    stop.set()
    await translating
    return {"classes": [class_numbers(r) for r in results],
            "lost": sum(r["lost"] for r in results),
            "failed": sum(len(r["record"].failed) for r in results),
            "acks": [a for r in results for a in r["record"].acks],
            "board_lags": [lag for r in results for lag in tally_lags(r["record"])]}


async def burst(url: str, args: argparse.Namespace, translator: Translator) -> dict[str, Any]:
    """A class whose --burst-students answer each question within 1 s, the other user translating meanwhile."""
    record, stop, rng = Record(), asyncio.Event(), random.Random(5)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=LIMITS) as client:
        code, teacher, n_questions, _ = await start_class(client, SENTENCES[3], "192.0.2.9")
        students = [Student(i, url, code, random.Random(rng.random())) for i in range(args.burst_students)]
        await asyncio.gather(*(join_within(s, args.join_window) for s in students))
        pollers = connect(students, client, code, teacher, Record(), stop, args.connect, fallbacks := [])
        for question in range(n_questions):
            if question:
                await teacher_call(client, "POST", f"/class/api/{code}/next", teacher)
            view = await teacher_call(client, "GET", f"/class/api/{code}/board", teacher)
            n_words = len(view["question"]["words"])
            began = time.monotonic()
            await asyncio.gather(translator.until("burst", began + 1.0),
                                 *(s.answer(question, n_words, 1.0, record) for s in students))
            await asyncio.sleep(1.0)
            await teacher_call(client, "POST", f"/class/api/{code}/reveal", teacher)
        stop.set()
        await asyncio.gather(*pollers)
        final = await teacher_call(client, "GET", f"/class/api/{code}/summary", teacher)
        await asyncio.gather(*(s.client.aclose() for s in students))
    return {"students": args.burst_students, "bursts": n_questions, "stream_fallbacks": len(fallbacks),
            "answers_acknowledged": len(record.acks),
            "answers_lost": lost_answers(record, final["questions"]), "answers_failed": len(record.failed),
            "ack_s": summary(record.acks)}


async def stranger(url: str, args: argparse.Namespace, db: Path, translator: Translator) -> dict[str, Any]:
    """One address starting classes for --stranger-s seconds, --stranger-workers requests at a time; then a
    teacher from another address."""
    statuses: dict[str, int] = {}
    codes: list[str] = []
    deadline = time.monotonic() + args.stranger_s

    async def worker(client: httpx.AsyncClient, n: int) -> None:
        i = 0
        while time.monotonic() < deadline:
            i += 1
            sentence = f"The stranger number {n} wrote sentence {i} about {i % 7 + 2} grey cats."
            response = await client.post("/class/api/classes", json={"sentence": sentence},
                                         headers=address(STRANGER))
            statuses[str(response.status_code)] = statuses.get(str(response.status_code), 0) + 1
            if response.status_code == 200:
                codes.append(response.json()["code"])

    async with httpx.AsyncClient(base_url=url, timeout=120, limits=LIMITS) as client:
        stop = asyncio.Event()
        translating = asyncio.create_task(translator.now_and_then("stranger", stop))
        await asyncio.gather(*(worker(client, n) for n in range(args.stranger_workers)))
        stop.set()
        await translating
        _, _, _, teacher_s = await start_class(client, SENTENCES[4], TEACHER)  # a new quiz: the model runs
    return {"seconds": args.stranger_s, "workers": args.stranger_workers, "requests": sum(statuses.values()),
            "statuses": statuses, "started": len(codes), "stranger_live": live_classes(db, codes),
            "teacher_start_s": round(teacher_s, 3)}


def live_classes(db: Path, codes: list[str]) -> int | None:
    """Live classes in the database of the owner of `codes` (the stranger's), read-only."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        for code in codes:
            row = con.execute("SELECT owner FROM classes WHERE code = ?", (code,)).fetchone()
            if row:
                return con.execute("SELECT COUNT(*) FROM classes WHERE owner = ? AND expires > ?",
                                   (row[0], time.time())).fetchone()[0]
    return 0 if codes else None


# ----------------------------------------------------------------------------- the run


async def run(app: App, args: argparse.Namespace) -> dict[str, Any]:
    translator, sizes, stop = await asyncio.to_thread(Translator, app.url + "/"), Sizes(), asyncio.Event()
    watching = asyncio.create_task(sizes.watch(app, stop))
    await idle(translator, args.idle_translations)
    log.info("idle done")
    lectured = await lecture(app.url, args, translator)
    log.info("lecture done")
    burst_result = await burst(app.url, args, translator)
    log.info("burst done")
    before_stranger = len(sizes.rss_mb)
    stranger_result = await stranger(app.url, args, app.db, translator)
    stop.set()
    await watching
    return {"translator": translator, "lecture": lectured, "burst": burst_result, "stranger": stranger_result,
            "sizes": sizes, "before_stranger": before_stranger}


def report(args: argparse.Namespace, out: dict[str, Any]) -> dict[str, Any]:
    t, lec, sizes = out["translator"], out["lecture"], out["sizes"]
    idle_s, lecture_s, burst_s, stranger_s = (summary(t.times.get(p, [])) for p in ("idle", "lecture", "burst", "stranger"))
    ratio = round(lecture_s["p95"] / idle_s["p95"], 2) if lecture_s["p95"] and idle_s["p95"] else None
    acks, lags = summary(lec["acks"]), summary(lec["board_lags"])
    before = out["before_stranger"]
    stranger_sizes = {"rss_mb_before": sizes.rss_mb[before - 1], "rss_mb_max": max(sizes.rss_mb[before - 1:]),
                      "db_mb_before": sizes.db_mb[before - 1], "db_mb_max": max(sizes.db_mb[before - 1:])}
    s = out["stranger"]
    met = {"answers_lost": lec["lost"] == 0 and not lec["failed"], "ack_p95_s": acks["p95"] <= GOALS["ack_p95_s"],
           "board_lag_max_s": lags["max"] <= GOALS["board_lag_max_s"],
           "lecture_translation_p95_vs_idle": ratio is not None and ratio <= GOALS["lecture_translation_p95_vs_idle"],
           "burst_translation_p95_s": burst_s["p95"] is not None and burst_s["p95"] <= GOALS["burst_translation_p95_s"],
           "teacher_start_s": s["teacher_start_s"] <= GOALS["teacher_start_s"],
           "stranger_live_max": s["stranger_live"] is not None and s["stranger_live"] <= GOALS["stranger_live_max"]}
    return {"bench": "quiz_space", "cpu": cpu_model(), "cores": os.cpu_count(), "connect": args.connect,
            "goals": GOALS, "met": met,
            "idle": {"translation_s": idle_s},
            "lecture": {"students": args.big + 2 * args.small, "questions": args.questions,
                        "answer_window_s": args.answer_window, "answers_lost": lec["lost"],
                        "answers_failed": lec["failed"], "ack_s": acks, "board_lag_s": lags,
                        "board_lag_p95_s": lags["p95"], "translation_s": lecture_s,
                        "translation_p95_vs_idle": ratio, "classes": lec["classes"]},
            "burst": {**out["burst"], "translation_s": burst_s},
            "stranger": {**s, **stranger_sizes, "translation_s": stranger_s},
            "app": {"rss_mb_max": max(sizes.rss_mb), "db_mb_max": max(sizes.db_mb)},
            "translation_failures": t.failed[:5]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--big", type=int, default=300, help="students of the lecture's big class")
    parser.add_argument("--small", type=int, default=100, help="students of each of its two small classes")
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--answer-window", type=float, default=10.0, help="seconds in which every student answers")
    parser.add_argument("--join-window", type=float, default=20.0, help="seconds in which a class's students join")
    parser.add_argument("--burst-students", type=int, default=100)
    parser.add_argument("--connect", choices=("stream", "poll"), default="stream",
                        help="how the pages hear of changes: their stream (polling should it fail), or polling only")
    parser.add_argument("--idle-translations", type=int, default=20)
    parser.add_argument("--stranger-s", type=float, default=60.0)
    parser.add_argument("--stranger-workers", type=int, default=4)
    parser.add_argument("--checkpoint", default=str(ROOT / "checkpoints" / "en-de"))
    parser.add_argument("--json", default=str(ROOT / "bench" / "results" / "quiz_space.json"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per request: the clients share the cores
    with tempfile.TemporaryDirectory() as tmp:
        app = App(free_port(), Path(tmp) / "classes.sqlite3", args.checkpoint, Path(tmp) / "app.log",
                  env={"TRANSFORMER_TRUST_FORWARDED": "1"})
        try:
            log.info("app up in %.1f s", app.start())
            load_before = os.getloadavg()
            out = report(args, asyncio.run(run(app, args)))
            out["load_average"] = {"before": [round(x, 2) for x in load_before],  # 1, 5, 15 min: others' work too
                                   "after": [round(x, 2) for x in os.getloadavg()]}
        finally:
            app.stop()
    out["commit"] = commit_of(ROOT)  # the code measured
    write_result(args.json, out)  # with the date and the command
    sys.stdout.write(Path(args.json).read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
