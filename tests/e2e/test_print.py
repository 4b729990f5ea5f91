"""Printing (issue #16): the cheat sheet and a card, printed to PDF by Chromium's own print
path (page.pdf(), which uses the print media and static/css/print.css), hold what they should
and none of the site's chrome. The PDF's text is read back with pypdf."""

from __future__ import annotations

import io
import re
import unicodedata
from html.parser import HTMLParser

import pytest
from playwright.sync_api import Page, expect
from pypdf import PdfReader

from app.cards.models import Card
from app.cards.service import CardLibrary
from app.config import ROOT_DIR
from app.journey.syllabus import in_path_order

pytestmark = pytest.mark.browser

LIBRARY = CardLibrary.load(ROOT_DIR / "content" / "cards")
# Page widths in PostScript points: the PDF takes the paper asked for (print.css sets margins only).
PAPER_WIDTH = {"A4": 595.92, "Letter": 612.0}
# The site's chrome, which no printed page shows: the header (brand, nav, account links, the
# skip link) and the footer. The language switch (中文) goes with the header.
CHROME = [
    "Skip to content",
    "Start here",
    "Start here Cards Calculators Demos Quiz Plan Progress Groups",
    "Log in",
    "Register",
    "numbers come from the calculators in",
    "▦",
    "中文",
]

# Letters that differ between the HTML and the PDF's text without being different text: line
# breaks and spaces (pypdf's are not always the HTML's), and hyphens, since a line may break
# after "micro-" in "micro-batch". Ligatures (ﬁ) and other compatibility forms fold under NFKC.
_NOISE = re.compile(r"[\s\-\u00ad\u2010\u2011]+")


def canon(text: str) -> str:
    return _NOISE.sub("", unicodedata.normalize("NFKC", text))


class _Runs(HTMLParser):
    """The answer's plain-text runs: text between math, links, superscripts and block edges.
    KaTeX's glyphs do not read back as text, and a printed external link gains its URL, so a
    run never crosses either."""

    BREAKS = {"a", "sup", "sub", "p", "li", "ul", "ol", "br", "div", "table", "tr", "td", "th"}

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[str] = [""]
        self._math = 0  # depth inside a <span class="math ..."> (its own spans nest)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if self._math or (tag == "span" and "math" in classes):
            if tag == "span":
                self._math += 1
            self.runs.append("")
        elif tag in self.BREAKS:
            self.runs.append("")

    def handle_endtag(self, tag: str) -> None:
        if self._math and tag == "span":
            self._math -= 1
            self.runs.append("")
        elif tag in self.BREAKS:
            self.runs.append("")

    def handle_data(self, data: str) -> None:
        if not self._math:
            self.runs[-1] += data


def phrases(html: str) -> list[str]:
    """The HTML's plain-text runs long enough to be told apart, whitespace collapsed."""
    parser = _Runs()
    parser.feed(html)
    runs = [" ".join(r.split()) for r in parser.runs]
    return [r for r in runs if len(canon(r)) >= 25]


def answer_phrases(card: Card) -> list[str]:
    """Two sentences a reader would recognise from the card's 30-second answer: its longest
    math-free run, which shows the answer is there, and its last substantial one, which shows
    the printed answer is not cut short."""
    runs = phrases(card.answer_html)
    assert runs, f"{card.meta.id}: no plain sentence in its 30-second answer to look for"
    longest = max(runs, key=len)
    return [longest] if runs[-1] == longest else [longest, runs[-1]]


def print_pdf(page: Page, paper: str) -> tuple[PdfReader, str]:
    page.evaluate("document.fonts.ready.then(() => true)")  # KaTeX's fonts, before printing
    reader = PdfReader(io.BytesIO(page.pdf(format=paper)))
    assert float(reader.pages[0].mediabox.width) == pytest.approx(PAPER_WIDTH[paper], abs=1)
    return reader, "\n".join(p.extract_text() for p in reader.pages)


def fonts(reader: PdfReader) -> set[str]:
    names = set()
    for pdf_page in reader.pages:
        for font in (pdf_page.get("/Resources", {}).get("/Font") or {}).values():
            names.add(str(font.get_object().get("/BaseFont", "")))
    return names


def assert_no_chrome(text: str) -> None:
    printed = canon(text)
    shown = [c for c in CHROME if canon(c) in printed]
    assert not shown, f"the site's header/footer is in the printout: {shown}"
    assert "¶" not in text, "heading permalinks (¶) are printed"


@pytest.mark.parametrize("paper", ["A4", "Letter"])
def test_the_cheat_sheet_prints_every_30_second_answer(page: Page, paper: str) -> None:
    cards = in_path_order(LIBRARY.in_language("en"))
    page.goto("/cards/cheatsheet")
    expect(page.locator(".cheat")).to_have_count(len(cards))
    expect(page.locator(".cheat .katex").first).to_be_visible()
    expect(page.locator(".cheat .katex-error")).to_have_count(0)

    reader, text = print_pdf(page, paper)
    printed = canon(text)
    missing = [
        f"{c.meta.id}: {phrase!r}"
        for c in cards
        for phrase in [c.meta.title, *answer_phrases(c)]
        if canon(phrase) not in printed
    ]
    assert not missing, "not in the printed cheat sheet:\n" + "\n".join(missing)
    # In the path's order, as on screen.
    positions = [printed.find(canon(c.meta.title)) for c in cards]
    assert positions == sorted(positions), "the printed answers are out of study order"
    assert_no_chrome(text)
    assert canon("All cards") not in printed  # the screen-only back link and intro
    assert canon("the night before") not in printed
    # Two columns of 9.5pt: a few pages, not one card per page, and not squeezed onto one.
    assert 3 <= len(reader.pages) <= len(cards) // 2, f"{len(reader.pages)} pages"
    assert any("KaTeX" in f for f in fonts(reader)), "the answers' math did not print"


def test_a_card_prints_its_worked_example_and_sources(page: Page) -> None:
    card = LIBRARY.get("zero-stages")
    assert card is not None and card.has_diagram
    page.goto(f"/cards/{card.meta.id}")
    expect(page.locator("#card .katex").first).to_be_visible()
    expect(page.locator("#card pre.mermaid svg").first).to_be_visible(timeout=15_000)
    example = page.locator("#card .worked-example").first
    cells = example.locator("td").all_inner_texts()
    assert len(cells) >= 10
    labels = page.locator("#card pre.mermaid svg .nodeLabel").all_inner_texts()
    assert labels, "the diagram has no node labels to look for"
    sources_html = card.html[card.html.index('<h2 id="sources"') :]
    urls = re.findall(r'<a href="(https?://[^"]+)"', sources_html)
    assert urls and phrases(sources_html)

    reader, text = print_pdf(page, "A4")
    printed = canon(text)
    for expected in [card.meta.title, *answer_phrases(card), "Worked example", *cells, "Sources"]:
        assert canon(expected) in printed, f"{expected!r} is not in the printed card"
    # The diagram prints, labels and all.
    assert [lb for lb in labels if canon(lb) not in printed] == []
    # Every source: its text, and each external link's URL printed after the link.
    assert [p for p in phrases(sources_html) if canon(p) not in printed] == []
    # A URL can wrap onto the next page, and pypdf's plain order puts the page's positioned
    # KaTeX glyphs between the halves; read in layout order, the halves meet again.
    laid_out = canon("\n".join(p.extract_text(extraction_mode="layout") for p in reader.pages))
    assert [u for u in urls if canon(u) not in laid_out] == [], "external links lost their URLs"
    # Internal links print as text only: no "(/cards/...)" after "Read first:" and the like.
    assert "(/" not in text and "(#" not in text
    assert_no_chrome(text)
    assert canon("All cards") not in printed and canon("Topic map") not in printed
    assert 2 <= len(reader.pages) <= 20, f"{len(reader.pages)} pages"
    assert any("KaTeX" in f for f in fonts(reader)), "the card's math did not print"
