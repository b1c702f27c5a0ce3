"""The browser code holds no unused variable, function, import or argument, and uses no name defined nowhere:
ESLint's no-unused-vars and no-undef over transformer/explorer/static/*.js (vendor/ left out) and every panel's
modules (transformer/explorer/panels/*/*.js).

ESLint is a test-only asset pinned in tests/lint/package-lock.json (`npm ci --prefix tests/lint`, which `.ci/run`
does); without it these tests are skipped, and fail under CI (`conftest.require_asset`). The planted test shows
both rules fail on a file that breaks them.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import require_asset

ROOT = Path(__file__).resolve().parents[1]
LINT = ROOT / "tests" / "lint"
ESLINT = LINT / "node_modules" / ".bin" / "eslint"
STATIC = ROOT / "transformer" / "explorer" / "static"
PANELS = ROOT / "transformer" / "explorer" / "panels"



@pytest.fixture(autouse=True)
def eslint_installed():
    require_asset(ESLINT, "npm ci --prefix tests/lint")


def eslint(*args: str, stdin: str | None = None) -> list[dict]:
    """ESLint's JSON report (one entry per file linted) with the project's config, run from the repository."""
    out = subprocess.run([str(ESLINT), "--config", str(LINT / "eslint.config.js"), "--format", "json", *args],
                         cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 1), out.stderr  # 1: problems found; anything else: ESLint itself failed
    return json.loads(out.stdout)


def problems(report: list[dict]) -> list[str]:
    """`file:line rule: message` for every problem in a report."""
    return [f"{Path(entry['filePath']).relative_to(ROOT)}:{message.get('line')} {message.get('ruleId')}: "
            f"{message['message']}" for entry in report for message in entry["messages"]]


def test_browser_code_has_no_unused_or_undefined_names():
    report = eslint("transformer/explorer/static/*.js", "transformer/explorer/panels/*/*.js")
    modules = [*STATIC.glob("*.js"), *PANELS.glob("*/*.js")]
    assert sorted(Path(entry["filePath"]) for entry in report) == sorted(modules)
    assert not problems(report), "\n".join(problems(report))


def test_a_planted_unused_and_undefined_name_are_found():
    planted = "import {attentionView} from './share.js';\nexport function draw(unusedArg) {\n  return notDefined;\n}\n"
    report = eslint("--stdin", "--stdin-filename", "transformer/explorer/static/planted.js", stdin=planted)
    rules = sorted(line.split()[1] for line in problems(report))
    assert rules == ["no-undef:", "no-unused-vars:", "no-unused-vars:"], problems(report)
