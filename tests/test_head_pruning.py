"""Pruning curves (transformer/training/head_pruning.py): the points measured, the masks, the curve scored once per
point, how many heads can go, and the mean of several random orders."""
from __future__ import annotations

import numpy as np

from transformer.training.head_pruning import curve_points, mask_without, mean_curve, pruning_curve, removable


def test_pruning_curve_helpers():
    assert curve_points(10, 4) == [0, 4, 8, 10] and curve_points(8, 4) == [0, 4, 8]
    assert curve_points(3, 1) == [0, 1, 2, 3]
    np.testing.assert_array_equal(mask_without((2, 2), [(0, 1), (1, 0)]), [[1, 0], [0, 1]])
    calls = []

    def score(off):
        calls.append(list(off))
        return {"a": 30.0 - len(off), "b": 20.0 - 0.1 * len(off)}

    order = [(0, 0), (0, 1), (1, 0), (1, 1)]
    curve = pruning_curve(score, order, [0, 1, 2, 4], baseline={"a": 30.0, "b": 20.0})
    assert calls == [[(0, 0)], [(0, 0), (0, 1)], order]  # the baseline is not recomputed
    assert curve["removed"] == [0, 1, 2, 4] and curve["bleu"] == [25.0, 24.45, 23.9, 22.8]
    assert curve["per_corpus"]["a"] == [30.0, 29.0, 28.0, 26.0]
    assert removable(curve, 0.6) == 1 and removable(curve, 0.5) == 0 and removable(curve, 10) == 4
    assert removable({"removed": [0, 1, 2], "bleu": [10, 8, 10]}, 0.5) == 0  # the first drop counts
    both = mean_curve([{"removed": [0, 2], "bleu": [10.0, 6.0]}, {"removed": [0, 2], "bleu": [10.0, 8.0]}])
    assert both == {"removed": [0, 2], "bleu": [10.0, 7.0], "seeds": [[10.0, 6.0], [10.0, 8.0]]}
