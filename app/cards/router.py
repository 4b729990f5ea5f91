"""Card pages: the list and one card."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse

from app.cards.service import CardLibrary
from app.templating import templates

router = APIRouter(prefix="/cards", tags=["pages"], include_in_schema=False)

# Where a card's related calculators and demos live, by the slugs front matter uses.
CALCULATOR_PAGES = {
    "memory": ("Memory per GPU (ZeRO)", "/calculators/memory"),
    "training-memory": ("Training memory per GPU", "/calculators/training-memory"),
}
DEMO_PAGES = {"all-reduce": ("All-reduce on real ranks", "/demos/all-reduce")}


def _library(request: Request) -> CardLibrary:
    return request.app.state.cards


@router.get("", response_class=HTMLResponse)
def card_list(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(
        request, "cards/index.html", {"cards": _library(request).all()}
    )


@router.get("/{card_id}", response_class=HTMLResponse)
def card_page(request: Request, card_id: str) -> HTMLResponse:
    card = _library(request).get(card_id)
    if card is None:
        raise HTTPException(404, f"no card called {card_id!r}")
    related = [CALCULATOR_PAGES[c] for c in card.meta.calculators if c in CALCULATOR_PAGES]
    related += [DEMO_PAGES[d] for d in card.meta.demos if d in DEMO_PAGES]
    return templates.TemplateResponse(
        request, "cards/card.html", {"card": card, "related": related}
    )
