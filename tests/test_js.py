"""The browser code's pure parts under Node's own test runner (tests/js/*.test.js), fed the payloads Python's zlib
packs as the app does, and the view transforms' and the word alignment's cases with Python's own answers. Skipped
only where Node is not installed."""
from __future__ import annotations

import base64
import json
import shutil
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

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
    from transformer.explorer import transforms
    from transformer.explorer.payload import token_info

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
    from transformer.explorer.payload import token_info
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


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
def test_the_browser_codes_pure_parts_pass_their_node_tests(tmp_path):
    inflate_cases, transform_cases = tmp_path / "inflate_cases.json", tmp_path / "transform_cases.json"
    inflate_cases.write_text(json.dumps(python_packed_cases()))
    transform_cases.write_text(json.dumps(python_transform_cases()))
    alignment_cases = tmp_path / "alignment_cases.json"
    alignment_cases.write_text(json.dumps(python_alignment_cases()))
    env = {"INFLATE_CASES": str(inflate_cases), "TRANSFORM_CASES": str(transform_cases),
           "ALIGNMENT_CASES": str(alignment_cases), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([NODE, "--test", *sorted(str(p) for p in JS_TESTS.glob("*.test.js"))],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout and "# skipped 0" in done.stdout  # Python's cases ran too
