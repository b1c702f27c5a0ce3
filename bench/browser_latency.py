"""What a person waits for in a real browser: Debian Chromium driven by Playwright against `python app.py`.

Measures page load, the first and the warm Translate (beam 5, a 13-word sentence of my own), every kind
of view change (layer, head, mean over heads, head-summary click, hide specials, merge subwords, decoder
row labels, tab switch, decoding step), choosing another n-best candidate, the bytes the page receives
per translation and, where the app offers them, a head switched off (a new mask each time: one model pass;
the views and the translation follow) and the weight/norm toggle (the first one asks the model for the
norms, later ones stay in the browser). Times run on the page's own clock: from the input event (a capture
listener records the first pointerdown / keydown / input / change after arming) until the view shows the
new state, checked on every animation frame. "Shows the new state" means: every visible Plotly figure (and
canvas model view) in the changed area holds new data (a new `gd.data` / `canvas.__maps` object), plus the
expected title text.

Works against this checkout's app and an older one (`--app-dir /path/to/other/checkout`, e.g. main before
the browser-side views) or any running app (`--url`); an action the app does not offer is reported as null.

Side by side: `--baseline COMMIT` checks COMMIT out into a temporary worktree, starts its app beside this one's and
measures the two alternately (a round of 2 reps each, --reps/2 rounds), so that both see the same machine; it
prints both results and each figure's ratio, this checkout's over the baseline's (below 1: faster).

Usage: python bench/browser_latency.py [--reps 10] [--app-dir DIR | --url URL | --baseline COMMIT] [--checkpoint PATH]
       [--threads N]
Prints one JSON object. Run it on an otherwise idle machine for numbers worth reporting.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from machine import cpu_model  # noqa: E402  (bench/, the script's own directory)
from app_server import running_app  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
SENTENCES_EN = [  # 13 words each, my own
    "A tall man in a blue jacket carries a ladder down the street.",
    "Two young girls in red coats are feeding ducks beside the frozen pond.",
]
SENTENCES_TOY = ["q u i c k b r o w n f o x", "t r a n s f o r m e r s"]
TIMEOUT_MS = 60_000

ARM = """() => {
  if (!window.__benchListening) {
    const mark = () => { if (window.__armed) { window.__t0 = performance.now(); window.__armed = false; } };
    for (const type of ['pointerdown', 'mousedown', 'keydown', 'input', 'change']) {
      window.addEventListener(type, mark, true);
    }
    window.__benchListening = true;
  }
  window.__armed = true; window.__t0 = null; window.__t1 = null;
}"""

# on screen: not inside a hidden tab (gradio may hide tabs without display: none)
SHOWN = "const shown = (el) => el.checkVisibility({visibilityProperty: true, opacityProperty: true});"

# the data objects now drawn in `scope` (visible Plotly figures and canvas model views)
SNAPSHOT = """(scope) => { """ + SHOWN + """
  const root = document.querySelector(scope) || document;
  const seen = [];
  root.querySelectorAll('.js-plotly-plot').forEach((gd) => { if (shown(gd) && gd.data) seen.push(gd.data); });
  root.querySelectorAll('canvas').forEach((c) => { if (shown(c) && c.__maps) seen.push(c.__maps); });
  window.__before = {scope, objects: new Set(seen), count: seen.length};
}"""

# true (and the time noted) once every visible figure in scope holds data drawn after the snapshot
CHANGED = """([scope, title]) => { """ + SHOWN + """
  const root = document.querySelector(scope);
  if (!root || !shown(root)) return false;
  const now = [];
  root.querySelectorAll('.js-plotly-plot').forEach((gd) => { if (shown(gd) && gd.data) now.push(gd.data); });
  root.querySelectorAll('canvas').forEach((c) => { if (shown(c) && c.__maps) now.push(c.__maps); });
  if (!now.length) return false;
  const onlyVisible = title !== null && title[0] === '@visible';  // a tab switch: drawn and on screen
  if (onlyVisible && !root.querySelector('.js-plotly-plot g.hm')) return false;
  if (!onlyVisible && window.__before.scope === scope
      && (now.length < window.__before.count || now.some((d) => window.__before.objects.has(d)))) return false;
  if (title !== null && !onlyVisible) {
    const t = root.querySelector('.gtitle');
    if (!t || !title.every((part) => part.startsWith('!') ? !t.textContent.includes(part.slice(1))
                                                          : t.textContent.includes(part))) return false;
  }
  if (window.__t1 === null) window.__t1 = performance.now();
  return true;
}"""


# runs CHANGED on every animation frame from before the action on, so the first frame that shows the
# new view is the one timed (a poller installed after the action returns could start frames late)
WATCH = """([scope, title]) => { const changed = """ + CHANGED + """;
  const tick = () => { if (!changed([scope, title])) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
}"""


def watch_then(page, action, scope: str, title: list[str] | None) -> None:
    """Snapshot `scope`, start the per-frame check, arm the input listener, act, wait for the new view."""
    page.evaluate(SNAPSHOT, scope)
    page.evaluate(ARM)
    page.evaluate(WATCH, [scope, title])
    action()
    page.wait_for_function("window.__t1 !== null", timeout=TIMEOUT_MS)



def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def summary(values: list[float]) -> dict[str, Any] | None:
    if not values:
        return None
    return {"p50_ms": round(statistics.median(values), 1), "p95_ms": round(percentile(values, 95), 1),
            "min_ms": round(min(values), 1), "n": len(values), "values": [round(v, 1) for v in values]}


def merged(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Several runs' results as one: each timing's values together, summarised again; other figures (single
    timings, byte counts) as the median of the runs."""
    out: dict[str, Any] = {}
    for key in runs[0]:
        items = [r.get(key) for r in runs if r.get(key) is not None]
        if not items:
            out[key] = None
        elif isinstance(items[0], dict):
            out[key] = summary([v for item in items for v in item["values"]])
        else:
            out[key] = statistics.median(items)
    return out


def without_values(results: dict[str, Any]) -> dict[str, Any]:
    """The results as reported: each timing's summary without its list of values."""
    return {k: ({x: y for x, y in v.items() if x != "values"} if isinstance(v, dict) else v) for k, v in results.items()}


def commit_of(directory: Path) -> str:
    """The short commit a checkout is at, "+changes" when its tracked files differ from it."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=directory, capture_output=True, text=True).stdout.strip()

    return (git("rev-parse", "--short", "HEAD") or "unknown") + ("+changes" if git("status", "--porcelain",
                                                                                "--untracked-files=no") else "")


def ratios(this: dict[str, Any], base: dict[str, Any]) -> dict[str, float | None]:
    """This checkout's p50 (or single figure) over the baseline's, for every figure both have (< 1: faster)."""
    def figure(value: Any) -> float | None:
        return value["p50_ms"] if isinstance(value, dict) else value if isinstance(value, (int, float)) else None

    out = {}
    for key in this:
        a, b = figure(this.get(key)), figure(base.get(key))
        out[key] = round(a / b, 3) if a is not None and b else None
    return out


class Bench:
    def __init__(self, page, reps: int):
        self.page, self.reps = page, reps

    # ---- timing primitives
    def timed(self, action, scope: str, title: list[str] | None = None, wait_scope: str | None = None) -> float:
        """Arm, snapshot `scope`, run `action`, wait until `wait_scope` (default `scope`) shows new data."""
        watch_then(self.page, action, wait_scope or scope, title)
        t0, t1 = self.page.evaluate("[window.__t0, window.__t1]")
        if t0 is None:
            raise RuntimeError("no input event was seen")
        return t1 - t0

    def repeat(self, name: str, make_action, scope, title=None) -> dict[str, Any] | None:
        """`make_action(i)` -> (action, scope, title) or None when the app has no such control."""
        times = []
        for i in range(self.reps):
            spec = make_action(i)
            if spec is None:
                return None
            action, scope_i, title_i = spec
            try:
                times.append(self.timed(action, scope_i, title_i))
            except Exception as err:  # report, keep measuring the rest
                print(f"{name}: {type(err).__name__}: {str(err)[:200]}", file=sys.stderr)
                return None
        return summary(times)

    # ---- controls that differ between the old app (gradio dropdowns) and the new one (<select>)
    def choose(self, elem_id: str, option: str):
        if self.page.locator(f"#{elem_id} select").count():
            return lambda: self.page.locator(f"#{elem_id} select").select_option(label=option)

        def old_dropdown():
            self.page.locator(f"#{elem_id} input").click()
            option_el = self.page.get_by_role("option", name=option, exact=True)
            option_el.wait_for()
            self.page.evaluate(ARM)  # the option click is the input event, not the opening click
            option_el.click()
        return old_dropdown

    def tab(self, name: str):
        return lambda: self.page.get_by_role("tab", name=name).click()

    def set_step(self, value: int):
        return lambda: self.page.evaluate(
            "(v) => { const s = document.querySelector('#step input[type=range]'); s.value = v;"
            " s.dispatchEvent(new Event('input', {bubbles: true})); s.dispatchEvent(new Event('change', {bubbles: true})); }",
            value)


def page_load(browser, url: str, reps: int) -> dict[str, Any]:
    """Navigation start until the source box and Translate are usable (and the views are ready)."""
    usable, ready = [], []
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    for _ in range(reps):
        page = context.new_page()
        page.goto(url, wait_until="commit")
        page.wait_for_function(
            "() => { const s = document.querySelector('#source textarea, #source input');"
            " const b = document.querySelector('#translate');"
            " return s && !s.disabled && s.offsetParent !== null && b && !b.disabled && b.offsetParent !== null; }",
            polling="raf", timeout=TIMEOUT_MS)
        usable.append(page.evaluate("performance.now()"))
        with contextlib.suppress(Exception):  # the new app: the explorer (plotly.js loaded) is ready
            page.wait_for_selector("#explorer .explorer[data-ready]", timeout=15_000, state="attached")
            ready.append(page.evaluate("performance.now()"))
        page.close()
    context.close()
    return {"page_load_usable": summary(usable), "page_load_views_ready": summary(ready)}


def heads_actions(page, b: Bench, reps: int) -> dict[str, Any]:
    """A head switched off (each rep another head, every other head on: a mask the server has not seen) until
    the encoder views show the model's answer; then the weight/norm toggle, first with a model pass, then not."""
    out: dict[str, Any] = {}
    F, explorer = "#focus-encoder", "document.querySelector('#explorer .explorer').__explorer"
    page.get_by_role("tab", name="Encoder self-attention").click()
    page.wait_for_selector("#focus-encoder .js-plotly-plot g.hm")
    page.locator("#ablate input").check()
    n_layers = page.evaluate("document.querySelector('#layer select').options.length")
    n_heads = page.evaluate("document.querySelector('#head select').options.length - 1")

    def head_off(i: int):
        if page.locator("#heads-on").is_enabled():  # untimed: every head on again (a cached answer)
            page.locator("#heads-on").click()
            page.wait_for_function(f"{explorer}.payload.ablation === null && {explorer}.asked === null")
        cell = f"#grid-encoder [data-testid='cell-{i % n_layers}-{1 + (i // n_layers) % n_heads}']"
        return (lambda: page.locator(cell).click()), F, None

    out["head_off_warm"] = b.repeat("head off", head_off, F)
    page.locator("#heads-on").click()
    page.wait_for_function(f"{explorer}.payload.ablation === null && {explorer}.asked === null")
    page.locator("#ablate input").uncheck()
    try:
        out["measure_norm_first"] = round(b.timed(lambda: page.locator("#measure label", has_text="norm").click(),
                                                  F, ["norm"]), 1)
    except Exception as err:  # report, keep measuring the rest
        print(f"norm: {type(err).__name__}: {str(err)[:200]}", file=sys.stderr)
    out["measure_toggle"] = b.repeat("measure", lambda i: (
        lambda: page.locator("#measure label", has_text="weight" if i % 2 == 0 else "norm").click(), F,
        ["!norm"] if i % 2 == 0 else ["norm"]), F)
    return out


def open_measured_page(browser: Any, url: str) -> tuple[Any, list[str], list[int]]:
    """The app's page in `browser`, with beam search chosen; every request leaving 127.0.0.1 goes into the first
    list and every response chunk's decoded length (gradio streams results as server-sent events) into the second."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(TIMEOUT_MS)
    external: list[str] = []
    page.on("request", lambda r: external.append(r.url)
            if not r.url.startswith(("http://127.0.0.1", "data:", "blob:")) else None)
    received: list[int] = []
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.on("Network.dataReceived", lambda e: received.append(int(e.get("dataLength") or 0)))
    page.goto(url)
    beam = page.locator("#method label", has_text="beam")
    if "selected" not in (beam.get_attribute("class") or ""):  # the stage keeps it in a closed panel
        page.locator("#method input[value=beam]").check(force=True)
    return page, external, received


def translate_actions(page: Any, sentences: list[str], reps: int, received: list[int]) -> dict[str, Any]:
    """The page's first translation, then warm ones (alternating sentences so every one changes the view): their
    times, the bytes each brings and the payload's size."""
    out: dict[str, Any] = {}
    source = page.locator("#source textarea, #source input").first

    def translate(i: int):
        def act():
            source.fill(sentences[i % 2])
            page.evaluate(ARM)
            page.locator("#translate").click()
        return act

    page.wait_for_timeout(1000)  # let the placeholders draw, so they are not taken for the result
    watch_then(page, translate(1), "#tabs", None)
    t0, t1 = page.evaluate("[window.__t0, window.__t1]")
    out["translate_first"] = round(t1 - t0, 1)
    times, sizes = [], []
    for i in range(reps):
        received.clear()
        watch_then(page, translate(i), "#tabs", None)
        t0, t1 = page.evaluate("[window.__t0, window.__t1]")
        times.append(t1 - t0)
        page.wait_for_timeout(300)  # the export that follows
        sizes.append(sum(received))
    out["translate_warm"] = summary(times)
    out["bytes_received_per_translation"] = int(statistics.median(sizes))
    if page.locator("#explorer .explorer").count():  # this app's explorer: the payload as received
        out["payload_bytes"] = page.evaluate(
            "JSON.stringify(document.querySelector('#explorer .explorer').__explorer.payload).length")
    return out


def last_layer_label(page: Any) -> str:
    """The layer selector's last choice ("Layer 6"), in this app or in the old one's gradio dropdown."""
    n_layers = page.evaluate(
        "(() => { const s = document.querySelector('#layer select'); if (s) return s.options.length;"
        " return null; })()")
    if n_layers:
        return f"Layer {n_layers}"
    return page.evaluate(  # the old app's gradio dropdown: its choices from the page's config
        "(() => { const c = window.gradio_config.components.find((x) => x.props.elem_id === 'layer');"
        " const ch = c.props.choices; return ch[ch.length - 1][0]; })()")


def view_actions(page: Any, b: Bench) -> dict[str, Any]:
    """Every control that changes the attention view in the browser only, each timed `b.reps` times."""
    out: dict[str, Any] = {}
    last_layer = last_layer_label(page)
    F = "#focus-encoder"
    out["layer_change"] = b.repeat("layer", lambda i: (
        b.choose("layer", "Layer 1" if i % 2 == 0 else last_layer), F,
        ["layer 1"] if i % 2 == 0 else [last_layer.lower()]), F)
    out["head_change"] = b.repeat("head", lambda i: (
        b.choose("head", f"Head {1 + i % 2}"), F, [f"head {1 + i % 2}"]), F)
    out["mean_over_heads"] = b.repeat("mean", lambda i: (
        b.choose("head", "mean over heads" if i % 2 == 0 else "Head 1"), F,
        ["mean over heads"] if i % 2 == 0 else ["head 1"]), F)
    b.choose("head", "mean over heads")()  # so that the first click below changes the view
    page.wait_for_function("document.querySelector('#focus-encoder .gtitle').textContent"
                           ".includes('mean over heads')")
    out["head_summary_click"] = b.repeat("grid", lambda i: (
        lambda: page.locator(f"#grid-encoder [data-testid='cell-{(i + 1) % 2}-{1 + i % 2}']").click(), F,
        [f"layer {(i + 1) % 2 + 1}", f"head {1 + i % 2}"]), F)
    out["hide_specials"] = b.repeat("hide", lambda i: (
        lambda: page.locator("#hide input").click(), F, None), F)
    out["merge_subwords"] = b.repeat("merge", lambda i: (
        lambda: page.locator("#merge input").click(), F, None), F)
    out["tab_switch"] = b.repeat("tab", lambda i: (
        b.tab("Cross-attention" if i % 2 == 0 else "Encoder self-attention"),
        "#focus-cross" if i % 2 == 0 else F, ["@visible"]), F)
    page.get_by_role("tab", name="Cross-attention").click()
    page.wait_for_selector("#focus-cross .js-plotly-plot g.hm")
    out["decoder_row_labels"] = b.repeat("rows", lambda i: (
        lambda: page.locator("#rows label", has_text="decoder input token" if i % 2 == 0
                             else "predicted token").click(), "#focus-cross", None), "#focus-cross")
    page.get_by_role("tab", name="Step by step").click()
    page.wait_for_selector("#step-plot .js-plotly-plot")
    out["decoding_step"] = b.repeat("step", lambda i: (
        b.set_step(2 + i % 2), "#step-plot", [f"Step {2 + i % 2}"]), "#step-plot")
    page.get_by_role("tab", name="Encoder self-attention").click()
    page.wait_for_selector("#focus-encoder .js-plotly-plot g.hm")
    out["candidate_change"] = b.repeat("candidate", lambda i: (
        lambda: page.locator(f"#nbest [data-testid='cell-{1 - i % 2}-1']").click(), F,
        ["candidate 2"] if i % 2 == 0 else ["!candidate"]), F)
    return out


def run(url: str, reps: int, toy: bool) -> dict[str, Any]:
    """Page loads, translations and every view change of the app at `url`, each timed `reps` times."""
    from playwright.sync_api import sync_playwright

    out: dict[str, Any] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            out.update(page_load(browser, url, reps))
            page, external, received = open_measured_page(browser, url)
            out.update(translate_actions(page, SENTENCES_TOY if toy else SENTENCES_EN, reps, received))
            b = Bench(page, reps)
            out.update(view_actions(page, b))
            if page.locator("#ablate").count():
                out.update(heads_actions(page, b, reps))
            out["requests_leaving_127.0.0.1"] = len(external)
        finally:
            browser.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--url", default=None, help="measure an app that is already running")
    parser.add_argument("--app-dir", default=str(ROOT), help="a checkout whose app.py to start (default: this one)")
    parser.add_argument("--checkpoint", default=None, help="TRANSFORMER_CHECKPOINT for the started app")
    parser.add_argument("--threads", type=int, default=None,
                        help="TRANSFORMER_THREADS for the started app (default: the app's own, every core but one)")
    parser.add_argument("--toy", action="store_true", help="use toy letter sentences (a toy checkpoint)")
    parser.add_argument("--json", help="also write the result to this file (see bench/report.py)")
    parser.add_argument("--baseline", default=None,
                        help="a commit to measure alternately with this checkout, side by side, with ratios")
    args = parser.parse_args()
    if args.reps < 2 or args.reps % 2:
        parser.error("--reps must be even and at least 2 (actions alternate between two states)")
    env = {"PYTHONDONTWRITEBYTECODE": "1"}  # leave --app-dir as it was
    if args.threads:
        env["TRANSFORMER_THREADS"] = str(args.threads)
    if args.checkpoint:
        env["TRANSFORMER_CHECKPOINT"] = str(Path(args.checkpoint).resolve())
    toy = args.toy or bool(args.checkpoint and "toy" in Path(args.checkpoint).name)
    start = time.time()
    if args.baseline:
        report = side_by_side(args, env, toy)
        report["wall_s"] = round(time.time() - start, 1)
        print(json.dumps(report, indent=1))
        if args.json:
            from report import write_result  # bench/, the script's own directory
            write_result(args.json, report)
        return
    if args.url:
        results = run(args.url, args.reps, toy)
        app = args.url
    else:
        with running_app(env, timeout_s=300, app_dir=Path(args.app_dir)) as server:
            results = run(server.url, args.reps, toy)
        app = str(Path(args.app_dir).resolve())
    report = {
        "app": app, "commit": commit_of(Path(args.app_dir)) if not args.url else "unknown",
        "checkpoint": args.checkpoint or "(the app's default)", "reps": args.reps,
        "sentence_words": len((SENTENCES_TOY if toy else SENTENCES_EN)[0].split()), "beam": 5,
        "browser": CHROMIUM, "machine": f"{cpu_model()}, {os.cpu_count()} cores",
        "wall_s": round(time.time() - start, 1), "results_ms": without_values(results),
    }
    print(json.dumps(report, indent=1))
    if args.json:
        from report import write_result  # bench/, the script's own directory
        write_result(args.json, report)


@contextlib.contextmanager
def checkout(commit: str):
    """`commit` checked out into a temporary git worktree (removed afterwards); its checkpoints are its own."""
    import subprocess
    import tempfile

    where = Path(tempfile.mkdtemp(prefix="baseline-")) / "app"
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(where), commit], cwd=ROOT, check=True)
    try:
        yield where, subprocess.run(["git", "rev-parse", "--short", commit], cwd=ROOT, check=True,
                                    capture_output=True, text=True).stdout.strip()
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(where)], cwd=ROOT, check=False)


def side_by_side(args: argparse.Namespace, env: dict[str, str], toy: bool) -> dict[str, Any]:
    """This checkout's app and the baseline commit's, both running, measured in alternate rounds of 2 reps."""
    runs: dict[str, list[dict[str, Any]]] = {"this": [], "baseline": []}
    with checkout(args.baseline) as (base_dir, base_commit), \
            running_app(env, timeout_s=300, app_dir=ROOT) as this_app, \
            running_app(env, timeout_s=300, app_dir=base_dir) as base_app:
        for _ in range(args.reps // 2):
            runs["this"].append(run(this_app.url, 2, toy))
            runs["baseline"].append(run(base_app.url, 2, toy))
    this, base = merged(runs["this"]), merged(runs["baseline"])
    return {"this": {"commit": commit_of(ROOT), "results_ms": without_values(this)},
            "baseline": {"commit": base_commit, "results_ms": without_values(base)},
            "ratio_this_over_baseline": ratios(this, base), "reps": args.reps, "rounds": args.reps // 2,
            "checkpoint": args.checkpoint or "(the app's default)",
            "sentence_words": len((SENTENCES_TOY if toy else SENTENCES_EN)[0].split()), "beam": 5,
            "browser": CHROMIUM, "machine": f"{cpu_model()}, {os.cpu_count()} cores"}


if __name__ == "__main__":
    main()
