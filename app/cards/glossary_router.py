"""The glossary page: every term in English and Chinese, searchable in either."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.cards.glossary import Glossary
from app.language import request_language
from app.templating import templates

router = APIRouter(tags=["pages"], include_in_schema=False)


@router.get("/glossary", response_class=HTMLResponse)
def glossary_page(request: Request, q: str = "") -> HTMLResponse:
    glossary: Glossary = request.app.state.glossary
    lang = request_language(request)
    terms = glossary.search(q[:200]) if q.strip() else glossary.terms
    return templates.TemplateResponse(
        request,
        "cards/glossary.html",
        {"q": q, "terms": terms, "total": len(glossary.terms), "lang": lang},
    )
