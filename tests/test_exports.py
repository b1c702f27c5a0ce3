"""Downloads of a result (transformer/explorer/core/exports.py): the .npz round trip without pickle, the byte
budget of the export folder, and the folders of apps no longer running.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from toy_app import EVIL, fake_result

from transformer.explorer.core import exports


def test_export_npz_round_trip_without_pickle(tmp_path):
    result = fake_result()
    path = exports.export_npz(result, tmp_path)
    assert path.parent == tmp_path and path.suffix == ".npz"
    with np.load(path, allow_pickle=False) as z:
        np.testing.assert_array_equal(z["cross"], result.attention.cross)
        assert list(z["src_tokens"]) == result.attention.src_tokens
        assert z["step_topk_tokens"].shape == (3, 3)
        meta = json.loads(str(z["meta"]))
    assert meta["source"] == EVIL and meta["candidate"] == 0


def test_exports_stay_within_their_byte_budget_oldest_first(tmp_path):
    for i in range(5):
        path = tmp_path / f"attention-1-{i}.npz"
        path.write_bytes(b"x" * 1000)
        os.utime(path, (1_000_000 + i, time.time() - 100 + i))  # older first
    exports._prune(tmp_path, max_age_s=900, max_bytes=2500)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["attention-1-3.npz", "attention-1-4.npz"]
    exports._prune(tmp_path, max_age_s=50)  # and anything older than max_age_s
    assert list(tmp_path.iterdir()) == []


def test_export_folders_of_apps_no_longer_running_are_removed_and_no_others(tmp_path):
    import subprocess

    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"{exports.EXPORT_DIR_PREFIX}{int(ended.stdout)}"
    alive = tmp_path / f"{exports.EXPORT_DIR_PREFIX}{os.getppid()}"  # a running process
    own = tmp_path / f"{exports.EXPORT_DIR_PREFIX}{os.getpid()}"
    other = tmp_path / "attention-explorer-notes"  # not an app's folder: no process id
    for d in (dead, alive, own, other):
        d.mkdir()
        (d / "attention-1-x.npz").write_bytes(b"x")
    assert exports.remove_stale_export_dirs(tmp_path, os.getpid()) == [dead]
    assert not dead.exists() and alive.exists() and own.exists() and other.exists()
