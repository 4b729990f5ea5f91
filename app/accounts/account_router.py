"""The account page: the signed-in user's live sessions, ending them, changing the password."""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlmodel import Session

from app.accounts import sessions
from app.accounts.models import User
from app.accounts.schemas import PASSWORD_CHANGE_LABELS, PasswordChange
from app.db import STORED_INTEGERS, SessionDep
from app.forms import parse_form
from app.heavy_work import HASHING
from app.i18n import N_, translate
from app.ratelimit import (
    client_address,
    password_attempt_wait,
    record_password_failure,
    wait_message,
)
from app.route_guards import GuardedRoute
from app.security import CurrentSessionId, CurrentUser, hash_password, verify_password
from app.templating import templates

log = logging.getLogger(__name__)

router = APIRouter(
    route_class=GuardedRoute, prefix="/account", tags=["pages"], include_in_schema=False
)

FormText = Annotated[str, Form(max_length=1000)]

# What the page says after an action redirected back to it (?done=...).
DONE_NOTICES = {
    "password": N_("Your password is changed. Your other sessions are signed out."),
    "ended": N_("That session is signed out."),
    "others": N_("Your other sessions are signed out."),
}


def _account_page(
    request: Request,
    session: Session,
    user: User,
    this_session_id: int,
    errors: list[str] | None = None,
    status: int = 200,
    notice: str | None = None,
) -> HTMLResponse:
    assert user.id is not None
    return templates.TemplateResponse(
        request,
        "accounts/account.html",
        {
            "sessions": sessions.active_sessions(session, user.id),
            "this_session_id": this_session_id,
            # Marked with N_() or Messages where they are written: said in the reader's language.
            "errors": [translate(e) for e in errors or []],
            "notice": translate(notice) if notice else None,
        },
        status_code=status,
    )


@router.get("", response_class=HTMLResponse)
def account_page(
    request: Request,
    user: CurrentUser,
    this_session_id: CurrentSessionId,
    session: SessionDep,
    done: str = "",
) -> HTMLResponse:
    return _account_page(request, session, user, this_session_id, notice=DONE_NOTICES.get(done))


# Sync on purpose, as log-in is: two argon2 hashes would stall the event loop.
@router.post("/password", response_class=HTMLResponse, dependencies=[HASHING])
def change_password(
    request: Request,
    user: CurrentUser,
    this_session_id: CurrentSessionId,
    session: SessionDep,
    current_password: FormText = "",
    new_password: FormText = "",
    new_password_again: FormText = "",
) -> Response:
    """Needs the current password, so a borrowed or stolen session cannot lock the owner out;
    guesses at it count as log-in attempts and failures, under the same limits."""
    assert user.id is not None
    wait = password_attempt_wait(request, user.username)
    if wait:
        message = wait_message(wait, N_("password attempts"))
        return _account_page(request, session, user, this_session_id, [message], 429)
    fields = {
        "current_password": current_password,
        "new_password": new_password,
        "new_password_again": new_password_again,
    }
    change, errors = parse_form(PasswordChange, fields, PASSWORD_CHANGE_LABELS)
    if current_password and not verify_password(current_password, user.password_hash):
        record_password_failure(request, user.username)
        log.info("wrong current password for %r from %s", user.username, client_address(request))
        errors.append(N_("Current password: wrong password"))
    if change is None or errors:
        return _account_page(request, session, user, this_session_id, errors, 422)
    # Hashed before the write: a quarter second holding SQLite's write lock makes others wait.
    user.password_hash = hash_password(change.new_password)
    session.add(user)
    # Whoever knew the old password may hold a session: all but this one end with it.
    ended = sessions.end_all_sessions(session, user.id, keep_id=this_session_id)
    session.commit()
    log.info("user %s changed their password; %d other sessions ended", user.username, ended)
    return RedirectResponse("/account?done=password", status_code=303)


@router.post("/sessions/others/end")
def end_other_sessions(
    user: CurrentUser, this_session_id: CurrentSessionId, session: SessionDep
) -> RedirectResponse:
    assert user.id is not None
    ended = sessions.end_all_sessions(session, user.id, keep_id=this_session_id)
    session.commit()
    log.info("user %s signed out %d other sessions", user.username, ended)
    return RedirectResponse("/account?done=others", status_code=303)


@router.post("/sessions/{session_id}/end")
def end_one_session(session_id: int, user: CurrentUser, session: SessionDep) -> RedirectResponse:
    """Ends one of the user's own sessions; another user's id is no row of theirs: 404."""
    assert user.id is not None
    if session_id not in STORED_INTEGERS or not sessions.end_session(session, user.id, session_id):
        raise HTTPException(404, N_("no such session"))
    log.info("user %s signed out their session %s", user.username, session_id)
    return RedirectResponse("/account?done=ended", status_code=303)
