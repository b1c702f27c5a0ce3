"""Tests for transformer/explorer/panels/tree/search_tree.py: the search tree figure and node naming."""
from __future__ import annotations

import pytest

from test_figures import EVIL, assert_no_raw_tag
from transformer.explorer.panels.tree import search_tree
from transformer.explorer.maps.token_labels import read_tokens
from transformer.search_trace import FINISHED, PRUNED, ROOT

# Our own sentences, never Multi30k text.
LONG = ("Two young women in colourful dresses dance together on a wooden stage while an old man plays the accordion"
        " and three children clap their hands.")
SHORT = "A small boy feeds the white goats behind the barn."

pytestmark = pytest.mark.usefixtures("validate_figures")


@pytest.fixture(scope="module")
def long_pair(flagship):
    """Beam 5 (length penalty 0.6) and greedy on a sentence where they end differently, both with their search
    recorded."""
    beam = flagship.translate(LONG, beam_size=5, length_penalty=0.6, output_attentions=False, record_search=True)
    greedy = flagship.translate(LONG, method="greedy", output_attentions=False, record_search=True)
    return beam, greedy


def node_traces(fig):
    """The figure's per-node marker traces: those whose customdata are node ids."""
    return [t for t in fig.data if t.customdata is not None and t.mode == "markers+text"]


@pytest.mark.parametrize("show_pruned", [True, False])
def test_tree_draws_every_node_once_without_overlap(long_pair, show_pruned):
    beam, greedy = long_pair
    trace = beam.search
    fig = search_tree.beam_tree_figure(trace, greedy=greedy.search, show_pruned=show_pruned)
    drawn = [int(i) for t in node_traces(fig) for i in t.customdata]
    expected = [n.id for n in trace.nodes if show_pruned or n.status != PRUNED]
    assert sorted(drawn) == expected
    positions = {int(i): (x, y) for t in node_traces(fig) for i, x, y in zip(t.customdata, t.x, t.y)}
    for node_id, (x, _) in positions.items():
        assert x == trace.nodes[node_id].step + 1
    for step in range(-1, trace.n_steps):  # within a column, labels at least one row apart
        ys = sorted(y for i, (_, y) in positions.items() if trace.nodes[i].step == step)
        assert all(b - a >= 1.0 - 1e-9 for a, b in zip(ys, ys[1:]))
    best = next(t for t in node_traces(fig) if t.name == "best translation")
    assert sorted(int(i) for i in best.customdata) == sorted([0] + [n.id for n in trace.best_path()])
    assert set(best.y) == {0.0}  # the best path is one straight line


def test_tree_marks_finished_scores_and_where_beam_leaves_greedy(long_pair):
    beam, greedy = long_pair
    fig = search_tree.beam_tree_figure(beam.search, greedy=greedy.search)
    texts = [s for t in fig.data if t.mode == "text" for s in t.text]
    finished = [n for n in beam.search.nodes if n.status == FINISHED]
    assert len(texts) == len(finished)
    assert f"#1 {beam.candidates[0].score:.2f}".replace("-", "\u2212") in texts
    b_ids, g_ids = beam.candidates[0].ids, greedy.candidates[0].ids
    assert b_ids != g_ids  # the sentence was chosen for this
    first = next(i for i, (b, g) in enumerate(zip(b_ids, g_ids)) if b != g)
    assert [a.text for a in fig.layout.annotations] == [f"step {first + 1}: best beam leaves greedy"]
    assert fig.layout.shapes[0].x0 == first + 1
    greedy_line = next(t for t in fig.data if t.name == "greedy")
    assert len(greedy_line.x) == len(g_ids) + 1  # <bos> and every greedy token


def test_tree_of_greedy_agreeing_with_beam_has_no_divergence_mark(flagship):
    beam = flagship.translate(SHORT, beam_size=1, output_attentions=False, record_search=True)
    greedy = flagship.translate(SHORT, method="greedy", output_attentions=False, record_search=True)
    fig = search_tree.beam_tree_figure(beam.search, greedy=greedy.search)
    assert not fig.layout.annotations and not fig.layout.shapes and "same output as greedy" in fig.layout.title.text
    assert len([t for t in fig.data if t.name == "greedy"]) == 1  # greedy stays inside the tree: no lane


def test_tree_is_readable_for_beam_10_and_30_steps(flagship):
    r = flagship.translate(LONG, beam_size=10, output_attentions=False, record_search=True)
    assert r.search.n_steps >= 25
    fig = search_tree.beam_tree_figure(r.search, width=1400)
    assert 320 <= fig.layout.height <= 2000 and fig.layout.width == 1400
    labels = [s for t in node_traces(fig) for s in t.text if s]
    assert max(len(s) for s in labels) <= 14


def test_tree_escapes_token_text(long_pair):
    beam, greedy = long_pair
    trace = beam.search
    real = [n.token for n in trace.nodes]
    try:
        trace.name_tokens(lambda ids: [EVIL] * len(ids))
        fig = search_tree.beam_tree_figure(trace, greedy=greedy.search, width=4000)  # wide: labels uncut
        assert_no_raw_tag(fig)
        assert any("&lt;img" in s for t in node_traces(fig) for s in t.text)
    finally:
        for node, token in zip(trace.nodes, real):
            node.token = token


def test_node_choices_name_prefixes(long_pair):
    trace = long_pair[0].search
    choices = search_tree.node_choices(trace)
    assert [i for _, i in choices] == [n.id for n in trace.nodes if n.status not in (ROOT, PRUNED)]
    assert len(search_tree.node_choices(trace, include_pruned=True)) == len(trace.nodes) - 1
    best_end = trace.nbest[0]
    label = dict((i, s) for s, i in choices)[best_end]
    assert label.startswith(f"step {trace.nodes[best_end].step + 1} · <eos> · n-best #1")
    assert label.endswith(read_tokens(trace.prefix_tokens(best_end)))
    # the tokens as the maps name them: no word-start mark "▁" in a label or a hover
    assert not [s for s, _ in choices if "\u2581" in s]
    hovers = [h for t in node_traces(search_tree.beam_tree_figure(trace)) for h in (t.hovertext or ())]
    assert hovers and not [h for h in hovers if "\u2581" in h]


def test_pruned_candidates_lose_their_labels_only_in_a_wide_long_search(flagship, long_pair):
    def pruned_texts(trace):
        fig = search_tree.beam_tree_figure(trace)
        return next(list(t.text) for t in node_traces(fig) if t.name == "pruned candidate")

    short = flagship.translate("A dog sleeps.", beam_size=3, output_attentions=False, record_search=True).search
    assert short.candidates_per_step * (short.n_steps + 1) <= search_tree.PRUNED_LABEL_LIMIT
    assert all(pruned_texts(short))  # few candidates: every one named
    wide = flagship.translate(LONG, beam_size=10, output_attentions=False, record_search=True).search
    assert wide.candidates_per_step * (wide.n_steps + 1) > search_tree.PRUNED_LABEL_LIMIT
    assert not any(pruned_texts(wide))  # dots and hover text only
    fig = search_tree.beam_tree_figure(wide)
    kept = [s for t in node_traces(fig) if t.name != "pruned candidate" for s in t.text]
    assert sum(bool(s) for s in kept) > wide.n_steps  # the hypotheses the beam kept stay named
