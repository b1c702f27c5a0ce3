"""The browser code's pure parts under Node's own test runner (tests/js/*.test.js), fed the payloads Python's zlib
packs as the app does. Skipped only where Node is not installed."""
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


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
def test_the_browser_codes_pure_parts_pass_their_node_tests(tmp_path):
    cases = tmp_path / "inflate_cases.json"
    cases.write_text(json.dumps(python_packed_cases()))
    done = subprocess.run([NODE, "--test", *sorted(str(p) for p in JS_TESTS.glob("*.test.js"))],
                          env={"INFLATE_CASES": str(cases), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout and "# skipped 0" in done.stdout  # Python's cases ran too
