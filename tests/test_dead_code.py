"""Nothing dead: vulture finds no unused function, class, method, attribute or variable in the app, the package
and the benches, except what tests/vulture_whitelist.py names with its reason.

Tests are not scanned: code that only tests use is dead. Every whitelist entry must still be reported by vulture
(an entry that became used, or whose code is gone, is removed), and the planted tests show the check finds a new
dead function and a stale entry.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = [ROOT / "app.py", ROOT / "transformer", ROOT / "bench"]
WHITELIST = ROOT / "tests" / "vulture_whitelist.py"
MIN_CONFIDENCE = 60  # vulture's lowest: unused functions, classes, methods, attributes and variables too


def unused_code(paths: list[Path]) -> list:
    """vulture's findings over `paths` (no whitelist), at MIN_CONFIDENCE."""
    try:
        import vulture
    except ImportError:
        pytest.fail("vulture is missing: pip install -r requirements-dev.txt")
    scan = vulture.Vulture()
    scan.scavenge([str(path) for path in paths])
    return scan.get_unused_code(min_confidence=MIN_CONFIDENCE)


def whitelist_entries(text: str) -> dict[str, str]:
    """The whitelist's `_.name  # reason` lines: {name: reason}; a line without its reason fails."""
    entries = {}
    lines = text.splitlines()
    for node in ast.parse(text).body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Attribute):
            _, _, reason = lines[node.lineno - 1].partition("  # ")
            assert reason.strip(), f"vulture_whitelist.py:{node.lineno} gives no reason"
            entries[node.value.attr] = reason.strip()
    return entries


def where(filename: str) -> str:
    """A finding's file, relative to the repository (a file outside it by its name)."""
    path = Path(filename)
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def unexplained_and_stale(findings: list, entries: dict[str, str]) -> tuple[list[str], list[str]]:
    """Findings the whitelist does not name, and whitelist names vulture no longer reports."""
    unexplained = [f"{where(item.filename)}:{item.first_lineno}: unused {item.typ} '{item.name}'"
                   for item in findings if item.name not in entries]
    reported = {item.name for item in findings}
    return unexplained, sorted(name for name in entries if name not in reported)


def test_no_dead_code():
    unexplained, stale = unexplained_and_stale(unused_code(SCANNED), whitelist_entries(WHITELIST.read_text("utf-8")))
    assert not unexplained, "dead code (remove it, or whitelist it with its reason):\n" + "\n".join(unexplained)
    assert not stale, f"whitelist entries vulture no longer reports (remove them): {stale}"


def test_a_planted_dead_function_and_a_stale_entry_are_found(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("def planted_dead_function():\n    return 1\n", encoding="utf-8")
    findings = [item for item in unused_code([*SCANNED, planted]) if Path(item.filename) == planted]
    entries = whitelist_entries(WHITELIST.read_text("utf-8") + "_.planted_stale_name  # planted by the test\n")
    unexplained, stale = unexplained_and_stale(findings, entries)
    assert unexplained == ["planted.py:1: unused function 'planted_dead_function'"]
    assert "planted_stale_name" in stale


def test_a_whitelist_entry_without_its_reason_fails():
    with pytest.raises(AssertionError, match="gives no reason"):
        whitelist_entries("_.name_without_reason\n")
