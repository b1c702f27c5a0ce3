"""The class quiz's store (transformer/explorer/panels/quiz/store.py) on a real SQLite file in tmp_path: a class
and every answer survive closing and reopening, answers replace each other up to a cap, every cap holds, expired
classes go, many threads answer at once in both connection modes, and nothing about a student but their answers
is kept. Real faults (a full disk, a read-only database, a failed COMMIT, a damaged file, an unusable folder)
give clear errors, keep every answer and never leave the connection inside a transaction."""
from __future__ import annotations

import resource
import signal
import sqlite3
import threading

import numpy as np
import pytest

from transformer.explorer.panels.quiz import store as store_module
from transformer.explorer.panels.quiz.questions import Attended, HeadRole, make_quiz
from transformer.explorer.panels.quiz.store import (
    CODE_ALPHABET,
    IDLE_MINUTES,
    MAX_CHANGES,
    MAX_LIVE_PER_OWNER,
    UNJOINED_MINUTES,
    ClassError,
    ClassStore,
    Forbidden,
    NotFound,
    NotOpen,
    StoreFailed,
    TooMany,
    default_path,
)

SRC = ["▁A", "▁red", "▁kite", "▁flies", ".", "<eos>"]
TGT = ["▁Ein", "▁roter", "▁Drachen", "▁fliegt", ".", "<eos>"]


def questions(n: int = 3):
    cross = np.zeros((1, 4, len(TGT), len(SRC)), np.float32)
    for t in range(len(TGT)):
        cross[:, :, t, t] = 1.0
    attended = Attended("A red kite flies.", SRC, ["<bos>", *TGT[:-1]], TGT, {"cross": cross})
    return make_quiz(attended, {("cross", 0, h): HeadRole(f"role {h}", 1 - h / 10) for h in range(4)}, n=n)


class Clock:
    """A clock the test moves forward (the store takes any `() -> seconds`)."""

    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(tmp_path):
    s = ClassStore(tmp_path / "classes.sqlite3")
    yield s
    s.close()


def test_a_class_and_every_answer_survive_a_restart(tmp_path):
    path = tmp_path / "classes.sqlite3"
    first = ClassStore(path)
    code, teacher = first.create_class(questions())
    students = [first.join(code) for _ in range(5)]
    for i, token in enumerate(students):
        first.answer(code, token, 0, [i % 3])
    first.reveal(code)
    first.next_question(code)
    first.answer(code, students[0], 1, [1, 2])
    first.close()  # the app stops mid-lesson

    again = ClassStore(path)
    state = again.state(code)
    assert (state.current, state.revealed, state.finished) == (1, False, False)
    assert again.tally(code, 0).counts[:3] == [2, 2, 1] and again.tally(code).counts[1:3] == [1, 1]
    assert again.is_teacher(code, teacher) and not again.is_teacher(code, students[0])
    assert again.my_answer(code, students[0], 1) == [1, 2]
    again.close()


def test_answering_again_replaces_up_to_the_cap(store):
    code, _ = store.create_class(questions())
    token = store.join(code)
    for change in range(1, MAX_CHANGES + 1):
        assert store.answer(code, token, 0, [change % 2]) == change
    with pytest.raises(TooMany):
        store.answer(code, token, 0, [2])
    tally = store.tally(code)
    assert (tally.answered, tally.students, sum(tally.counts)) == (1, 1, 1)
    assert store.my_answer(code, token, 0) == [MAX_CHANGES % 2]


def test_only_the_open_unrevealed_question_takes_answers(store):
    code, _ = store.create_class(questions(2))
    token = store.join(code)
    with pytest.raises(NotOpen):
        store.answer(code, token, 1, [0])
    store.reveal(code)
    with pytest.raises(NotOpen):
        store.answer(code, token, 0, [0])
    store.next_question(code)
    store.answer(code, token, 1, [0])
    finished = store.next_question(code)
    assert finished.finished and finished.revealed
    with pytest.raises(NotOpen):
        store.answer(code, token, 1, [1])
    for words in ([], [0, 1, 2], [99]):
        with pytest.raises(ClassError):
            store.answer(code, token, 1, words)


def test_strangers_and_wrong_codes_are_refused(store):
    code, _ = store.create_class(questions())
    other, _ = store.create_class(questions())
    token = store.join(other)
    with pytest.raises(Forbidden):
        store.answer(code, token, 0, [0])  # joined another class
    with pytest.raises(NotFound):
        store.join("ZZZZZZ" if code != "ZZZZZZ" else "YYYYYY")
    assert len(code) == 6 and set(code) <= set(CODE_ALPHABET)


def test_caps_on_students_and_live_classes(store, monkeypatch):
    monkeypatch.setattr(store_module, "MAX_STUDENTS", 3)
    monkeypatch.setattr(store_module, "MAX_CLASSES", 2)
    code, _ = store.create_class(questions(), owner="a")
    for _ in range(3):
        store.join(code)
    with pytest.raises(TooMany):
        store.join(code)
    other, _ = store.create_class(questions(), owner="b")
    store.answer(other, store.join(other), 0, [0])
    with pytest.raises(TooMany, match="classes are running"):  # full of classes in use, and "a" has one
        store.create_class(questions(), owner="a")
    store.create_class(questions(), owner="c")  # no class running: the one untouched longest goes
    with pytest.raises(NotFound):
        store.state(code)
    assert store.tally(other).answered == 1


def test_one_client_holds_at_most_its_share(store):
    first = [store.create_class(questions(), owner="stranger")[0] for _ in range(MAX_LIVE_PER_OWNER)]
    fourth, _ = store.create_class(questions(), owner="stranger")  # its own oldest unjoined class goes
    with pytest.raises(NotFound):
        store.state(first[0])
    live = [*first[1:], fourth]
    for code in live:
        store.join(code)
    with pytest.raises(TooMany, match=f"{MAX_LIVE_PER_OWNER} classes running"):
        store.create_class(questions(), owner="stranger")  # every one in use: none of them goes
    for _ in range(3):
        store.next_question(live[0])  # past its last question: finished
    store.create_class(questions(), owner="stranger")  # a finished one goes first
    store.create_class(questions(), owner="teacher")  # another client is not touched by any of it
    assert all(store.state(code) for code in live[1:])


def test_a_flood_from_many_addresses_never_ends_a_class_in_use(store, monkeypatch):
    monkeypatch.setattr(store_module, "MAX_CLASSES", 6)
    teacher, _ = store.create_class(questions(), owner="teacher")
    waiting, _ = store.create_class(questions(), owner="teacher 2")  # students are still scanning the code
    store.join(teacher)
    for i in range(100):  # a flood: each start from one of 40 addresses, as fast as it can
        store.create_class(questions(), owner=f"stranger {i % 40}")
    assert store.state(teacher) and store.state(waiting)
    late, _ = store.create_class(questions(), owner="late teacher")  # a teacher with no class always starts one
    assert store.state(late)
    db = sqlite3.connect(store.path)
    assert db.execute("SELECT COUNT(*) FROM classes").fetchone()[0] <= 6
    db.close()


def test_a_class_nobody_joins_or_uses_ends_early(tmp_path):
    clock = Clock()
    store = ClassStore(tmp_path / "c.sqlite3", clock=clock)
    unjoined, _ = store.create_class(questions())
    used, _ = store.create_class(questions())
    token = store.join(used)
    clock.now += UNJOINED_MINUTES * 60 + 1
    with pytest.raises(NotFound, match="ended"):
        store.state(unjoined)
    store.join(used)  # a second student, 20 minutes in
    for action in ("answer", "reveal", "next"):  # in use: each within the hour keeps it
        clock.now += IDLE_MINUTES * 60 - 600
        if action == "answer":
            store.answer(used, token, 0, [0])
        else:
            getattr(store, {"reveal": "reveal", "next": "next_question"}[action])(used)
    clock.now += IDLE_MINUTES * 60 - 600
    assert store.state(used).current == 1
    clock.now += 601  # an hour unused, well before the class's last hour
    with pytest.raises(NotFound, match="ended"):
        store.state(used)
    store.close()


def test_expired_classes_are_refused_then_deleted_with_their_answers(tmp_path):
    clock = Clock()
    store = ClassStore(tmp_path / "c.sqlite3", clock=clock)
    code, _ = store.create_class(questions(), hours=4)
    token = store.join(code)
    store.answer(code, token, 0, [1])
    for _ in range(4):  # used every 50 minutes: it still ends 4 hours after its start
        clock.now += 50 * 60
        store.join(code)
    clock.now = 1_000_000.0 + 4 * 3600 - 1
    assert store.tally(code).answered == 1
    clock.now += 2
    with pytest.raises(NotFound, match="ended"):
        store.state(code)
    store.close()
    reopened = ClassStore(tmp_path / "c.sqlite3", clock=clock)  # a start deletes them
    db = sqlite3.connect(tmp_path / "c.sqlite3")
    assert [db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("classes", "students", "answers")] == [0] * 3
    db.close()
    reopened.close()


@pytest.mark.parametrize("mode", ["thread", "shared"])
def test_many_threads_answer_at_once_and_none_is_lost(tmp_path, mode):
    store = ClassStore(tmp_path / "c.sqlite3", mode=mode)
    code, _ = store.create_class(questions())
    tokens = [store.join(code) for _ in range(60)]
    errors: list[BaseException] = []

    def answer(chunk: list[str]) -> None:
        try:
            for i, token in enumerate(chunk):
                store.answer(code, token, 0, [i % 4])
                store.tally(code)
        except BaseException as err:  # noqa: BLE001 (reported below)
            errors.append(err)

    threads = [threading.Thread(target=answer, args=(tokens[k::6],)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert store.tally(code).answered == 60
    store.close()


def test_no_names_no_addresses_and_tokens_kept_hashed(store):
    code, teacher = store.create_class(questions())
    student = store.join(code)
    store.answer(code, student, 0, [0])
    db = sqlite3.connect(store.path)
    columns = {t: [r[1] for r in db.execute(f"PRAGMA table_info({t})")] for t in ("classes", "students", "answers")}
    db.close()
    assert columns["students"] == ["id", "token", "code", "joined"]
    assert not any(c in {"name", "ip", "address", "user_agent"} for cols in columns.values() for c in cols)
    raw = b"".join(p.read_bytes() for p in store.path.parent.glob("classes.sqlite3*"))
    assert teacher.encode() not in raw and student.encode() not in raw
    assert store.path.with_name("classes.sqlite3-wal").exists()  # WAL mode


def test_the_default_file_is_made_where_the_variable_says(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_CLASS_DB", str(tmp_path / "data" / "quiz.sqlite3"))
    assert default_path() == tmp_path / "data" / "quiz.sqlite3"
    store = ClassStore(default_path())
    assert (tmp_path / "data" / "quiz.sqlite3").is_file() and store.health() == (True, "")
    store.close()


def test_on_a_space_with_persistent_storage_the_file_lives_in_data(tmp_path, monkeypatch):
    monkeypatch.delenv("TRANSFORMER_CLASS_DB", raising=False)
    monkeypatch.setattr(store_module, "SPACE_DATA", tmp_path / "data")
    monkeypatch.setenv("SPACE_ID", "someone/quiz")
    assert default_path().parent != tmp_path / "data"  # no persistent storage: the Space's own disk
    (tmp_path / "data").mkdir()
    assert default_path() == tmp_path / "data" / "classes.sqlite3"
    monkeypatch.delenv("SPACE_ID")
    assert default_path().parent != tmp_path / "data"  # not a Space: /data is someone else's


def own_connection(store: ClassStore) -> sqlite3.Connection:
    """The store's one shared connection, where a test makes the database fail for real."""
    return store._connection()


@pytest.mark.parametrize("fault, pragma, says", [
    ("a full disk", "PRAGMA max_page_count = {pages}", "full"),
    ("a read-only database", "PRAGMA query_only = 1", "read-only"),
])
def test_a_failing_database_is_a_clear_error_that_keeps_every_answer(store, fault, pragma, says):
    code, _ = store.create_class(questions())
    tokens = [store.join(code) for _ in range(3)]
    for token in tokens:
        store.answer(code, token, 0, [1])
    db = own_connection(store)
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(pragma.format(pages=pages))
    with pytest.raises(StoreFailed, match=says) as failed:
        for _ in range(200):  # a full disk: the first join that needs a new page fails
            store.join(code)
    assert failed.value.status == 503
    assert not db.in_transaction  # never left mid-transaction: reads go on
    assert store.tally(code).answered == 3
    db.execute("PRAGMA max_page_count = 1073741823")
    db.execute("PRAGMA query_only = 0")
    store.answer(code, store.join(code), 0, [2])  # room again: writes go on, on the same connection
    assert store.tally(code).answered == 4


def test_a_commit_that_fails_is_rolled_back_and_the_next_one_works(store):
    """A full disk where the COMMIT itself fails: writing the WAL beyond the process's file-size limit
    (RLIMIT_FSIZE: the write is refused as a full disk refuses it)."""
    code, _ = store.create_class(questions())
    token = store.join(code)
    store.answer(code, token, 0, [0])
    wal = store.path.with_name(store.path.name + "-wal")
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, not death, past the limit
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (max(wal.stat().st_size, store.path.stat().st_size), hard))
    try:
        with pytest.raises(StoreFailed):
            store.join(code)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)
    assert not own_connection(store).in_transaction
    assert store.tally(code).students == 1 and store.my_answer(code, token, 0) == [0]
    store.join(code)
    assert store.tally(code).students == 2


@pytest.mark.parametrize("garbage", [b"not a database at all" * 100, None])
def test_a_damaged_file_is_moved_aside_and_a_fresh_one_started(tmp_path, caplog, garbage):
    path = tmp_path / "classes.sqlite3"
    if garbage is None:  # a real database whose pages were overwritten: SQLite's own check finds it
        first = ClassStore(path)
        code, _ = first.create_class(questions())
        for _ in range(50):
            first.join(code)
        first.close()
        data = bytearray(path.read_bytes())
        data[4096:len(data)] = b"\x55" * (len(data) - 4096)
        path.write_bytes(bytes(data))
        garbage = bytes(data)
    else:
        path.write_bytes(garbage)
    path.with_name("classes.sqlite3-wal").write_bytes(b"junk")
    store = ClassStore(path)
    kept = sorted(tmp_path.glob("classes.sqlite3.damaged-*"))  # the file, then its -shm and -wal
    assert kept[0].read_bytes() == garbage and kept[-1].name == kept[0].name + "-wal"
    ok, notice = store.health()
    assert ok and "damaged" in notice and kept[0].name in notice
    assert "damaged" in caplog.text and str(kept[0]) in caplog.text
    code, _ = store.create_class(questions())
    store.answer(code, store.join(code), 0, [1])
    store.close()


def test_an_unusable_folder_leaves_the_quiz_unavailable_until_it_is_fixed(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the folder should be")
    store = ClassStore(blocker / "classes.sqlite3")  # does not raise: the app starts
    ok, says = store.health()
    assert not ok and "unavailable" in says
    with pytest.raises(StoreFailed, match="unavailable"):
        store.create_class(questions())
    blocker.unlink()
    monkeypatch.setattr(store_module, "RETRY_OPEN_S", 0.0)
    store.create_class(questions())  # the folder is fine now: tried again
    assert store.health() == (True, "")
    store.close()
