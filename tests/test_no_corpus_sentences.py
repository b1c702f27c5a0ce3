"""The project's own example sentences are ours: none of them is a sentence of the training corpora.

Every tracked text file (code, docs, test data) is searched for sentences, and each is looked up among the
English and German lines of the corpora (`resolve_data_dir`: `--data-dir`, `$NAME_DIR`, `../shared/data/NAME`).
Where the corpora are not on the machine, the test is skipped: there is nothing to compare against.
"""
from __future__ import annotations

import gzip
import re
import subprocess
from pathlib import Path

import pytest

from transformer.training.data import resolve_data_dir

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ("tatoeba-en-de", "multi30k")
TEXT_SUFFIXES = (".py", ".md", ".tsv", ".js", ".txt", ".html")
# A capitalised run of text up to its final stop: a sentence as code, docs and test tables quote them.
SENTENCE = re.compile(r"[A-ZÄÖÜ][^\"\t\n|`<>]{3,200}?[.?!]")


def corpus_lines() -> set[str]:
    lines: set[str] = set()
    for corpus in CORPORA:
        try:
            directory = resolve_data_dir(None, corpus)
        except (FileNotFoundError, ValueError):
            continue
        for path in directory.glob("*.gz"):
            if path.name.endswith((".en.gz", ".de.gz")):
                with gzip.open(path, "rt", encoding="utf-8") as f:
                    lines.update(line.strip() for line in f)
    return lines


def sentences_in(text: str, tsv: bool) -> set[str]:
    found = {m.group(0).strip() for m in SENTENCE.finditer(text)}
    if tsv:
        found |= {field.strip() for line in text.splitlines() for field in line.split("\t")}
    return {s for s in found if len(s.split()) >= 2}


def test_no_tracked_file_quotes_a_corpus_sentence():
    corpus = corpus_lines()
    if not corpus:
        pytest.skip("the corpora are not on this machine")
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    quoted = {}
    for name in files:
        if not name.endswith(TEXT_SUFFIXES) or name.startswith("checkpoints/"):
            continue
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        hits = sorted(sentences_in(text, name.endswith(".tsv")) & corpus)
        if hits:
            quoted[name] = hits
    assert not quoted, f"sentences of the corpora in the project (write our own): {quoted}"
