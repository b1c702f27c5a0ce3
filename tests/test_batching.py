"""The dynamic batcher: concurrent requests decoded together, each getting exactly what it gets alone."""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from transformer.batching import Batcher, BatcherBusy
from transformer.translator import load_pretrained

FLAGSHIP = Path(__file__).resolve().parents[1] / "checkpoints" / "multi30k-en-de"
# Our own sentences, never Multi30k text; with the options each "user" picked.
REQUESTS = [
    ("A girl in a yellow coat feeds the ducks.", "beam", 4, 0.6),
    ("Three boys play football on the beach.", "beam", 4, 0.6),
    ("Dogs bark at the postman.", "beam", 4, 0.6),
    ("An old woman with a red hat is selling apples at the market.", "greedy", 1, 0.6),
    ("A man rides his bike through the park.", "beam", 2, 1.8),
    ("Two children are building a sandcastle.", "beam", 4, 1.8),
]


@pytest.fixture(scope="module")
def tr():
    return load_pretrained(FLAGSHIP)


@pytest.fixture
def batcher():
    b = Batcher(window_s=0.05)
    yield b
    b.close()


def hold(batcher: Batcher) -> tuple[threading.Event, threading.Thread]:
    """Keep the worker busy until the returned event is set, so that what is submitted meanwhile queues."""
    release, started = threading.Event(), threading.Event()

    def busy() -> None:
        started.set()
        release.wait(30)

    thread = threading.Thread(target=batcher.call, args=(busy,))
    thread.start()
    assert started.wait(10)
    return release, thread


def assert_same(batched, alone) -> None:
    assert [c.ids for c in batched.candidates] == [c.ids for c in alone.candidates]
    assert [c.text for c in batched.candidates] == [c.text for c in alone.candidates]
    assert [c.score for c in batched.candidates] == pytest.approx([c.score for c in alone.candidates], abs=1e-4)
    assert (batched.method, batched.beam_size, batched.src_ids) == (alone.method, alone.beam_size, alone.src_ids)
    for kind in ("encoder", "decoder", "cross"):
        ours, theirs = getattr(batched.attention, kind), getattr(alone.attention, kind)
        assert ours.shape == theirs.shape  # the sentence's own tokens: no padding in any map
        np.testing.assert_allclose(ours, theirs, atol=1e-5)
    assert [s.probability for s in batched.steps] == pytest.approx([s.probability for s in alone.steps], abs=1e-5)


def test_concurrent_users_each_get_their_own_translation_as_alone(tr, batcher):
    alone = [tr.translate(text, method=m, beam_size=k, length_penalty=lp) for text, m, k, lp in REQUESTS]
    release, holder = hold(batcher)
    with ThreadPoolExecutor(len(REQUESTS)) as pool:  # six users press Translate while the model is busy
        futures = [pool.submit(batcher.translate, tr, text, m, k, lp) for text, m, k, lp in REQUESTS]
        deadline = time.monotonic() + 10
        while batcher._queue.qsize() < len(REQUESTS) and time.monotonic() < deadline:
            time.sleep(0.01)
        release.set()
        results = [f.result(60) for f in futures]
    holder.join()
    assert batcher.stats.sizes[-1] == len(REQUESTS)  # one round: three groups of options, decoded as batches
    for result, expected, (text, *_) in zip(results, alone, REQUESTS):
        assert result.model_input == text
        assert_same(result, expected)


def test_a_burst_from_many_threads_never_mixes_up_users(tr, batcher):
    texts = [text for text, *_ in REQUESTS]
    expected = {t: tr.translate(t, beam_size=3, length_penalty=0.6, return_attention=False).text for t in texts}
    with ThreadPoolExecutor(12) as pool:
        jobs = [(texts[i % len(texts)], pool.submit(batcher.translate, tr, texts[i % len(texts)], "beam", 3, 0.6))
                for i in range(24)]
        for text, job in jobs:
            result = job.result(120)
            assert result.model_input == text and result.text == expected[text]
    assert batcher.stats.translations == 24 and batcher.stats.largest > 1


def test_a_full_queue_answers_at_once_with_a_clear_message(tr):
    batcher = Batcher(max_waiting=2, window_s=0.0)
    try:
        release, holder = hold(batcher)
        waiting = [batcher.submit(tr, text) for text, *_ in REQUESTS[:2]]
        start = time.monotonic()
        with pytest.raises(BatcherBusy, match="busy.*2 requests are already waiting.*try again"):
            batcher.submit(tr, REQUESTS[2][0])
        assert time.monotonic() - start < 1.0  # not a hang
        with pytest.raises(BatcherBusy, match="already waiting"):  # a blocking call too: no wait for a full queue
            batcher.translate(tr, REQUESTS[3][0], timeout_s=30)
        assert time.monotonic() - start < 1.0
        release.set()
        holder.join()
        assert [f.result(60).model_input for f in waiting] == [text for text, *_ in REQUESTS[:2]]
    finally:
        batcher.close()


def test_a_caller_that_gives_up_is_dropped_and_the_worker_goes_on(tr, batcher):
    release, holder = hold(batcher)
    with pytest.raises(BatcherBusy, match="no answer within 0.05 s"):
        batcher.translate(tr, REQUESTS[0][0], timeout_s=0.05)
    release.set()
    holder.join()
    assert batcher.translate(tr, REQUESTS[1][0], "greedy", 1).model_input == REQUESTS[1][0]
    assert batcher.stats.translations == 1  # the abandoned request was never decoded


def test_a_failing_request_fails_alone(tr, batcher, monkeypatch):
    real = tr.translate_sources

    def fragile(sources, *args, **kwargs):
        if any("boom" in s.text for s in sources):
            raise RuntimeError("boom")
        return real(sources, *args, **kwargs)

    monkeypatch.setattr(tr, "translate_sources", fragile)
    release, holder = hold(batcher)
    futures = [batcher.submit(tr, text) for text in ("Dogs bark at the postman.", "boom goes the drum.", "Cats sleep.")]
    release.set()
    holder.join()
    assert futures[0].result(60).model_input == "Dogs bark at the postman." and futures[2].result(60).model_input == "Cats sleep."
    with pytest.raises(RuntimeError, match="boom"):
        futures[1].result(60)


def test_bad_input_is_rejected_on_the_callers_thread(tr, batcher):
    with pytest.raises(ValueError, match="empty"):
        batcher.submit(tr, "   ")
    with pytest.raises(ValueError, match="beam_size"):
        batcher.submit(tr, "Dogs bark at the postman.", "beam", 0)
    assert batcher.call(threading.current_thread) is batcher._thread  # other model work runs on the worker
    with pytest.raises(ZeroDivisionError):
        batcher.call(lambda: 1 / 0)
    with pytest.raises(ValueError):
        Batcher(max_batch=0)


def test_chunks_are_length_sorted_and_bounded(tr):
    batcher = Batcher(max_batch=3, max_batch_tokens=40)
    try:
        items = [SimpleNamespace(source=tr.source(t)) for t in
                 ["a b c d e f g h i j k l m n o p q r s t", "Dogs bark at the postman.", "Cats sleep.", "A dog runs.", "Hi."]]
        chunks = batcher._chunks(items)
        lengths = [[len(r.source.ids) for r in c] for c in chunks]
        assert sum(map(len, lengths)) == 5 and all(len(c) <= 3 for c in lengths)
        assert all(len(c) * max(c) <= 40 or len(c) == 1 for c in lengths)
        flat = [n for c in lengths for n in c]
        assert flat == sorted(flat)
    finally:
        batcher.close()


def test_in_a_burst_the_next_batch_waits_for_the_users_of_the_last_one(tr):
    def two_presses(batcher: Batcher) -> list[int]:
        first = batcher.submit(tr, "Dogs bark at the postman.", "greedy", 1)
        time.sleep(0.1)  # the second user comes back a little later
        second = batcher.submit(tr, "Cats sleep.", "greedy", 1)
        first.result(60), second.result(60)
        return batcher.stats.sizes

    quiet = Batcher(burst_min=2, settle_s=0.5, burst_window_s=2.0)  # a lone request waits 10 ms, no more
    burst = Batcher(burst_min=2, settle_s=0.5, burst_window_s=2.0)
    try:
        assert two_presses(quiet) == [1, 1]
        release, holder = hold(burst)  # a batch of three: a burst is on
        futures = [burst.submit(tr, text, "greedy", 1) for text, *_ in REQUESTS[:3]]
        release.set()
        holder.join()
        [f.result(60) for f in futures]
        assert two_presses(burst) == [3, 2]  # the two presses 100 ms apart share a batch
    finally:
        quiet.close()
        burst.close()
