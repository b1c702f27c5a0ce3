"""The shareable URL's parser (transformer/explorer/core/view_state.py): every field validated, bad values fall back with a note."""
from __future__ import annotations

import re

import pytest

from transformer.explorer.core.limits import MAX_INPUT_CHARS
from transformer.explorer.panels.registry import tab_ids
from transformer.explorer.core.view_state import DEFAULT_BEAM, DEFAULT_LENGTH_PENALTY, MEAN_HEADS, ROWS_PREDICTED, \
    ViewState

TABS = tab_ids()  # the app's tabs, as its registry declares them

MODELS = ["en-de", "multi30k-en-de", "toy-reverse"]


def limits(model: str) -> tuple[int, int]:
    return {"en-de": (6, 8), "multi30k-en-de": (3, 4), "toy-reverse": (2, 4)}[model]


def parse(**params):
    return ViewState.from_query(params, MODELS, limits, default_model="en-de", tabs=TABS)


def test_a_full_link_is_restored_field_by_field():
    view, notes = parse(text="The grey dog bit the baker.", compare="The baker bit the grey dog.", model="multi30k-en-de",
                        method="greedy", beam="3", lp="1.2", tab="tree", kind="steps", layer="3", head="4",
                        rows="predicted", hide="1", merge="true", present="1")
    assert notes == []
    assert view == ViewState(text="The grey dog bit the baker.", compare="The baker bit the grey dog.", model="multi30k-en-de",
                             method="greedy", beam=3, length_penalty=1.2, present=True, tab="tree", kind="steps",
                             layer=2, head=3, rows=ROWS_PREDICTED, hide_special=True, merge_subwords=True)
    assert view.client() == {"tab": "steps", "layer": 2, "head": 3, "rows": ROWS_PREDICTED, "hide": True,
                             "merge": True, "step": 1}


def test_to_query_and_from_query_round_trip():
    view = ViewState(text="Ich & du? 100% \u00fc \u2581x", compare="b", model="toy-reverse", method="beam", beam=10,
                     length_penalty=0.0, tab="compare", kind="decoder", layer=1, head=MEAN_HEADS, hide_special=True)
    back, notes = parse(**view.to_query())
    assert notes == [] and back == view
    assert parse()[0] == ViewState(model="en-de")  # no parameters: the defaults


@pytest.mark.parametrize("params,field,default,why", [
    ({"model": "no-such-model"}, "model", "en-de", "not a model of this app"),
    ({"model": "../../etc/passwd"}, "model", "en-de", "not a model of this app"),
    ({"beam": "999"}, "beam", DEFAULT_BEAM, "from 1 to 10"),
    ({"beam": "0"}, "beam", DEFAULT_BEAM, "from 1 to 10"),
    ({"beam": "2.5"}, "beam", DEFAULT_BEAM, "from 1 to 10"),
    ({"beam": "-3"}, "beam", DEFAULT_BEAM, "from 1 to 10"),
    ({"lp": "nan"}, "length_penalty", DEFAULT_LENGTH_PENALTY, "from 0 to 2"),
    ({"lp": "NaN"}, "length_penalty", DEFAULT_LENGTH_PENALTY, "from 0 to 2"),
    ({"lp": "-0.5"}, "length_penalty", DEFAULT_LENGTH_PENALTY, "from 0 to 2"),
    ({"lp": "inf"}, "length_penalty", DEFAULT_LENGTH_PENALTY, "from 0 to 2"),
    ({"lp": "1e308"}, "length_penalty", DEFAULT_LENGTH_PENALTY, "from 0 to 2"),
    ({"lp": "7"}, "length_penalty", DEFAULT_LENGTH_PENALTY, "from 0 to 2"),
    ({"method": "sample"}, "method", "beam", "greedy, beam"),
    ({"tab": "admin"}, "tab", "attention", "attention, tree, compare, training"),
    ({"kind": "<script>"}, "kind", "encoder", "encoder, decoder, cross, steps"),
    ({"layer": "7"}, "layer", None, "from 1 to 6"),  # en-de: 6 layers
    ({"layer": "0"}, "layer", None, "from 1 to 6"),
    ({"head": "9"}, "head", MEAN_HEADS, "from 1 to 8"),
    ({"head": "-1"}, "head", MEAN_HEADS, "from 1 to 8"),
    ({"rows": "sideways"}, "rows", "predicted token", "input or predicted"),
    ({"hide": "maybe"}, "hide_special", False, "0 or 1"),
    ({"present": "2"}, "present", False, "0 or 1"),
    ({"text": "x" * 5000}, "text", "", f"at most {MAX_INPUT_CHARS}"),
    ({"text": "<script>alert(1)</script>"}, "text", "", "HTML or script"),
    ({"text": "<img src=x onerror=alert(1)>"}, "text", "", "HTML or script"),
    ({"compare": "javascript:alert(1)"}, "compare", "", "HTML or script"),
    ({"text": "a\x00b"}, "text", "", "control characters"),
])
def test_bad_values_fall_back_to_the_default_with_a_note(params, field, default, why):
    view, notes = parse(**params)
    assert getattr(view, field) == default
    key = next(iter(params))
    assert len(notes) == 1 and notes[0].startswith(key) and why in notes[0], notes
    assert "ignored" in ViewState.notes_text(notes) and why in ViewState.notes_text(notes)


def test_layer_and_head_follow_the_chosen_models_size():
    view, notes = parse(model="toy-reverse", layer="3", head="4")
    assert view.layer is None and view.head == 3 and len(notes) == 1 and "from 1 to 2" in notes[0]
    view, notes = ViewState.from_query({"layer": "40", "head": "mean"}, MODELS, None, "en-de", tabs=TABS)  # sizes unknown
    assert (view.layer, view.head, notes) == (39, MEAN_HEADS, [])


def test_good_fields_survive_next_to_bad_ones_and_unknown_parameters_are_named():
    view, notes = parse(text="A cat.", beam="999", model="nope", foo="1", __theme="dark", view="api")
    assert view.text == "A cat." and view.beam == DEFAULT_BEAM and view.model == "en-de"
    assert len(notes) == 3 and any("unknown parameter 'foo'" == n for n in notes)


def test_notes_quote_values_as_short_text():
    view, notes = parse(model="<b>" + "m" * 100, head="\x07")
    assert all(len(n) < 200 for n in notes) and "\x07" not in " ".join(notes)
    view, notes = parse(kind="x" * 300)
    assert notes == ["kind (longer than 200 characters)"] and view.kind == "encoder"


def test_plain_text_with_symbols_is_kept_and_lists_take_the_last_value():
    view, notes = parse(text="2 < 3 and 5 > 4, \"quoted\" & 'apostrophes'")
    assert notes == [] and view.text.startswith("2 < 3")
    view, notes = ViewState.from_query({"beam": ["2", "7"]}, MODELS, limits, tabs=TABS)
    assert view.beam == 7 and notes == []


def test_heads_switched_off_and_the_measure_round_trip_and_are_checked_per_kind():
    def sizes(model):
        return (6, 8, {"encoder": 6, "decoder": 4, "cross": 4})
    view, notes = ViewState.from_query({"off": "c4.8,e1.3,e1.3,d2.1", "measure": "norm"}, MODELS, sizes, "en-de", tabs=TABS)
    assert notes == [] and view.off == (("encoder", 0, 2), ("decoder", 1, 0), ("cross", 3, 7)) and view.measure == "norm"
    assert view.to_query()["off"] == "e1.3,d2.1,c4.8" and view.client()["off"] == [["encoder", 0, 2], ["decoder", 1, 0],
                                                                                   ["cross", 3, 7]]
    back, notes = ViewState.from_query(view.to_query(), MODELS, sizes, "en-de", tabs=TABS)
    assert notes == [] and back == view
    for bad, why in (("c5.1", "cross has 4 layers"), ("e1.9", "of 8 heads"), ("x1.1", "written like e1.3"),
                     ("e1.1,<b>", "written like e1.3"), ("e0.1", "6 layers")):
        view, notes = ViewState.from_query({"off": bad}, MODELS, sizes, "en-de", tabs=TABS)
        assert view.off == () and len(notes) == 1 and notes[0].startswith("off") and why in notes[0], notes
    view, notes = parse(measure="gradient")
    assert view.measure == "weight" and "weight, norm" in notes[0]
    view, notes = parse(off=",".join(f"e{layer}.{head}" for layer in range(1, 7) for head in range(1, 9)))
    assert len(view.off) == 48 and notes == []  # every encoder head fits in a link
    assert "off" not in ViewState().client() and "measure" not in ViewState().to_query()


def test_a_links_layer_is_bounded_by_the_kind_on_screen():
    sizes = (6, 8, {"encoder": 6, "decoder": 4, "cross": 4})
    def read(kind: str, layer: str):
        return ViewState.from_query({"text": "Hi.", "model": "m", "kind": kind, "layer": layer}, ["m"],
                                    model_sizes=lambda m: sizes, tabs=TABS)
    view, notes = read("cross", "6")
    assert view.layer is None and len(notes) == 1 and "cross attention has 4 layers" in notes[0]
    view, notes = read("encoder", "6")
    assert view.layer == 5 and notes == []
    view, notes = read("steps", "5")
    assert view.layer is None and "cross attention has 4 layers" in notes[0]


def test_a_cell_of_one_heads_map_round_trips_and_is_refused_where_no_click_could_make_it():
    view, notes = parse(text="Hi.", kind="cross", layer="3", head="8", cell="7.6")
    assert notes == [] and view.cell == (6, 5) and view.client()["cell"] == [6, 5]
    assert view.to_query()["cell"] == "7.6" and parse(**view.to_query()) == (view, [])
    assert "cell" not in ViewState().client() and "cell" not in ViewState().to_query()
    one_head = dict(text="Hi.", kind="encoder", layer="1", head="2")
    for bad in ("7", "7.6.1", "0.3", "3.1025", "-1.2", "a.b", "7,6", "1e1.2", " 7.6"):
        view, notes = parse(**one_head, cell=bad)
        assert view.cell is None and len(notes) == 1 and "query.key, two whole numbers" in notes[0], (bad, notes)
    for where in ({"head": "mean"}, {"head": None}, {"layer": None}, {"kind": "steps"}, {"merge": "1"},
                  {"tab": "tree"}):
        params = {k: v for k, v in {**one_head, **where, "cell": "2.2"}.items() if v is not None}
        view, notes = parse(**params)
        assert view.cell is None and len(notes) == 1 and "a single head and merge=0" in notes[0], (where, notes)


@pytest.mark.parametrize("text", ["gift\u202etfig", "pay\u200bpal", "a\u2066b\u2069", "\ufeffHello", "so\u00adft"])
def test_link_text_with_invisible_characters_is_refused_and_shown_visibly(text):
    view, notes = ViewState.from_query({"text": text}, tabs=TABS)
    assert view.text == "" and len(notes) == 1 and "invisible characters" in notes[0]
    assert not re.search("[\u00ad\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]", notes[0])  # the note shows �


# every bidirectional embedding, override and isolate, every zero-width mark, the word joiner and the BOM
BIDI_AND_ZERO_WIDTH = [chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A), *range(0x200B, 0x200E),
                                        0xFEFF, 0x2060]]


@pytest.mark.parametrize("key", ["text", "compare", "yours"])
@pytest.mark.parametrize("char", BIDI_AND_ZERO_WIDTH, ids=lambda c: f"U+{ord(c):04X}")
def test_every_bidi_and_zero_width_character_in_any_link_text_is_refused(key, char):
    view, notes = ViewState.from_query({key: f"pay{char}pal"}, tabs=TABS)
    assert getattr(view, key) == "" and len(notes) == 1 and "invisible characters" in notes[0]
    assert char not in notes[0] and "\ufffd" in notes[0]  # shown as a visible mark, never as itself


def test_ordinary_unicode_in_link_text_is_kept():
    for text in ("Zoë lives in Tórshavn.", "My colleague 王芳 wrote.", "I wrote سلمى on the card."):
        view, notes = ViewState.from_query({"text": text}, tabs=TABS)
        assert view.text == text and notes == []


def test_the_alignment_drawing_round_trips_and_is_off_unless_asked():
    """align=1 opens the cross view drawn as lines between words (static/alignment_lines.js); the link leaves it out
    when it is off, and anything but a switch's value is refused with a note."""
    view, notes = parse(text="My sister reads a book.", kind="cross", align="1")
    assert notes == [] and view.align and view.client()["align"] is True
    assert view.to_query()["align"] == "1" and parse(**view.to_query()) == (view, [])
    assert "align" not in ViewState().client() and "align" not in ViewState().to_query()
    view, notes = parse(kind="cross", align="lines")
    assert not view.align and len(notes) == 1 and notes[0].startswith("align 'lines'") and "0 or 1" in notes[0]
