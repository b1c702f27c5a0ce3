"""Every translation and weight that docs/teaching.md and the README's "Try these" quote is what the app shows.

`QUOTES` says, for each quote, which link of which page it belongs to, the words quoted and the cells whose
weights the text cites. `test_quotes_are_the_docs_own` keeps the table and the pages in step (each quote is in
its link's part of the page, and every full quoted sentence and every two-decimal weight of a link's part is in
the table); `test_every_quote_is_what_the_app_shows` opens each link in Chromium on the shipped checkpoints and
compares. The app runs on the kernels it measures; `test_exact_search.py` checks the quotes on every other kernel.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from app_server import ROOT, SHIPPED_ENV, shared_app  # noqa: E402
from test_docs import app_links  # noqa: E402

PAGES = {"teaching.md": ROOT / "docs" / "teaching.md", "README.md": ROOT / "README.md"}
WEIGHT = re.compile(r"(?<![\w.])[01]\.\d\d(?![\w.])")  # a weight cited to two decimals
SENTENCE = re.compile(r"\"([A-ZÄÖÜ][^\"]*[.!?])\"")  # a whole quoted sentence: a translation


@dataclass(frozen=True)
class Weight:
    """A cell of the focus map as the page labels it (row: the token computed, column: the one looked at) and
    its weight as the docs write it."""

    row: str
    column: str
    value: str


@dataclass(frozen=True)
class Quote:
    """What a page says its `link` (1-based, among the page's app links) shows: the translation holds `says`
    (`shows`: "equals", "word" (as whole words), "lacks"; `where`: the translation box, or "compare": the
    compare tab's translations); `params` changes the link (None removes one) to the view the quote is about."""

    page: str
    link: int
    says: str
    shows: str = "equals"
    where: str = "translation"
    params: dict[str, str | None] = field(default_factory=dict)
    weights: tuple[Weight, ...] = ()


GUITAR_DE = "Ich weiß, dass mein Bruder Gitarre spielt."
COFFEE_OFF, COFFEE = "Sie mag keine kalte Kaffee.", "Sie mag keinen kalten Kaffee."
CALLS = "He calls his mother every Sunday."
QUOTES = (
    Quote("teaching.md", 3, GUITAR_DE, weights=(Weight("spielt", "plays", "0.98"), Weight("Gitarre", "guitar", "0.95"))),
    Quote("teaching.md", 4, "Die Katze schläft auf dem warmen Küchentisch."),
    Quote("teaching.md", 5, "Die alte Frau füttert die kleine Vögel."),
    Quote("teaching.md", 6, "ich wohne", "word"),
    Quote("teaching.md", 6, "ich wohnen", "word", params={"method": "greedy"}),
    Quote("teaching.md", 7, COFFEE_OFF),
    Quote("teaching.md", 7, COFFEE, params={"off": None}),
    Quote("teaching.md", 8, "Er glaubt, das Wetter wird morgen besser sein.", "word", "compare"),
    Quote("teaching.md", 8, "Er glaubt, dass das Wetter morgen besser sein wird.", "word", "compare"),
    Quote("teaching.md", 10, "spielt", "word", weights=(Weight("spielt", "plays", "0.98"),)),
    Quote("teaching.md", 11, "I know my brother is playing the guitar.", weights=(Weight("is", "spielt", "1.00"),)),
    Quote("teaching.md", 12, CALLS, weights=(Weight("calls", "an", "0.90"),)),
    Quote("teaching.md", 12, CALLS, params={"layer": "3", "head": "1"}, weights=(Weight("calls", "ru", "0.96"),)),
    Quote("teaching.md", 14, GUITAR_DE, weights=(Weight("spielt", "plays", "0.00"), Weight("dass", "my", "0.61"))),
    Quote("teaching.md", 15, GUITAR_DE, weights=(Weight("spielt", "plays", "0.78"), Weight("dass", "that", "0.95"))),
    Quote("teaching.md", 13, "Our neighbor works as a bus driver.",
          weights=(Weight("bus", "Bus", "0.97"), Weight("driver", "fahrer", "0.92"))),
    Quote("README.md", 4, "keinen kalten Kaffee", "lacks"),
    Quote("README.md", 4, "keinen kalten Kaffee", "word", params={"off": None}),
    Quote("README.md", 6, "malt", "word"),
)


# ----------------------------------------------------------------------------- the table is the docs' own


def sections(page: Path) -> list[str]:
    """The page's part of each app link, in link order: from the line that holds the link (or the bold heading
    just above it) to the next link's part or heading, each run of white space one space (a quote may wrap)."""
    text = page.read_text()
    starts = []
    for m in re.finditer(re.escape("http://127.0.0.1:7860/?"), text):
        line = text.rfind("\n", 0, m.start()) + 1
        above = text.rfind("\n", 0, max(line - 1, 0)) + 1
        starts.append(above if line and text.startswith("**", above) else line)
    assert len(starts) == len(app_links(page))
    headings = [m.start() for m in re.finditer(r"\n#", text)] + [len(text)]
    ends = [min(b, next(h for h in headings if h > a)) for a, b in zip(starts, [*starts[1:], len(text)])]
    return [" ".join(text[a:b].split()) for a, b in zip(starts, ends)]


def test_quotes_are_the_docs_own():
    """Each quote and each cited weight is written in its link's part of its page, and every whole quoted
    sentence and every two-decimal weight written there is in `QUOTES`: a quote added to the docs fails here
    until the table (so the browser test) checks it."""
    for name, page in PAGES.items():
        for n, section in enumerate(sections(page), 1):
            quotes = [q for q in QUOTES if q.page == name and q.link == n]
            for q in quotes:
                assert q.says in section, (name, n, q.says)
                for w in q.weights:
                    assert w.value in section, (name, n, w)
            said = {q.says for q in quotes}
            cited = {w.value for q in quotes for w in q.weights}
            assert set(SENTENCE.findall(section)) <= said, (name, n, set(SENTENCE.findall(section)) - said)
            assert set(WEIGHT.findall(section)) <= cited, (name, n, set(WEIGHT.findall(section)) - cited)


def test_the_sync_check_catches_a_quote_the_table_lacks():
    """The patterns find what the docs write: whole quoted sentences and two-decimal weights, not steps or
    parts of a sentence."""
    text = 'says "Das ist gut." and "ich wohne", weight 0.98 (1.00), cell=8.6, 87 %, v1.25.3'
    assert SENTENCE.findall(text) == ["Das ist gut."]
    assert WEIGHT.findall(text) == ["0.98", "1.00"]


def holds(shown: str, q: Quote) -> bool:
    """Whether the text on the page holds the quote as `q.shows` says."""
    word = re.search(r"(?<!\w)" + re.escape(q.says) + r"(?!\w)", shown) is not None
    return {"equals": shown.strip() == q.says, "word": word, "lacks": q.says not in shown}[q.shows]


def test_holds_reads_whole_words():
    assert holds("Ich wohne in Nakuru.", Quote("x", 1, "ich wohne", "word")) is False  # case counts
    assert holds("und ich wohnen in", Quote("x", 1, "ich wohne", "word")) is False
    assert holds("und ich wohne in", Quote("x", 1, "ich wohne", "word"))
    assert holds("Sie mag keine kalte Kaffee.", Quote("x", 1, "keinen kalten Kaffee", "lacks"))


# ----------------------------------------------------------------------------- the app shows them


@pytest.fixture(scope="module")
def en_de_int8():
    """The app on the shipped checkpoints (en-de first) with int8 search weights, as the docs quote it
    (app_server.SHIPPED_ENV: the app the other tests of the shipped models share)."""
    if not (ROOT / "checkpoints" / "en-de" / "model.safetensors").is_file():
        pytest.skip("checkpoints/en-de is not here")
    return shared_app(SHIPPED_ENV)


def quote_query(q: Quote) -> dict[str, str]:
    """The query of the quote's link, with its `params` applied."""
    query = dict(parse_qsl(urlsplit(app_links(PAGES[q.page])[q.link - 1]).query))
    for key, value in q.params.items():
        if value is None:
            query.pop(key, None)
        else:
            query[key] = value
    return query


def quote_link(server, q: Quote) -> str:
    """The quote's link on `server`, with its `params` applied."""
    return server.url + "?" + urlencode(quote_query(q))


# the focus map on screen as the page drew it: its weights and its row and column labels
FOCUS = """() => { const x = document.querySelector('#explorer .explorer').__explorer;
  const v = document.querySelector('#focus-' + x.state.tab + ' .plot').__view;
  return {z: v.z, rows: v.q.label, columns: v.k.label}; }"""


def cell(focus: dict, w: Weight) -> str:
    """The weight of `w`'s cell on the focus map to two decimals, its labels read as the docs write them (a
    subword's continuation mark "·" left out); what was found instead when a label is not there once."""
    def at(labels: list[str], name: str) -> list[int]:
        return [i for i, label in enumerate(labels) if label.lstrip("\u00b7") == name]

    rows, columns = at(focus["rows"], w.row), at(focus["columns"], w.column)
    if len(rows) != 1 or len(columns) != 1:
        return f"rows {focus['rows']}, columns {focus['columns']}"
    return f"{focus['z'][rows[0]][columns[0]]:.2f}"


def shown_text(page, q: Quote) -> str:
    """The text the quote is about, once the page has drawn it."""
    if q.where == "compare":
        page.wait_for_selector("#compare-panel[data-ready^='compare-']")
        return page.locator("#compare-panel .compare-texts").inner_text()
    return page.locator("#translation textarea").input_value()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_every_quote_is_what_the_app_shows(en_de_int8):
    """Each link of `QUOTES` opened in Chromium (presentation mode, 1280x720, as the lesson opens it): the
    translation holds what the docs quote, and each cited weight is the focus map's, to two decimals."""
    from test_browser import chromium
    from test_stage import open_at, views_drawn

    wrong = []
    with chromium() as browser:
        for q in QUOTES:
            page, (_, _, errors) = open_at(browser, quote_link(en_de_int8, q), 1280, 720)
            if q.where == "translation":
                views_drawn(page)
            shown = shown_text(page, q)
            if not holds(shown, q):
                wrong.append((q.page, q.link, q.params, q.shows, q.says, shown))
            if q.weights:
                focus = page.evaluate(FOCUS)
                for w in q.weights:
                    got = cell(focus, w)
                    if got != w.value:
                        wrong.append((q.page, q.link, q.params, w, got))
            assert errors == [], (q, errors)
    assert not wrong, wrong


# ----------------------------------------------------------------------------- a setting changed: the answer follows


GENERATION = "(() => { const x = document.querySelector('#explorer .explorer').__explorer; return x.payload.gen; })()"


def answered_again(page, change) -> None:
    """Run `change` (a decoding setting changed on the page), then wait for the new translation's payload to be
    drawn: a newer generation than the one on screen before."""
    from test_stage import views_drawn

    before = page.evaluate(GENERATION)
    change()
    page.wait_for_function(f"{GENERATION} > {before}")
    views_drawn(page)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_decoding_setting_changed_translates_again(en_de_int8):
    """Lesson link 6 at 1280x720 in presentation mode: the decoding choice is on screen with the translation, and
    ticking greedy translates again (greedy's "ich wohnen"; the link in the address bar says
    greedy); beam again, a beam width from the keyboard and the length penalty each bring a new translation. Nothing
    shows an answer of the old settings as current."""
    from test_browser import chromium
    from test_stage import open_at, views_drawn
    from test_stage_lesson import box, on_screen

    beam, greedy = (Quote("teaching.md", 6, w, "word") for w in ("ich wohne", "ich wohnen"))
    with chromium() as browser:
        page, (_, _, errors) = open_at(browser, quote_link(en_de_int8, beam), 1280, 720)
        views_drawn(page)
        translation = page.locator("#translation textarea")
        assert holds(translation.input_value(), beam)
        assert on_screen(box(page, "#method"), 1280, 720), box(page, "#method")
        answered_again(page, lambda: page.locator("#method label", has_text="greedy").click())
        assert holds(translation.input_value(), greedy), translation.input_value()
        page.wait_for_function("location.search.includes('method=greedy')")  # the address bar follows (share.sync)
        answered_again(page, lambda: page.locator("#method label", has_text="beam").click())
        assert holds(translation.input_value(), beam)
        for slider in ("#beam", "#lp"):
            if slider == "#lp":
                page.get_by_role("button", name="Advanced").click()  # the length penalty's accordion
            answered_again(page, lambda: (page.locator(f"{slider} input[type=range]").focus(),
                                          page.keyboard.press("ArrowLeft")))
            if slider == "#beam":
                page.wait_for_function("location.search.includes('beam=4')")  # from the keyboard
        assert errors == []


@pytest.mark.slow
def test_a_model_switch_clears_the_translation_and_its_maps(en_de_int8):
    """Another model chosen: the translation box is emptied and the maps of the old translation are gone."""
    from test_browser import chromium
    from test_stage import open_at, views_drawn

    with chromium() as browser:
        page, (_, _, errors) = open_at(browser, quote_link(en_de_int8, QUOTES[0]), 1280, 720)
        views_drawn(page)
        page.locator("#model input").click()
        page.get_by_role("option", name="de-en", exact=True).click()
        page.wait_for_function("document.querySelector('#translation textarea').value === ''")
        # the maps of the translation before are gone: the explorer holds no payload and draws none
        page.wait_for_function("document.querySelector('#explorer .explorer').dataset.ready === 'empty'")
        assert page.locator("#explorer .js-plotly-plot g.hm").count() == 0
        assert errors == []


@pytest.mark.slow
def test_an_empty_enter_says_what_to_do_in_presentation_mode(en_de_int8):
    """Enter in the empty box in presentation mode at 1280x720: the message names only what is on that screen (the
    box at the top and Translate), not the examples presentation mode hides."""
    from test_browser import chromium, page_at
    from test_stage_lesson import box, on_screen

    from transformer.explorer.core.results import EMPTY_TEXT

    with chromium() as browser:
        page, _ = page_at(browser, 1280, 720)
        page.goto(en_de_int8.url + "?present=1")
        page.wait_for_selector("#explorer .explorer[data-ready]")
        page.locator("#source textarea").press("Enter")
        message = page.locator("[data-testid=toast-text]").first
        message.wait_for()
        assert message.inner_text().strip() == EMPTY_TEXT and "example" not in EMPTY_TEXT
        for selector in ("#source", "#translate"):
            assert on_screen(box(page, selector), 1280, 720), selector
        assert not page.locator("#examples").is_visible()
