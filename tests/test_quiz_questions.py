"""The class quiz's questions (transformer/explorer/panels/quiz/questions.py): pure arrays and tokens in, questions
out; the role table from a checkpoint's head analysis; a teacher's own question specs; and one quiz made by the
real en-de checkpoint from a sentence of our own."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from transformer.explorer.panels.quiz.questions import (
    Attended,
    HeadRole,
    Question,
    SpecError,
    answers_of,
    head_roles,
    make_quiz,
    parse_specs,
    question_from_spec,
    quiz_from_json,
    quiz_json,
    word_weights,
)

ROOT = Path(__file__).resolve().parents[1]
EN_DE = ROOT / "checkpoints" / "en-de"
SRC = ["▁The", "▁ot", "ter", "▁swims", "▁home", ".", "<eos>"]
TGT_OUT = ["▁Der", "▁Otter", "▁schwimmt", "▁nach", "▁Hause", ".", "<eos>"]
TGT_IN = ["<bos>", *TGT_OUT[:-1]]
ALIGN = [0, 1, 3, 4, 4, 5, 6]  # source piece each output token looks at (the otter's first piece)


def attended(layers: int = 2, heads: int = 3, weight: float = 0.9) -> Attended:
    """A translation whose heads put `weight` on the aligned piece, the rest spread evenly."""
    cross = np.full((layers, heads, len(TGT_OUT), len(SRC)), (1 - weight) / (len(SRC) - 1), np.float32)
    for t, s in enumerate(ALIGN):
        cross[:, :, t, s] = weight
    decoder = np.tril(np.ones((layers, heads, len(TGT_OUT), len(TGT_OUT)), np.float32))
    decoder /= decoder.sum(-1, keepdims=True)
    return Attended("The otter swims home.", SRC, TGT_IN, TGT_OUT, {"cross": cross, "decoder": decoder})


def test_pieces_are_merged_into_words_and_their_weights_summed():
    words, weights = word_weights(SRC, np.array([0.0, 0.3, 0.4, 0.1, 0.1, 0.05, 0.05]))
    assert words == ["The", "otter", "swims", "home", "."]  # <eos> is no choice
    assert weights == pytest.approx([0.0, 0.7, 0.1, 0.1, 0.05])


def test_answers_are_the_top_word_and_a_near_tie_never_punctuation():
    assert answers_of(["a", "b", "c"], [0.2, 0.5, 0.3]) == [1]
    assert answers_of(["a", "b", "c"], [0.47, 0.5, 0.03]) == [0, 1]
    assert answers_of(["a", "."], [0.1, 0.9]) == [0]


def test_a_quiz_asks_heads_with_a_role_on_clear_rows_of_different_words():
    roles = {("cross", 1, 2): HeadRole("strong {source}", 0.9), ("cross", 0, 0): HeadRole("weaker", 0.6)}
    quiz = make_quiz(attended(), roles, n=5)
    assert len(quiz) == 5
    assert {(q.layer, q.head) for q in quiz} == {(1, 2), (0, 0)}  # only heads with a role
    assert (quiz[0].layer, quiz[0].head, quiz[0].role) == (1, 2, "strong English")  # strongest first
    assert len({q.row for q in quiz}) == 5  # a different written word each time
    for q in quiz:
        assert q.weights[q.answers[0]] >= 0.5 and q.kind == "cross"
        assert TGT_OUT[q.row].lstrip("▁") == q.translation[q.target]
    otter = next(q for q in quiz if q.translation[q.target] == "Otter")
    assert otter.words[otter.answers[0]] == "otter" and otter.prompt().startswith("When the model writes “Otter”")


def test_no_question_where_no_word_is_clear():
    roles = {("cross", 0, 0): HeadRole("role", 0.9)}
    assert make_quiz(attended(weight=0.3), roles) == []
    assert make_quiz(attended(), {}) == []  # no head with a role: nothing one can reason out


def test_the_answer_stays_hidden_until_revealed_and_questions_survive_json():
    quiz = make_quiz(attended(), {("cross", 0, 1): HeadRole("role", 0.9)}, n=2)
    hidden, shown = quiz[0].public(False), quiz[0].public(True)
    assert not {"weights", "answers", "role"} & set(hidden)
    assert shown["weights"] == quiz[0].weights and shown["head"] == "1.2"
    assert quiz_from_json(quiz_json(quiz)) == quiz


def test_roles_come_from_tags_and_from_heads_that_agree_with_people():
    roles = {"kinds": {"cross": {"tags": [[["align"], []]], "shares": {"align": [[0.6, 0.1]]}},
                       "decoder": {"tags": [[[], ["prev"]]], "shares": {"prev": [[0.1, 0.95]]}}}}
    alignment = {"read_outs": [
        {"kind": "head", "layer": 0, "head": 1, "rows": "shifted", "test": {"precision": 91.0}},
        {"kind": "head", "layer": 0, "head": 0, "rows": "predicting", "test": {"precision": 60.0}},
        {"kind": "layer", "layer": 0, "head": None, "rows": "predicting", "test": {"precision": 99.0}}]}
    table = head_roles(roles, alignment)
    assert set(table) == {("cross", 0, 0), ("cross", 0, 1), ("decoder", 0, 1)}
    assert table[("cross", 0, 0)].strength == pytest.approx(0.6)  # the tag; 60 in 100 is not clear
    assert "one step behind" in table[("cross", 0, 1)].line and "91" in table[("cross", 0, 1)].line
    assert head_roles(None, None) == {}


def test_a_teachers_specs_are_parsed_and_every_bad_one_says_why():
    specs = parse_specs([{"sentence": " The otter swims home. ", "head": "2.3", "target": 1}])
    assert (specs[0].sentence, specs[0].layer, specs[0].head, specs[0].row) == ("The otter swims home.", 1, 2, 1)
    question = question_from_spec(specs[0], attended(), {})
    assert isinstance(question, Question) and question.translation[question.target] == "Otter"
    assert "No clear role" in question.role
    bad = [None, [], [{"sentence": "", "head": "1.1", "target": 0}], [{"sentence": "x", "head": "0.1", "target": 0}],
           [{"sentence": "x", "head": "1.1", "target": -1}], [{"sentence": "x", "head": "1.1", "target": True}],
           [{"sentence": "x", "head": "1.1", "target": 0, "kind": "encoder"}],
           [{"sentence": "x", "head": "<script>", "target": 0}], [{"sentence": "x", "head": "1.1", "target": 0, "y": 1}]]
    for raw in bad:
        with pytest.raises(SpecError):
            parse_specs(raw)
    for spec in ({"sentence": "x", "head": "3.1", "target": 0}, {"sentence": "x", "head": "1.1", "target": 6}):
        with pytest.raises(SpecError):
            question_from_spec(parse_specs([spec])[0], attended(), {})


@pytest.mark.skipif(not (EN_DE / "model.safetensors").is_file(), reason="the en-de checkpoint is not here")
def test_the_en_de_model_makes_a_quiz_one_can_reason_out():
    from transformer.explorer.panels.quiz.model_quiz import QuizMaker
    from transformer.translator import load_pretrained

    translator = load_pretrained(EN_DE)
    asked: list[str] = []
    maker = QuizMaker(lambda text: asked.append(text) or translator.translate(text), EN_DE)
    quiz = maker({"sentence": "The tired farmer sold three brown cows at the market yesterday."})
    assert 4 <= len(quiz) <= 5
    assert len({(q.layer, q.head) for q in quiz}) >= 4  # several heads, each with its role
    for q in quiz:
        assert q.words[-1] == "." and "farmer" in q.words
        assert max(q.weights) >= 0.5 and q.role and q.kind == "cross"
    spec = maker({"questions": [{"sentence": "My sister paints small boats.", "head": "3.2", "target": 1}]})
    assert spec[0].head_label == "3.2" and spec[0].words == ["My", "sister", "paints", "small", "boats", "."]
    again = maker({"questions": [{"sentence": "My sister paints small boats.", "head": "1.2", "target": 2}]})
    assert again[0].head_label == "1.2" and maker({"sentence": "My sister paints small boats."})
    assert asked == ["The tired farmer sold three brown cows at the market yesterday.",
                     "My sister paints small boats."]  # the model runs once per sentence
