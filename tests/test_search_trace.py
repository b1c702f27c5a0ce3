"""Search recording (`record_search=True`) against the engine: every recorded number is re-derived from
teacher-forced forward passes of the model, the recorded hypotheses are the returned ones, and recording
changes nothing."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from test_decoding import sources, tiny_model
from transformer.model import pad_sequences
from transformer.decoding import beam_search, greedy_decode, length_penalty_factor
from transformer.model import Transformer
from transformer.search_trace import FINISHED, KEPT, PRUNED, ROOT, SearchNode, SearchOutput, SearchTrace
from transformer.translator import load_pretrained

FLAGSHIP = Path(__file__).resolve().parents[1] / "checkpoints" / "multi30k-en-de"
# Our own sentences, never Multi30k text. The last one gives a ~30-token output.
SENTENCES = [
    "An old man with a red hat sells fresh bread at the market.",
    "The cat sleeps on the warm roof.",
    "Two young women in colourful dresses dance together on a wooden stage while an old man plays the accordion"
    " and three children clap their hands.",
]
TOL = 2e-3  # float32 log-probabilities summed over up to ~30 steps, cached vs full recompute


@pytest.fixture(scope="module")
def tr():
    return load_pretrained(FLAGSHIP)


@torch.no_grad()
def next_token_log_probs_by_forward(
    model: Transformer, src_ids: list[int], prefixes: list[list[int]], max_len: int
) -> torch.Tensor:
    """(N, V) log p(next token | prefix, source) for each prefix, from one teacher-forced pass over <bos> + prefix.

    The search's rules, written out here: <pad> and <bos> are never generated, and the
    token at position max_len - 1 can only be <eos>.
    """
    cfg = model.config
    tgt_in = pad_sequences([[cfg.bos_id] + p for p in prefixes], cfg.pad_id)
    src = torch.tensor([src_ids]).expand(len(prefixes), -1)
    src_mask, tgt_mask = model.make_masks(src, tgt_in)
    hidden, _, _ = model.decode(tgt_in, model.encode(src, src_mask)[0], src_mask, tgt_mask)
    last = torch.tensor([len(p) for p in prefixes])
    log_probs = model.project(hidden[torch.arange(len(prefixes)), last]).float().log_softmax(-1)
    log_probs[:, [cfg.pad_id, cfg.bos_id]] = -math.inf
    at_limit = last == max_len - 1
    eos = log_probs[at_limit, cfg.eos_id]
    log_probs[at_limit] = -math.inf
    log_probs[at_limit, cfg.eos_id] = eos
    return log_probs


def step_nodes(trace: SearchTrace, step: int) -> list[SearchNode]:
    """The nodes recorded at output position `step`, best rank first (as the tree tab lays out a column)."""
    return sorted((n for n in trace.nodes if n.step == step), key=lambda n: n.rank)


def check_against_model(model: Transformer, src_ids: list[int], trace: SearchTrace, max_len: int) -> None:
    """Every node's numbers from teacher-forced passes; every step's candidates the top 2K continuations of
    the beams the step before kept; kept / finished / pruned as the search's rules say."""
    eos, K = model.config.eos_id, trace.beam_size
    expanded = [0] + [n.id for n in trace.nodes if n.status == KEPT]  # only kept nodes have children
    dist = dict(zip(expanded, next_token_log_probs_by_forward(
        model, src_ids, [trace.prefix_ids(i) for i in expanded], max_len)))
    reference = {0: 0.0}
    assert trace.nodes[0].status == ROOT and all(n.parent >= 0 for n in trace.nodes[1:])
    for node in trace.nodes[1:]:
        token_lp = float(dist[node.parent][node.token_id])
        reference[node.id] = reference[node.parent] + token_lp
        assert node.step == trace.nodes[node.parent].step + 1
        assert node.token_log_prob == pytest.approx(token_lp, abs=TOL)
        assert node.log_prob == pytest.approx(reference[node.id], abs=TOL)
        assert node.score == pytest.approx(node.log_prob / length_penalty_factor(node.step + 1, trace.length_penalty))
    for step in range(trace.n_steps):
        live = [0] if step == 0 else [n.id for n in step_nodes(trace, step - 1) if n.status == KEPT]
        totals = torch.stack([reference[p] + dist[p] for p in live])  # (beams, V)
        n_finite = int(torch.isfinite(totals).sum())
        cut = float(totals.flatten().topk(min(2 * K, n_finite)).values[-1])  # the 2K-th best continuation
        nodes = step_nodes(trace, step)
        assert len(nodes) == min(2 * K, n_finite)
        assert len({(n.parent, n.token_id) for n in nodes}) == len(nodes)
        assert all(n.parent in live and reference[n.id] >= cut - TOL for n in nodes)  # the top 2K, up to ties
        assert [n.log_prob for n in nodes] == sorted((n.log_prob for n in nodes), reverse=True)
        if trace.method == "beam":  # <eos> in the top K finishes; the K best others stay; the rest is pruned
            finished = {n.id for n in nodes[:K] if n.token_id == eos}
            kept = {n.id for n in [n for n in nodes if n.token_id != eos][:K]}
        else:  # greedy: the best token, and its runner-up
            finished = {nodes[0].id} if nodes[0].token_id == eos else set()
            kept = {nodes[0].id} - finished
        assert {n.id for n in nodes if n.status == FINISHED} == finished
        assert {n.id for n in nodes if n.status == KEPT} == kept
        assert all(n.status == PRUNED for n in nodes if n.id not in finished | kept)


def assert_trace_matches_candidates(trace: SearchTrace, candidates) -> None:
    assert len(trace.nbest) == len(candidates)
    for rank, (node_id, cand) in enumerate(zip(trace.nbest, candidates)):
        node = trace.nodes[node_id]
        assert node.status == FINISHED and node.nbest_rank == rank
        assert trace.prefix_ids(node_id) == cand.ids and trace.prefix_tokens(node_id) == cand.tokens
        assert node.score == pytest.approx(cand.score, abs=1e-6) and node.log_prob == pytest.approx(cand.log_prob,
                                                                                                    abs=1e-6)
    assert sum(n.nbest_rank is not None for n in trace.nodes) == len(candidates)


@pytest.mark.parametrize("method,beam,sentence", [
    ("greedy", 1, 0), ("beam", 1, 1), ("beam", 3, 1), ("beam", 5, 0), ("beam", 10, 2), ("greedy", 1, 2),
])
def test_flagship_trace_is_the_models_search(tr, method, beam, sentence):
    r = tr.translate(SENTENCES[sentence], method=method, beam_size=beam, output_attentions=False, record_search=True)
    trace = r.search
    assert trace.method == method and trace.beam_size == beam and trace.candidates_per_step == 2 * beam
    assert_trace_matches_candidates(trace, r.candidates)
    assert trace.best_path()[-1].token == "<eos>" and [n.token for n in trace.best_path()] == r.tgt_tokens
    check_against_model(tr.model, r.src_ids, trace, tr.model.config.max_len)
    if sentence == 2:
        assert trace.n_steps >= 25  # the long output the figures must handle


@pytest.mark.parametrize("seed,beam,alpha,max_len", [(0, 4, 0.6, 20), (1, 10, 0.0, 8), (2, 3, 1.0, 6)])
def test_random_model_trace_is_the_models_search(seed, beam, alpha, max_len):
    # Random weights and a 12-token vocabulary: beams that fill slowly, <eos> anywhere, outputs cut at max_len.
    model = tiny_model(vocab=12, seed=seed)
    src = sources(12, lengths=(5,), seed=seed)
    out = beam_search(model, src, beam, alpha, max_len, record_search=True)
    assert isinstance(out, SearchOutput) and len(out.traces) == 1
    trace, nbest = out.traces[0], out.hypotheses[0]
    assert [trace.prefix_ids(i) for i in trace.nbest] == [h.tokens for h in nbest]
    assert [trace.nodes[i].score for i in trace.nbest] == [h.score for h in nbest]
    check_against_model(model, src[0].tolist(), trace, max_len)
    greedy = greedy_decode(model, src, max_len, length_penalty=alpha, record_search=True)
    check_against_model(model, src[0].tolist(), greedy.traces[0], max_len)


@pytest.mark.parametrize("sentence", [0, 2])
def test_beam_of_one_records_greedys_path(tr, sentence):
    greedy = tr.translate(SENTENCES[sentence], method="greedy", output_attentions=False, record_search=True).search
    beam1 = tr.translate(SENTENCES[sentence], method="beam", beam_size=1, output_attentions=False,
                         record_search=True).search
    g_path, b_path = greedy.best_path(), beam1.best_path()
    assert [(n.token_id, n.status) for n in g_path] == [(n.token_id, n.status) for n in b_path]
    assert [n.log_prob for n in g_path] == pytest.approx([n.log_prob for n in b_path], abs=1e-5)
    assert [n.probability for n in g_path] == pytest.approx([n.probability for n in b_path], abs=1e-6)
    # The same two candidates per step (the choice and its runner-up); only their labels at the
    # final step differ: a beam of one keeps the runner-up as its live beam, greedy does not.
    assert greedy.n_steps == beam1.n_steps
    for step in range(greedy.n_steps):
        assert [n.token_id for n in step_nodes(greedy, step)] == [n.token_id for n in step_nodes(beam1, step)]


@pytest.mark.parametrize("method,beam", [("greedy", 1), ("beam", 2), ("beam", 5), ("beam", 10)])
def test_recording_changes_no_result(tr, method, beam):
    for sentence in SENTENCES:
        plain = tr.translate(sentence, method=method, beam_size=beam, output_attentions=False)
        recorded = tr.translate(sentence, method=method, beam_size=beam, output_attentions=False, record_search=True)
        assert plain.search is None and recorded.search is not None
        assert [(c.ids, c.score, c.log_prob) for c in plain.candidates] == [
            (c.ids, c.score, c.log_prob) for c in recorded.candidates]


def test_batched_recording_equals_one_sentence_at_a_time():
    model = tiny_model(vocab=30, seed=5)
    src = sources(30, lengths=(7, 3, 11), seed=9)
    plain = beam_search(model, src, beam_size=4, max_len=25).hypotheses
    batched = beam_search(model, src, beam_size=4, max_len=25, record_search=True)
    greedy = greedy_decode(model, src, max_len=25, record_search=True)
    assert [[h.tokens for h in n] for n in batched.hypotheses] == [[h.tokens for h in n] for n in plain]
    for b in range(src.size(0)):
        n = int((src[b] != 0).sum())
        for search, traces in ((lambda s: beam_search(model, s, 4, max_len=25, record_search=True), batched.traces),
                               (lambda s: greedy_decode(model, s, 25, record_search=True), greedy.traces)):
            alone = search(src[b : b + 1, :n]).traces[0]
            assert [(x.step, x.parent, x.token_id, x.status, x.rank, x.nbest_rank) for x in alone.nodes] == [
                (x.step, x.parent, x.token_id, x.status, x.rank, x.nbest_rank) for x in traces[b].nodes]
            assert [x.log_prob for x in alone.nodes] == pytest.approx([x.log_prob for x in traces[b].nodes], abs=1e-4)


def test_prefix_attention_equals_the_models_forward(tr):
    r = tr.translate(SENTENCES[0], method="beam", beam_size=5, output_attentions=False, record_search=True)
    pruned = [n for n in r.search.nodes if n.status == PRUNED and n.step >= 3][0]
    prefix = r.search.prefix_ids(pruned.id)
    att = tr.attention_for_prefix(r, prefix, top_k=3)
    in_ids = [tr.model.config.bos_id] + prefix[:-1]
    with torch.inference_mode():
        out = tr.model(torch.tensor([r.src_ids]), torch.tensor([in_ids]), output_attentions=True)
    L, H = tr.model.config.n_decoder_layers, tr.model.config.n_heads
    assert att.cross.shape == (L, H, len(prefix), len(r.src_ids))
    np.testing.assert_allclose(att.cross, torch.stack([w[0] for w in out.attention.cross]).numpy(), atol=1e-5)
    np.testing.assert_allclose(att.decoder, torch.stack([w[0] for w in out.attention.decoder]).numpy(), atol=1e-5)
    assert att.tgt_out_tokens == r.search.prefix_tokens(pruned.id)
    # The last step record is the node's own step: the search's probability of its token.
    assert att.steps[-1].token == pruned.token and att.steps[-1].probability == pytest.approx(pruned.probability,
                                                                                              abs=1e-4)


@pytest.mark.parametrize("prefix,match", [([], "non-empty"), ([1, 10**6], "integers"), ([True], "integers"),
                                          ("abc", "non-empty"), ([5] * 300, "longer")])
def test_bad_prefixes_are_clear_errors(tr, prefix, match):
    r = tr.translate(SENTENCES[1], method="greedy", output_attentions=False)
    with pytest.raises(ValueError, match=match):
        tr.attention_for_prefix(r, prefix)


def test_trace_paths_and_bad_node_ids(tr):
    trace = tr.translate(SENTENCES[1], method="beam", beam_size=3, output_attentions=False, record_search=True).search
    node = trace.nodes[-1]
    assert trace.path(node.id)[-1] is node and len(trace.path(node.id)) == node.step + 1
    assert trace.prefix_tokens(0) == [] and trace.nodes[0].token == "<bos>"
    assert trace.ancestors_of([node.id]) == {0} | {n.id for n in trace.path(node.id)}
    for bad in (-1, len(trace.nodes)):
        with pytest.raises(ValueError, match="node_id"):
            trace.path(bad)
