"""The browser code's pure ES modules (transformer/explorer/static/) under Node's own test runner
(tests/js/*.test.js), each test importing its module. The cases come from Python at test time: the payloads Python's
zlib packs as the app does, payloads from payload.py with decode_array's values, the view transforms' and the word
alignment's cases with Python's own answers, and the views and figures of tests/reference_views.py for a payload
(the same cases test_browser.py checks in Chromium). Skipped only where Node is not installed."""
from __future__ import annotations

import base64
import dataclasses
import html
import json
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference_views as views  # noqa: E402
from test_payload import EVIL, make_attention  # noqa: E402

from transformer.explorer.core import view_state  # noqa: E402

JS_TESTS = Path(__file__).resolve().parent / "js"
NODE = shutil.which("node")


def python_packed_cases() -> list[dict]:
    """Arrays as payload.py packs them (raw DEFLATE, wbits -15) at the levels and strategies zlib has."""
    rng = np.random.default_rng(3)
    sparse = (rng.random((7, 300, 41)) ** 9 * 255).astype(np.uint8)
    noise = rng.integers(0, 65536, (3, 70_000), dtype=np.uint16).astype("<u2")
    cases = []
    for name, q, level, strategy in [("level 9", sparse, 9, zlib.Z_DEFAULT_STRATEGY), ("level 1", sparse, 1, 0),
                                     ("stored", sparse, 0, 0), ("fixed codes", sparse, 9, zlib.Z_FIXED),
                                     ("uint16 noise", noise, 9, 0), ("twice the noise", np.concatenate([noise, noise], 1), 6, 0)]:
        packer = zlib.compressobj(level, zlib.DEFLATED, -15, 9, strategy)
        packed = packer.compress(q.tobytes()) + packer.flush()
        cases.append({"name": name, "packed": base64.b64encode(packed).decode(), "raw": base64.b64encode(q.tobytes()).decode()})
    return cases


# (name, query tokens, key tokens): specials, pieces of one word, punctuation and a placeholder, as the model writes them
TOKEN_CASES = [
    ("cross-attention", ["<bos>", "▁Ein", "▁Hund", "▁rennt", ".", "<eos>"], ["▁A", "▁dog", "▁runs", ".", "<eos>"]),
    ("pieces of words", ["▁Die", "▁Kat", "ze", "▁schl", "äft", ".", "<eos>"],
     ["▁The", "▁cat", "▁sle", "ep", "s", "▁on", "▁the", "▁so", "fa", ".", "<eos>"]),
    ("a placeholder", ["<bos>", "⟨1⟩", "▁wohnt", "▁in", "⟨2⟩", "s", ".", "<eos>"],
     ["⟨1⟩", "▁lives", "▁in", "⟨2⟩", "'", "s", "▁flat", ".", "<eos>"]),
    ("a row with all its mass on specials", ["<bos>", "▁Ja", "<eos>"], ["▁Yes", "<eos>"]),
]


def python_transform_cases() -> list[dict]:
    """Random rows over `TOKEN_CASES` with what transforms.hide_special and transforms.merge_subwords make of them (the functions
    the Python views use), and each axis as the payload sends it (`payload.token_info`)."""
    from transformer.explorer.maps import transforms
    from transformer.explorer.maps.payload import token_info

    rng = np.random.default_rng(5)
    cases = []
    for name, q, k in TOKEN_CASES:
        w = rng.random((len(q), len(k))) ** 3
        if name.startswith("a row with all"):
            w[1, :-1] = 0.0  # "▁Ja" looks only at <eos>: hidden, its row is all zeros
        w = (w / w.sum(1, keepdims=True)).astype(np.float32)
        hw, hq, hk, mass = transforms.hide_special(w, q, k)
        mw, mq, mk = transforms.merge_subwords(w, q, k)
        bw, bq, bk = transforms.merge_subwords(hw, hq, hk)
        cases.append({"name": name, "weights": w.tolist(), "q": token_info(q), "k": token_info(k),
                      "hidden": {"weights": hw.tolist(), "q": hq, "k": hk, "mass": mass},
                      "merged": {"weights": mw.tolist(), "q": mq, "k": mk},
                      "both": {"weights": bw.tolist(), "q": bq, "k": bk}})
    return cases


# (name, source tokens, output tokens): the output ends in <eos>, so the decoder's input rows are <bos> + all but it
ALIGNMENT_CASES = [
    ("cross-attention", ["▁A", "▁dog", "▁runs", ".", "<eos>"], ["▁Ein", "▁Hund", "▁rennt", ".", "<eos>"]),
    ("pieces of words", ["▁The", "▁cat", "▁sle", "ep", "s", "▁on", "▁the", "▁so", "fa", ".", "<eos>"],
     ["▁Die", "▁Kat", "ze", "▁schl", "äft", "▁auf", "▁dem", "▁Sofa", ".", "<eos>"]),
    ("a placeholder", ["⟨1⟩", "▁lives", "▁in", "⟨2⟩", "'", "s", "▁flat", ".", "<eos>"],
     ["⟨1⟩", "▁wohnt", "▁in", "⟨2⟩", "s", "▁Wohnung", ".", "<eos>"]),
]


def word_incidence(info: dict) -> np.ndarray:
    """Which word each token of a payload axis (`payload.token_info`) belongs to, (tokens, words) of 0/1, as
    alignment.piece_words says it for its words: the axis's word groups without <bos>/<eos>/<pad>."""
    groups = sorted({g for g, s in zip(info["groups"], info["special"]) if not s})
    out = np.zeros((len(info["groups"]), len(groups)))
    for i, (g, s) in enumerate(zip(info["groups"], info["special"])):
        if not s:
            out[i, groups.index(g)] = 1.0
    return out


def python_alignment_cases() -> list[dict]:
    """Random cross maps over `ALIGNMENT_CASES` with the links alignment.py scores AER by (word_maps, then links_from)
    for both read-outs, over the payload's word groups, and each axis as the payload sends it. One row looks only
    at <eos> (no link), and one word weighs two source words the same (the first is linked)."""
    from transformer.explorer.maps.payload import token_info
    from transformer.training import alignment

    incidence = word_incidence
    rng = np.random.default_rng(11)
    cases = []
    for name, src, out in ALIGNMENT_CASES:
        inp = ["<bos>", *out[:-1]]
        w = rng.random((len(out), len(src))) ** 4
        w[1, :-1] = 0.0  # the second row looks only at <eos>: its word has no link when read at that row
        w = w / w.sum(1, keepdims=True)
        w[0] = 0.0
        w[0, :2], w[0, -1] = 0.25, 0.5  # a tie: the first of equals
        w = w.astype(np.float32)
        s_info, out_info, in_info = token_info(src), token_info(out), token_info(inp)
        answers = {}
        for rows in alignment.ROWS:
            maps = alignment.word_maps(w[None, None], incidence(s_info), incidence(out_info), rows)[0, 0]
            answers[rows] = {"map": maps.tolist(), "links": sorted(map(list, alignment.links_from(maps)))}
        cases.append({"name": name, "weights": w.tolist(), "src": s_info, "out": out_info, "in": in_info, **answers})
    return cases


def flat(a: np.ndarray) -> list[float]:
    """float32 values as JSON numbers, exactly (a float32 is a double exactly)."""
    return np.asarray(a, np.float32).ravel().tolist()


# the tokens of test_browser_views_match_python's payload: pieces to merge, specials to hide, markup
SRC = ["\u2581A", "\u2581ri", "des", EVIL, "<unk>", ".", "<eos>"]
OUT = ["\u2581Ein", "\u2581Rad", "fahr", "er", "<b>", ".", "<eos>"]


def python_payload_cases() -> list[dict]:
    """Payloads as payload.attention_payload builds them (uint16, uint8 past the size limit, with the norms) and
    an entry of float32 deflated by zlib, each with what reference_views.decode_array makes of every array in it."""
    from reference_views import decode_array
    from transformer.explorer.maps.payload import attention_payload

    att, norms = make_attention(3, 2, 4, SRC, OUT), make_attention(3, 2, 4, SRC, OUT)
    cases = []
    for name, payload in [("uint16", attention_payload(att, model="m")),
                          ("uint8", attention_payload(att, model="m", max_weight_bytes=64)),
                          ("with norms", attention_payload(att, model="m", norms=norms))]:
        decoded = {f"{kind}.{key}": {"shape": list(np.shape(decode_array(entry))), "values": flat(decode_array(entry))}
                   for kind, arrays in payload["kinds"].items() for key, entry in arrays.items() if key != "entropy"}
        decoded["rollout"] = {"shape": payload["rollout"]["shape"], "values": flat(decode_array(payload["rollout"]))}
        cases.append({"name": name, "payload": payload, "decoded": decoded})
    values = np.random.default_rng(7).random((2, 3, 5), dtype=np.float32)
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    entry = {"shape": [2, 3, 5], "dtype": "float32", "codec": "deflate",
             "data": base64.b64encode(packer.compress(values.astype("<f4").tobytes()) + packer.flush()).decode()}
    cases.append({"name": "float32", "entry": entry, "values": flat(decode_array(entry))})
    return cases


# the view options test_browser_views_match_python sets in Chromium: every kind, row labelling and toggle, and a
# few layers and heads (layer 3 does not exist in the decoder: it falls back to the last)
VIEW_CHOICES = [(kind, rows, hide, merge, layer, head) for kind in views.KINDS
                for rows in (view_state.ROWS_INPUT, views.ROWS_PREDICTED) for hide in (False, True)
                for merge in (False, True) for layer, head in ((0, views.MEAN_HEADS), (1, 2), (2, 0))]


def python_view_cases() -> dict:
    """A payload with pieces to merge, specials to hide and markup in tokens (3 encoder and 2 decoder layers, the
    second candidate), with reference_views' answers for it as the browser sees it (`decode_attention`): for each
    of `VIEW_CHOICES` the focus view (its map, labels and title, or its message), the hidden-mass note, every
    layer and head transformed, the rollout; the steps; the focus view of the norms."""
    from reference_views import decode_array, decode_attention
    from transformer.explorer.maps.payload import attention_payload

    att = make_attention(3, 2, 4, SRC, OUT)
    # norms unlike the weights: ‖α f(x)‖ weighs each key by the size of what it passes on
    norms = dataclasses.replace(att, **{kind: getattr(att, kind) ** 2 for kind in views.KINDS})
    payload = attention_payload(att, model="fake", candidate=1, n_candidates=2, norms=norms)
    seen, norms = decode_attention(payload), decode_attention(payload, "norm")
    rollout = decode_array(payload["rollout"])
    focus_cases = []
    for kind, rows, hide, merge, layer, head in VIEW_CHOICES:
        opts = views.ViewOptions(layer, head, rows, hide, merge)
        fig, _ = views.focus_view(seen, kind, opts, " · candidate 2")
        heat = fig.data[0]
        masses = {k: views.focus_view(seen, k, opts)[1] for k in views.KINDS}
        w, q, k = views.kind_maps(seen, kind, rows)
        maps, *_ = views.transform(w, q, k, hide, merge)
        case = {"state": {"tab": kind, "rows": rows, "hide": hide, "merge": merge, "layer": layer, "head": head},
                "focus": {"z": np.asarray(heat.z).tolist(), "q": list(fig.layout.yaxis.ticktext),
                          "k": list(fig.layout.xaxis.ticktext), "title": fig.layout.title.text,
                          "customdata": np.asarray(heat.customdata).tolist(), "hovertemplate": heat.hovertemplate},
                "hidden": views.hidden_text(masses), "maps": {"shape": list(maps.shape), "values": flat(maps)}}
        if kind == "encoder":  # reference_views.rollout_figure: the colour scale ends at the largest value
            r, *_ = views.transform(rollout, SRC, SRC, hide, merge)
            case["rollout"] = {"z": r.tolist(), "zmax": float(r.max()) if r.max() > 0 else 1.0}
        focus_cases.append(case)
    step_cases = []
    for step in range(1, len(OUT) + 1):
        for hide, merge, head in ((False, False, views.MEAN_HEADS), (True, True, 1), (True, False, 3)):
            fig, text = views.step_view(seen, step, views.ViewOptions(1, head, view_state.ROWS_INPUT, hide, merge))
            bars, row = fig.data
            step_cases.append({
                "state": {"tab": "steps", "step": step, "layer": 1, "head": head, "hide": hide, "merge": merge},
                "row": np.asarray(row.y).tolist(), "keys": list(fig.layout.xaxis2.ticktext), "title": html.unescape(fig.layout.title.text),
                "text": text,
                "bars": {"x": list(bars.x), "y": list(bars.y), "color": list(bars.marker.color),
                         "customdata": list(bars.customdata), "hovertemplate": bars.hovertemplate,
                         "texttemplate": bars.texttemplate},
                "attention": {"customdata": list(row.customdata), "hovertemplate": row.hovertemplate},
                "annotations": [a.text for a in fig.layout.annotations]})
    norm_cases = []
    for kind in views.KINDS:
        fig, _ = views.focus_view(norms, kind, views.ViewOptions(1, 1, views.ROWS_PREDICTED, True, False))
        norm_cases.append({"state": {"tab": kind, "rows": views.ROWS_PREDICTED, "hide": True, "merge": False,
                                     "layer": 1, "head": 1, "measure": "norm"},
                           "z": np.asarray(fig.data[0].z).tolist()})
    return {"payload": payload, "focus": focus_cases, "steps": step_cases, "norms": norm_cases}


def python_colour_cases() -> dict:
    """The payload's colour scale sampled at the model view's 256 levels by plotly's own `sample_colorscale`."""
    from plotly.colors import sample_colorscale

    from transformer.explorer.maps.payload import ATTENTION_COLORS

    return {"colorscale": ATTENTION_COLORS,
            "samples": sample_colorscale(ATTENTION_COLORS, [i / 255 for i in range(256)])}


def python_start_cases() -> list[dict]:
    """What the page's scripts import (page.start_module's `js_on_load` of each panel's component, page.js_function's
    event functions): each module by its address on the app's file route, and the function taken from it."""
    import re

    from transformer.explorer.panels.attention import panel as attention
    from transformer.explorer.panels.compare import panel as compare
    from transformer.explorer.panels.inside import panel as inside
    from transformer.explorer.panels.tree import panel as tree
    from transformer.explorer.web import page

    starts = [attention.js_on_load(), tree.js_on_load(), compare.js_on_load(), inside.inside_js(), inside.yours_js(),
              inside.learn_js()]
    found = [re.search(r'file=([^"]+)".*\.then\(\(m\) => m\.(\w+)\(', js, re.DOTALL).groups() for js in starts]
    for js in (page.JS_VIEW, page.JS_RESTORE, page.JS_COPY_LINK, page.js_enter_tab("tree")):
        name, url = re.search(r'const \{(\w+)\} = await import\(new URL\("gradio_api/file=([^"]+)"', js).groups()
        found.append((url, name))
    return [{"module": Path(url).name, "dir": str(Path(url).parent), "name": name} for url, name in found]


CASES = {"INFLATE_CASES": python_packed_cases, "TRANSFORM_CASES": python_transform_cases,
         "ALIGNMENT_CASES": python_alignment_cases, "PAYLOAD_CASES": python_payload_cases,
         "VIEW_CASES": python_view_cases, "COLOUR_CASES": python_colour_cases, "START_CASES": python_start_cases}


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
def test_the_browser_codes_pure_parts_pass_their_node_tests(tmp_path):
    env = {"PATH": "/usr/bin:/bin"}
    for name, cases in CASES.items():
        path = tmp_path / f"{name.lower()}.json"
        path.write_text(json.dumps(cases()))
        env[name] = str(path)
    done = subprocess.run([NODE, "--test", *sorted(str(p) for p in JS_TESTS.glob("*.test.js"))],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout and "# skipped 0" in done.stdout  # Python's cases ran too
