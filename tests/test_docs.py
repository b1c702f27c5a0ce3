"""The user-facing pages stay true: README.md short and free of issue numbers, every relative link and image
present, every app link valid for the app's own URL validation, docs/benchmarks.md what bench/report.py makes."""
from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README] + sorted((ROOT / "docs").glob("*.md"))
APP = "http://127.0.0.1:7860/"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")  # [text](target) and ![alt](target)
ISSUE = re.compile(r"\bissues?\s+#?\d{1,2}\b|(?<![\w/&#])#\d{1,2}\b", re.IGNORECASE)


def links(page: Path) -> list[str]:
    """Every markdown link and image target of a page."""
    return LINK.findall(page.read_text())


def app_links(page: Path) -> list[str]:
    """Every link into the app (markdown targets and bare URLs), in page order."""
    return re.findall(re.escape(APP) + r"\?[^)\s`>\"]*", page.read_text())


def test_readme_names_no_issue_numbers():
    text = README.read_text()
    assert not ISSUE.findall(text), ISSUE.findall(text)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_pages_name_no_issue_numbers(page):
    assert not ISSUE.findall(page.read_text()), ISSUE.findall(page.read_text())


def test_issue_pattern_catches_what_it_should():
    assert ISSUE.findall("as issue 18 did, and #19") == ["issue 18", "#19"]
    assert not ISSUE.findall("Python 3.11, 30 students, H1 53 %, x#1")


def test_readme_keeps_the_ci_test_command_and_the_attribution():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci == "pip install -q -r requirements-dev.txt && python -m pytest -q"
    text = README.read_text()
    assert ci in text
    assert "Attribution: www.manythings.org/anki and tatoeba.org" in text
    assert text.startswith("---\ntitle: Inside a Transformer\n")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_and_images_exist(page):
    missing = []
    for target in links(page):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#")[0]
        if path and not (page.parent / path).exists():
            missing.append(target)
    assert not missing, f"{page.name}: {missing}"


@pytest.fixture(scope="module")
def explorer(tmp_path_factory):
    """The app's server side over the shipped checkpoints, as `python app.py` builds it."""
    from transformer.explorer.services import Explorer
    from transformer.explorer.core.model_registry import ModelRegistry

    xp = Explorer(ModelRegistry(ROOT / "checkpoints"), tmp_path_factory.mktemp("exports"), strict=True)
    yield xp
    xp.models.batcher.close()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_app_links_restore_their_view_with_nothing_ignored(page, explorer):
    """Each link goes through the app's own page-load path (`RestoreService.restore`: the models on offer, each
    model's layers and heads, core/view_state.py's validation) and must come back with no note of ignored parameters."""
    assert explorer.models.default_model == "en-de"
    for url in app_links(page):
        parts = urlsplit(url)
        assert parts.path == "/", url
        restored = explorer.restore.restore(explorer.models.default_model, parse_qs(parts.query, keep_blank_values=True,
                                                                     strict_parsing=True))
        assert restored.note == "", f"{url}: {restored.note}"
        assert restored.view.text.strip(), f"{url}: a link should open on a translated sentence"


def test_link_check_notes_a_bad_link(explorer):
    restored = explorer.restore.restore("en-de", parse_qs("text=Hi.&tab=heads&layer=7&off=c5.1&step=0"))
    # en-de has 6 encoder layers at most (layer 7), 4 cross-attention layers (c5.1), and steps count from 1
    assert restored.note.count(";") == 2 and "layer" in restored.note and "off" in restored.note, restored.note


def test_readme_and_teaching_hold_app_links():
    assert len(app_links(README)) >= 3
    teaching = app_links(ROOT / "docs" / "teaching.md")
    assert len(teaching) >= 8  # the lesson's steps, each a link


def bench_report():
    """bench/report.py, the generator of docs/benchmarks.md."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import report
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return report


def test_benchmarks_page_is_what_the_results_give():
    report = bench_report()
    assert (ROOT / "docs" / "benchmarks.md").read_text() == report.render(), \
        "docs/benchmarks.md is stale: run python bench/report.py"
    assert report.flatten({"a": {"b": 1, "c": [1, 2]}, "d": None}) == [("a.b", "1"), ("a.c", "1, 2"), ("d", "null")]



def test_benchmarks_page_has_a_section_for_every_bench_with_results_or_not(tmp_path):
    """A bench with no result yet still gets its command and a line saying so; a bare result (no CPU, date or
    command, or not even an object) still gets its table."""
    report = bench_report()
    benches = sorted(p.stem for p in (ROOT / "bench").glob("*.py") if p.name not in ("machine.py", "report.py"))
    assert report.benches() == benches and len(benches) >= 8
    page = report.render(tmp_path)
    for name in benches:
        section = page.split(f"\n## {name}\n")[1].split("\n## ")[0]
        assert f"--json bench/results/{name}.json" in section and "No result recorded yet" in section, name
    (tmp_path / "load.json").write_text('{"p50_ms": 12.5, "rows": [1, 2]}')
    (tmp_path / "load--other.json").write_text("[3, 4]")
    section = report.render(tmp_path).split("\n## load\n")[1].split("\n## ")[0]
    assert "**load.json**: unknown CPU, date unknown" in section and "| `p50_ms` | 12.5 |" in section
    assert "| `rows` | 1, 2 |" in section and "| `result` | 3, 4 |" in section
    assert "No result recorded yet" not in section
