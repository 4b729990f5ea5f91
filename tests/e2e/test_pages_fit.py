"""Every card (English and Chinese), calculator and demo page at a phone's width and a desktop's:
every chart drawn, every table readable, nothing wider than the window.

One browser page visits them all in turn: each page loads once and is checked at both widths,
so the 72 card pages take about a minute on two cores, the 32 others about 15 s.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page

from app.cards.router import CALCULATOR_PAGES, DEMO_PAGES
from app.cards.service import CardLibrary
from app.config import ROOT_DIR

pytestmark = pytest.mark.browser

LIBRARY = CardLibrary.load(ROOT_DIR / "content" / "cards")
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
NARROWEST_CELL_PX = 60

# Ready when every chart the page holds is drawn: uPlot's canvas, a mermaid diagram's svg.
# A chart that never draws leaves the wait to its timeout and the check to say which.
DRAWN = """() => document.readyState === 'complete'
  && [...document.querySelectorAll('main .chart')].every(el => el.querySelector('canvas'))
  && [...document.querySelectorAll('main pre.mermaid')].every(el => el.querySelector('svg'))"""

# What a reader would see wrong, as a list of sentences. Closed <details> are opened first:
# their tables must be readable too.
PROBLEMS = r"""async (narrowest) => {
  await document.fonts.ready;
  // Two frames: a chart follows its box when the window changes size (chart-resize.js).
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  const problems = [];
  const main = document.querySelector('main');
  main.querySelectorAll('details').forEach(d => { d.open = true; });
  const name = el => (el.id ? '#' + el.id : el.className ? '.' + String(el.className).split(' ')[0]
                      : el.tagName.toLowerCase());

  const wide = document.documentElement.scrollWidth;
  if (wide > window.innerWidth) problems.push(`the page scrolls sideways: ${wide} px wide`);

  // A uPlot chart: a canvas with opaque pixels (series, points) inside its plotting area. The
  // grid lines are nearly transparent, so axes alone do not count as drawn.
  for (const el of main.querySelectorAll('.chart')) {
    const canvas = el.querySelector('canvas');
    if (!canvas || !canvas.width || !canvas.height) {
      problems.push(`empty chart ${name(el)}`);
      continue;
    }
    const box = el.uplot ? el.uplot.bbox
                         : { left: 0, top: 0, width: canvas.width, height: canvas.height };
    const pixels = canvas.getContext('2d').getImageData(
      Math.round(box.left), Math.round(box.top), Math.max(1, Math.round(box.width)),
      Math.max(1, Math.round(box.height))).data;
    let opaque = 0;
    for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 128) opaque++;
    if (opaque < 20) problems.push(`chart ${name(el)} has nothing drawn in it`);
  }
  // Charts drawn as svg: the server's Gantt and bars, mermaid's diagrams.
  for (const el of main.querySelectorAll('figure.gantt, .bars, pre.mermaid')) {
    const marks = [...el.querySelectorAll('svg path, svg rect, svg line, svg polygon, svg circle')]
      .filter(m => { const b = m.getBBox(); return b.width > 0 || b.height > 0; });
    const svg = el.querySelector('svg');
    const shown = svg && svg.getBoundingClientRect().width > 0;
    if (!shown || !marks.length) problems.push(`empty chart ${name(el)}`);
  }

  // uPlot draws its legend as a table; its value cells are marks beside a label, not a column.
  const narrow = [...main.querySelectorAll('table:not(.u-legend) :is(td, th)')]
    .map(cell => [cell.getBoundingClientRect().width, cell.innerText.trim().replace(/\s+/g, ' ')])
    .filter(([width, text]) => text && width < narrowest);
  if (narrow.length) {
    const some = narrow.slice(0, 4).map(([w, t]) => `${Math.round(w)} px "${t.slice(0, 30)}"`);
    problems.push(`${narrow.length} table cells narrower than ${narrowest} px: ${some.join(', ')}`);
  }

  // A word of Latin letters split over two lines. Long unbroken tokens (addresses, code such as
  // torch/nn/parallel/distributed.py) may break where they must; formulas and diagrams are laid
  // out by their own rules.
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT, {
    acceptNode: n => n.parentElement.closest('svg, pre, code, .katex, script, style')
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
  });
  const range = document.createRange();
  const split = new Set();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const token of node.data.matchAll(/\S+/g)) {
      if (token[0].length > 30) continue;
      for (const word of token[0].matchAll(/[A-Za-z]{2,}/g)) {
        const start = token.index + word.index;
        range.setStart(node, start);
        range.setEnd(node, start + word[0].length);
        const tops = new Set([...range.getClientRects()].filter(r => r.width > 0)
                             .map(r => Math.round(r.top)));
        if (tops.size > 1) split.add(word[0]);
      }
    }
  }
  if (split.size) problems.push(`words broken mid-word: ${[...split].slice(0, 8).join(', ')}`);
  return problems;
}"""


def sweep(page: Page, paths: list[str]) -> list[str]:
    """Loads each page at one width, then resizes the window to the other, and says what is
    wrong with it at each. The widths take turns: a page loads at the width the one before
    ended at, so each card's English and Chinese editions between them load at both."""
    found = []
    widths = [PHONE, DESKTOP]
    page.set_viewport_size(widths[0])
    for path in paths:
        page.goto(path)
        try:
            page.wait_for_function(DRAWN, timeout=5_000)
        except PlaywrightError:
            pass  # the check names the chart that never drew
        for size in widths:
            page.set_viewport_size(size)
            problems = page.evaluate(PROBLEMS, NARROWEST_CELL_PX)
            found += [f"{path} at {size['width']} px: {p}" for p in problems]
        widths.reverse()
    return found


def test_every_card_draws_its_charts_and_fits_a_phone_and_a_desktop(page: Page) -> None:
    cards = [c.meta.id for c in LIBRARY.all()]
    assert sorted(cards) == sorted(c.meta.id for c in LIBRARY.editions("zh"))  # every one in both
    paths = [f"/cards/{card}?lang={lang}" for card in cards for lang in ("en", "zh")]
    found = sweep(page, paths)
    assert not found, "\n".join(found)


def test_every_calculator_and_demo_page_fits_a_phone_and_a_desktop(page: Page) -> None:
    pages = [path for _, path in CALCULATOR_PAGES.values()]
    pages += [path for _, path in DEMO_PAGES.values()]
    paths = [f"{path}?lang={lang}" for path in pages for lang in ("en", "zh")]
    found = sweep(page, paths)
    assert not found, "\n".join(found)
