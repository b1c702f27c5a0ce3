"""A checkpoint's head analysis as the page reads it (transformer/explorer/core/checkpoint_heads.py): nothing
without one; with one, the Heads tab's figure and the payload's head info. Its alignment read-outs and the
agreement sentence are tests/test_alignment.py's.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from toy_app import fake_result

from transformer.explorer.core import result_view


def test_head_analysis_reaches_the_payload_and_the_heads_tab(tmp_path):
    from transformer.explorer.core import checkpoint_heads
    from transformer.explorer.panels.heads.figures import head_figures

    assert checkpoint_heads.head_info(tmp_path) is None
    fig, table = head_figures("x", tmp_path)
    assert "head_analysis" in json.dumps(fig.to_plotly_json()) and table.empty
    grid = [[0.5, 1.0], [1.0, 0.0]]
    kinds = {k: {"shares": {"sink": grid, "rare": grid}, "tags": [[["sink"], []], [["sink", "rare"], []]],
                 "rows": {"sink": 10, "rare": 8}} for k in ("encoder", "decoder", "cross")}
    (tmp_path / "head_roles.json").write_text(json.dumps({
        "kinds": kinds, "names": {"sink": "sink <b>", "rare": "rare word"}, "thresholds": {"sink": 0.5, "rare": 0.5}}))
    curve = {"removed": [0, 2, 4], "bleu": [30.0, 29.8, 10.0]}
    (tmp_path / "head_importance.json").write_text(json.dumps({
        "importance": {k: grid for k in ("encoder", "decoder", "cross")},
        "pruning": {k: {"n_heads": 4, "importance": curve, "reverse": curve, "random": curve | {"seeds": [[1]]},
                        "removable": {"importance": 2}} for k in ("encoder", "decoder", "cross")}}))
    info = checkpoint_heads.head_info(tmp_path)
    assert info["kinds"]["cross"]["tags"][1][0] == ["sink", "rare"] and info["codes"]["sink"] == "K"
    fig, table = head_figures("x", tmp_path)
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    assert len(heatmaps) == 3 and heatmaps[0].text[1][0] == "KR" and "sink &lt;b&gt;" in heatmaps[0].customdata[0][0]
    assert len([t for t in fig.data if t.type == "scatter"]) == 9
    assert "2 of 4 heads go" in json.dumps(fig.to_plotly_json(), ensure_ascii=False)
    assert list(table["heads"]) == [2, 1] * 3
    payload = result_view.result_payload(fake_result(), info)
    assert payload["heads"]["kinds"]["encoder"]["importance"] == grid
