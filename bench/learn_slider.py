"""The learning slider in a real browser: how long a training snapshot already seen takes to show again.

Starts `python app.py` on a checkpoint with training snapshots (by default the short toy run of
tests/toy_snapshots.py, trained into a temporary directory first), opens the "Watch it learn" tab in Debian
Chromium under Playwright, visits every snapshot once (each is a model pass on the server), then moves the
slider back and forth over the steps already seen. Each time runs on the page's own clock, from the slider's
input event until the panel shows that step (translation, score, map and curve redrawn) and the browser has
painted it (the next animation frame). Also reports the first visit of each step (server round trip included).

Usage: python bench/learn_slider.py [--checkpoint PATH] [--rounds 10] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from app_server import running_app  # noqa: E402
from report import write_result  # noqa: E402  (bench/, the script's own directory)

CHROMIUM = "/usr/bin/chromium"
SENTENCE = "a b c d e f"

# move the slider to index i and wait (on the page's clock) until that step is drawn and painted
MOVE = """async ([i, step]) => {
  const panel = document.querySelector('#learn-panel'), slider = panel.querySelector('#learn-step input');
  const t0 = performance.now();
  slider.value = String(i);
  slider.dispatchEvent(new Event('input', {bubbles: true}));
  while (panel.dataset.ready !== `step-${step}`) await new Promise((r) => setTimeout(r, 1));
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  return performance.now() - t0;
}"""


def measure(url: str, rounds: int) -> dict:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(120_000)
        page.goto(url)
        page.locator("#source textarea, #source input").first.fill(SENTENCE)
        page.get_by_role("tab", name="Watch it learn").click()
        page.wait_for_function("document.querySelector('#learn-panel').dataset.ready.startsWith('step-')")
        steps = page.evaluate("document.querySelector('#learn-panel').__learn.index.steps")
        first = [page.evaluate(MOVE, [i, s]) for i, s in enumerate(steps[:-1])]  # the last one is drawn already
        requests = page.evaluate("document.querySelector('#learn-panel').__learn.requests")
        seen = [page.evaluate(MOVE, [i, s]) for _ in range(rounds) for i, s in enumerate(steps)]
        again = page.evaluate("document.querySelector('#learn-panel').__learn.requests") - requests
        browser.close()
    return {"steps": steps, "first_visit_ms": [round(t, 1) for t in first],
            "seen_median_ms": round(statistics.median(seen), 1), "seen_max_ms": round(max(seen), 1),
            "seen_n": len(seen), "server_requests_while_seen": again}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", help="a checkpoint with snapshots/ (default: a toy run trained now)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", help="write the result to this file too")
    args = parser.parse_args()
    checkpoint = args.checkpoint
    if checkpoint is None:
        from toy_snapshots import toy_run_with_snapshots

        checkpoint = str(toy_run_with_snapshots(Path(tempfile.gettempdir()) / "attention-app-toy-learning"))
    with running_app({"TRANSFORMER_CHECKPOINT": checkpoint}) as server:
        result = {"checkpoint": Path(checkpoint).name, **measure(server.url, args.rounds)}
    print(json.dumps(result))
    if args.json:
        write_result(args.json, result)


if __name__ == "__main__":
    main()
