"""What a search did, step by step: every hypothesis it kept, pruned or finished.

Greedy and beam search record only when asked (`record_search=True`); they then hand
a `SearchRecorder` the candidates they ranked at each step, and return one
`SearchTrace` per sentence next to their hypotheses (`SearchOutput`). A trace is a
tree of `SearchNode`s rooted at <bos>; a node is one token appended to its parent's
prefix. Which candidates a step records:

- beam search (beam K): the 2K continuations it ranks per sentence (the best 2K over
  all live beams). Status `finished` = an <eos> among the top K (set aside as a
  hypothesis), `kept` = one of the K best non-<eos> ones (a live beam of the next
  step), `pruned` = the rest, <eos> outside the top K included.
- greedy: the chosen token (`kept`, or `finished` when <eos>) and the runner-up
  (`pruned`), i.e. the 2K = 2 candidates a beam of one ranks.

Candidates with log-probability -inf (forbidden tokens, beams not yet filled on the
first step) are not real hypotheses and are not recorded. A sentence's recording
stops at the step its search stops for it. The search itself never reads a trace.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:  # the figure code reads traces without importing torch
    from torch import Tensor

ROOT, KEPT, PRUNED, FINISHED = "root", "kept", "pruned", "finished"


@dataclass
class SearchNode:
    """One token appended to its parent's prefix during the search."""

    id: int  # index in SearchTrace.nodes; 0 is the <bos> root
    step: int  # output position of `token_id` (0 = first output token); -1 for the root
    parent: int  # id of the node this one extends; -1 for the root
    token_id: int
    log_prob: float  # cumulative log-probability of the prefix ending in this token
    score: float  # log_prob / length penalty of the prefix length (what beam search ranks by)
    token_log_prob: float  # log p(token | parent prefix, source)
    status: str  # ROOT, KEPT, PRUNED or FINISHED
    rank: int  # rank among the candidates recorded at this step (0 = best); -1 for the root
    nbest_rank: int | None = None  # position in the returned n-best list, best = 0
    token: str = ""  # the token's text; filled in by `SearchTrace.name_tokens`

    @property
    def probability(self) -> float:
        """p(token | parent prefix, source)."""
        return math.exp(self.token_log_prob)


@dataclass
class SearchTrace:
    """The search tree of one sentence. `nodes[0]` is the root; nodes are in step order."""

    method: str  # "greedy" or "beam"
    beam_size: int  # K (1 for greedy)
    length_penalty: float  # GNMT alpha of the scores
    candidates_per_step: int  # how many ranked candidates each step records: 2K
    nodes: list[SearchNode] = field(default_factory=list)
    nbest: list[int] = field(default_factory=list)  # node ids of the returned hypotheses, best first

    @property
    def n_steps(self) -> int:
        return max((n.step for n in self.nodes), default=-1) + 1

    def path(self, node_id: int) -> list[SearchNode]:
        """The nodes from the first output token to `node_id` (the root excluded)."""
        if not 0 <= node_id < len(self.nodes):
            raise ValueError(f"node_id must be in 0..{len(self.nodes) - 1}, got {node_id!r}")
        nodes = []
        while node_id > 0:
            nodes.append(self.nodes[node_id])
            node_id = self.nodes[node_id].parent
        return nodes[::-1]

    def prefix_ids(self, node_id: int) -> list[int]:
        """Output ids of the hypothesis ending at `node_id` (no <bos>)."""
        return [n.token_id for n in self.path(node_id)]

    def prefix_tokens(self, node_id: int) -> list[str]:
        """Token texts of the hypothesis ending at `node_id` (no <bos>); see `name_tokens`."""
        return [n.token for n in self.path(node_id)]

    def best_path(self) -> list[SearchNode]:
        """The path of the best returned hypothesis."""
        return self.path(self.nbest[0]) if self.nbest else []

    def ancestors_of(self, node_ids: Sequence[int]) -> set[int]:
        """Every node on a path from the root to one of `node_ids` (those included)."""
        seen: set[int] = set()
        for node_id in node_ids:
            while node_id >= 0 and node_id not in seen:
                seen.add(node_id)
                node_id = self.nodes[node_id].parent
        return seen

    def name_tokens(self, ids_to_tokens: Callable[[list[int]], list[str]]) -> SearchTrace:
        """Fill every node's `token` text from its id (e.g. `tokenizer.ids_to_tokens`); returns self."""
        for node, text in zip(self.nodes, ids_to_tokens([n.token_id for n in self.nodes])):
            node.token = text
        return self


HypothesesT = TypeVar("HypothesesT")


@dataclass
class SearchOutput(Generic[HypothesesT]):
    """What a search (`decoding.greedy_decode`, `decoding.beam_search`) returns: its hypotheses per sentence and,
    with `record_search=True`, one trace per sentence."""

    hypotheses: HypothesesT  # the same whether the search is recorded or not
    traces: list[SearchTrace] | None = None  # only with record_search=True


class SearchRecorder:
    """Builds the traces of a batch of B sentences from the candidates each step ranks.

    `live[b][k]` is the node id of sentence b's beam k (row b * K + k of the search),
    None while that beam holds no hypothesis.
    """

    def __init__(self, batch: int, method: str, beam_size: int, length_penalty: float, bos_id: int):
        self.traces = [SearchTrace(method, beam_size, length_penalty, 2 * beam_size,
                                   [SearchNode(0, -1, -1, bos_id, 0.0, 0.0, 0.0, ROOT, -1)]) for _ in range(batch)]
        self.live: list[list[int | None]] = [[0] + [None] * (beam_size - 1) for _ in range(batch)]

    def record_step(
        self, step: int, active: Sequence[bool], log_prob: Tensor, token_log_prob: Tensor, token: Tensor,
        parent_beam: Tensor, finished: Tensor, keep: Tensor, length_factor: float,
    ) -> None:
        """One step's ranked candidates, all (B, C) best first, except `keep` (B, K).

        length_factor: the length penalty of a prefix of step + 1 tokens (scores are
        log_prob / length_factor); log_prob: cumulative log-probability; token_log_prob: the new token's own;
        token: its id; parent_beam: the beam (0..K-1) it extends; finished: set aside as
        a hypothesis; keep[b, k]: the candidate index that becomes beam k, -1 for none.
        Sentences with `active[b]` False (their search has stopped) are skipped.
        """
        lp, tlp, tok, parent, fin, kept = (x.tolist() for x in (log_prob, token_log_prob, token, parent_beam,
                                                                  finished, keep))
        for b, trace in enumerate(self.traces):
            if not active[b]:
                continue
            live, new_live = self.live[b], [None] * len(kept[b])
            slot = {c: k for k, c in enumerate(kept[b]) if c >= 0}
            for c in range(len(lp[b])):
                parent_id = live[parent[b][c]]
                if lp[b][c] == float("-inf") or parent_id is None:
                    continue
                status = FINISHED if fin[b][c] else KEPT if c in slot else PRUNED
                node = SearchNode(len(trace.nodes), step, parent_id, tok[b][c], lp[b][c], lp[b][c] / length_factor,
                                  tlp[b][c], status, c)
                trace.nodes.append(node)
                if status == KEPT:
                    new_live[slot[c]] = node.id
            self.live[b] = new_live

    def finish(self, nbest: Sequence[Sequence]) -> list[SearchTrace]:
        """Mark the returned hypotheses (per sentence, best first, each with `.tokens`) in the traces."""
        for trace, hyps in zip(self.traces, nbest):
            by_prefix = {tuple(trace.prefix_ids(n.id)): n for n in trace.nodes if n.status == FINISHED}
            for rank, hyp in enumerate(hyps):
                node = by_prefix.get(tuple(hyp.tokens))
                if node is None:
                    raise RuntimeError(f"returned hypothesis {hyp.tokens} was not recorded as finished")
                node.nbest_rank = rank
                trace.nbest.append(node.id)
        return self.traces
