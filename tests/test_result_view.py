"""What the page shows of a result (transformer/explorer/core/result_view.py): the n-best list, each translation
once, and the candidate each row stands for.
"""
from __future__ import annotations

from pathlib import Path

from transformer.translator import load_pretrained


def test_the_nbest_list_shows_each_translation_once_and_rows_map_to_candidates():
    from transformer.explorer.core.result_view import candidate_choices, nbest_row_candidate, nbest_table
    from transformer.explorer.core.results import run_translation

    tr = load_pretrained(Path(__file__).resolve().parents[1] / "checkpoints" / "en-de")
    result = run_translation(tr, "en-de", "I know that the teacher speaks German.", "beam", 8, 1.4)[0]
    texts = [c.text for c in result.translation.candidates]
    table = nbest_table(result)
    assert list(table["translation"]) == list(dict.fromkeys(texts))  # distinct, best first
    assert int(table["spellings"].sum()) == len(texts) and len(table) < len(texts)  # this sentence repeats
    for row, text in enumerate(table["translation"]):
        index = nbest_row_candidate(result, row)
        assert texts[index] == text and texts.index(text) == index  # the best-scored spelling
    assert [i for _, i in candidate_choices(result)] == [nbest_row_candidate(result, r) for r in range(len(table))]
