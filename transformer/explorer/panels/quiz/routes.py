"""The class quiz's HTTP side: plain JSON endpoints and two light pages under `/class/`, beside gradio's app.

    class_router(ClassStore(default_path()), QuizMaker(...), join_address(host, port)).routes
    # given to the app gradio makes at launch (panel.routes, launch.serve)

Pages (static files of this folder, no build step, nothing from the network): `GET /class` and `/class/{code}`
the student's page (`quiz.html`, `quiz.js`), `GET /class/practice?text=...` the same page for a student alone,
`GET /class/board` the teacher's projector (`board.html`, `board.js`), `GET /class/files/{name}` their files,
`GET /class/qr/{code}.svg` the join link's QR code (segno).
API (`/class/api/...`, JSON in and out; a student's token in the X-Student-Token header, the teacher's in
X-Teacher-Token, never in a URL that is projected):

    POST classes                {"sentence"} or {"questions": [spec]} -> code, teacher token, join link
    POST {code}/join            -> student token
    GET  {code}/question        the open question (its answer only once revealed), the student's answer
    POST {code}/answer          {"question": i, "words": [j] or [j, k]}
    GET  {code}/board           teacher: count answered, guesses per word, the true weights, reveal state
    POST {code}/reveal, /next   teacher
    GET  {code}/summary         teacher: the heads that surprised the class most
    GET  {code}/events          the student's question as Server-Sent Events, pushed at each reveal and next
    GET  {code}/board/events    teacher: the board as Server-Sent Events, at each join and answer too
                                (stream.py; the pages poll the GETs above when a stream fails or is refused)
    GET  practice?text=...      a student alone: the quiz on a sentence, answers included (nothing is kept
                                per student: the page reveals after each guess); &head=3.6&target=2[&kind=]
                                (repeatable) asks a teacher's own questions, so a lesson's links are a quiz

Every error is JSON {"error": message}: 400 malformed, 403 not joined or not the teacher, 404 no such class
(or expired), 409 not the open question, 413 a body over its cap (read bounded), 415 a body that is not JSON
(every POST), 429 a flood or a cap, 503 the database or the model failed. `GET status` says whether the quiz can
run and what the board should say. Nothing a
client sends is ever put into HTML: the pages are static and write every text with textContent. Handlers run on
the server's event loop; every store call (one short SQLite transaction) and the model's work run in worker
threads, so a burst of answers never holds up another user's request.
"""
from __future__ import annotations

import asyncio
import functools
import hmac
import io
import ipaddress
import json
import logging
import os
import re
import secrets
import socket
import threading
import time
import unicodedata
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import segno
from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from transformer.explorer.core.limits import MAX_INPUT_CHARS

from .questions import KINDS, MAX_CHOICES, MAX_QUESTIONS, Question, SpecError
from .store import (
    CODE_ALPHABET,
    CODE_LENGTH,
    ClassError,
    ClassState,
    ClassStore,
    Forbidden,
    NotFound,
    StoreFailed,
    TooMany,
)
from .stream import BOARD_EVERY_S, Changes, ClientCounts, Streams, stream

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
FILES = {"quiz.js": "text/javascript", "board.js": "text/javascript", "events.js": "text/javascript",
         "quiz.css": "text/css"}
PAGE_HEADERS = {"Content-Security-Policy": "default-src 'self'; img-src 'self'; style-src 'self'; "
                                           "script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
                "Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
JSON_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
MAX_BODY = 4096  # bytes of an answer's or a join's body
MAX_CLASS_BODY = 16384  # a teacher's list of questions
CODE = re.compile(f"[{CODE_ALPHABET}]{{{CODE_LENGTH}}}")
FLOOD_ANSWERS, FLOOD_WINDOW_S = 10, 10.0  # answers one student may send in a window
PRACTICE_KEPT = 128  # practice quizzes kept (each one sentence's questions, a few kB)
MAX_WORK = 8  # quizzes (a class's or a practice link's) the model may be making or have waiting, in all
MAX_WORK_PER_CLIENT = 2  # ... and for one client: the rest are asked to retry, nothing queues behind them
START_LIMIT, START_WINDOW_S = 6, 600.0  # classes one client may start within the window
TRUST_FORWARDED = "TRANSFORMER_TRUST_FORWARDED"  # how many proxies in front of the app append X-Forwarded-For
LOOPBACK_NOTE = ("The app listens on {host} only: phones cannot reach it. Start it with GRADIO_SERVER_NAME=0.0.0.0 "
                 "to listen on the local network (it then offers the network what it offers this browser).")


class BadRequest(ClassError):
    status = 400


class TooLarge(ClassError):
    status = 413


class NotJson(ClassError):
    status = 415


class ModelFailed(ClassError):
    status = 503


# ----------------------------------------------------------------------------- where the phones connect


@dataclass(frozen=True)
class JoinAddress:
    """The address phones join at (`base`, no trailing slash), whether phones can reach it, and a line saying so."""

    base: str
    reachable: bool
    note: str


def lan_address() -> str | None:
    """This machine's address on its local network, or None: the source address of a route out (a UDP socket's
    connect sends nothing), else the host name's address."""
    candidates = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.254.254.254", 9))
            candidates.append(probe.getsockname()[0])
        except OSError:
            pass
    try:
        candidates.append(socket.gethostbyname(socket.gethostname()))
    except OSError:
        pass
    return next((ip for ip in candidates if not ipaddress.ip_address(ip).is_loopback), None)


def join_address(host: str | None, port: int) -> JoinAddress:
    """Where phones join when the app listens on `host`:`port`: the LAN address when it listens on every
    interface (0.0.0.0, ::), and a plain note when it listens on the loopback only (phones cannot reach it)."""
    host = (host or "127.0.0.1").strip("[]")
    if host in ("0.0.0.0", "::", ""):
        ip = lan_address()
        if ip is None:
            return JoinAddress(f"http://127.0.0.1:{port}", False,
                               "This machine has no local network address: phones cannot reach the app.")
        return JoinAddress(f"http://{ip}:{port}", True, f"Phones on this network join at http://{ip}:{port}/class")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback:
        return JoinAddress(f"http://{host}:{port}", False, LOOPBACK_NOTE.format(host=host))
    return JoinAddress(f"http://{host}:{port}", True, f"Phones join at http://{host}:{port}/class")


def request_base(request: Request, listening: JoinAddress) -> JoinAddress:
    """The join address for a teacher's request: the address the teacher reached the app by when it is not this
    machine's loopback (a Space, a LAN address), else where the app listens (`join_address`)."""
    host = (request.url.hostname or "").strip("[]")
    try:
        local = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        local = host == ""
    if local:
        return listening
    scheme = request.headers.get("x-forwarded-proto", request.url.scheme)
    base = f"{scheme}://{request.url.netloc}"
    return JoinAddress(base, True, f"Phones join at {base}/class")


def qr_svg(url: str) -> bytes:
    """The QR code of `url` as an SVG document (segno; with its namespace, which an <img> needs)."""
    out = io.BytesIO()
    segno.make(url, error="m").save(out, kind="svg", scale=8, border=2, dark="#000", light="#fff", xmldecl=False)
    return out.getvalue()


# ----------------------------------------------------------------------------- requests


class Flood:
    """At most `limit` requests per key within `window_s` seconds (in memory: a restart forgives)."""

    def __init__(self, limit: int = FLOOD_ANSWERS, window_s: float = FLOOD_WINDOW_S, max_keys: int = 10000):
        self.limit, self.window_s, self.max_keys = limit, window_s, max_keys
        self._times: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def allow(self, key: str) -> bool:
        now = time.monotonic()
        with self._lock:
            if len(self._times) >= self.max_keys:
                self._times = {k: t for k, t in self._times.items() if t and t[-1] > now - self.window_s}
            times = self._times.setdefault(key, deque())
            while times and times[0] <= now - self.window_s:
                times.popleft()
            if len(times) >= self.limit:
                return False
            times.append(now)
            return True


def trusted_proxies() -> int:
    """How many proxies in front of the app append the client's address to X-Forwarded-For: the setting
    TRANSFORMER_TRUST_FORWARDED (a number; 0 trusts no header), else 1 on a Space (its proxy sets it), else 0:
    anyone can write that header, so it counts only where a proxy is known to overwrite what a client wrote."""
    value = os.environ.get(TRUST_FORWARDED, "").strip()
    if value:
        if value.isdigit():
            return int(value)
        log.warning("%s=%r is not a number of proxies: the forwarded address is not trusted", TRUST_FORWARDED, value)
        return 0
    return 1 if os.environ.get("SPACE_ID") else 0


def client_address(request: Request, proxies: int) -> str:
    """The client's address: the one the `proxies`-th proxy from the app saw (the entries before it are what the
    client wrote itself, never trusted), else the connection's own."""
    direct = request.client.host if request.client else "unknown"
    if proxies <= 0:
        return direct
    hops = [hop.strip() for hop in ",".join(request.headers.getlist("x-forwarded-for")).split(",") if hop.strip()]
    if len(hops) < proxies:
        return direct
    try:
        return str(ipaddress.ip_address(hops[-proxies]))
    except ValueError:
        return direct


def owner_key(address: str, secret: bytes) -> str:
    """Whom a class belongs to: the client's address (an IPv6 client by its /64, which one machine holds whole)
    hashed with this process's `secret`: no address is ever stored."""
    try:
        ip = ipaddress.ip_address(address)
        if ip.version == 6 and ip.ipv4_mapped is None:
            address = str(ipaddress.ip_network(f"{ip}/64", strict=False))
    except ValueError:
        pass
    return hmac.new(secret, address.encode(), "sha256").hexdigest()[:32]


class WorkGate(ClientCounts):
    """At most `total` quizzes being made (or waiting for the model), `per_client` of them one client's: past
    that a request is refused at once (TooMany) rather than queued behind everyone else's model work."""

    def __init__(self, total: int = MAX_WORK, per_client: int = MAX_WORK_PER_CLIENT):
        super().__init__(total, per_client, "Many quizzes are being made right now: try again in a moment.",
                         "Your last quizzes are still being made: wait for them.")

    @contextmanager
    def slot(self, client: str) -> Iterator[None]:
        self.take(client)
        try:
            yield
        finally:
            self.give_back(client)


async def read_json(request: Request, limit: int = MAX_BODY) -> Any:
    """The request's JSON body, read no further than `limit` bytes (TooLarge past it, BadRequest when it is not
    JSON); {} for an empty body. NotJson unless it says it is application/json, an empty body too: a page of
    another site can send a form or a plain-text body without asking, never a JSON one (the browser asks first,
    and this app does not answer that question), so no cross-site form reaches a state-changing endpoint."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json":
        raise NotJson('Send JSON, with the header "Content-Type: application/json".')
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > limit):
        raise TooLarge(f"The request body is over {limit} bytes.") if length.isdigit() else BadRequest("Bad length.")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise TooLarge(f"The request body is over {limit} bytes.")
    if not body:
        return {}
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("The request body is not JSON.") from None


def room(code: str) -> str:
    """A room code as typed (any case); NotFound for one that cannot exist (never echoed back)."""
    code = code.strip().upper()
    if not CODE.fullmatch(code):
        raise NotFound("No class has this code: check the code on the board.")
    return code


def token_of(request: Request, header: str) -> str:
    token = request.headers.get(header, "")
    if not 10 <= len(token) <= 100:
        raise Forbidden(f"The {header} header is missing.") if not token else BadRequest(f"Bad {header}.")
    return token


def answer_of(body: Any) -> tuple[int, list[int]]:
    """(question, words) of an answer's body; BadRequest for anything else."""
    if not isinstance(body, dict) or set(body) != {"question", "words"}:
        raise BadRequest('An answer is {"question": number, "words": [one or two word numbers]}.')
    question, words = body["question"], body["words"]
    if not _small_int(question) or not isinstance(words, list) or not 1 <= len(words) <= MAX_CHOICES:
        raise BadRequest(f"Choose one or {MAX_CHOICES} words.")
    if not all(_small_int(w) for w in words) or len(set(words)) != len(words):
        raise BadRequest("Words are given by their numbers, each once.")
    return question, words


def practice_request(params: Any) -> tuple[tuple, dict[str, Any]]:
    """A practice link's query (`text`, and optionally `head`, `target`, `kind`, the first two repeated
    together) -> (a key for the cache, the request for `make_quiz`); BadRequest saying what is wrong (never
    echoing it). Other parameters are left alone (a lesson's page may add its own)."""
    texts, heads, targets, kinds, models = (params.getlist(name) for name in ("text", "head", "target", "kind",
                                                                              "model"))
    if len(models) > 1 or any(not 0 < len(m) <= 100 for m in models):
        raise BadRequest("A practice link names at most one model.")
    if len(texts) != 1:
        raise BadRequest("A practice link needs one text: /class/practice?text=a+sentence")
    text = texts[0].strip()
    if not text or len(text) > MAX_INPUT_CHARS:
        raise BadRequest(f"The text must be 1 to {MAX_INPUT_CHARS} characters.")
    if any(unicodedata.category(c) in ("Cc", "Cs") and c not in "\t\n" for c in text):
        raise BadRequest("The text holds control characters.")
    text = " ".join(text.split())
    if len(heads) != len(targets) or len(heads) > MAX_QUESTIONS:
        raise BadRequest(f"Give each head with its target (head=3.6&target=2), at most {MAX_QUESTIONS} of them.")
    if kinds and (not heads or len(kinds) not in (1, len(heads))):
        raise BadRequest("kind goes with head and target: once for all questions, or once for each.")
    if not all(t.isascii() and t.isdigit() and len(t) <= 3 for t in targets):
        raise BadRequest("target must be the number of an output token, from 0.")
    if not all(k in KINDS for k in kinds):
        raise BadRequest(f"kind must be one of {', '.join(KINDS)}.")
    kinds = kinds * len(heads) if len(kinds) == 1 else kinds or ["cross"] * len(heads)
    specs = [{"sentence": text, "head": h, "target": int(t), "kind": k} for h, t, k in zip(heads, targets, kinds)]
    key = (text, tuple((s["head"], s["target"], s["kind"]) for s in specs), *models)
    model = {"model": models[0]} if models else {}
    return key, ({"questions": specs} if specs else {"sentence": text}) | model


def practice_link(question: Question, model: str | None = None) -> str:
    """The link that asks `question` alone, of `model` (a teacher copies it into a lesson)."""
    query = {"text": question.sentence, "head": question.head_label, "target": question.row}
    query |= ({"kind": question.kind} if question.kind != "cross" else {}) | ({"model": model} if model else {})
    return "/class/practice?" + urlencode(query)


def practice_view(question: Question, model: str | None = None) -> dict[str, Any]:
    """A practice question as the page gets it: all of it, answers included (the page reveals them after the
    student's guess; nothing is kept per student), and its own link."""
    return {**question.public(True), "link": practice_link(question, model)}


def model_of(key: tuple) -> dict[str, str]:
    """The model a practice key names ({} for the default)."""
    return {"model": key[2]} if len(key) > 2 else {}


def _small_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10000


def json_errors(handler: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Response]]:
    """`handler`'s answer as JSON; a ClassError as {"error": message} with its status."""

    @functools.wraps(handler)
    async def answer(*args: Any, **kwargs: Any) -> Response:
        try:
            result = await handler(*args, **kwargs)
        except ClassError as err:
            headers = {**JSON_HEADERS, **({"Retry-After": "2"} if err.status in (429, 503) else {})}
            return JSONResponse({"error": err.message}, err.status, headers=headers)
        except Exception:  # a bug: still JSON the pages can show, the details in the log
            log.exception("class quiz: %s failed", handler.__name__)
            return JSONResponse({"error": "The quiz failed on this request: try again."}, 500, headers=JSON_HEADERS)
        return result if isinstance(result, Response) else JSONResponse(result, headers=JSON_HEADERS)

    return answer


# ----------------------------------------------------------------------------- the routes


def question_view(state: ClassState, show_answer: bool) -> dict[str, Any]:
    """The open question as the pages get it."""
    return {"index": state.current, "count": len(state.questions), "revealed": state.revealed,
            "finished": state.finished, "expires": state.expires, "question": state.question.public(show_answer)}


class ClassRoutes:
    """The handlers over one store; `make_quiz` turns a teacher's request into questions (the model's work)."""

    def __init__(self, store: ClassStore, make_quiz: Callable[[dict[str, Any]], list[Question]] | None,
                 listening: JoinAddress, proxies: int = 0):
        self.store, self.make_quiz, self.listening, self.proxies = store, make_quiz, listening, proxies
        self.flood = Flood()
        self.starts = Flood(START_LIMIT, START_WINDOW_S)
        self.work = WorkGate()
        self.changes, self.streams = Changes(), Streams()  # the pages' streams of changes
        self._secret = secrets.token_bytes(32)  # per process: owners are forgotten at a restart
        self.practised: OrderedDict[tuple, list[dict[str, Any]]] = OrderedDict()  # key -> the questions' views
        self.making: dict[tuple, asyncio.Future] = {}  # practice quizzes being made: one model run per key

    async def practice(self, request: Request) -> dict[str, Any]:
        """A student's practice quiz on a sentence (or a teacher's questions on it), made once per link by the
        same `make_quiz` as a class's, kept for the next student (PRACTICE_KEPT links); nothing per student."""
        key, body = practice_request(request.query_params)
        if key not in self.practised:
            if self.make_quiz is None:
                raise ClassError("This app cannot make quizzes: no model is loaded.")
            making = self.making.get(key)
            if making is None:
                client = self.owner(request)
                self.work.take(client)
                making = self.making[key] = asyncio.ensure_future(run_in_threadpool(self.make_quiz, body))
                making.add_done_callback(functools.partial(self._made, key, client))
            try:
                await asyncio.shield(making)
            except SpecError as err:
                raise BadRequest(str(err)) from None
            except ClassError:
                raise
            except Exception:
                log.exception("a practice quiz on %d characters", len(key[0]))
                raise ModelFailed("The model could not make this quiz: try again, or another sentence.") from None
        self.practised.move_to_end(key)
        questions = self.practised[key]
        return {"sentence": key[0], "count": len(questions), "questions": questions,
                "more": "/class/practice?" + urlencode({"text": key[0], **model_of(key)}) if key[1] else None}

    def owner(self, request: Request) -> str:
        return owner_key(client_address(request, self.proxies), self._secret)

    def _made(self, key: tuple, client: str, made: asyncio.Future) -> None:
        """A practice quiz made (kept, the oldest dropped past PRACTICE_KEPT) or failed (not kept: asked again)."""
        self.making.pop(key, None)
        self.work.give_back(client)
        if made.cancelled() or made.exception() is not None:
            return
        self.practised[key] = [practice_view(q, model_of(key).get("model")) for q in made.result()]
        while len(self.practised) > PRACTICE_KEPT:
            self.practised.popitem(last=False)

    async def create(self, request: Request) -> dict[str, Any]:
        body = await read_json(request, MAX_CLASS_BODY)
        if not isinstance(body, dict):
            raise BadRequest('Start a class with {"sentence": text} or {"questions": [...]}.')
        if "model" in body and (not isinstance(body["model"], str) or not 0 < len(body["model"]) <= 100):
            raise BadRequest("model names one of the app's models.")
        if self.make_quiz is None:
            raise ClassError("This app cannot make quizzes: no model is loaded.")
        available, why = await self.db(self.store.health)
        if not available:  # said before the model works for nothing
            raise StoreFailed(why)
        owner = self.owner(request)
        try:
            with self.work.slot(owner):  # first: a start refused while earlier ones are being made is not counted
                if not self.starts.allow(owner):
                    raise TooMany(f"You started {START_LIMIT} classes in the last few minutes: wait a little.")
                questions = await run_in_threadpool(self.make_quiz, body)
        except SpecError as err:
            raise BadRequest(str(err)) from None
        except ClassError:
            raise
        except Exception:
            log.exception("a class's quiz")
            raise ModelFailed("The model could not make this quiz: try again, or another sentence.") from None
        code, token = await self.db(lambda: self.store.create_class(questions, owner=owner))
        where = request_base(request, self.listening)
        return {"code": code, "teacher_token": token, "join_url": f"{where.base}/class/{code}",
                "reachable": where.reachable, "note": where.note, "questions": len(questions),
                "notice": self.store.notice}

    @staticmethod
    async def db(call: Callable[..., Any], *args: Any) -> Any:
        """A store call in a worker thread: a burst of answers never holds up the event loop that serves
        everyone else (the store serialises its own writes)."""
        return await run_in_threadpool(call, *args)

    async def status(self, request: Request) -> dict[str, Any]:
        """Whether the quiz can run, and what the board should say (a database moved aside, or why not)."""
        available, notice = await self.db(self.store.health)
        return {"available": available, "notice": notice}

    async def join(self, request: Request, code: str) -> dict[str, Any]:
        await read_json(request)
        token = await self.db(self.store.join, room(code))
        self.changes.changed(room(code))
        return {"student_token": token}

    async def question(self, request: Request, code: str) -> dict[str, Any]:
        code, token = room(code), token_of(request, "X-Student-Token")
        return await self.db(self._question, code, token)

    def _question(self, code: str, token: str) -> dict[str, Any]:
        state = self.store.state(code)
        mine = self.store.my_answer(code, token, state.current)
        return {**question_view(state, state.revealed), "my_answer": mine}

    async def answer(self, request: Request, code: str) -> dict[str, Any]:
        code, token = room(code), token_of(request, "X-Student-Token")
        question, words = answer_of(await read_json(request))
        if not self.flood.allow(token):
            raise TooMany("Too many answers at once: wait a moment.")
        changes = await self.db(self.store.answer, code, token, question, words)
        self.changes.changed(code)
        return {"question": question, "words": sorted(words), "changes": changes}

    async def _teacher(self, request: Request, code: str) -> str:
        code, token = room(code), token_of(request, "X-Teacher-Token")
        if not await self.db(self.store.is_teacher, code, token):
            await self.db(self.store.state, code)  # NotFound first, for a class that is not there
            raise Forbidden("Only the teacher who started this class can do that.")
        return code

    async def board(self, request: Request, code: str) -> dict[str, Any]:
        code = await self._teacher(request, code)
        return await self.db(self._board, code)

    def _board(self, code: str) -> dict[str, Any]:
        state, tally = self.store.state(code), self.store.tally(code)
        return {**question_view(state, True), "answered": tally.answered, "students": tally.students,
                "counts": tally.counts}

    async def reveal(self, request: Request, code: str) -> dict[str, Any]:
        return await self._move(request, code, self.store.reveal)

    async def next(self, request: Request, code: str) -> dict[str, Any]:
        return await self._move(request, code, self.store.next_question)

    async def _move(self, request: Request, code: str, move: Callable[[str], ClassState]) -> dict[str, Any]:
        await read_json(request)
        code = await self._teacher(request, code)
        state = await self.db(move, code)
        self.changes.changed(code, question=True)
        return question_view(state, True)

    async def student_events(self, request: Request, code: str) -> Response:
        """The student's question as Server-Sent Events (a wrong token or code is a JSON error first)."""
        code, token = room(code), token_of(request, "X-Student-Token")
        await self.db(self._question, code, token)
        return stream(self.streams, "student " + token, lambda: self._question(code, token), self.changes, code,
                      "question")

    async def board_events(self, request: Request, code: str) -> Response:
        """The teacher's board as Server-Sent Events, a burst of answers read as one event."""
        code = await self._teacher(request, code)
        return stream(self.streams, "teacher " + token_of(request, "X-Teacher-Token"), lambda: self._board(code),
                      self.changes, code, "any", BOARD_EVERY_S)

    async def summary(self, request: Request, code: str) -> dict[str, Any]:
        code = await self._teacher(request, code)
        state, missed = await self.db(lambda: (self.store.state(code), self.store.missed(code)))
        rows = [{**summary_row(state.questions[i], answered, n_missed), "question": i}
                for i, answered, n_missed in missed]
        return {"questions": sorted(rows, key=lambda r: -r["missed_share"])}

    async def qr(self, request: Request, code: str) -> Response:
        code = room(code)
        await self.db(self.store.state, code)
        svg = qr_svg(f"{request_base(request, self.listening).base}/class/{code}")
        return Response(svg, media_type="image/svg+xml", headers=PAGE_HEADERS)


def summary_row(question: Question, answered: int, missed: int) -> dict[str, Any]:
    """One question's line of the summary: its head and how many guessed none of its answer words."""
    return {"head": question.head_label, "kind": question.kind, "target": question.translation[question.target],
            "answer": [question.words[i] for i in question.answers], "role": question.role, "answered": answered,
            "missed": missed, "missed_share": round(missed / answered, 3) if answered else 0.0}


def page(name: str) -> Callable[[], Awaitable[Response]]:
    async def serve_page() -> Response:
        return FileResponse(HERE / name, media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)

    return serve_page


async def static_file(name: str) -> Response:
    if name not in FILES:
        return JSONResponse({"error": "No such file."}, 404, headers=JSON_HEADERS)
    return FileResponse(HERE / name, media_type=FILES[name], headers=PAGE_HEADERS)


def class_router(store: ClassStore, make_quiz: Callable[[dict[str, Any]], list[Question]] | None = None,
                 listening: JoinAddress | None = None, proxies: int | None = None) -> APIRouter:
    """The `/class` routes over `store` (pages first: /class/board before /class/{code}); `proxies` in front
    that set X-Forwarded-For (default: `trusted_proxies()`)."""
    routes = ClassRoutes(store, make_quiz, listening or join_address("127.0.0.1", 7860),
                         trusted_proxies() if proxies is None else proxies)
    router = APIRouter(prefix="/class")
    router.add_api_route("", page("quiz.html"), methods=["GET"], include_in_schema=False)
    router.add_api_route("/board", page("board.html"), methods=["GET"], include_in_schema=False)
    router.add_api_route("/practice", page("quiz.html"), methods=["GET"], include_in_schema=False)
    router.add_api_route("/files/{name}", static_file, methods=["GET"], include_in_schema=False)
    router.add_api_route("/qr/{code}.svg", json_errors(routes.qr), methods=["GET"], include_in_schema=False)
    router.add_api_route("/api/classes", json_errors(routes.create), methods=["POST"])
    router.add_api_route("/api/practice", json_errors(routes.practice), methods=["GET"])
    router.add_api_route("/api/status", json_errors(routes.status), methods=["GET"])
    for path, handler, method in (("join", routes.join, "POST"), ("question", routes.question, "GET"),
                                  ("answer", routes.answer, "POST"), ("board", routes.board, "GET"),
                                  ("reveal", routes.reveal, "POST"), ("next", routes.next, "POST"),
                                  ("summary", routes.summary, "GET"), ("events", routes.student_events, "GET"),
                                  ("board/events", routes.board_events, "GET")):
        router.add_api_route(f"/api/{{code}}/{path}", json_errors(handler), methods=[method])
    router.add_api_route("/{code}", page("quiz.html"), methods=["GET"], include_in_schema=False)
    return router
