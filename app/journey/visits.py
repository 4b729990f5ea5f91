"""Keeping the pages of the path a signed-in learner has opened: a card's page and a
calculator's, the first time each (app.journey.models.CardVisit). The step page ticks its
parts from them (app/journey/parts.py); a visitor's visits are not kept."""

from __future__ import annotations

from fastapi import Request
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from app.accounts.models import User
from app.journey.models import CardVisit
from app.security import SESSION_USER_KEY


def record_visit(request: Request) -> None:
    """Keeps the page being shown (its path) as opened by the signed-in learner, once.
    The card and calculator page handlers call it, after they know the page exists."""
    user_id = request.session.get(SESSION_USER_KEY)
    if not isinstance(user_id, int):
        return
    page = request.url.path
    with Session(request.app.state.engine) as session:
        user = session.get(User, user_id)
        if user is None or user.disabled:
            return
        seen = select(CardVisit.id).where(CardVisit.user_id == user_id, CardVisit.page == page)
        if session.exec(seen).first() is not None:
            return  # only the first visit is kept: a page read again writes nothing
        session.add(CardVisit(user_id=user_id, page=page))
        try:
            session.commit()
        except IntegrityError:
            session.rollback()  # the same first visit, from another tab a moment earlier
