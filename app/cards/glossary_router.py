"""The glossary page: every term in English and Chinese, searchable in either. It depends only
on the glossary, the language and the search: its main block is kept (app/page_cache.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.cards.glossary import Glossary
from app.language import request_language
from app.page_cache import kept_page_async
from app.route_guards import GuardedRoute

router = APIRouter(route_class=GuardedRoute, tags=["pages"], include_in_schema=False)


@router.get("/glossary", response_class=HTMLResponse)
async def glossary_page(request: Request, q: str = "") -> HTMLResponse:
    glossary: Glossary = request.app.state.glossary
    lang = request_language(request)

    def values() -> tuple[dict[str, object], int, dict[str, str]]:
        terms = glossary.search(q[:200]) if q.strip() else glossary.terms
        return {"q": q, "terms": terms, "total": len(glossary.terms), "lang": lang}, 200, {}

    return await kept_page_async(request, "cards/glossary.html", (glossary, q), values)
