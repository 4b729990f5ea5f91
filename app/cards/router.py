"""Card pages: the list (by tag), one card, the topic map, the cheat sheet and search.

Each depends only on the content, the language and its own query: its main block is rendered
once and kept (app/page_cache.py), keyed on the content it was rendered from."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse

from app.cards.examples import CALCULATOR_PAGES
from app.cards.models import Card
from app.cards.search import SearchIndex
from app.cards.service import CardLibrary
from app.i18n import N_, gettext
from app.journey.syllabus import in_path_order
from app.journey.visits import record_visit, visit_is_kept
from app.language import request_language
from app.live.pages import DEMO_PAGES as LIVE_DEMO_PAGES
from app.page_cache import kept_or_made, kept_page, kept_page_async
from app.quiz.bank import QuestionBank
from app.route_guards import GuardedRoute

router = APIRouter(
    route_class=GuardedRoute, prefix="/cards", tags=["pages"], include_in_schema=False
)

# Where a card's related demos live, by the slugs front matter uses (its calculators':
# CALCULATOR_PAGES, beside the worked examples); the labels are translated where shown.
DEMO_PAGES = {slug: (page.title, page.path) for slug, page in LIVE_DEMO_PAGES.items()}
DIFFICULTY = {1: N_("basics"), 2: N_("working knowledge"), 3: N_("senior")}


def _library(request: Request) -> CardLibrary:
    return request.app.state.cards


@router.get("", response_class=HTMLResponse)
async def card_list(request: Request, tag: str = "") -> HTMLResponse:
    library, lang = _library(request), request_language(request)

    def values() -> tuple[dict[str, object], int, dict[str, str]]:
        cards = [c for c in in_path_order(library.in_language(lang))
                 if not tag or tag in c.meta.tags]  # fmt: skip
        # The glossary's link, for the template to show beside the map and the cheat sheet.
        return {"cards": cards, "tags": library.tags(), "tag": tag, "difficulty": DIFFICULTY,
                "glossary_url": "/glossary"}, 200, {}  # fmt: skip

    return await kept_page_async(request, "cards/index.html", (library, tag), values)


@router.get("/search", response_class=HTMLResponse)
async def card_search(request: Request, q: str = "") -> HTMLResponse:
    index: SearchIndex = request.app.state.search

    def values() -> tuple[dict[str, object], int, dict[str, str]]:
        hits = index.search(q[:200]) if q.strip() else []
        return {"q": q, "hits": hits}, 200, {}

    return await kept_page_async(request, "cards/search.html", (index, q), values)


def _direct_prerequisites(card: Card, cards: list[Card]) -> list[str]:
    """The prerequisites not already implied by another one (a transitive reduction), so the
    map draws the path through the cards instead of an arrow from every ancestor."""
    needs = {c.meta.id: set(c.meta.prerequisites) for c in cards}

    def ancestors(card_id: str) -> set[str]:
        found, stack = set(), list(needs[card_id])
        while stack:
            current = stack.pop()
            if current not in found:
                found.add(current)
                stack.extend(needs[current])
        return found

    implied = set().union(*(ancestors(p) for p in card.meta.prerequisites))
    return [p for p in card.meta.prerequisites if p not in implied]


@router.get("/map", response_class=HTMLResponse)
async def topic_map(request: Request) -> HTMLResponse:
    """Every card as a node, an arrow from each prerequisite to the card that needs it."""
    library, lang = _library(request), request_language(request)

    def values() -> tuple[dict[str, object], int, dict[str, str]]:
        cards = in_path_order(library.in_language(lang))
        lines = ["flowchart TD"]
        for i, c in enumerate(cards):
            title = c.meta.short_title.replace('"', "'")
            lines.append(f'  n{i}["{title}"]')
            lines.append(f'  click n{i} "/cards/{c.meta.id}"')
        index = {c.meta.id: i for i, c in enumerate(cards)}
        for c in cards:
            lines += [f"  n{index[p]} --> n{index[c.meta.id]}"
                      for p in _direct_prerequisites(c, cards)]  # fmt: skip
        return {"diagram": "\n".join(lines), "cards": cards}, 200, {}

    return await kept_page_async(request, "cards/map.html", (library,), values)


@router.get("/cheatsheet", response_class=HTMLResponse)
async def cheat_sheet(request: Request) -> HTMLResponse:
    library, lang = _library(request), request_language(request)

    def values() -> tuple[dict[str, object], int, dict[str, str]]:
        return {"cards": in_path_order(library.in_language(lang))}, 200, {}

    return await kept_page_async(request, "cards/cheatsheet.html", (library,), values)


def card_values(
    library: CardLibrary, bank: QuestionBank, card: Card, lang: str
) -> dict[str, object]:
    """cards/card.html's context for `card` (the edition a reader of `lang` is shown)."""
    card_id = card.meta.id
    related = [CALCULATOR_PAGES[c] for c in card.meta.calculators if c in CALCULATOR_PAGES]
    related += [DEMO_PAGES[d] for d in card.meta.demos if d in DEMO_PAGES]
    path = [c.meta.id for c in in_path_order(library.all())]
    i = path.index(card_id)
    before, after = (
        library.shown_in(path[j], lang) if 0 <= j < len(path) else None for j in (i - 1, i + 1)
    )
    prerequisites = [library.shown_in(p, lang) for p in card.meta.prerequisites]
    # The link to the other edition, as (lang, label), where that edition is written.
    switch = ("en", "English") if card.lang != "en" else None
    if card.lang == "en" and library.edition(card_id, "zh"):
        switch = ("zh", "中文")
    return {
        "card": card,
        "other": switch,
        "not_written": card.lang != lang,
        "related": related,
        "before": before,
        "after": after,
        "prerequisites": prerequisites,
        "quiz_items": bank.for_cards([card_id]),
        "difficulty": DIFFICULTY,
    }


@router.get("/{card_id}", response_class=HTMLResponse)
async def card_page(request: Request, card_id: str) -> HTMLResponse:
    # A page kept whole, with no visit to write, is answered on the event loop; the rest (a
    # first view, a learner's first visit) is made in the thread pool.
    key = (_library(request), request.app.state.quiz, card_id)
    return await kept_or_made(
        request, "cards/card.html", key, _card_page, card_id, at_once=visit_is_kept(request)
    )


def _card_page(request: Request, card_id: str) -> HTMLResponse:
    library, lang = _library(request), request_language(request)
    original = library.get(card_id)
    if original is None:
        raise HTTPException(404, gettext("no card called '%(card)s'") % {"card": card_id})
    record_visit(request)
    card = library.edition(card_id, lang) or original
    bank: QuestionBank = request.app.state.quiz

    def values() -> tuple[dict[str, object], int, dict[str, str]]:
        return card_values(library, bank, card, lang), 200, {}

    # The title, the head's scripts and the layout's class read the card on every request.
    return kept_page(request, "cards/card.html", (library, bank, card_id), values, {"card": card})
