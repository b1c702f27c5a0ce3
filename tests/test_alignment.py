"""Cross-attention as word alignment (`transformer.training.alignment`): AER on hand cases, subword maps turned
into word maps by hand, our gold set, and the command end to end on a few gold pairs of the shipped model."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from transformer.training import alignment as al

ROOT = Path(__file__).resolve().parents[1]
CHECKPOINT = ROOT / "checkpoints" / "en-de"


# --- AER ---------------------------------------------------------------------------------------------------

def test_aer_of_a_hand_case():
    sure = {(0, 0), (1, 2)}
    possible = sure | {(2, 1), (2, 2)}
    predicted = {(0, 0), (2, 1), (3, 3)}
    # |A∩S| = 1 ((0,0)), |A∩P| = 2 ((0,0), (2,1)), |A| = 3, |S| = 2
    assert al.aer(predicted, sure, possible) == pytest.approx(1 - (1 + 2) / (3 + 2))


def test_aer_is_zero_for_the_sure_links_and_one_for_nothing_in_common():
    sure, possible = {(0, 0), (1, 1)}, {(0, 0), (1, 1), (1, 2)}
    assert al.aer(sure, sure, possible) == 0.0
    assert al.aer({(0, 1), (1, 0)}, sure, possible) == 1.0
    # a possible link besides the sure ones costs nothing: |A∩S| = 2, |A∩P| = 3, |A| = 3, |S| = 2
    assert al.aer(sure | {(1, 2)}, sure, possible) == pytest.approx(1 - (2 + 3) / (3 + 2))


def test_corpus_aer_sums_the_counts_and_does_not_average_sentences():
    counts = al.AERCounts()
    counts.add({(0, 0)}, {(0, 0)}, {(0, 0)})  # perfect, 1 link
    counts.add({(0, 1), (1, 0), (2, 2)}, {(0, 0), (1, 1), (2, 2)}, {(0, 0), (1, 1), (2, 2)})  # 1 of 3
    assert counts.aer == pytest.approx(1 - (2 + 2) / (4 + 4))
    assert counts.precision == pytest.approx(2 / 4)
    assert counts.recall == pytest.approx(2 / 4)


def test_links_parse_and_format_as_pharaoh():
    sure, possible = al.parse_links("0-0 2p1 1-2")
    assert sure == {(0, 0), (1, 2)}
    assert possible == {(0, 0), (1, 2), (2, 1)}
    assert al.format_links(sure, possible) == "0-0 1-2 2p1"
    with pytest.raises(ValueError):
        al.parse_links("0-0 1:2")


def test_a_gold_pair_checks_its_links():
    with pytest.raises(ValueError, match="out of range"):
        al.GoldPair("A dog.", "Ein Hund.", ("A", "dog", "."), ("Ein", "Hund", "."), frozenset({(3, 0)}),
                    frozenset({(3, 0)}))
    with pytest.raises(ValueError, match="possible"):
        al.GoldPair("A dog.", "Ein Hund.", ("A", "dog", "."), ("Ein", "Hund", "."), frozenset({(0, 0)}),
                    frozenset())


def test_words_split_punctuation_and_keep_inner_apostrophes():
    assert al.words("I've seen his father's T-shirt, twice!") == [
        "I've", "seen", "his", "father's", "T-shirt", ",", "twice", "!"]


# --- subword maps to word maps ---------------------------------------------------------------------------------

def test_pieces_are_matched_to_words_with_placeholders_and_unknowns():
    incidence = al.piece_words(["▁Tom", "▁fe", "eds", "▁the", "▁duck", "s", ".", "<eos>"],
                               ["Tom", "feeds", "the", "ducks", "."])
    assert [list(np.flatnonzero(row)) for row in incidence] == [[0], [1], [1], [2], [3], [3], [4], []]
    # a placeholder spells its entity, which may be two words; <unk> one character; case is ignored
    incidence = al.piece_words(["<bos>", "▁⟨1⟩", "<unk>", "ISST"], ["New", "York", "äisst"], ["New York"])
    assert [list(np.flatnonzero(row)) for row in incidence] == [[], [0, 1], [2], [2]]
    with pytest.raises(ValueError, match="do not spell"):
        al.piece_words(["▁Tom", "▁eats"], ["Tom", "feeds"])
    with pytest.raises(ValueError, match="spell only"):
        al.piece_words(["▁Tom"], ["Tom", "feeds"])


def hand_map() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """English "the bench" as pieces ▁the ▁ben ch <eos>, German "die Parkbank" as ▁die ▁Park bank <eos>:
    one head's cross-attention (1, 1, T=4, S=4) with distinct weights, and the two incidence matrices."""
    cross = np.array([[[[0.1, 0.2, 0.3, 0.4],
                        [0.5, 0.1, 0.1, 0.3],
                        [0.2, 0.2, 0.5, 0.1],
                        [0.1, 0.4, 0.4, 0.1]]]])
    src = al.piece_words(["▁the", "▁ben", "ch", "<eos>"], ["the", "bench"])
    tgt = al.piece_words(["▁die", "▁Park", "bank", "<eos>"], ["die", "Parkbank"])
    return cross, src, tgt


def test_word_map_averages_a_words_rows_and_sums_its_columns():
    cross, src, tgt = hand_map()
    a = cross[0, 0]
    maps = al.word_maps(cross, src, tgt, "predicting")
    assert maps.shape == (1, 1, 2, 2)
    expected = [[a[0, 0], a[0, 1] + a[0, 2]],  # "die": the row that predicts ▁die
                [(a[1, 0] + a[2, 0]) / 2, (a[1, 1] + a[1, 2] + a[2, 1] + a[2, 2]) / 2]]  # Parkbank: its 2 rows
    np.testing.assert_allclose(maps[0, 0], expected)
    assert al.links_from(maps[0, 0]) == {(1, 0), (1, 1)}  # (English, German)


def test_shifted_word_map_reads_each_piece_one_row_later():
    cross, src, tgt = hand_map()
    a = cross[0, 0]
    maps = al.word_maps(cross, src, tgt, "shifted")
    expected = [[a[1, 0], a[1, 1] + a[1, 2]],  # ▁die is the decoder's input at row 1
                [(a[2, 0] + a[3, 0]) / 2, (a[2, 1] + a[2, 2] + a[3, 1] + a[3, 2]) / 2]]
    np.testing.assert_allclose(maps[0, 0], expected)
    assert al.links_from(maps[0, 0]) == {(0, 0), (1, 1)}


def test_every_read_out_in_order_with_layer_means_and_the_mean_of_all():
    rng = np.random.default_rng(0)
    maps = rng.random((2, 3, 4, 5))  # (L, H, W_de, W_en)
    stack = al.stacked(maps)
    outs = al.read_outs(2, 3)
    assert len(outs) == 2 * len(stack) == 2 * (2 * 3 + 2 + 1)
    assert outs[4].name == "L2 H2, predicting"
    np.testing.assert_allclose(stack[4], maps[1, 1])
    assert outs[7].name == "L2 mean, predicting"
    np.testing.assert_allclose(stack[7], (maps[1, 0] + maps[1, 1] + maps[1, 2]) / 3)
    assert outs[8].name == "mean of all, predicting" and outs[9].name == "L1 H1, shifted"
    np.testing.assert_allclose(stack[8], maps.sum((0, 1)) / 6)


def test_the_best_read_out_is_chosen_on_dev():
    pair = al.GoldPair("a b", "x y", ("a", "b"), ("x", "y"), frozenset({(0, 0), (1, 1)}),
                       frozenset({(0, 0), (1, 1)}), "dev")
    scores = al.Scores(al.read_outs(1, 2))
    links = [set() for _ in scores.read_outs]
    links[3] = {(0, 0), (1, 1)}  # one read-out right on dev
    scores.add("dev", links, pair)
    assert scores.best("dev") == 3
    assert al.report(scores)["best"]["name"] == scores.read_outs[3].name


# --- our gold set --------------------------------------------------------------------------------------------

def test_our_gold_set_parses_and_has_a_dev_and_a_test_part():
    pairs = al.read_gold()
    splits = [p.split for p in pairs]
    assert len(pairs) >= 150
    assert splits == ["dev"] * splits.count("dev") + ["test"] * splits.count("test")
    assert splits.count("dev") >= 50 and splits.count("test") >= 100
    for p in pairs:
        linked = {j for _, j in p.possible}
        # every German word but a comma German alone needs is linked to something
        assert all(j in linked or p.de_words[j] == "," for j in range(len(p.de_words))), p.german
        assert p.sure, p.english


def test_the_corpus_check_sees_every_gold_sentence():
    """tests/test_no_corpus_sentences.py compares each sentence it finds in tracked text files with the
    corpora: it must find every English and German sentence of the gold set."""
    spec = importlib.util.spec_from_file_location("no_corpus", ROOT / "tests" / "test_no_corpus_sentences.py")
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    assert al.DEFAULT_GOLD.suffix in check.TEXT_SUFFIXES
    found = check.sentences_in(al.DEFAULT_GOLD.read_text(encoding="utf-8"), tsv=True)
    pairs = al.read_gold()
    assert {p.english for p in pairs} <= found
    assert {p.german for p in pairs} <= found


def test_the_gold_file_is_what_its_maker_writes(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("make_gold", al.DEFAULT_GOLD.parent / "make_gold.py")
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    monkeypatch.setattr(maker, "HERE", tmp_path)
    maker.main()
    assert (tmp_path / "gold.tsv").read_text(encoding="utf-8") == al.DEFAULT_GOLD.read_text(encoding="utf-8")


# --- the shipped model ------------------------------------------------------------------------------------------

@pytest.mark.skipif(not (CHECKPOINT / "model.safetensors").is_file(), reason="no en-de checkpoint")
def test_the_command_scores_gold_pairs_of_the_shipped_model(tmp_path):
    pairs = al.read_gold()
    lines = ["# a few gold pairs", *(
        "\t".join((p.split, p.english, p.german, al.format_links(p.sure, p.possible)))
        for p in pairs[:3] + pairs[-3:])]
    gold = tmp_path / "gold.tsv"
    gold.write_text("\n".join(lines) + "\n", encoding="utf-8")
    same, other = (_anchor_result(tmp_path / f"{n}.json", pairs) for n, pairs in (
        ("same", {"dev": 3, "test": 3}), ("other", {"dev": 50, "test": 112})))
    result = al.main(["--checkpoint", str(CHECKPOINT), "--gold", str(gold), "--json", str(tmp_path / "a.json"),
                      "--anchor", str(same)])
    assert result["pairs"] == {"dev": 3, "test": 3}
    assert result["anchor"] == al.read_anchor(same)[1]
    assert json.loads((tmp_path / "a.json").read_text(encoding="utf-8")) == result
    assert len(result["read_outs"]) == 2 * (4 * 8 + 4 + 1)
    dev = [r["dev"]["aer"] for r in result["read_outs"]]
    assert all(0 <= x <= 100 for x in dev)
    assert result["best"]["dev"]["aer"] == min(dev)
    assert result["opens_on"][0]["kind"] == "head" and len(result["opens_on"]) == 2
    # a model whose attention knew nothing of the words would not get most of six short sentences right
    assert result["best"]["dev"]["aer"] < 50
    # an anchor run on other sentences is left out of the report
    assert "anchor" not in al.main(["--checkpoint", str(CHECKPOINT), "--gold", str(gold), "--anchor", str(other)])


# --- what the app opens on and says ----------------------------------------------------------------------

def _scores(best: dict, read_outs: list[dict]) -> dict:
    return {"pairs": {"dev": 3, "test": 5}, "best": best, "read_outs": read_outs}


def _read_out(kind: str, layer, head, rows: str, dev: float, test=(80.0, 70.0)) -> dict:
    return {"kind": kind, "layer": layer, "head": head, "rows": rows, "dev": {"aer": dev},
            "test": {"precision": test[0], "recall": test[1]}}


CROSS = {"tags": [[[], ["align"]], [["align"], []]], "shares": {"align": [[0.1, 0.6], [0.7, 0.2]]}}


def test_the_cross_view_opens_on_the_best_read_out_and_the_steps_on_the_best_predicting_one(tmp_path):
    """alignment.json's `best` (here a shifted head) opens the cross view with its rows; the steps view opens
    on the predicting read-out with the lowest dev AER the page can show (a layer mean here; the mean of all
    is left out); without the file, both open on the head analysis' alignment head, rows by predicted word."""
    from transformer.explorer.core import checkpoint_heads as hv

    assert hv.opening_read_outs(tmp_path, CROSS) == {
        "cross": {"layer": 1, "head": 0, "rows": "predicted token", "agreement": ""},
        "steps": {"layer": 1, "head": 0, "rows": "predicted token"}}
    best = _read_out("head", 0, 1, "shifted", 9.0, (90.32, 88.0))
    read_outs = [best, _read_out("head", 1, 0, "predicting", 20.0), _read_out("layer", 1, None, "predicting", 12.0),
                 _read_out("all", None, None, "predicting", 10.0)]
    (tmp_path / "alignment.json").write_text(json.dumps(_scores(best, read_outs)), encoding="utf-8")
    opens = hv.opening_read_outs(tmp_path, CROSS)
    assert {k: v for k, v in opens["cross"].items() if k != "agreement"} == {
        "layer": 0, "head": 1, "rows": "decoder input token"}
    assert opens["steps"] == {"layer": 1, "head": -1, "rows": "predicted token"}
    assert "90 in 100" in opens["cross"]["agreement"] and "88 in 100" in opens["cross"]["agreement"]


def test_a_taught_head_opens_both_views_read_as_predicting_and_the_heads_tab_says_it_was_taught(tmp_path):
    """alignment.json's `taught` (the head a recipe taught, `--align-layer`) wins over a better `best`: the class is
    shown the head that was taught, with its own agreement, and the note says why it opens there."""
    from transformer.explorer.core import checkpoint_heads as hv

    best = _read_out("head", 0, 1, "shifted", 9.0, (90.32, 88.0))
    taught = {**_read_out("head", 2, 1, "predicting", 11.0, (93.4, 91.6)), "taught_with": "links"}
    (tmp_path / "alignment.json").write_text(json.dumps({**_scores(best, [best]), "taught": taught}), encoding="utf-8")
    opens = hv.opening_read_outs(tmp_path, CROSS)
    assert opens["steps"] == {"layer": 2, "head": 1, "rows": "predicted token"}
    assert {k: v for k, v in opens["cross"].items() if k != "agreement"} == {**opens["steps"], "taught": True}
    assert "93 in 100" in opens["cross"]["agreement"] and "92 in 100" in opens["cross"]["agreement"]
    assert "taught to align" in hv.opening_note(opens["cross"]).split("\n")[0]
    assert "taught" not in hv.opening_note({**opens["cross"], "taught": False})


def test_the_report_names_the_head_a_recipe_taught():
    scores = al.Scores(al.read_outs(2, 2))
    pair = al.GoldPair("a b", "x y", ("a", "b"), ("x", "y"), frozenset({(0, 0)}), frozenset({(0, 0)}), "dev")
    scores.add("dev", [{(0, 0)}] * len(scores.read_outs), pair)
    assert al.taught_head({"align_layer": 0}) is None
    taught = al.taught_head({"align_layer": 2, "align_head": 1, "align_weight": 0.05, "init_from": "checkpoints/x"})
    entry = al.report(scores, taught=taught)["taught"]
    assert (entry["name"], entry["layer"], entry["head"], entry["rows"]) == ("L2 H1, predicting", 1, 0, "predicting")
    assert entry["fine_tuned_from"] == "checkpoints/x" and "eflomal" in entry["taught_with"]
    assert entry["dev"]["aer"] == 0.0


def test_the_agreement_reads_its_numbers_and_says_nothing_without_them():
    """The sentence takes the best read-out's test precision and recall, and the anchor's where alignment.json
    carries one (the app reads nothing else); no scores, no sentence."""
    from transformer.explorer.core.checkpoint_heads import agreement

    scores = _scores(_read_out("head", 0, 1, "shifted", 9.0, (90.32, 87.6)), [])
    assert agreement(scores) == ("Of the links this map draws, 90 in 100 are ones a person also drew; of a "
                                 "person's links, it finds 88 in 100 (our own 5 test sentences).")
    anchor = {"aligner": "eflomal", "test": {"aer": 4.29, "precision": 98.36, "recall": 93.08}}
    assert agreement({**scores, "anchor": anchor}).endswith(
        "(our own 5 test sentences). A statistical aligner, eflomal, gets 98 and 93.")
    assert agreement({**scores, "anchor": {"aligner": "eflomal"}}) == agreement(scores)  # no test scores: left out
    assert agreement({"pairs": {"test": 5}, "anchor": anchor}) == ""


def _anchor_result(path: Path, gold_pairs: dict) -> Path:
    """bench/alignment_anchor.py's JSON, as much of it as the command reads."""
    links = {s: {"aer": 4.0, "precision": 98.0, "recall": 94.0} for s in ("dev", "test", "all")}
    path.write_text(json.dumps({"gold_pairs": gold_pairs, "date": "then", "aer": {
        "forward": links, al.ANCHOR_LINKS: links}}), encoding="utf-8")
    return path


def test_an_anchor_run_on_the_gold_pairs_is_read_and_anything_else_refused(tmp_path):
    gold_pairs, anchor = al.read_anchor(_anchor_result(tmp_path / "anchor.json", {"dev": 3, "test": 5}))
    assert gold_pairs == {"dev": 3, "test": 5}
    assert anchor == {"aligner": "eflomal", "links": al.ANCHOR_LINKS, "date": "then", "from": str(tmp_path / "anchor.json"),
                      "dev": {"aer": 4.0, "precision": 98.0, "recall": 94.0},
                      "test": {"aer": 4.0, "precision": 98.0, "recall": 94.0}}
    (tmp_path / "other.json").write_text('{"aer": {}}', encoding="utf-8")
    for bad in (tmp_path / "other.json", tmp_path / "missing.json"):
        with pytest.raises(ValueError, match="not a result of bench/alignment_anchor.py"):
            al.read_anchor(bad)
    with pytest.raises(SystemExit):  # the command says so before it loads a model
        al.main(["--anchor", str(tmp_path / "missing.json")])


def test_the_shipped_alignment_scores_carry_the_anchor_of_the_same_gold_pairs():
    """What the Heads tab and the cross view say of eflomal comes from the checkpoint's own alignment.json: its
    `anchor`, the bench result's numbers, on the same gold pairs."""
    if not al.DEFAULT_ANCHOR.is_file():
        pytest.skip("no bench/results/alignment_anchor.json")
    gold_pairs, anchor = al.read_anchor(al.DEFAULT_ANCHOR)
    for name in ("en-de", "de-en"):
        path = ROOT / "checkpoints" / name / "alignment.json"
        if path.is_file():
            scores = json.loads(path.read_text(encoding="utf-8"))
            assert scores["pairs"] == gold_pairs and scores["anchor"] == anchor, name


def test_every_read_out_the_page_can_show_carries_its_agreement():
    """Heads and layer means of both rows, keyed as the page names its view, with their test precision and recall
    in 100; the mean of all (the page cannot show it) is left out; no scores, nothing."""
    from transformer.explorer.core.checkpoint_heads import AGREEMENT, read_out_agreements

    read_outs = [_read_out("head", 0, 1, "shifted", 9.0, (90.32, 87.6)),
                 _read_out("layer", 1, None, "predicting", 12.0), _read_out("all", None, None, "predicting", 10.0, (99.0, 99.0))]
    said = read_out_agreements(_scores(read_outs[0], read_outs))
    assert said["read_outs"] == {"0|1|decoder input token": [90, 88], "1|-1|predicted token": [80, 70]}
    assert said["template"] == AGREEMENT.replace("{pairs}", "5")
    assert said["template"].format(precision=90, recall=88) == AGREEMENT.format(precision=90, recall=88, pairs=5)
    assert read_out_agreements(None) is None and read_out_agreements({"pairs": {"test": 5}}) is None


def test_the_heads_tab_says_what_the_cross_view_opens_on_and_how_far_it_agrees():
    """en-de's Heads tab figure carries the opening read-out and its agreement, as the page shows it."""
    from transformer.explorer.core.checkpoint_heads import head_info
    from transformer.explorer.panels.heads.figures import head_figures

    info = head_info(CHECKPOINT)
    if info is None or not (CHECKPOINT / "alignment.json").is_file():
        pytest.skip("checkpoints/en-de has no head analysis or alignment scores")
    figure, _ = head_figures("en-de", CHECKPOINT)
    texts = [a.text for a in figure.layout.annotations]
    opens = info["opens_on"]["cross"]
    note = next(t for t in texts if "Cross-attention opens on" in t)
    assert f"layer {opens['layer'] + 1}, head {opens['head'] + 1}" in note
    assert opens["agreement"] in note.replace("<br>", " ")
