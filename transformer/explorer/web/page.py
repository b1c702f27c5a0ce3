"""What every panel hands the browser the same way: its ES module imported and started on a gr.HTML component
(`start_module`), the page's head (the stylesheets as written, plotly.js's <script>, the modules preloaded), and
the app's `js=` event functions.

A panel's own markup, script and style live in its folder (`transformer/explorer/panels/<panel>/`); the modules
every panel shares (the view state, drawing, figures, the payload's decoding) are in `static/`. plotly.js is the
vendored bundle, served by the app itself (never a CDN: nothing leaves the machine). Scripts are ES modules, served
as they are by the app's file route (`gr.set_static_paths`: `served_paths`).
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

EXPLORER_DIR = Path(__file__).resolve().parents[1]
STATIC_DIR = EXPLORER_DIR / "static"
# plotly.js's official cartesian bundle (bar, heatmap, scatter and the rest of the 2-D traces: all the page draws),
# at the version the plotly package ships: smaller than the full bundle, so a page has less script to parse
PLOTLY_JS = STATIC_DIR / "vendor" / "plotly-cartesian.min.js"
PAGE_CSS = STATIC_DIR / "explorer.css"  # the stage, the shared views and presentation mode


def module_url(path: Path | str) -> str:
    """The address of a module on the app's file route, relative to the page (its <base>): `path`, or
    `static/<path>` for a bare name."""
    path = Path(path) if Path(path).is_absolute() else STATIC_DIR / path
    return f"gradio_api/file={path.as_posix()}"


def import_module(name: Path | str) -> str:
    """A JavaScript expression: the promise of the ES module `name` (`module_url`), imported from the app's file route
    (resolved against the page's address: gradio runs event and `js_on_load` code from its own bundle's)."""
    return f"import(new URL({json.dumps(module_url(name))}, document.baseURI).href)"


def start_module(name: Path | str, start: str, events: tuple[str, ...] = ()) -> str:
    """A gr.HTML `js_on_load`: import the module `name` and call its `start(element, props, watch, trigger)`, the
    trigger limited to the custom `events` it sends (gradio finds a component's events by their names in this
    text: `view.rerun(...)` exists because "rerun" is written here)."""
    return (f"const events = {json.dumps(list(events))};\n"
            "const send = (name, data) => {\n"
            "  if (!events.includes(name)) throw new Error(`${name}: not an event of this component`);\n"
            "  return trigger(name, data);\n"
            "};\n"
            f"{import_module(name)}.then((m) => m.{start}(element, props, watch, send));\n")


def stylesheet(styles: Iterable[Path] = ()) -> str:
    """Page-wide CSS: the stage, the shared views and presentation mode (body.present), which restyles gradio parts
    too, then each panel's own `styles`."""
    return "\n".join(path.read_text(encoding="utf-8") for path in (PAGE_CSS, *styles))


def page_head(styles: Iterable[Path] = ()) -> str:
    """The stylesheets as a <style> of the page's <head> (`demo.launch(head=...)`), exactly as written. Not through
    gradio's `css=`: gradio adds a second copy of every rule there, each selector under `.gradio-container-<version>
    .contain`, which outweighs the presentation mode's `body.present ...` rules (body is never inside .contain), so
    the large type of presentation mode did not apply."""
    return f'<style id="explorer-css">{stylesheet(styles)}</style>'


def shared_modules() -> list[Path]:
    """The ES modules every panel may import (`static/`)."""
    return sorted(STATIC_DIR.glob("*.js"))


def served_paths(scripts: Iterable[Path]) -> list[Path]:
    """What the app's file route serves of the explorer: `static/` (the shared modules, plotly.js) and each
    panel's `scripts`, file by file (never a panel's folder: its Python stays private)."""
    return [STATIC_DIR, *scripts]


def head_html(scripts: Iterable[Path] = ()) -> str:
    """The <script> that loads plotly.js (the vendored cartesian bundle), through the app's file route, and the
    page's modules fetched beside it (modulepreload: the shared ones and the panels' `scripts`): each import then
    finds its module, and the modules it imports, loaded already."""
    modules = [*shared_modules(), *scripts]
    preload = "".join(f'<link rel="modulepreload" href="{module_url(p)}">' for p in modules)
    return f'<script src="gradio_api/file={PLOTLY_JS.as_posix()}"></script>' + preload


def js_function(body: str, params: str = "") -> str:
    """A gradio `js=` event function with static/share.js's `attentionView` (the view state shared by the
    explorer, the panels and the page URL) in scope; gradio awaits its promise."""
    return f"async ({params}) => {{\nconst {{attentionView}} = await {import_module('share.js')};\n{body}\n}}"


def select_control(select_id: str, label: str) -> str:
    """A labelled <select> of a panel's controls (filled by its script, options as plain text)."""
    return f'<label id="{select_id}" class="control">{label} <select></select></label>'


# ----------------------------------------------------------------------------- the app's `js=` event functions

# the presentation-mode checkbox acts in the browser only (a class on <body>); ?present=1 sets the checkbox
JS_PRESENT = "(on) => { document.body.classList.toggle('present', Boolean(on)); }"
# the shared view (static/share.js, `attentionView()`): its state as JSON, for the tree and compare handlers
JS_VIEW = js_function("return attentionView()[0].viewJson();")
# a shared link's validated view (from the app's on_restore) into the page; then the address bar follows the view
JS_RESTORE = js_function("""
  const r = JSON.parse(restored || '{}');
  const [view] = attentionView();
  view.restore(r.view);
  Object.assign(view.share.known, r.known || {});
  view.share.tab = r.tab || 'attention';
  view.share.ready = true;
  view.share.sync();
  return view.viewJson();""", "restored")
JS_COPY_LINK = js_function("return attentionView()[0].share.copy();")
# the attention export, written when asked for (app.py's Page.on_export), saved by the browser: the file's address
# from the event's answer, as a download link clicked once
JS_SAVE_DOWNLOAD = """(file) => {
  if (!file || !file.url) return;
  const a = document.createElement('a');
  a.href = file.url;
  a.download = file.orig_name || 'attention.npz';
  document.body.appendChild(a);
  a.click();
  a.remove();
}"""


def js_enter_tab(tab: str) -> str:
    """A tab of the app shows: the URL says so, and the tree and compare handlers get the view state."""
    return js_function(f"const [view] = attentionView(); view.share.enterTab({tab!r}); return view.viewJson();")


