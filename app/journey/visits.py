"""Keeping the pages of the path a signed-in learner has opened: a card's page and a
calculator's, the first time each (app.journey.models.CardVisit). The step page ticks its
parts from them (app/journey/parts.py); a visitor's visits are not kept."""

from __future__ import annotations

from fastapi import Request
from sqlalchemy import Engine, bindparam
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from app.db import RequestSession
from app.journey.models import CardVisit
from app.page_cache import LruCache
from app.security import SESSION_USER_KEY

# The (database, learner, page) visits this process has seen kept: a page read again asks the
# database nothing. Visits are never deleted, so what is here stays true; another process that
# has not seen one asks the database, as this one did.
_KEPT: LruCache[bool] = LruCache(max_entries=100_000, max_size=100_000)


# Built once: the first view of each page by each learner in each process runs it.
_SEEN = select(CardVisit.id).where(
    CardVisit.user_id == bindparam("user_id"), CardVisit.page == bindparam("page")
)


def record_visit(request: Request) -> None:
    """Keeps the page being shown (its path) as opened by the signed-in learner, once.
    The card and calculator page handlers call it, after they know the page exists.

    The cookie's user is live and not disabled: the check before every route
    (app/route_guards.py RequestGuard) has dropped the user of an ended session."""
    user_id = request.session.get(SESSION_USER_KEY)
    if not isinstance(user_id, int):
        return
    engine: Engine = request.app.state.engine
    page = request.url.path
    _KEPT.get_or_make((engine, user_id, page), lambda: _keep(engine, user_id, page))


def visit_is_kept(request: Request) -> bool:
    """Whether record_visit would write nothing for this request: a visitor, or a learner whose
    visit to this page this process has seen kept. Reads no database."""
    user_id = request.session.get(SESSION_USER_KEY)
    if not isinstance(user_id, int):
        return True
    return _KEPT.get((request.app.state.engine, user_id, request.url.path)) is not None


def _keep(engine: Engine, user_id: int, page: str) -> bool:
    with RequestSession(engine) as session:
        seen = session.exec(_SEEN, params={"user_id": user_id, "page": page}).first()
        if seen is not None:
            return True  # only the first visit is kept: a page read again writes nothing
        session.add(CardVisit(user_id=user_id, page=page))
        try:
            session.commit()
        except IntegrityError:
            session.rollback()  # the same first visit, from another tab a moment earlier
    return True
