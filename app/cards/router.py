"""Card pages: the list (by tag), one card, the topic map, the cheat sheet and search."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse

from app.cards.models import LANGUAGES, Card
from app.cards.search import SearchIndex
from app.cards.service import CardLibrary
from app.live.pages import DEMO_PAGES as LIVE_DEMO_PAGES
from app.templating import templates

router = APIRouter(prefix="/cards", tags=["pages"], include_in_schema=False)

# Where a card's related calculators and demos live, by the slugs front matter uses.
CALCULATOR_PAGES = {
    "memory": ("Memory per GPU (ZeRO)", "/calculators/memory"),
    "training-memory": ("Training memory per GPU", "/calculators/training-memory"),
    "communication": ("Communication per step", "/calculators/communication"),
    "pipeline": ("Pipeline schedules", "/calculators/pipeline"),
    "compute": ("Compute and training time", "/calculators/compute"),
    "roofline": ("Roofline", "/calculators/roofline"),
    "inference-memory": ("Inference memory", "/calculators/inference-memory"),
    "failures": ("Failures and checkpoints", "/calculators/failures"),
    "planner": ("Parallel layout planner", "/calculators/planner"),
}
DEMO_PAGES = {slug: (page.title, page.path) for slug, page in LIVE_DEMO_PAGES.items()}
DIFFICULTY = {1: "basics", 2: "working knowledge", 3: "senior"}
LANG_COOKIE = "lang"
LANG_CHOICES = {"en", *LANGUAGES}


def _library(request: Request) -> CardLibrary:
    return request.app.state.cards


def _lang(request: Request) -> str:
    """Which edition to show: ?lang= (explicit, and a link that keeps it can be shared), else
    the cookie that choice left, else the browser's first Accept-Language (zh-CN, zh-TW... → zh)."""
    for choice in (request.query_params.get("lang"), request.cookies.get(LANG_COOKIE)):
        if choice in LANG_CHOICES:
            return choice
    first = request.headers.get("accept-language", "").split(",")[0].strip().lower()
    return "zh" if first.startswith("zh") else "en"


def _remember_lang(request: Request, response: HTMLResponse, lang: str) -> HTMLResponse:
    """The page depends on the cookie and the header; an explicit ?lang= choice is kept."""
    response.headers["Vary"] = "Accept-Language, Cookie"
    if request.query_params.get("lang") in LANG_CHOICES:
        response.set_cookie(LANG_COOKIE, lang, max_age=365 * 24 * 3600, samesite="lax")
    return response


@router.get("", response_class=HTMLResponse)
def card_list(request: Request, tag: str = "") -> HTMLResponse:
    library, lang = _library(request), _lang(request)
    cards = [c for c in library.in_language(lang) if not tag or tag in c.meta.tags]
    response = templates.TemplateResponse(
        request,
        "cards/index.html",
        {"cards": cards, "tags": library.tags(), "tag": tag, "difficulty": DIFFICULTY},
    )
    return _remember_lang(request, response, lang)


@router.get("/search", response_class=HTMLResponse)
def card_search(request: Request, q: str = "") -> HTMLResponse:
    index: SearchIndex = request.app.state.search
    hits = index.search(q[:200]) if q.strip() else []
    return templates.TemplateResponse(request, "cards/search.html", {"q": q, "hits": hits})


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
def topic_map(request: Request) -> HTMLResponse:
    """Every card as a node, an arrow from each prerequisite to the card that needs it."""
    lang = _lang(request)
    cards = _library(request).in_language(lang)
    lines = ["flowchart TD"]
    for i, c in enumerate(cards):
        title = c.meta.title.split(":")[0].replace('"', "'")
        lines.append(f'  n{i}["{title}"]')
        lines.append(f'  click n{i} "/cards/{c.meta.id}"')
    index = {c.meta.id: i for i, c in enumerate(cards)}
    for c in cards:
        lines += [f"  n{index[p]} --> n{index[c.meta.id]}" for p in _direct_prerequisites(c, cards)]
    response = templates.TemplateResponse(
        request, "cards/map.html", {"diagram": "\n".join(lines), "cards": cards}
    )
    return _remember_lang(request, response, lang)


@router.get("/cheatsheet", response_class=HTMLResponse)
def cheat_sheet(request: Request) -> HTMLResponse:
    lang = _lang(request)
    response = templates.TemplateResponse(
        request, "cards/cheatsheet.html", {"cards": _library(request).in_language(lang)}
    )
    return _remember_lang(request, response, lang)


@router.get("/{card_id}", response_class=HTMLResponse)
def card_page(request: Request, card_id: str) -> HTMLResponse:
    library, lang = _library(request), _lang(request)
    original = library.get(card_id)
    if original is None:
        raise HTTPException(404, f"no card called {card_id!r}")
    card = library.edition(card_id, lang) or original
    related = [CALCULATOR_PAGES[c] for c in card.meta.calculators if c in CALCULATOR_PAGES]
    related += [DEMO_PAGES[d] for d in card.meta.demos if d in DEMO_PAGES]

    def in_lang(other_id: str) -> Card | None:
        return library.edition(other_id, lang) or library.get(other_id)

    before, after = (in_lang(c.meta.id) if c else None for c in library.neighbours(card_id))
    prerequisites = [in_lang(p) for p in card.meta.prerequisites]
    # The link to the other edition, as (lang, label), where that edition is written.
    switch = ("en", "English") if card.lang != "en" else None
    if card.lang == "en" and library.edition(card_id, "zh"):
        switch = ("zh", "中文")
    quiz_items = request.app.state.quiz.for_cards([card_id])
    response = templates.TemplateResponse(
        request,
        "cards/card.html",
        {
            "card": card,
            "other": switch,
            "not_written": card.lang != lang,
            "related": related,
            "before": before,
            "after": after,
            "prerequisites": prerequisites,
            "quiz_items": quiz_items,
            "difficulty": DIFFICULTY,
        },  # fmt: skip
    )
    return _remember_lang(request, response, lang)
