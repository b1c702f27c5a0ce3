"""How the page names a token (transformer/explorer/maps/token_labels.py): pieces shown without the word-start mark,
escaped for Plotly, grouped into words, and read as text."""
from __future__ import annotations

from transformer.explorer.maps import token_labels as tl

W = tl.WORD_MARK


def test_a_piece_is_shown_bare_when_it_starts_a_word_and_marked_when_it_continues_one():
    assert [tl.display_token(t) for t in (W + "ri", "des", W, "<eos>", W + ".", "⟨1⟩", "")] == [
        "ri", "·des", "␣", "<eos>", ".", "⟨1⟩", ""]
    assert tl.choice_label(W) == "␣ (a new word starts)" and tl.choice_label(W + "Hund") == "Hund"


def test_labels_are_escaped_for_plotly_and_cut_with_an_ellipsis():
    assert tl.escape_label("<b>$x$ & y</b>") == "&lt;b&gt;&#36;x&#36; &amp; y&lt;/b&gt;"
    assert tl.escape_label("") == "∅"  # not lost from an axis
    assert tl.labels([W + "<i>", "a"]) == ["&lt;i&gt;", "·a"]
    assert tl.short_label(W + "Zusammenarbeit", 6) == "Zusam…" and tl.short_label(W + "Hund", 6) == "Hund"


def test_pieces_are_grouped_into_words_at_marks_specials_punctuation_and_placeholders():
    tokens = ["<bos>", W + "Ein", "en", W + "bi", "ke", ".", "s", "⟨1⟩", W, "<eos>"]
    group, words = tl.word_groups(tokens)
    assert words == ["<bos>", "Einen", "bike", ".", "s", "⟨1⟩", "␣", "<eos>"]
    assert group == [0, 1, 1, 2, 2, 3, 4, 5, 6, 7]  # "." swallows nothing after it; a placeholder starts a word


def test_tokens_are_read_as_the_text_they_make_with_their_entities():
    assert tl.read_tokens([W + "Ein", W + "Hu", "nd", "."]) == "Ein Hund."
    assert tl.token_text("⟨2⟩", ("Wairimu", "1987")) == "⟨2⟩ 1987" and tl.token_text(W) == "␣"
    assert tl.named_token("⟨1⟩", ("Wairimu",)) == "⟨1⟩ Wairimu" and tl.named_token(W + "Hund") == "Hund"
