"""The word aligner the head analysis tags alignment heads by (transformer/training/aligner.py): IBM Model 1 learns
a synthetic lexicon and aligns by it."""
from __future__ import annotations

import numpy as np
import pytest

from transformer.training.aligner import IBM1


def test_ibm1_learns_a_synthetic_lexicon_and_aligns_by_it():
    rng = np.random.default_rng(0)
    lexicon = {10: 20, 11: 21, 12: 22, 13: 23, 14: 24}
    pairs = []
    for _ in range(300):
        words = list(rng.choice(list(lexicon), size=3, replace=False))
        tgt = [lexicon[w] for w in words]
        rng.shuffle(tgt)
        pairs.append((words, tgt))
    model = IBM1.train(pairs, vocab_size=32, iterations=10)
    src = [13, 10, 12]
    assert model.align(src, [20, 22, 23]) == [1, 2, 0]
    assert model.prob(np.array([10]), np.array([20]))[0] > 0.9
    assert model.align([], [20]) == [None]
    with pytest.raises(ValueError):
        IBM1.train([([], [])], vocab_size=32)
