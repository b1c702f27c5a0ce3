"""The Training tab's data (transformer/explorer/panels/training/curves.py): the training log read line by line and
the metrics table.
"""
from __future__ import annotations

import json

from transformer.explorer.panels.training import curves


def test_training_helpers(tmp_path):
    (tmp_path / "train_log.jsonl").write_text('{"epoch": 1, "val_loss": 2.0}\nnot json\n[1]\n{"epoch": 2}\n')
    assert [r["epoch"] for r in curves.load_train_log(tmp_path)] == [1, 2]
    (tmp_path / "metrics.json").write_text(json.dumps({"bleu": 31.234567, "test": {"bleu": 30.0}, "n": [1, 2]}))
    table = curves.metrics_table(tmp_path)
    assert dict(zip(table["metric"], table["value"])) == {"bleu": "31.23", "test.bleu": "30", "n": "[1, 2]"}
    assert "no metrics.json" in curves.metrics_table(tmp_path / "nope")["metric"][0]
    (tmp_path / "metrics.json").write_text(json.dumps({
        "test/beam5": {"bleu": 23.456, "chrf": 45.7, "method": "beam", "signature": "x", "split": "test"},
        "val/greedy": {"bleu": 22.0, "method": "greedy", "batch_size": 64}}))
    table = curves.metrics_table(tmp_path)
    assert list(table.columns) == ["evaluation", "bleu", "chrf", "method"]
    assert table.values.tolist() == [["test/beam5", "23.46", "45.7", "beam"], ["val/greedy", "22", "", "greedy"]]
