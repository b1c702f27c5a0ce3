"""transformer/explorer/maps/payload.py: what the browser gets per translation (quantisation, tokens, escaping, size)."""
from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
import pytest

from strings import all_strings
from transformer.explorer.web import page
from transformer.explorer.panels.attention import panel as attention_panel
from transformer.explorer.panels.registry import scripts
from transformer.explorer.maps import token_labels
from transformer.explorer.maps import transforms
from reference_views import decode_array, decode_attention
from transformer.explorer.maps.payload import QUANT_SCALE, SMALL_QUANT_SCALE, attention_payload, encode_rows, token_info
from transformer.translator import Attention, StepRecord

EVIL = "<img src=x onerror=alert(1)>"


def rows(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    a = np.random.default_rng(seed).random(shape).astype(np.float32) ** 3
    return a / a.sum(-1, keepdims=True)


def make_attention(n_enc: int = 2, n_dec: int = 2, heads: int = 4, src=None, out=None) -> Attention:
    src = src or ["\u2581A", "\u2581ri", "des", EVIL, ".", "<eos>"]
    out = out or ["\u2581Ein", "\u2581Rad", "fahrer", "<b>", "<eos>"]
    tin = ["<bos>"] + out[:-1]
    s, t = len(src), len(out)
    dec = rows((n_dec, heads, t, t), 1) * np.tril(np.ones((t, t), np.float32))
    dec /= dec.sum(-1, keepdims=True)
    steps = [StepRecord(i, tok, 0.5, [(tok, 0.5), (EVIL, 0.3), ("x", 0.2)]) for i, tok in enumerate(out)]
    return Attention(rows((n_enc, heads, s, s)), dec, rows((n_dec, heads, t, s), 2), src, tin, out, steps)


def plain_entry(values: np.ndarray, scale: int) -> dict:
    """Every weight quantised as it is: `encode_rows` with no key kept apart (the encoding it improves on)."""
    return encode_rows(values, [False] * np.shape(values)[-1], scale)


def test_encode_decode_round_trip_within_half_a_step():
    w = rows((2, 3, 5, 7))
    for scale in (QUANT_SCALE, SMALL_QUANT_SCALE):
        entry = plain_entry(w, scale)
        assert entry["dtype"] == ("uint16" if scale == QUANT_SCALE else "uint8")
        back = decode_array(json.loads(json.dumps(entry)))
        assert back.shape == w.shape and back.dtype == np.float32
        assert np.abs(back - w).max() <= 0.5 / scale + 1e-7
    # NaN and out-of-range values never produce garbage integers
    back = decode_array(plain_entry(np.array([[np.nan, -0.5, 1.5, 0.25]]), QUANT_SCALE))
    np.testing.assert_allclose(back, [[0.0, 0.0, 1.0, 0.25]], atol=1e-4)


def test_payload_decodes_to_the_attention_it_came_from():
    att = make_attention()
    payload = json.loads(json.dumps(attention_payload(att, model="m", candidate=1, n_candidates=3)))
    back = decode_attention(payload)
    for kind in ("encoder", "decoder", "cross"):  # half a step on the kept-relative value and half on the mass
        np.testing.assert_allclose(getattr(back, kind), getattr(att, kind), atol=1.0 / QUANT_SCALE + 1e-7)
    assert (back.src_tokens, back.tgt_in_tokens, back.tgt_out_tokens) == (att.src_tokens, att.tgt_in_tokens,
                                                                          att.tgt_out_tokens)
    assert [s.token for s in back.steps] == [s.token for s in att.steps]
    assert payload["n_layers"] == 2 and payload["n_heads"] == 4 and payload["candidate"] == 1
    np.testing.assert_allclose(decode_array(payload["rollout"]), transforms.rollout(att.encoder), atol=1e-4)
    np.testing.assert_allclose(payload["kinds"]["cross"]["entropy"]["values"], transforms.head_entropy(att.cross), atol=1e-3)
    assert np.array(payload["kinds"]["encoder"]["entropy"]["colors"]).shape == (2, 4)


def test_payload_handles_any_layer_and_head_counts():
    att = make_attention(n_enc=6, n_dec=3, heads=8)
    payload = attention_payload(att)
    assert payload["n_layers"] == 6 and payload["n_heads"] == 8
    assert payload["kinds"]["decoder"]["weights"]["shape"][:2] == [3, 8]
    assert len(payload["kinds"]["cross"]["entropy"]["values"]) == 3


def test_token_info_word_groups_with_and_without_specials():
    tokens = ["<bos>", "\u2581a", "<eos>", "b", "\u2581c", "d"]
    info = token_info(tokens)
    assert info["special"] == [True, False, True, False, False, False]
    assert (info["groups"], info["words_raw"]) == token_labels.word_groups(tokens)
    kept = [t for t in tokens if t not in token_labels.HIDDEN_BY_DEFAULT]
    assert (info["groups_hidden"], info["words_hidden_raw"]) == token_labels.word_groups(kept)
    # hiding changes the grouping: "b" follows "▁a" once <eos> is gone
    assert info["groups"][3] != info["groups"][1] and info["groups_hidden"][1] == info["groups_hidden"][0]


def test_every_label_is_escaped_and_raw_text_is_kept():
    payload = attention_payload(make_attention())
    for key in ("src", "tgt_in", "tgt_out"):
        info = payload["tokens"][key]
        assert info["label"] == [token_labels.escape_label(token_labels.display_token(t)) for t in info["raw"]]
        assert info["shown"] == [token_labels.display_token(t) for t in info["raw"]]
        assert not any("\u2581" in x for x in info["label"] + info["shown"] + info["words"])
        assert info["words"] == [token_labels.escape_label(w) for w in info["words_raw"]]
    labels = [s for k in ("src", "tgt_in", "tgt_out") for f in ("label", "words", "words_hidden")
              for s in payload["tokens"][k][f]] + [s["label"] for s in payload["steps"]] + \
             [t[1] for s in payload["steps"] for t in s["top"]]
    assert not [s for s in labels if "<" in s]  # Plotly gets no tag it could parse
    assert EVIL in payload["tokens"]["src"]["raw"]  # textContent gets the literal text
    assert any("&lt;img src=x onerror=alert(1)&gt;" in s for s in all_strings(payload))


def test_uint16_for_a_short_sentence_uint8_past_it_and_every_array_deflated():
    """The weights' precision follows the raw uint16 bytes (`MAX_WEIGHT_BYTES`); every array is deflated, and
    even dense random maps (the worst case for compression: real ones shrink further) stay small."""
    short = make_attention(6, 4, 8, [f"\u2581w{i}" for i in range(11)] + ["<eos>"],
                           [f"\u2581v{i}" for i in range(11)] + ["<eos>"])
    payload = attention_payload(short)
    assert payload["kinds"]["encoder"]["weights"]["dtype"] == "uint16"
    # 6 encoder / 6 decoder layers, 8 heads, ~20 source and ~22 target pieces
    src = [f"\u2581w{i}" for i in range(19)] + ["<eos>"]
    out = [f"\u2581v{i}" for i in range(21)] + ["<eos>"]
    payload = attention_payload(make_attention(6, 6, 8, src, out))
    size = len(json.dumps(payload, separators=(",", ":")).encode())
    assert payload["kinds"]["encoder"]["weights"]["dtype"] == "uint8" and size < 100_000, size
    entries = [payload["rollout"]] + [payload["kinds"][k]["weights"] for k in payload["kinds"]]
    entries += [e["kept_mass"] for e in entries]
    assert all(e["codec"] == "deflate" for e in entries)
    raw = sum(int(np.prod(e["shape"])) * (2 if e["dtype"] == "uint16" else 1) for e in entries)
    assert sum(len(base64.b64decode(e["data"])) for e in entries) < raw  # deflate never made it bigger


def test_integers_and_masses_survive_the_codec_and_a_tiny_mass_stays_above_zero():
    """The integers the page inflates are the integers quantised; a row whose kept mass is 1e-9 (every weight on
    <eos>) keeps a mass above 0, so hiding <eos> still shows its renormalised row rather than a blank one."""
    w = rows((2, 3, 4, 6), seed=5).astype(np.float64)
    w[0, 0, 0] = [1e-9 / 5] * 5 + [1 - 1e-9]  # all but nothing on <eos>, the last key
    kept = [True] * 5 + [False]
    for scale in (QUANT_SCALE, SMALL_QUANT_SCALE):
        entry = json.loads(json.dumps(encode_rows(w, kept, scale)))
        back = decode_array(entry)
        assert decode_array(entry["kept_mass"])[0, 0, 0] > 0
        hidden = back[..., :5] / back[..., :5].sum(-1, keepdims=True)
        np.testing.assert_allclose(hidden[0, 0, 0], [0.2] * 5, atol=1.0 / scale)
        np.testing.assert_allclose(back, w, atol=1.0 / scale + 1e-6)


def test_payload_revisions_differ_and_skeleton_has_every_view():
    att = make_attention()
    assert attention_payload(att)["rev"] != attention_payload(att)["rev"]
    template = attention_panel.html_template()
    for view_id in ("focus-encoder", "model-cross", "grid-decoder", "rollout", "step-plot", "hidden-mass",
                    "layer", "head", "rows", "hide", "merge", "step"):
        assert f'id="{view_id}"' in template
    assert "${" not in template and "{{" not in template  # gr.HTML would fill these from the payload
    assert page.PLOTLY_JS.is_file() and f"gradio_api/file={page.PLOTLY_JS.as_posix()}" in page.head_html()
    start = attention_panel.js_on_load()
    assert page.module_url(attention_panel.SCRIPT) in start and "m.initExplorer(" in start
    head = page.head_html(scripts())
    for module in [*page.STATIC_DIR.glob("*.js"), *scripts()]:  # fetched beside plotly.js: shared and each panel's
        assert f'<link rel="modulepreload" href="{page.module_url(module)}">' in head


def test_the_vendored_plotly_bundle_is_the_version_the_plotly_package_ships():
    """The page draws with the cartesian bundle; the Python figures (search_tree, compare) come from the plotly
    package."""
    import plotly

    package_js = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"

    def version(path, label):
        head = path.read_text(encoding="utf-8")[:300]
        found = re.search(rf"plotly\.js {label}v(\d+\.\d+\.\d+)", head)
        assert found, head
        return found[1]

    assert version(page.PLOTLY_JS, re.escape("(cartesian - minified) ")) == version(package_js, "")


def test_decoder_rows_open_labelled_by_the_token_they_predict():
    from transformer.explorer.core import view_state
    assert view_state.ViewState().client()["rows"] == view_state.ROWS_PREDICTED


def test_entropy_colours_are_plotlys_viridis_at_the_scaled_score():
    from plotly.colors import sample_colorscale
    payload = attention_payload(make_attention(n_enc=3, heads=5))
    values = np.array(payload["kinds"]["encoder"]["entropy"]["values"])
    scaled = (values - values.min()) / (values.max() - values.min())
    expected = sample_colorscale("Viridis", scaled.ravel().tolist(), colortype="rgb")
    got = np.array(payload["kinds"]["encoder"]["entropy"]["colors"]).ravel()

    def rgb(c):
        return np.array([float(x) for x in c[4:-1].split(",")])
    for g, e in zip(got, expected, strict=True):  # 256 levels: within one step of 255 per channel
        assert np.abs(rgb(g) - rgb(e)).max() <= 2.0, (g, e)


def test_merged_words_keep_each_placeholder_a_word_labelled_with_its_entity():
    from transformer.explorer.maps.payload import token_info

    src = ["▁My", "▁friend", "⟨1⟩", "▁moved", "▁to", "⟨2⟩", "▁in", "⟨3⟩", ".", "<eos>"]
    info = token_info(src, ("Oluwaseun", "Plovdiv", "1983"))
    assert info["words_raw"] == ["My", "friend", "⟨1⟩ Oluwaseun", "moved", "to", "⟨2⟩ Plovdiv", "in", "⟨3⟩ 1983", ".",
                                 "<eos>"]
    assert info["groups"] == list(range(10))
    genitive = token_info(["⟨1⟩", "s", "▁Auto"], ("Tom",))  # German's genitive s stays with the name
    assert genitive["words_raw"] == ["⟨1⟩s Tom", "Auto"] and genitive["groups"] == [0, 0, 1]


def test_hidden_specials_renormalise_to_the_float32_values_even_when_a_row_is_almost_all_bos():
    """A row with 99.9 % on <bos>: quantised plainly, the rest is rounding noise that hiding <bos> blows up;
    sent relative to the row's kept mass, hiding gives the float32 renormalised row within 1e-4."""
    rng = np.random.default_rng(0)
    L, H, T = 2, 3, 9
    rest = rng.dirichlet(np.ones(T - 1), size=(L, H, T))  # the kept part of each row
    bos_share = np.where(rng.random((L, H, T, 1)) < 0.5, 0.999, 0.3)
    weights = np.concatenate([bos_share, (1 - bos_share) * rest], axis=-1).astype(np.float32)  # (L, H, T, T)
    tokens = ["<bos>"] + [f"▁w{i}" for i in range(T - 1)]
    att = Attention(encoder=np.zeros((0, H, 0, 0), np.float32), decoder=weights, cross=np.zeros((L, H, T, 0)),
                    src_tokens=[], tgt_in_tokens=tokens, tgt_out_tokens=tokens[1:] + ["<eos>"])
    shown = decode_attention(attention_payload(att)).decoder
    np.testing.assert_allclose(shown, weights, atol=2e-5)
    hidden_shown = shown[..., 1:] / shown[..., 1:].sum(-1, keepdims=True)
    np.testing.assert_allclose(hidden_shown, rest, atol=1e-4)
    plain = decode_array(plain_entry(weights, QUANT_SCALE))  # for contrast
    assert np.abs(plain[..., 1:] / plain[..., 1:].sum(-1, keepdims=True) - rest).max() > 0.01


EN_DE = Path(__file__).resolve().parents[1] / "checkpoints" / "en-de"
SHORT_EN = "Yesterday my younger sister finally baked a huge chocolate cake for our neighbours."
LONG_EN = ("After the long winter the old fisherman repaired his wooden boat, painted it bright blue, and told every "
           "child in the village that he would sail across the quiet bay before the first summer storm arrived, "
           "while his grandson, who had never seen the sea in winter, watched carefully from the harbour wall and "
           "wrote down the names of the unfamiliar birds that circled above the lighthouse. ") * 2


def views_error(att: Attention, payload: dict) -> dict[str, float]:
    """The largest difference, over every kind, layer, head (and the mean), row labelling, hide and merge,
    between the views of the payload (`attention_payload(att)`) as the page decodes it and the same views of the
    float32 maps. The encoder's rows are its source tokens whichever labelling is chosen: one pass covers both."""
    import reference_views as views
    from transformer.explorer.core import view_state
    shown, worst = decode_attention(json.loads(json.dumps(payload))), {}
    for kind in views.KINDS:
        for rows_ in (view_state.ROWS_PREDICTED,) if kind == "encoder" else (view_state.ROWS_INPUT, view_state.ROWS_PREDICTED):
            (w, q, k), (v, _, _) = views.kind_maps(att, kind, rows_), views.kind_maps(shown, kind, rows_)
            for hide in (False, True):
                for merge in (False, True):
                    for a, b in ((w, v), (w.mean(1), v.mean(1))):
                        ref, *_ = views.transform(a.astype(np.float32), q, k, hide, merge)
                        got, *_ = views.transform(b, q, k, hide, merge)
                        key = f"hide={hide} merge={merge}"
                        worst[key] = max(worst.get(key, 0.0), float(np.abs(ref - got).max(initial=0.0)))
    return worst


@pytest.fixture(scope="module")
def en_de_attention():
    """The shipped en-de's float32 attention of a text's greedy translation, each text translated once."""
    if not (EN_DE / "model.safetensors").is_file():
        pytest.skip("checkpoints/en-de is not here")
    from transformer.translator import load_pretrained
    tr, done = load_pretrained(EN_DE), {}

    def attention(text: str) -> Attention:
        if text not in done:
            done[text] = tr.attention_for(tr.translate(text, method="greedy"), 0)
        return done[text]
    attention.translator = tr
    return attention


def test_every_view_is_within_0_005_of_the_float32_maps_at_short_and_long_lengths(en_de_attention):
    """The shipped en-de's float32 attention (a 13-word sentence: uint16; one at the app's length limit: uint8)
    against what the page shows after hiding <bos>/<eos> and merging subwords: a word's pieces summed from
    plainly rounded uint8 drifted by 0.14 and a renormalised row by 0.07."""
    tr = en_de_attention.translator
    for text, dtype in ((SHORT_EN, "uint16"), (LONG_EN, "uint8")):
        att = en_de_attention(text)
        payload = attention_payload(att)
        assert payload["kinds"]["cross"]["weights"]["dtype"] == dtype
        if dtype == "uint8":
            assert len(att.src_tokens) >= tr.max_source_tokens // 2, len(att.src_tokens)
        worst = views_error(att, payload)
        assert max(worst.values()) <= 0.005, (text[:20], worst)


def test_payload_of_a_13_word_and_a_48_word_sentence_stays_small(en_de_attention):
    """The bytes the page gets (compact JSON, as gradio streams it, uncompressed) for bench/payload_size.py's two
    sentences on en-de stay under 3 bytes per attention weight in uint16 and 1 byte in uint8, plus the tokens and
    the rest: 2.3 to 2.6 and 0.5 to 0.7 measured, whatever the model writes (one of en-de's translations of the
    48 words runs to 113 tokens)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("payload_size", EN_DE.parents[1] / "bench" / "payload_size.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    for name in ("13_words", "48_words"):
        att = en_de_attention(bench.SENTENCES[name])
        weights = sum(int(np.prod(getattr(att, kind).shape)) for kind in ("encoder", "decoder", "cross"))
        payload = attention_payload(att, model="en-de")
        per_weight = 3 if payload["kinds"]["cross"]["weights"]["dtype"] == "uint16" else 1
        size = bench.json_bytes(payload)
        assert size < per_weight * weights + 30_000, (name, size, weights)
    assert len(en_de_attention(bench.SENTENCES["48_words"]).src_tokens) >= 60  # a long input: uint8


def test_merged_words_of_many_pieces_stay_within_0_005_in_uint8():
    """Long words of many pieces, rows almost all on <bos>, uint8: sums of pieces stay within one step."""
    rng = np.random.default_rng(1)
    src = [p for i in range(40) for p in (f"\u2581w{i}", "a", "b", "c", "d")] + ["<eos>"]
    out = [p for i in range(30) for p in (f"\u2581v{i}", "x", "y", "z")] + ["<eos>"]
    tin = ["<bos>"] + out[:-1]
    s, t = len(src), len(out)

    def sink_rows(shape, sink):  # most of each row on one special key, the rest spread thinly
        w = rng.dirichlet(np.full(shape[-1], 0.3), size=shape[:-1])
        w[..., sink] += 30.0 * rng.random(shape[:-1])
        return (w / w.sum(-1, keepdims=True)).astype(np.float32)
    dec = sink_rows((2, 4, t, t), 0) * np.tril(np.ones((t, t), np.float32))
    att = Attention(sink_rows((2, 4, s, s), s - 1), (dec / dec.sum(-1, keepdims=True)).astype(np.float32),
                    sink_rows((2, 4, t, s), s - 1), src, tin, out)
    payload = attention_payload(att)
    assert payload["kinds"]["encoder"]["weights"]["dtype"] == "uint8"
    worst = views_error(att, payload)
    assert max(worst.values()) <= 0.005, worst


def test_tokens_are_shown_without_the_word_start_mark():
    """"▁" never reaches the screen: a word's first piece is bare, a piece that continues a word has "·", a lone
    "▁" is "␣", and as a next-token choice it says what it is."""
    assert [token_labels.display_token(t) for t in ["\u2581I", "\u2581Lehr", "er", "\u2581", ",", "\u2581.", "<eos>", "⟨1⟩"]] == \
        ["I", "Lehr", "\u00b7er", "\u2423", ",", ".", "<eos>", "⟨1⟩"]
    assert token_labels.choice_label("\u2581") == "\u2423 (a new word starts)"
    att = make_attention(out=["\u2581", "\u2581Ein", "\u2581Rad", "fahrer", "<eos>"])
    payload = attention_payload(att)
    labels = [x[1] for s in payload["steps"] for x in s["top"]] + [s["label"] for s in payload["steps"]]
    assert "\u2423 (a new word starts)" in labels
    assert not [x for x in labels if "\u2581" in x]
    assert token_labels.word_groups(["\u2581", "\u2581a"])[1] == ["\u2423", "a"]


def test_colour_scales_read_by_lightness_alone():
    """Colour-blind viewers see lightness where hue fails: the attention scale (Blues) gets strictly darker as the
    weight grows and the head summary's (Viridis) strictly lighter as the spread grows, so both read in any
    colour vision and in greyscale (WCAG relative luminance of each stop)."""
    from plotly.colors import sample_colorscale

    def luminance(colour: str) -> float:
        assert colour.startswith("rgb("), colour
        r, g, b = (float(x) / 255 for x in colour[4:-1].split(",")[:3])
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    from transformer.explorer.maps.payload import ATTENTION_COLORS
    blues = [luminance(c) for _, c in ATTENTION_COLORS]
    assert all(a > b for a, b in zip(blues, blues[1:])), blues
    viridis = [luminance(c) for c in sample_colorscale("Viridis", np.linspace(0, 1, 16).tolist(), colortype="rgb")]
    assert all(a < b for a, b in zip(viridis, viridis[1:])), viridis
