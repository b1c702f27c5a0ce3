"""The app's search process (`transformer.serving.search_process`): a search there gives, bit for bit, what it gives in
the app's own process, alone or through the `Batcher` with concurrent clients; its errors come back as
themselves; a lost child costs only time; the child never outlives its parent."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from test_batch_invariance import SENTENCES, asked, assert_identical, concurrent_answers
from transformer.serving import search_process
from transformer.serving.batching import Batcher
from transformer.hub import checkpoint_digest
from transformer.quantize import int8_available
from transformer.serving.search_process import SearchProcess, SearchProcessLost
from transformer.translator import load_pretrained

ROOT = Path(__file__).resolve().parents[1]
SERVED = ROOT / "checkpoints" / "en-de"  # the app's default model, in the precision it serves
TOY = ROOT / "checkpoints" / "toy-reverse"  # loads in a moment: for the failure cases
PRECISION = "int8" if int8_available() else None


pytestmark = pytest.mark.slow  # child processes: `pytest -m "not slow"` leaves it out


@pytest.fixture(scope="module")
def served():
    """(translator, a started search process on this process's torch threads)."""
    tr = load_pretrained(SERVED, quantize=PRECISION)
    searcher = SearchProcess(threads=torch.get_num_threads())
    searcher.preload(tr)
    yield tr, searcher
    searcher.close()


@pytest.fixture
def answered(monkeypatch):
    """`answered(searcher)`: a list of the answers the child gives from now on, one per search of `searcher` that
    returns (a search returns only the child's answer: when the child cannot answer, it raises
    `SearchProcessLost` and the batcher searches in the app). Watched for this test only."""
    def watch(searcher: SearchProcess) -> list:
        answers, real = [], searcher.search

        def search(*args, **kwargs):
            answers.append(real(*args, **kwargs))
            return answers[-1]

        monkeypatch.setattr(searcher, "search", search)
        return answers

    return watch


def gone(pid: int, within_s: float = 20.0) -> bool:
    """Whether process `pid` has ended (or is a zombie) within `within_s`."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("options", [("beam", 5, None), ("beam", 3, 1.0), ("greedy", 1, None)])
def test_a_search_in_the_child_gives_the_bits_of_the_same_search_here(served, options):
    """Every candidate, score, step and attention map: mixed lengths, names and numbers, in one batch."""
    tr, searcher = served
    method, beam, penalty = options
    chosen = tr.decoding_options(method, beam, penalty)
    sources = [tr.source(s) for s in SENTENCES[::2]]
    theirs = searcher.search(tr, sources, chosen, output_attentions=True, top_k=5)
    ours = tr.translate_sources(sources, chosen, output_attentions=True, top_k=5)
    assert len(theirs) == len(ours) == len(sources)
    for got, expected in zip(theirs, ours):
        assert_identical(got, expected)


def test_the_batcher_serves_concurrent_clients_their_lone_answers_through_the_child(served, answered):
    """Eight client threads at once, mixed options: each answer is the sentence's alone, searched in this
    process; the everyday searches ran in the child."""
    tr, searcher = served
    options = [("beam", 5, None), ("beam", 3, 1.0), ("greedy", 1, None)]
    jobs = [(i, options[i % len(options)]) for i in range(0, len(SENTENCES), 2)]
    expected = {i: tr.translate(SENTENCES[i], *opt) for i, opt in jobs}
    answers = answered(searcher)
    batcher = Batcher(window_s=0.05, searcher=searcher)
    try:
        results = concurrent_answers(batcher, tr, jobs)
    finally:
        batcher.close()
    assert batcher.stats.largest > 1  # requests were decoded together
    assert answers  # ... in the child
    for i, _ in jobs:
        assert_identical(results[i], expected[i])


def test_a_search_error_comes_back_as_itself_and_the_child_goes_on(served):
    tr, searcher = served
    pid = searcher.pid
    with pytest.raises(TypeError, match="DecodingOptions"):  # raised in the child
        searcher.search(tr, [tr.source("It rains.")], ("sideways", 5, 1.0))
    assert searcher.pid == pid
    assert searcher.search(tr, [tr.source("It rains.")], tr.decoding_options("greedy", 1, 1.0))[0].text == tr.translate(
        "It rains.", "greedy").text


def test_a_child_that_never_answers_is_left_alone_for_a_backoff_after_a_few_tries():
    """A child that exits at once (here: /bin/true instead of python) is lost every time; after MAX_FAILURES
    the searcher serves nothing while it backs off, and the batcher searches here."""
    tr = load_pretrained(ROOT / "checkpoints" / "toy-reverse")
    searcher = SearchProcess(threads=1, timeout_s=10, python="/bin/true")
    for _ in range(search_process.MAX_FAILURES):
        assert searcher.serves(tr)
        with pytest.raises(SearchProcessLost):
            searcher.search(tr, [tr.source("h e l l o")], tr.decoding_options("greedy", 1, 1.0))
    assert not searcher.available and not searcher.serves(tr)
    batcher = Batcher(searcher=searcher)
    try:
        assert batcher.translate(tr, *asked(tr, "h e l l o", "greedy", 1)).text == tr.translate("h e l l o", "greedy").text
    finally:
        batcher.close()


def test_a_translator_not_from_load_pretrained_is_searched_here(served):
    tr, searcher = served
    from transformer.translator import Translator

    own = Translator(tr.model, tr.tokenizer, search_model=tr.search_model, precision=tr.precision)
    assert own.origin is None and not searcher.serves(own)
    assert tr.origin == (str(SERVED.resolve()), PRECISION, checkpoint_digest(SERVED))


def test_the_child_ends_with_its_parent():
    """A parent killed without closing it: the child's pipe closes and it exits, so no search process is orphaned."""
    script = ("import os, sys, torch; from transformer.serving.search_process import SearchProcess; "
              "s = SearchProcess(threads=1); s.start(); print(s.pid, flush=True); os.kill(os.getpid(), 9)")
    parent = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert parent.returncode == -signal.SIGKILL, parent.stderr
    assert gone(int(parent.stdout.split()[0]), within_s=60)


def test_the_app_searches_in_a_child_unless_told_not_to(monkeypatch, caplog):
    """`startup.start_explorer`'s searcher (`search_process_from_env`): a live child of this process, on torch's
    threads; TRANSFORMER_SEARCH_PROCESS=0 keeps the searches in the app's process, and says so in the log."""
    from transformer.explorer import startup

    monkeypatch.delenv(startup.ENV_SEARCH_PROCESS, raising=False)
    searcher = startup.search_process_from_env()
    try:
        assert searcher is not None and searcher.threads == torch.get_num_threads()
        stat = Path(f"/proc/{searcher.pid}/stat").read_text().rpartition(")")[2].split()
        assert int(stat[1]) == os.getpid()  # its parent is this process
    finally:
        searcher.close(timeout_s=0.5)  # still importing torch: killed, not waited for
    monkeypatch.setenv(startup.ENV_SEARCH_PROCESS, "0")
    with caplog.at_level("INFO", logger="transformer.explorer.startup"):
        assert startup.search_process_from_env() is None
    assert "TRANSFORMER_SEARCH_PROCESS=0" in caplog.text




def test_the_float32_serving_path_gives_the_same_bits_in_the_child_too(served):
    """TRANSFORMER_PRECISION=fp32 (or a CPU without int8 kernels): the child loads the float32 search model (the
    served fixture's child, which loads a checkpoint per origin)."""
    _, searcher = served
    tr = load_pretrained(SERVED)
    assert tr.origin == (str(SERVED.resolve()), None, checkpoint_digest(SERVED))
    sources = [tr.source(s) for s in SENTENCES[1::8]]
    theirs = searcher.search(tr, sources, tr.decoding_options("beam", 5, 1.0))
    assert len(theirs) == len(sources)
    for got, expected in zip(theirs, tr.translate_sources(sources, tr.decoding_options("beam", 5, 1.0)), strict=True):
        assert_identical(got, expected)


# ----------------------------------------------------------------------------- failures end in the app's search


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def wait_until(condition, within_s: float) -> bool:
    """Whether `condition()` became true within `within_s` (polled)."""
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def child_with(tmp_path: Path, translate_sources: str, also: str = "") -> str:
    """An executable that runs the real search process with `Translator.translate_sources` replaced by the
    Python body given (`real` is the original), after the code `also`: the child's answers go wrong in a real
    process and pipe."""
    script = tmp_path / "child.py"
    body = "\n".join("    " + line for line in translate_sources.strip().splitlines())
    script.write_text(f"""#!{sys.executable}
import runpy, sys
from transformer.translator import Translator
real = Translator.translate_sources


class Unreadable:
    \"\"\"Pickles here; unpickling it calls int("not a number").\"\"\"
    def __reduce__(self):
        return int, ("not a number",)


def translate_sources(self, sources, *args, **kwargs):
{body}


Translator.translate_sources = translate_sources
{also}
sys.argv = [sys.argv[0]] + sys.argv[3:]  # after "-m transformer.serving.search_process"
runpy.run_module("transformer.serving.search_process", run_name="__main__", alter_sys=True)
""")
    script.chmod(0o755)
    return str(script)


@pytest.fixture(scope="module")
def toy():
    """(translator, its greedy translation of "h e l l o" in this process, length penalty 1)."""
    tr = load_pretrained(TOY)
    return tr, tr.translate("h e l l o", "greedy", 1, 1.0)


@pytest.fixture(scope="module")
def toy_child(toy):
    """A started search process that has loaded the toy, shared by the tests below that leave a live child behind
    (the last of them kills it); each test starts it again when it needs one (`start` is idempotent)."""
    tr, _ = toy
    searcher = SearchProcess(threads=torch.get_num_threads())
    searcher.preload(tr)
    yield searcher
    searcher.close()


def test_a_checkpoint_the_child_cannot_load_is_searched_here(toy, toy_child, tmp_path, caplog, answered):
    """The app loaded a checkpoint that is corrupt by the time the child loads it: a preload in the background
    logs it, the search is done in the app and answers as alone; the child goes on serving."""
    import shutil

    searcher = toy_child
    searcher.start()
    copy = tmp_path / "toy-reverse"
    shutil.copytree(TOY, copy)
    tr = load_pretrained(copy)
    (copy / "model.safetensors").write_bytes(b"not a checkpoint")
    alone = tr.translate("h e l l o", "greedy")
    pid, answers = searcher.pid, answered(searcher)
    batcher = Batcher(searcher=searcher)
    try:
        with caplog.at_level("ERROR", logger="transformer.serving.search_process"):
            searcher.preload_in_background(tr).join(120)
        assert "could not load" in caplog.text
        with pytest.raises(SearchProcessLost, match="could not load"):
            searcher.search(tr, [tr.source("h e l l o")], tr.decoding_options("greedy", 1, 1.0))
        assert pid is not None
        assert_identical(batcher.translate(tr, *asked(tr, "h e l l o", "greedy"), timeout_s=120), alone)
        assert searcher.pid == pid and not answers
        toy_tr, toy_alone = toy  # the child goes on serving the checkpoints it can load
        assert_identical(searcher.search(toy_tr, [toy_tr.source("h e l l o")], toy_tr.decoding_options("greedy", 1, 1.0))[0], toy_alone)
        assert searcher.pid == pid and len(answers) == 1
    finally:
        batcher.close()


def test_a_child_that_cannot_start_leaks_no_descriptor_and_its_search_runs_in_the_app(toy):
    """Popen's OSError (here: no such python) is `SearchProcessLost`, every pipe end is closed, and the batcher
    answers from the app."""
    tr, alone = toy
    searcher = SearchProcess(threads=torch.get_num_threads(), python="/nonexistent")
    before = open_descriptors()
    with pytest.raises(SearchProcessLost, match="could not start"):
        searcher.search(tr, [tr.source("h e l l o")], tr.decoding_options("greedy", 1, 1.0))
    assert open_descriptors() == before
    batcher = Batcher(searcher=searcher)
    try:
        assert_identical(batcher.translate(tr, *asked(tr, "h e l l o", "greedy", 1, 1.0), timeout_s=120), alone)
    finally:
        batcher.close()
    assert open_descriptors() == before and searcher.pid is None


def test_the_app_keeps_a_searcher_that_could_not_start_and_searches_in_the_app(toy):
    """`search_process_from_env` with a python that does not start: the app gets a searcher that tries again
    later, and its presses are answered meanwhile."""
    from transformer.explorer import startup

    tr, alone = toy
    searcher = startup.search_process_from_env(python="/nonexistent")
    assert searcher is not None and searcher.pid is None
    batcher = Batcher(searcher=searcher)
    try:
        assert_identical(batcher.translate(tr, *asked(tr, "h e l l o", "greedy", 1, 1.0), timeout_s=120), alone)
    finally:
        batcher.close()
        searcher.close()


def test_after_failures_the_child_is_tried_again_after_a_backoff_and_comes_back(toy):
    """MAX_FAILURES children lost in a row (each exits at once): the searcher backs off (serves nothing); once
    the fault is gone (python is there again), a search after the backoff starts a child, which answers, and
    the count starts over."""
    tr, alone = toy
    searcher = SearchProcess(threads=torch.get_num_threads(), python="/bin/true", backoff_s=0.5)
    try:
        for _ in range(search_process.MAX_FAILURES):
            with pytest.raises(SearchProcessLost):
                searcher.search(tr, [tr.source("h e l l o")], tr.decoding_options("greedy", 1, 1.0))
        assert not searcher.serves(tr)
        searcher.python = sys.executable
        assert wait_until(lambda: searcher.serves(tr), within_s=searcher.backoff_s + 30)
        assert_identical(searcher.search(tr, [tr.source("h e l l o")], tr.decoding_options("greedy", 1, 1.0))[0], alone)
        assert searcher.pid is not None and searcher.failures == 0
    finally:
        searcher.close()


def test_a_replacement_child_gets_the_start_up_time_to_load_its_checkpoint(toy, answered):
    """A search timeout far shorter than importing torch: the first child and a replacement for a killed one
    both get the start-up time (they load the checkpoint), so neither counts as lost."""
    tr, alone = toy
    searcher = SearchProcess(threads=torch.get_num_threads(), timeout_s=0.2)
    answers = answered(searcher)
    try:
        assert_identical(searcher.search(tr, [tr.source("h e l l o")], tr.decoding_options("greedy", 1, 1.0))[0], alone)
        old = searcher.pid
        os.kill(old, signal.SIGKILL)
        assert wait_until(lambda: searcher.pid is None, within_s=20)
        assert_identical(searcher.search(tr, [tr.source("h e l l o")], tr.decoding_options("greedy", 1, 1.0))[0], alone)
        assert searcher.pid not in (None, old) and len(answers) == 2
    finally:
        searcher.close()


def test_a_hung_preload_holds_up_neither_a_search_nor_close(toy, tmp_path):
    """A child that sleeps instead of loading: the preload waits for it holding the lock, yet a press through the
    batcher is answered from the app, and close returns and kills the child."""
    tr, alone = toy
    sleeper = tmp_path / "sleeper"
    sleeper.write_text("#!/bin/sh\nexec sleep 600\n")
    sleeper.chmod(0o755)
    searcher = SearchProcess(threads=torch.get_num_threads(), python=str(sleeper))
    preload = searcher.preload_in_background(tr)
    assert wait_until(lambda: searcher.pid is not None, within_s=20)  # the preload holds the lock and waits
    pid = searcher.pid
    batcher = Batcher(searcher=searcher)
    answers: list = []
    press = threading.Thread(target=lambda: answers.append(batcher.translate(tr, *asked(tr, "h e l l o", "greedy", 1, 1.0))))
    closer = threading.Thread(target=searcher.close, kwargs={"timeout_s": 2})
    try:
        press.start()
        press.join(30)
        assert not press.is_alive() and len(answers) == 1
        assert_identical(answers[0], alone)
        closer.start()
        closer.join(30)
        assert not closer.is_alive() and gone(pid)
        preload.join(30)
        assert not preload.is_alive()
    finally:
        if searcher.pid == pid:
            os.kill(pid, signal.SIGKILL)  # a wait on the lock ends with it
        batcher.close()


# How the shared faulty child answers a search: the test writes its case into the child's mode file first.
FAULTS = {
    "unpicklable": "return [lambda: None for _ in sources]  # cannot be pickled there",
    "unreadable": "return [Unreadable() for _ in sources]  # cannot be unpickled here",
    "short": "return real(self, sources, *args, **kwargs)[:-1]  # one translation short",
}

HALF_AN_ANSWER = """
import os, struct, time
from multiprocessing.connection import Connection
whole = Connection._send_bytes  # what send and send_bytes write a message with


def send_message(self, buf):
    data = bytes(buf)
    if len(data) > 2000 and mode() == "halfway":  # a search's answer (not a load's): its size and half, then silence
        os.write(self.fileno(), struct.pack("!i", len(data)) + data[:len(data) // 2])
        time.sleep(600)
    whole(self, buf)


Connection._send_bytes = send_message
"""


@pytest.fixture(scope="module")
def faulty_child(toy, tmp_path_factory):
    """(searcher, its mode file): one real child, started and with the toy loaded, whose search answers as its
    mode file says when it answers (a case of FAULTS, "halfway", or anything else: whole), shared by the tests
    below; the last ("halfway") kills it."""
    tr, _ = toy
    folder = tmp_path_factory.mktemp("faulty")
    mode = folder / "mode"
    mode.write_text("whole")
    cases = "".join(f"if mode() == {case!r}:\n    {body}\n" for case, body in FAULTS.items())
    also = f"def mode():\n    return open({str(mode)!r}).read()\n" + HALF_AN_ANSWER
    searcher = SearchProcess(threads=torch.get_num_threads(), python=child_with(folder, cases + WHOLE, also=also),
                             backoff_s=0.1)
    searcher.preload(tr)
    yield searcher, mode
    searcher.close()


WHOLE = "return real(self, sources, *args, **kwargs)"


@pytest.mark.parametrize("fault", list(FAULTS))
def test_an_answer_that_cannot_come_back_whole_is_searched_in_the_app(toy, faulty_child, fault, answered):
    """A real child whose answer fails on its way back: the search raises `SearchProcessLost` (no other error,
    no caller left waiting); the batcher answers each press from the app; the child goes on, and answers whole
    once its answers can travel again."""
    tr, alone = toy
    searcher, mode = faulty_child
    searcher.start()
    mode.write_text(fault)
    batcher = Batcher(window_s=0.2, searcher=searcher)
    try:
        sources = [tr.source("h e l l o"), tr.source("w o r l d")]
        pid, answers = searcher.pid, answered(searcher)
        with pytest.raises(SearchProcessLost):
            searcher.search(tr, sources, tr.decoding_options("greedy", 1, 1.0))
        futures = [batcher.submit(tr, *asked(tr, text, "greedy", 1, 1.0)) for text in ("h e l l o", "w o r l d")]
        got = [f.result(60) for f in futures]
        assert_identical(got[0], alone)
        assert_identical(got[1], tr.translate("w o r l d", "greedy", 1, 1.0))
        assert searcher.pid == pid and not answers
    finally:
        batcher.close()
        mode.write_text("whole")
    assert wait_until(lambda: searcher.available, within_s=10)  # past a short backoff if the failures reached it
    assert_identical(searcher.search(tr, [tr.source("h e l l o")], tr.decoding_options("greedy", 1, 1.0))[0], alone)
    assert searcher.pid == pid and len(answers) == 1 and searcher.failures == 0


def test_a_child_that_stops_halfway_through_its_answer_is_lost_after_the_timeout(toy, faulty_child):
    """The child sends half of its answer and sleeps: the read is bounded by the search's timeout like the wait
    for its first byte, the child is killed, and the press is answered from the app."""
    tr, alone = toy
    searcher, mode = faulty_child
    searcher.start()
    searcher.preload(tr)
    searcher.timeout_s = 3
    mode.write_text("halfway")
    batcher = Batcher(searcher=searcher)
    try:
        pid = searcher.pid
        answers: list = []
        press = threading.Thread(target=lambda: answers.append(batcher.translate(tr, *asked(tr, "h e l l o", "greedy", 1, 1.0))))
        press.start()
        press.join(60)
        waited_for_good = press.is_alive()
        if waited_for_good:
            os.kill(pid, signal.SIGKILL)  # ends an unbounded read, so that the test ends
        press.join(30)
        assert not waited_for_good and answers
        assert_identical(answers[0], alone)
        assert gone(pid)
    finally:
        batcher.close()
        mode.write_text("whole")
        searcher.timeout_s = search_process.SEARCH_TIMEOUT_S


def test_a_checkpoint_rewritten_after_the_app_loaded_it_is_searched_in_the_app(toy, toy_child, tmp_path, answered):
    """A training export rewrites the weights while the app serves the old ones: the replacement child sees
    the files are not the ones the app loaded and does not load them, so the answer is still the app's model's
    (a reverse task's weights replaced by a copy task's of the same shapes)."""
    import shutil

    _, alone = toy
    copy = tmp_path / "toy-reverse"
    shutil.copytree(TOY, copy)
    tr = load_pretrained(copy)
    searcher = toy_child
    batcher = Batcher(searcher=searcher)
    try:
        searcher.preload(tr)  # the shared child (or a new one) loads the copy
        answers = answered(searcher)
        shutil.copyfile(ROOT / "checkpoints" / "toy-copy" / "model.safetensors", copy / "model.safetensors")
        old = searcher.pid
        os.kill(old, signal.SIGKILL)
        assert wait_until(lambda: searcher.pid is None, within_s=20)
        assert_identical(batcher.translate(tr, *asked(tr, "h e l l o", "greedy", 1, 1.0), timeout_s=120), alone)
        assert not searcher.serves(tr) and not answers
        assert searcher.pid not in (None, old)  # the replacement started, and refused the rewritten copy
    finally:
        batcher.close()


def test_a_lost_child_costs_only_time(toy, toy_child, answered):
    """A child found dead is replaced before the search; one that stops answering mid-search is killed after the
    timeout, and the batcher searches here; either way the answer is the lone one. (It kills the shared child: the
    last test to use it.)"""
    tr, _ = toy
    searcher = toy_child
    searcher.start()
    alone = tr.translate("h e l l o", "beam", 5)
    batcher = Batcher(searcher=searcher)
    try:
        old = searcher.pid
        os.kill(old, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while searcher.pid is not None and time.monotonic() < deadline:  # reaped (all its threads ended)
            time.sleep(0.05)
        assert searcher.pid is None
        answers = answered(searcher)
        assert_identical(batcher.translate(tr, *asked(tr, "h e l l o", "beam", 5), timeout_s=300), alone)
        new = searcher.pid
        assert new not in (None, old) and len(answers) == 1  # a new child answered
        os.kill(new, signal.SIGSTOP)  # alive, never answering
        searcher.timeout_s = 1  # it has loaded the toy: the search's own timeout, which a toy search is far within
        try:
            assert_identical(batcher.translate(tr, *asked(tr, "h e l l o", "beam", 5), timeout_s=300), alone)
        finally:
            searcher.timeout_s = search_process.SEARCH_TIMEOUT_S
        assert gone(new) and searcher.pid is None and len(answers) == 1 and searcher.available
    finally:
        batcher.close()
