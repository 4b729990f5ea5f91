"""The card browser's page, and suspending an item or keeping a note on it from its row
(a row is swapped in place under htmx; a plain form goes back to the same filtered page)."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl, urlencode

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from app.calc.messages import words_of
from app.db import SessionDep
from app.errors import is_htmx
from app.forms import SubmittedForm
from app.i18n import gettext, say
from app.language import request_language
from app.quiz.bank import QuestionBank
from app.quiz.browser import (
    PAGE_SIZE,
    STATES,
    BadNote,
    BrowserRow,
    browser_rows,
    page_count,
    set_note,
    set_suspended,
)
from app.quiz.models import MAX_NOTE_CHARS
from app.quiz.review_queue import UnknownTopic, topic_cards, topics
from app.route_guards import GuardedRoute
from app.security import CurrentUser
from app.templating import templates

router = APIRouter(route_class=GuardedRoute, tags=["pages"], include_in_schema=False)

FILTERS = ("q", "topic", "state", "page")


def _titles(request: Request, lang: str) -> dict[str, str]:
    return {c.meta.id: c.meta.title for c in request.app.state.cards.in_language(lang)}


def _filters(query: Mapping[str, str]) -> dict[str, str]:
    """The filter fields of a query, cut to the lengths the form allows."""
    return {key: str(query.get(key, ""))[:100].strip() for key in FILTERS}


def _page_number(value: str, pages: int) -> int | None:
    """The page asked for, or None when it is not a number from 1 to `pages`."""
    if not value:
        return 1
    if not value.isdigit() or len(value) > 6 or not 1 <= int(value) <= pages:
        return None
    return int(value)


def _browse_url(filters: Mapping[str, str], page: int | None = None) -> str:
    query = {k: v for k, v in filters.items() if v and k != "page"}
    if page is not None and page > 1:
        query["page"] = str(page)
    return "/quiz/browse" + (f"?{urlencode(query)}" if query else "")


def _browse_page(
    request: Request, user: CurrentUser, session: SessionDep, query: Mapping[str, str],
    status_code: int = 200, **extra: object,
) -> HTMLResponse:  # fmt: skip
    """The page for the filters in `query`: 422 with the reason when one cannot be used."""
    assert user.id is not None
    bank: QuestionBank = request.app.state.quiz
    lang = request_language(request)
    filters = _filters(query)
    context: dict[str, object] = {
        "filters": filters, "states": STATES, "rows": [], "page": 1, "pages": 1, "total": 0,
        "topics": topics(request.app.state.cards, bank, lang), "max_note": MAX_NOTE_CHARS,
        "back": urlencode({k: v for k, v in filters.items() if v}), **extra,
    }  # fmt: skip
    problem = ""
    try:
        card_ids = topic_cards(request.app.state.cards, filters["topic"])
    except UnknownTopic as exc:
        card_ids, problem = [], say(words_of(exc))
    if filters["state"] and filters["state"] not in STATES:
        problem = gettext("there is no state called '%(state)s'") % {"state": filters["state"]}
    if not problem:
        rows = browser_rows(session, user.id, bank, card_ids, _titles(request, lang), lang,
                            filters["q"], filters["state"])  # fmt: skip
        pages = page_count(len(rows))
        page = _page_number(filters["page"], pages)
        if page is None:
            problem = gettext("there is no page %(page)s: pages go from 1 to %(pages)s") % {
                "page": filters["page"], "pages": pages}  # fmt: skip
        else:
            shown = rows[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
            context |= {
                "rows": shown,
                "page": page,
                "pages": pages,
                "total": len(rows),
                "prev_url": _browse_url(filters, page - 1) if page > 1 else "",
                "next_url": _browse_url(filters, page + 1) if page < pages else "",
            }
    if problem:
        context["error"], status_code = problem, 422
    return templates.TemplateResponse(request, "quiz/browse.html", context, status_code)


@router.get("/quiz/browse", response_class=HTMLResponse)
def browse(request: Request, user: CurrentUser, session: SessionDep) -> HTMLResponse:
    """Every item of the bank with the learner's state of it, filtered by the query."""
    return _browse_page(request, user, session, request.query_params)


def _known_item(request: Request, item_id: str) -> None:
    if request.app.state.quiz.get(item_id) is None:
        raise HTTPException(422, gettext("no quiz item called '%(item)s'") % {"item": item_id})


def _back_query(form: Mapping[str, object]) -> dict[str, str]:
    """The filtered page the form was sent from (its `back` field, a query string), kept to the
    filter fields: the redirect never leaves the browser."""
    return _filters(dict(parse_qsl(str(form.get("back", ""))[:500])))


def _row(request: Request, session: SessionDep, user: CurrentUser, item_id: str) -> BrowserRow:
    assert user.id is not None
    bank: QuestionBank = request.app.state.quiz
    item = bank.get(item_id)
    assert item is not None
    lang = request_language(request)
    rows = browser_rows(session, user.id, bank, [item.card], _titles(request, lang), lang)
    return next(row for row in rows if row.item_id == item_id)


def _after_change(
    request: Request, session: SessionDep, user: CurrentUser, item_id: str,
    form: Mapping[str, object], status_code: int = 200, error: str = "",
) -> HTMLResponse | RedirectResponse:  # fmt: skip
    """The changed row for htmx; otherwise back to the filtered page (re-rendered with the
    error when there is one)."""
    back = _back_query(form)
    if is_htmx(request):
        context = {"row": _row(request, session, user, item_id), "states": STATES,
                   "back": urlencode({k: v for k, v in back.items() if v}),
                   "max_note": MAX_NOTE_CHARS, "row_error": error}  # fmt: skip
        return templates.TemplateResponse(request, "quiz/browse_row.html", context, status_code)
    if error:
        return _browse_page(request, user, session, back, status_code, note_error=error,
                            note_item=item_id)  # fmt: skip
    page = int(back["page"]) if back["page"].isdigit() and len(back["page"]) <= 6 else None
    return RedirectResponse(_browse_url(back, page), status_code=303)


@router.post("/quiz/browse/{item_id}/suspend", response_model=None)
def suspend(
    request: Request, item_id: str, user: CurrentUser, session: SessionDep, form: SubmittedForm
) -> HTMLResponse | RedirectResponse:
    """Suspends the item, or with suspended=0 unsuspends it."""
    assert user.id is not None
    _known_item(request, item_id)
    set_suspended(session, user.id, item_id, str(form.get("suspended", "1")) != "0")
    return _after_change(request, session, user, item_id, form)


@router.post("/quiz/browse/{item_id}/note", response_model=None)
def note(
    request: Request, item_id: str, user: CurrentUser, session: SessionDep, form: SubmittedForm
) -> HTMLResponse | RedirectResponse:
    """Keeps the note (an empty one clears it); 422 with the reason when it cannot be kept."""
    assert user.id is not None
    _known_item(request, item_id)
    try:
        set_note(session, user.id, item_id, str(form.get("note", "")))
    except BadNote as exc:
        return _after_change(request, session, user, item_id, form, 422, say(words_of(exc)))
    return _after_change(request, session, user, item_id, form)
