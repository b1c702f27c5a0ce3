"""The dynamic batcher: concurrent requests decoded together, each getting exactly what it gets alone."""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from transformer.serving.batching import Batcher, BatcherBusy, _Translation, search_work
from transformer.translator import load_pretrained
from test_batch_invariance import asked

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
        futures = [pool.submit(batcher.translate, tr, *asked(tr, text, m, k, lp)) for text, m, k, lp in REQUESTS]
        deadline = time.monotonic() + 10
        while batcher.waiting < len(REQUESTS) and time.monotonic() < deadline:
            time.sleep(0.01)
        release.set()
        results = [f.result(60) for f in futures]
    holder.join()
    assert batcher.stats.sizes[-1] == len(REQUESTS)  # one round: three groups of options, decoded as batches
    for result, expected, (text, *_) in zip(results, alone, REQUESTS, strict=True):
        assert result.model_input == text
        assert_same(result, expected)


def test_a_burst_from_many_threads_never_mixes_up_users(tr, batcher):
    texts = [text for text, *_ in REQUESTS]
    expected = {t: tr.translate(t, beam_size=3, length_penalty=0.6, output_attentions=False).text for t in texts}
    with ThreadPoolExecutor(12) as pool:
        jobs = [(texts[i % len(texts)], pool.submit(batcher.translate, tr, *asked(tr, texts[i % len(texts)], "beam", 3, 0.6)))
                for i in range(24)]
        for text, job in jobs:
            result = job.result(120)
            assert result.model_input == text and result.text == expected[text]
    assert batcher.stats.translations == 24 and batcher.stats.largest > 1


def test_a_full_queue_answers_at_once_with_a_clear_message(tr):
    batcher = Batcher(max_waiting=2, window_s=0.0)
    try:
        release, holder = hold(batcher)
        waiting = [batcher.submit(tr, *asked(tr, text)) for text, *_ in REQUESTS[:2]]
        start = time.monotonic()
        with pytest.raises(BatcherBusy, match="busy.*2 requests are already waiting.*try again"):
            batcher.submit(tr, *asked(tr, REQUESTS[2][0]))
        assert time.monotonic() - start < 1.0  # not a hang
        with pytest.raises(BatcherBusy, match="already waiting"):  # a blocking call too: no wait for a full queue
            batcher.translate(tr, *asked(tr, REQUESTS[3][0]), timeout_s=30)
        assert time.monotonic() - start < 1.0
        release.set()
        holder.join()
        assert [f.result(60).model_input for f in waiting] == [text for text, *_ in REQUESTS[:2]]
    finally:
        batcher.close()


def test_a_caller_that_gives_up_is_dropped_and_the_worker_goes_on(tr, batcher):
    release, holder = hold(batcher)
    with pytest.raises(BatcherBusy, match="no answer within 0.05 s"):
        batcher.translate(tr, *asked(tr, REQUESTS[0][0]), timeout_s=0.05)
    release.set()
    holder.join()
    assert batcher.translate(tr, *asked(tr, REQUESTS[1][0], "greedy", 1)).model_input == REQUESTS[1][0]
    assert batcher.stats.translations == 1  # the abandoned request was never decoded


def test_a_failing_request_fails_alone(tr, batcher, monkeypatch):
    real = tr.translate_sources

    def fragile(sources, *args, **kwargs):
        if any("boom" in s.text for s in sources):
            raise RuntimeError("boom")
        return real(sources, *args, **kwargs)

    monkeypatch.setattr(tr, "translate_sources", fragile)
    release, holder = hold(batcher)
    futures = [batcher.submit(tr, *asked(tr, text)) for text in ("Dogs bark at the postman.", "boom goes the drum.", "Cats sleep.")]
    release.set()
    holder.join()
    assert futures[0].result(60).model_input == "Dogs bark at the postman." and futures[2].result(60).model_input == "Cats sleep."
    with pytest.raises(RuntimeError, match="boom"):
        futures[1].result(60)


def test_bad_input_is_rejected_on_the_callers_thread(tr, batcher):
    """The caller prepares the source and checks the options (`Translator.source`, `decoding_options`) before it
    submits: the batcher takes them as they are."""
    with pytest.raises(ValueError, match="empty"):
        asked(tr, "   ")
    with pytest.raises(ValueError, match="beam_size"):
        asked(tr, "Dogs bark at the postman.", "beam", 0)
    assert batcher.call(threading.current_thread) is batcher._thread  # other model work runs on the worker
    with pytest.raises(ZeroDivisionError):
        batcher.call(lambda: 1 / 0)
    with pytest.raises(ValueError):
        Batcher(max_batch=0)


def test_a_rounds_searches_share_options_and_source_bucket_and_are_bounded(tr):
    batcher = Batcher(max_batch=3, max_work=2 * search_work(20, 2))
    try:
        texts = ["a b c d e f g h i j k l m n o p q r s t u v w x y z", "Dogs bark at the postman.", "Cats sleep.",
                 "A dog runs.", "Hi.", "Owls blink twice.", "An old woman with a red hat is selling apples at the market."]
        items = [_Translation(tr, tr.source(t), (m, k, 0.6, 5, True), Future(), search_work(len(tr.source(t).ids), k))
                 for t in texts for m, k in (("beam", 2), ("greedy", 1))]
        chunks = batcher._chunks(items)
        assert sorted(id(r) for c in chunks for r in c) == sorted(map(id, items))
        for chunk in chunks:
            assert len({r.key for r in chunk}) == 1  # one translator, options and source bucket: one search
            assert len(chunk) <= 3 and (sum(r.work for r in chunk) <= batcher.max_work or len(chunk) == 1)
    finally:
        batcher.close()


def test_in_a_burst_the_next_batch_waits_for_the_users_of_the_last_one(tr):
    def two_presses(batcher: Batcher) -> list[int]:
        first = batcher.submit(tr, *asked(tr, "Dogs bark at the postman.", "greedy", 1))
        time.sleep(0.1)  # the second user comes back a little later
        second = batcher.submit(tr, *asked(tr, "Cats sleep.", "greedy", 1))
        first.result(60), second.result(60)
        return batcher.stats.sizes

    quiet = Batcher(burst_min=2, settle_s=0.5, burst_window_s=2.0)  # a lone request waits 10 ms, no more
    burst = Batcher(burst_min=2, settle_s=0.5, burst_window_s=2.0)
    try:
        assert two_presses(quiet) == [1, 1]
        release, holder = hold(burst)  # a batch of three: a burst is on
        futures = [burst.submit(tr, *asked(tr, text, "greedy", 1)) for text, *_ in REQUESTS[:3]]
        release.set()
        holder.join()
        [f.result(60) for f in futures]
        assert two_presses(burst) == [3, 2]  # the two presses 100 ms apart share a batch
    finally:
        quiet.close()
        burst.close()


def test_in_a_burst_the_wait_for_company_counts_from_the_last_rounds_end_if_later(tr):
    # A round answers its searches one by one: its first users may be back before it ends. Counted from their
    # arrival, the wait for the rest would be over before the last users even had their answers.
    batcher = Batcher(burst_min=2, burst_window_s=0.5, settle_s=0.1)
    try:
        source = tr.source(SHORT)
        now = time.monotonic()
        early = _Translation(tr, source, ("greedy", 1, 0.6, 5, True), Future(), 1, arrived=now - 0.4)
        batcher._last_batch = (now, 30)  # a round of 30 just ended, after `early` came back
        expected, deadline, gap = batcher._company(early)
        assert (expected, gap) == (30, 0.1) and deadline == pytest.approx(now + 0.5)
        batcher._last_batch = (now - 0.45, 30)  # ... or ended before it came back: counted from its arrival
        assert batcher._company(early)[1] == pytest.approx(now - 0.4 + 0.5)
    finally:
        batcher.close()


# ----------------------------------------------------------------------------- cheapest first, never starved

LONG = ("An old fisherman with a grey beard and a yellow raincoat is repairing a torn net on the wooden pier "
        "while two small boys watch him and a dog sleeps in the sun beside a pile of empty baskets.")
SHORT = "Cats sleep."


def finished_in_order(futures: dict, order: list[str] | None = None) -> list[str]:
    """The names of `futures` in the order they finish (their callbacks run on the worker as each is answered),
    appended to `order` (a new list by default)."""
    order = [] if order is None else order
    for name, future in futures.items():
        future.add_done_callback(lambda _, name=name: order.append(name))
    return order


def test_a_cheap_request_goes_before_expensive_ones_that_came_first(tr):
    long_texts = [LONG, LONG.replace("fisherman", "sailor"), LONG.replace("two small boys", "three girls")]
    works = [search_work(len(tr.source(t).ids), 5) for t in long_texts]
    batcher = Batcher(window_s=0.0, max_work=max(works),  # a round holds one long request
                      light_work=search_work(len(tr.source(SHORT).ids)))  # the short one alone is an everyday one
    try:
        assert search_work(len(tr.source(SHORT).ids)) < min(works)
        release, holder = hold(batcher)
        futures = {f"long{i}": batcher.submit(tr, *asked(tr, t, "beam", 5)) for i, t in enumerate(long_texts)}
        futures["short"] = batcher.submit(tr, *asked(tr, SHORT, "greedy", 1))  # the last to come
        order = finished_in_order(futures)
        release.set()
        holder.join()
        answers = {name: f.result(120) for name, f in futures.items()}
        assert order == ["short", "long0", "long1", "long2"]  # the cheapest first, then first come first served
        assert answers["short"].text == tr.translate(SHORT, "greedy", 1).text
        assert answers["long1"].text == tr.translate(long_texts[1], "beam", 5).text
    finally:
        batcher.close()


def test_a_cheap_request_runs_at_a_pause_point_of_an_expensive_search_and_changes_nothing(tr):
    batcher = Batcher(window_s=0.0, pause_s=0.0, light_work=search_work(len(tr.source(SHORT).ids)))
    gate, started = threading.Event(), threading.Event()
    ran: list[str] = []

    def expensive():  # a search on the worker, as heads switched off or the tree run one
        started.set()
        gate.wait(60)
        result = tr.translate(LONG, "beam", 5)
        ran.append("expensive")
        return result

    try:
        pool = ThreadPoolExecutor(1)
        searched = pool.submit(batcher.call, expensive, work=search_work(len(tr.source(LONG).ids), 5))
        assert started.wait(60)
        futures = {"short": batcher.submit(tr, *asked(tr, SHORT, "greedy", 1)),  # cheaper: served at the search's first pause
                   "as long": batcher.submit(tr, *asked(tr, LONG, "beam", 5))}  # as expensive: waits for the search to end
        finished_in_order(futures, ran)
        gate.set()
        answers = {name: f.result(120) for name, f in futures.items()} | {"expensive": searched.result(120)}
        pool.shutdown()
        assert ran == ["short", "expensive", "as long"]
        assert batcher.stats.paused == 1 and batcher.stats.sizes == [1, 1]  # the short one alone, at the pause
        alone = tr.translate(LONG, "beam", 5)
        for name in ("expensive", "as long"):
            assert [c.ids for c in answers[name].candidates] == [c.ids for c in alone.candidates]
        assert answers["short"].text == tr.translate(SHORT, "greedy", 1).text
    finally:
        batcher.close()


def test_an_expensive_request_goes_after_at_most_max_skips_rounds_of_later_cheaper_ones(tr):
    work = search_work(len(tr.source(LONG).ids), 5)
    batcher = Batcher(window_s=0.0, max_skips=3, max_work=work, pause_s=600.0,  # no pauses: rounds only
                      light_work=search_work(len(tr.source(SHORT).ids)))
    chained: list[Future] = []
    try:
        release, holder = hold(batcher)
        big = batcher.submit(tr, *asked(tr, LONG, "beam", 5))
        order = finished_in_order({"long": big})

        def next_short(_: Future | None = None) -> None:  # each answer brings a new short request: one always waits
            if big.done() or len(chained) >= 20:
                return
            chained.append(batcher.submit(tr, *asked(tr, SHORT, "greedy", 1)))
            chained[-1].add_done_callback(lambda _: (order.append("short"), next_short()))

        next_short()
        release.set()
        holder.join()
        assert big.result(120).text == tr.translate(LONG, "beam", 5).text
        assert order[:4] == ["short", "short", "short", "long"]  # passed over three times, then it went first
    finally:
        batcher.close()


def test_other_model_work_is_ordered_by_the_work_it_declares(tr):
    batcher = Batcher(window_s=0.0, light_work=1)  # only the "small" call is an everyday request
    ran: list[str] = []
    try:
        release, holder = hold(batcher)
        pool = ThreadPoolExecutor(2)
        long = batcher.submit(tr, *asked(tr, LONG, "beam", 5))
        long.add_done_callback(lambda _: ran.append("long"))
        calls = [pool.submit(batcher.call, ran.append, "undeclared")]  # no work said: a full round's worth
        calls.append(pool.submit(batcher.call, ran.append, "small", work=1))
        deadline = time.monotonic() + 60
        while batcher.waiting < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        release.set()
        holder.join()
        long.result(120), [c.result(120) for c in calls]
        pool.shutdown()
        assert ran == ["small", "long", "undeclared"]
    finally:
        batcher.close()


def test_everyday_presses_keep_their_order_and_a_search_of_them_never_pauses(tr):
    texts = [LONG, REQUESTS[0][0], SHORT]  # the most expensive came first
    works = [search_work(len(tr.source(t).ids), 5) for t in texts]
    batcher = Batcher(window_s=0.0, max_batch=1, pause_s=0.0)  # a round of one; a pause as soon as one may
    try:
        assert max(works) <= batcher.light_work and works[0] > works[-1]  # all everyday, of different cost
        release, holder = hold(batcher)
        futures = {f"press{i}": batcher.submit(tr, *asked(tr, t, "beam", 5)) for i, t in enumerate(texts)}
        order = finished_in_order(futures)
        release.set()
        holder.join()
        answers = [futures[f"press{i}"].result(120) for i in range(len(texts))]
        assert order == ["press0", "press1", "press2"]  # as they came, not cheapest first
        assert batcher.stats.paused == 0
        assert answers[0].text == tr.translate(LONG, "beam", 5).text
    finally:
        batcher.close()


def test_a_search_that_answers_too_few_fails_its_callers_instead_of_leaving_them_waiting(tr):
    """The real translator with its search answering one translation too few: every caller of the batch gets
    an error (each decoded alone answers none), none waits for good."""
    import copy

    class Short(type(tr)):
        def translate_sources(self, sources, *args, **kwargs):
            return super().translate_sources(sources, *args, **kwargs)[:-1]

    short = copy.copy(tr)
    short.__class__ = Short
    batcher = Batcher(window_s=0.05)
    try:
        release, holder = hold(batcher)
        futures = [batcher.submit(short, *asked(short, "Dogs bark at the postman.", "greedy", 1, 0.6)) for _ in range(2)]
        release.set()
        holder.join()
        for future in futures:
            with pytest.raises(RuntimeError, match="answered 0 translations for 1"):
                future.result(60)
    finally:
        batcher.close()
