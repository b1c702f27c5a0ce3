"""Where a class lives: classes, students and answers in one SQLite file (the standard library's sqlite3, WAL).

    store = ClassStore(default_path())           # TRANSFORMER_CLASS_DB, else ~/.cache/transformer-explorer/
    code, teacher = store.create_class(questions)
    student = store.join(code)
    store.answer(code, student, 0, [3])
    store.tally(code)                            # Tally: answered, guesses per word

Every write is one short transaction, committed before the call returns: killing the app mid-lesson loses no
acknowledged answer (WAL with synchronous=NORMAL survives a process's death; only a power cut may lose the last
commits). Bounded: at most MAX_CLASSES live classes (MAX_LIVE_PER_OWNER per client), MAX_STUDENTS per class, MAX_CHANGES
answers per student and question; a class ends UNJOINED_MINUTES after it starts when nobody joins, IDLE_MINUTES
after it was last used, CLASS_HOURS after it starts at the latest, and is then deleted (at open, and lazily every
PURGE_EVERY_S). Past a cap the least used class goes first, so that a teacher with no class running can always
start one, and a client that starts many only ever loses its own.
No names, no addresses: a student is a random token (kept hashed, as the teacher's is), a join time and answers.
Robust: every SQLite error is a StoreFailed (the routes' JSON 503) and a failed statement or COMMIT is rolled back,
so the connection is never left inside a transaction; a damaged file found at start is moved aside (kept, with
its -wal and -shm, as `<name>.damaged-<UTC time>`), a fresh one made and `notice` says so; a folder that cannot
hold the file never stops the app: each call says the quiz is unavailable (and tries again a little later).
Safe for many threads: one connection under a lock (`mode="shared"`, the default) or a connection per thread
(`mode="thread"`, which waits on SQLite's own write lock instead): both measure alike, far above a class's needs
(`bench/class_quiz.py --store`, docs/benchmarks.md). The routes call the store from worker threads, never on the
server's event loop.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import json
import logging
import os
import secrets
import sqlite3
import threading
import time
from datetime import datetime, timezone
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .questions import MAX_CHOICES, Question, quiz_from_json, quiz_json

log = logging.getLogger(__name__)

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: read off a projector
CODE_LENGTH = 6
MAX_CLASSES = 200  # live classes in all; past it the least used one goes (`_make_room`)
MAX_LIVE_PER_OWNER = 3  # live classes one client (`owner`) may hold; past it its own unused one goes
UNJOINED_MINUTES = 20.0  # a class no student joins ends this long after it starts
IDLE_MINUTES = 60.0  # a joined class ends this long after its last join, answer, reveal or next
MAX_STUDENTS = 300
MAX_CHANGES = 5  # answers a student may give to one question (the first included)
CLASS_HOURS = 4.0
PURGE_EVERY_S = 60.0
RETRY_OPEN_S = 30.0  # an unusable database is tried again after this long (a folder made writable, room made)
ENV_PATH = "TRANSFORMER_CLASS_DB"
SPACE_DATA = Path("/data")  # a Space's persistent storage, when it has some
DAMAGED = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)

SCHEMA = """
CREATE TABLE IF NOT EXISTS classes (
    code TEXT PRIMARY KEY,
    teacher TEXT NOT NULL,          -- sha256 of the teacher's token
    created REAL NOT NULL,
    expires REAL NOT NULL,
    quiz TEXT NOT NULL,             -- the questions with their maps, computed once (JSON)
    current INTEGER NOT NULL DEFAULT 0,
    revealed INTEGER NOT NULL DEFAULT 0,
    finished INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS students (
    id INTEGER PRIMARY KEY,
    token TEXT NOT NULL UNIQUE,     -- sha256 of the student's token
    code TEXT NOT NULL REFERENCES classes(code) ON DELETE CASCADE,
    joined REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS students_code ON students(code);
CREATE TABLE IF NOT EXISTS answers (
    code TEXT NOT NULL REFERENCES classes(code) ON DELETE CASCADE,
    question INTEGER NOT NULL,
    student INTEGER NOT NULL REFERENCES students(id) ON DELETE CASCADE,
    words TEXT NOT NULL,            -- the chosen word indices, JSON
    changes INTEGER NOT NULL DEFAULT 1,
    time REAL NOT NULL,
    PRIMARY KEY (student, question)
);
CREATE INDEX IF NOT EXISTS answers_question ON answers(code, question);
"""
# columns added after the first release: a file made by it gains them at open
ADDED_COLUMNS = {"owner": "TEXT NOT NULL DEFAULT ''", "ends": "REAL"}


class ClassError(Exception):
    """A request the store refuses; `status` is the HTTP status the routes answer with."""

    status = 400

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class NotFound(ClassError):
    status = 404


class NotOpen(ClassError):
    status = 409


class TooMany(ClassError):
    status = 429


class Forbidden(ClassError):
    status = 403


class StoreFailed(ClassError):
    """The database failed (full disk, read-only or unusable folder, damage): the quiz cannot go on right now,
    the explorer is untouched."""

    status = 503


class Damaged(Exception):
    """SQLite's own check found the file damaged."""


@dataclass(frozen=True)
class ClassState:
    """A live class as the routes read it."""

    code: str
    questions: list[Question]
    current: int
    revealed: bool
    finished: bool
    expires: float

    @property
    def question(self) -> Question:
        return self.questions[self.current]


@dataclass(frozen=True)
class Tally:
    """One question's answers: how many answered (of how many joined), and guesses per word."""

    question: int
    answered: int
    students: int
    counts: list[int]


def default_path() -> Path:
    """TRANSFORMER_CLASS_DB; else, on a Space with persistent storage (a writable /data), /data/classes.sqlite3,
    which outlives a restart; else classes.sqlite3 in ~/.cache/transformer-explorer/. The store makes the folder."""
    if os.environ.get(ENV_PATH):
        return Path(os.environ[ENV_PATH])
    if os.environ.get("SPACE_ID") and SPACE_DATA.is_dir() and os.access(SPACE_DATA, os.W_OK | os.X_OK):
        return SPACE_DATA / "classes.sqlite3"
    return Path.home() / ".cache" / "transformer-explorer" / "classes.sqlite3"


def failure_message(err: sqlite3.Error) -> str:
    """What a teacher or student is told when the database fails (the log has the details)."""
    code = getattr(err, "sqlite_errorcode", None)
    if code == sqlite3.SQLITE_FULL:
        return "The class database is full (no room left on the disk): what was saved is kept; try again later."
    if code == sqlite3.SQLITE_READONLY:
        return "The class database cannot be written (it is read-only): what was saved is kept."
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return "The class database is busy: try again in a moment."
    return "The class database failed: try again in a moment."


@functools.lru_cache(maxsize=64)
def parsed_quiz(text: str) -> tuple[Question, ...]:
    """A class's questions from their JSON, parsed once per class (the quiz never changes)."""
    return tuple(quiz_from_json(text))


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


class ClassStore:
    """Classes, students and answers in the SQLite file at `path` (created with its folder); `clock` gives the
    time (seconds), `mode` "shared" (one connection under a lock) or "thread" (a connection per thread).
    Never raises for the file: `notice` says when a damaged one was moved aside, `health` whether it works."""

    def __init__(self, path: Path | str, clock: Callable[[], float] = time.time, mode: str = "shared"):
        if mode not in ("thread", "shared"):
            raise ValueError(f"mode must be 'thread' or 'shared', got {mode!r}")
        self.path, self.clock, self.mode = Path(path), clock, mode
        self.notice = ""
        self._local = threading.local()
        self._lock = threading.RLock() if mode == "shared" else None
        self._shared: sqlite3.Connection | None = None
        self._connections: list[sqlite3.Connection] = []
        self._all = threading.Lock()
        self._opening = threading.Lock()
        self._ready = False
        self._failed_at = -RETRY_OPEN_S
        self._unavailable = ""
        self._last_purge = 0.0
        with contextlib.suppress(StoreFailed):  # logged: the quiz says it is unavailable, the app goes on
            self._ensure_open()

    # ------------------------------------------------------------------------- opening

    def _ensure_open(self) -> None:
        """Open the database once (a damaged file moved aside); StoreFailed while it cannot be, tried again
        every RETRY_OPEN_S."""
        if self._ready:
            return
        with self._opening:
            if self._ready:
                return
            if time.monotonic() - self._failed_at < RETRY_OPEN_S:
                raise StoreFailed(self._unavailable)
            try:
                self._open()
            except (sqlite3.Error, OSError, Damaged) as err:
                self.close()
                log.error("class quiz unavailable: cannot use the database %s: %s", self.path, err)
                self._failed_at = time.monotonic()
                self._unavailable = ("The class quiz is unavailable right now: its database cannot be used. "
                                     "The explorer works as usual.")
                raise StoreFailed(self._unavailable) from None
            self._ready = True
        self.purge_expired()

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._set_up()
        except (sqlite3.DatabaseError, Damaged) as err:
            if isinstance(err, sqlite3.DatabaseError) and getattr(err, "sqlite_errorcode", None) not in DAMAGED:
                raise
            self._move_aside(err)
            self.close()  # after the move: closing deletes a -wal it found, whatever it holds
            self._set_up()

    def _set_up(self) -> None:
        """Check the file (SQLite's quick_check: classes are few, it is quick) and make or update the tables."""
        with self._lock or contextlib.nullcontext():
            db = self._connection()
            check = db.execute("PRAGMA quick_check").fetchall()
            if check != [("ok",)]:
                raise Damaged("; ".join(str(row[0]) for row in check[:3]))
            db.executescript(SCHEMA)  # its own transaction
            present = {row[1] for row in db.execute("PRAGMA table_info(classes)")}
            for column, kind in ADDED_COLUMNS.items():
                if column not in present:
                    db.execute(f"ALTER TABLE classes ADD COLUMN {column} {kind}")

    def _move_aside(self, err: Exception) -> None:
        """Keep a damaged file (with its -wal and -shm) as `<name>.damaged-<UTC time>` for inspection."""
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        kept = self.path.with_name(f"{self.path.name}.damaged-{stamp}")
        for suffix in ("", "-wal", "-shm"):
            source = self.path.with_name(self.path.name + suffix)
            if source.exists():
                os.replace(source, kept.with_name(kept.name + suffix))
        log.warning("the class database %s is damaged (%s): kept as %s, a fresh one started", self.path, err, kept)
        self.notice = (f"The class database was damaged: it is kept as {kept.name} and a fresh one was started. "
                       "Classes started before are gone.")

    def health(self) -> tuple[bool, str]:
        """(whether the quiz can run, what the board should say: the notice, or why it cannot)."""
        try:
            self._ensure_open()
        except StoreFailed as err:
            return False, err.message
        return True, self.notice

    # ------------------------------------------------------------------------- connections

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None, check_same_thread=self.mode == "thread")
        with self._all:
            self._connections.append(db)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        return db

    def _connection(self) -> sqlite3.Connection:
        if self.mode == "shared":
            if self._shared is None:
                self._shared = self._connect()
            return self._shared
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = self._connect()
        return db

    @contextmanager
    def _transaction(self, write: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction (BEGIN IMMEDIATE for a write: no lock upgrade to fail halfway), committed on exit;
        anything failing, the COMMIT included, rolls it back; an SQLite error becomes StoreFailed."""
        self._ensure_open()
        with self._lock or contextlib.nullcontext():
            try:
                db = self._connection()
                db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except sqlite3.Error as err:
                raise self._failed(err) from err
            try:
                yield db
                db.execute("COMMIT")
            except BaseException as err:
                self._roll_back(db)
                if isinstance(err, sqlite3.Error):
                    raise self._failed(err) from err
                raise

    def _roll_back(self, db: sqlite3.Connection) -> None:
        """End a failed transaction (SQLite may have ended it already); a connection that cannot is dropped,
        the next call opens another."""
        if not db.in_transaction:
            return
        try:
            db.execute("ROLLBACK")
        except sqlite3.Error:
            log.exception("class database: a rollback failed, the connection is dropped")
            self._drop(db)

    def _drop(self, db: sqlite3.Connection) -> None:
        with self._all:
            if db in self._connections:
                self._connections.remove(db)
        with contextlib.suppress(sqlite3.Error):
            db.close()
        if self._shared is db:
            self._shared = None
        if getattr(self._local, "db", None) is db:
            self._local.db = None

    def _failed(self, err: sqlite3.Error) -> StoreFailed:
        log.error("class database %s: %s (%s)", self.path, err, getattr(err, "sqlite_errorname", "?"))
        return StoreFailed(failure_message(err))

    def close(self) -> None:
        """Close every connection (each thread's too); the file stays."""
        with self._all:
            for db in self._connections:
                try:
                    db.close()
                except sqlite3.ProgrammingError:  # made in another thread: closed when that thread ends
                    pass
            self._connections.clear()
        self._local = threading.local()
        self._shared = None

    # ------------------------------------------------------------------------- classes

    def purge_expired(self) -> int:
        """Delete expired classes with their students and answers; how many classes went."""
        now = self.clock()
        self._last_purge = now
        with self._transaction() as db:
            gone = db.execute("DELETE FROM classes WHERE expires <= ?", (now,)).rowcount
        if gone:
            log.info("deleted %d expired classes", gone)
        return gone

    def _purge_now_and_then(self) -> None:
        if self.clock() - self._last_purge >= PURGE_EVERY_S:
            self.purge_expired()

    def create_class(self, questions: Sequence[Question], hours: float = CLASS_HOURS,
                     owner: str = "") -> tuple[str, str]:
        """A new class over `questions` (their maps as computed now): (room code, teacher token). `owner` is who
        starts it (an opaque key for the client); TooMany when no class can make room (`_make_room`)."""
        if not questions:
            raise ClassError("a class needs at least one question")
        self._purge_now_and_then()
        token, now = secrets.token_urlsafe(24), self.clock()
        with self._transaction() as db:
            self._make_room(db, owner, now)
            code = self._free_code(db)
            ends = now + hours * 3600
            db.execute("INSERT INTO classes (code, teacher, created, expires, quiz, owner, ends) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)", (code, digest(token), now, min(ends, now + UNJOINED_MINUTES * 60),
                                                        quiz_json(questions), owner, ends))
        log.info("class %s started with %d questions", code, len(questions))
        return code, token

    def _make_room(self, db: sqlite3.Connection, owner: str, now: float) -> None:
        """Room for `owner`'s new class. Past MAX_LIVE_PER_OWNER its own finished or unjoined class goes (TooMany
        when each has students); past MAX_CLASSES the least used class goes: finished, then unjoined, then the
        one of the client holding most, then the one untouched longest; a class in use only for an owner with
        no class running."""
        mine = db.execute("SELECT COUNT(*) FROM classes WHERE owner = ? AND expires > ?", (owner, now)).fetchone()[0]
        if owner and mine >= MAX_LIVE_PER_OWNER:
            used = self._least_used(db, now, owner)
            if used is None or not (used[1] or not used[2]):
                raise TooMany(f"You have {mine} classes running: finish one (or let it end) to start another.")
            self._end(db, used[0], "its owner started another")
            mine -= 1
        live = db.execute("SELECT COUNT(*) FROM classes WHERE expires > ?", (now,)).fetchone()[0]
        if live < MAX_CLASSES:
            return
        used = self._least_used(db, now)
        if used is None or (mine and not (used[1] or not used[2])):
            raise TooMany(f"{MAX_CLASSES} classes are running: try again when one has ended")
        self._end(db, used[0], "the app holds its most classes")

    @staticmethod
    def _least_used(db: sqlite3.Connection, now: float, owner: str | None = None) -> tuple[str, int, int] | None:
        """(code, finished, students) of the live class to end first. An owner's own: finished, then unjoined,
        oldest first. Of all: finished; then unjoined, of the client holding most, newest first (a flood's own
        latest, never a teacher's class that students are joining); then the one untouched longest."""
        joined = "(SELECT COUNT(*) FROM students s WHERE s.code = c.code)"
        if owner is not None:
            return db.execute(f"SELECT c.code, c.finished, {joined} AS n FROM classes c WHERE c.expires > ? AND "
                              "c.owner = ? ORDER BY c.finished DESC, n > 0, c.created LIMIT 1", (now, owner)).fetchone()
        return db.execute(
            f"SELECT c.code, c.finished, {joined} AS n FROM classes c WHERE c.expires > ? ORDER BY c.finished DESC, "
            "n > 0, (SELECT COUNT(*) FROM classes o WHERE o.owner = c.owner AND o.expires > ?) DESC, "
            "CASE WHEN n > 0 THEN c.expires ELSE -c.created END LIMIT 1", (now, now)).fetchone()

    @staticmethod
    def _end(db: sqlite3.Connection, code: str, why: str) -> None:
        db.execute("DELETE FROM classes WHERE code = ?", (code,))
        log.info("class %s ended early: %s", code, why)

    def _touch(self, db: sqlite3.Connection, code: str) -> None:
        """A joined class in use lives IDLE_MINUTES more (CLASS_HOURS after its start at the latest); written
        only when that moves its end by a minute or more."""
        until = self.clock() + IDLE_MINUTES * 60
        db.execute("UPDATE classes SET expires = MIN(COALESCE(ends, expires), ?) WHERE code = ? AND expires < ? "
                   "AND EXISTS (SELECT 1 FROM students WHERE code = ?)", (until, code, until - 60, code))

    @staticmethod
    def _free_code(db: sqlite3.Connection) -> str:
        for _ in range(20):
            code = new_code()
            if db.execute("SELECT 1 FROM classes WHERE code = ?", (code,)).fetchone() is None:
                return code
        raise TooMany("no free room code: try again")

    def state(self, code: str) -> ClassState:
        """The live class of `code`; NotFound when there is none or it expired."""
        with self._transaction(write=False) as db:
            row = self._class_row(db, code)
        return ClassState(code, list(parsed_quiz(row[0])), row[1], bool(row[2]), bool(row[3]), row[4])

    def _class_row(self, db: sqlite3.Connection, code: str) -> tuple:
        row = db.execute("SELECT quiz, current, revealed, finished, expires FROM classes WHERE code = ?",
                         (code,)).fetchone()
        if row is None:
            raise NotFound(f"No class has the code {code!r}: check the code on the board.")
        if row[4] <= self.clock():
            raise NotFound("This class has ended (a class ends when nobody uses it for a while).")
        return row

    def is_teacher(self, code: str, token: str) -> bool:
        """Whether `token` is the teacher's of `code` (compared in constant time)."""
        with self._transaction(write=False) as db:
            row = db.execute("SELECT teacher, expires FROM classes WHERE code = ?", (code,)).fetchone()
        return row is not None and row[1] > self.clock() and hmac.compare_digest(row[0], digest(token))

    def _move(self, code: str, sql: str) -> ClassState:
        with self._transaction() as db:
            self._class_row(db, code)
            db.execute(sql, (code,))
            self._touch(db, code)
        return self.state(code)

    def reveal(self, code: str) -> ClassState:
        """Show the open question's answer: no more answers to it."""
        return self._move(code, "UPDATE classes SET revealed = 1 WHERE code = ?")

    def next_question(self, code: str) -> ClassState:
        """Open the next question (hidden); after the last one, the class is finished."""
        state = self.state(code)
        if state.current + 1 >= len(state.questions):
            return self._move(code, "UPDATE classes SET revealed = 1, finished = 1 WHERE code = ?")
        return self._move(code, "UPDATE classes SET current = current + 1, revealed = 0 WHERE code = ?")

    # ------------------------------------------------------------------------- students and answers

    def join(self, code: str) -> str:
        """A new anonymous student of `code`: their token. TooMany when the class is full."""
        self._purge_now_and_then()
        token = secrets.token_urlsafe(18)
        with self._transaction() as db:
            self._class_row(db, code)
            joined = db.execute("SELECT COUNT(*) FROM students WHERE code = ?", (code,)).fetchone()[0]
            if joined >= MAX_STUDENTS:
                raise TooMany(f"This class is full ({MAX_STUDENTS} students).")
            db.execute("INSERT INTO students (token, code, joined) VALUES (?, ?, ?)", (digest(token), code,
                                                                                     self.clock()))
            self._touch(db, code)
        return token

    def _student(self, db: sqlite3.Connection, code: str, token: str) -> int:
        row = db.execute("SELECT id FROM students WHERE token = ? AND code = ?", (digest(token), code)).fetchone()
        if row is None:
            raise Forbidden("You have not joined this class: open the join link again.")
        return row[0]

    def answer(self, code: str, token: str, question: int, words: Sequence[int]) -> int:
        """Record (or replace) a student's answer to the open question: the number of answers they have given
        to it. NotOpen when `question` is not the open one or is revealed, TooMany past MAX_CHANGES."""
        with self._transaction() as db:
            row = self._class_row(db, code)
            student = self._student(db, code, token)
            if question != row[1] or row[2] or row[3]:
                raise NotOpen("This question is not open for answers.")
            n_words = len(parsed_quiz(row[0])[question].words)
            if not 1 <= len(set(words)) <= MAX_CHOICES or not all(0 <= i < n_words for i in words):
                raise ClassError(f"Choose one or two of the {n_words} words.")
            changes = db.execute(
                "INSERT INTO answers (code, question, student, words, time) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (student, question) DO UPDATE SET words = excluded.words, time = excluded.time, "
                "changes = answers.changes + 1 WHERE answers.changes < ? RETURNING changes",
                (code, question, student, json.dumps(sorted(set(words))[:MAX_CHOICES]), self.clock(),
                 MAX_CHANGES)).fetchone()
            if changes is None:
                raise TooMany(f"You have changed this answer {MAX_CHANGES - 1} times: it stays as it is.")
            self._touch(db, code)
        return changes[0]

    def my_answer(self, code: str, token: str, question: int) -> list[int] | None:
        """The student's answer to `question`, or None."""
        with self._transaction(write=False) as db:
            self._class_row(db, code)
            student = self._student(db, code, token)
            row = db.execute("SELECT words FROM answers WHERE student = ? AND question = ?",
                             (student, question)).fetchone()
        return json.loads(row[0]) if row else None

    def tally(self, code: str, question: int | None = None) -> Tally:
        """How many answered `question` (default: the open one) and how many guessed each word."""
        with self._transaction(write=False) as db:
            row = self._class_row(db, code)
            question = row[1] if question is None else question
            n_words = len(parsed_quiz(row[0])[question].words)
            students = db.execute("SELECT COUNT(*) FROM students WHERE code = ?", (code,)).fetchone()[0]
            answers = db.execute("SELECT words FROM answers WHERE code = ? AND question = ?",
                                 (code, question)).fetchall()
        counts = [0] * n_words
        for (words,) in answers:
            for i in json.loads(words):
                if 0 <= i < n_words:
                    counts[i] += 1
        return Tally(question, len(answers), students, counts)

    def missed(self, code: str) -> list[tuple[int, int, int]]:
        """Per question: (question, answered, how many guessed none of the answer words)."""
        state = self.state(code)
        with self._transaction(write=False) as db:
            rows = db.execute("SELECT question, words FROM answers WHERE code = ?", (code,)).fetchall()
        answered, missed = [0] * len(state.questions), [0] * len(state.questions)
        for question, words in rows:
            answered[question] += 1
            missed[question] += not set(json.loads(words)) & set(state.questions[question].answers)
        return [(i, answered[i], missed[i]) for i in range(len(state.questions))]

